// Cleanup after fusion: what forwarding and dropped stores leave dead, parameters no part reads, declarations
// nothing uses, and branches to the very next statement (each part's former `ret`).
//
// Dead-code elimination only removes instructions that have no effect besides writing registers: arithmetic,
// moves, conversions, comparisons and plain loads. Anything that touches memory other than by a plain load,
// synchronises, communicates across lanes or sets the carry flag stays, whether or not its result is read.
#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kfuse/rewriter/fusion.h"
#include "kfuse/ptx/analysis.h"
#include "rename.h"

namespace kfuse::rewriter {

using ptx::Instruction;
using ptx::Opcode;
using ptx::Operand;
using ptx::OperandKind;
using ptx::Statement;
using ptx::StatementKind;

namespace {

bool isPure(const Instruction& in) {
  if (in.has(ptx::Mod::kCc)) return false;
  switch (in.opcode) {
    case Opcode::kAbs: case Opcode::kAdd: case Opcode::kAnd: case Opcode::kBfe: case Opcode::kBfi:
    case Opcode::kBfind: case Opcode::kBrev: case Opcode::kClz: case Opcode::kCnot: case Opcode::kCopysign:
    case Opcode::kCos: case Opcode::kCvt: case Opcode::kCvta: case Opcode::kDiv: case Opcode::kEx2:
    case Opcode::kFma: case Opcode::kLg2: case Opcode::kLop3: case Opcode::kMad: case Opcode::kMad24:
    case Opcode::kMax: case Opcode::kMin: case Opcode::kMov: case Opcode::kMul: case Opcode::kMul24:
    case Opcode::kNeg: case Opcode::kNot: case Opcode::kOr: case Opcode::kPopc: case Opcode::kPrmt:
    case Opcode::kRcp: case Opcode::kRem: case Opcode::kRsqrt: case Opcode::kSad: case Opcode::kSelp:
    case Opcode::kSet: case Opcode::kSetp: case Opcode::kShf: case Opcode::kShl: case Opcode::kShr:
    case Opcode::kSin: case Opcode::kSlct: case Opcode::kSqrt: case Opcode::kSub: case Opcode::kTanh:
    case Opcode::kTestp: case Opcode::kXor:
      return true;
    case Opcode::kLd:
      // A plain load only reads; volatile and ordered loads are observable.
      return !in.has(ptx::Mod::kVolatile) && !in.has(ptx::Mod::kAcquire) && !in.has(ptx::Mod::kRelaxed);
    default:
      return false;
  }
}

// Removes side-effect-free instructions whose results nobody reads, until none is left. Registers are numbered
// once so the work list runs on integers (kernels of tens of thousands of instructions are common after fusion).
int eliminateDeadCode(std::vector<Statement>& body) {
  std::unordered_map<std::string, int> ids;
  auto idOf = [&](const std::string& r) { return ids.try_emplace(r, static_cast<int>(ids.size())).first->second; };
  std::vector<std::vector<int>> reads(body.size()), writes(body.size());
  std::vector<std::string> defs, uses;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].kind != StatementKind::kInstruction) continue;
    defs.clear();
    uses.clear();
    ptx::instructionDefsUses(body[i].inst, &defs, &uses);
    for (const std::string& r : uses) reads[i].push_back(idOf(r));
    for (const std::string& r : defs) writes[i].push_back(idOf(r));
  }
  std::vector<int> use_count(ids.size(), 0);
  std::vector<std::vector<size_t>> defined_at(ids.size());
  for (size_t i = 0; i < body.size(); ++i) {
    for (int r : reads[i]) ++use_count[static_cast<size_t>(r)];
    for (int r : writes[i]) defined_at[static_cast<size_t>(r)].push_back(i);
  }
  std::vector<char> removed(body.size(), 0);
  std::vector<size_t> work;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].kind == StatementKind::kInstruction) work.push_back(i);
  }
  int count = 0;
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    if (removed[i] || writes[i].empty() || !isPure(body[i].inst)) continue;
    const bool dead = std::all_of(writes[i].begin(), writes[i].end(),
                                  [&](int r) { return use_count[static_cast<size_t>(r)] == 0; });
    if (!dead) continue;
    removed[i] = 1;
    ++count;
    for (int r : reads[i]) {
      if (--use_count[static_cast<size_t>(r)] == 0) {
        for (size_t d : defined_at[static_cast<size_t>(r)]) work.push_back(d);
      }
    }
  }
  if (count == 0) return 0;
  std::vector<Statement> kept;
  kept.reserve(body.size() - static_cast<size_t>(count));
  for (size_t i = 0; i < body.size(); ++i) {
    if (!removed[i]) kept.push_back(std::move(body[i]));
  }
  body = std::move(kept);
  return count;
}

// `bra L` immediately followed by `L:` (with only labels between) does nothing.
int removeBranchesToNext(std::vector<Statement>& body) {
  int count = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    const Statement& s = body[i];
    if (s.kind != StatementKind::kInstruction || s.inst.opcode != Opcode::kBra || s.inst.operands.size() != 1) {
      continue;
    }
    const std::string& target = s.inst.operands[0].name;
    bool next = false;
    for (size_t j = i + 1; j < body.size() && body[j].kind == StatementKind::kLabel && !next; ++j) {
      next = body[j].text == target;
    }
    if (next) {
      body.erase(body.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
      ++count;
    }
  }
  return count;
}

}  // namespace

Expected<CleanupStats> cleanupFunction(ptx::Module& module, const std::string& name, bool remove_params,
                                       std::vector<int>* kept_params) {
  ptx::Function* f = module.findFunction(name);
  if (!f || !f->has_body) return unsupported("no function with a body named '" + name + "' in the module");
  CleanupStats stats;
  // Removing a branch frees no register, so one round of each reaches the fixpoint (DCE iterates internally).
  stats.removed_instructions += removeBranchesToNext(f->body);
  stats.removed_instructions += eliminateDeadCode(f->body);

  // What the body still refers to. A register of a range declaration (%r<10>) is named by its prefix.
  std::set<std::string, std::less<>> symbols;
  std::unordered_set<std::string> registers, prefixes;
  std::vector<std::string> defs, uses;
  for (const Statement& s : f->body) {
    if (s.kind != StatementKind::kInstruction) continue;
    detail::collectSymbols(s.inst, &symbols);
    defs.clear();
    uses.clear();
    ptx::instructionDefsUses(s.inst, &defs, &uses);
    for (std::vector<std::string>* list : {&defs, &uses}) {
      for (std::string& r : *list) {
        size_t end = r.size();
        while (end > 0 && std::isdigit(static_cast<unsigned char>(r[end - 1]))) --end;
        if (end < r.size()) prefixes.insert(r.substr(0, end));
        registers.insert(std::move(r));
      }
    }
  }
  // Labels nobody branches to.
  std::erase_if(f->body, [&](const Statement& s) { return s.kind == StatementKind::kLabel && !symbols.count(s.text); });
  // Declarations nobody uses.
  const size_t before = f->body.size();
  std::erase_if(f->body, [&](const Statement& s) {
    if (s.kind != StatementKind::kDeclaration) return false;
    if (s.decl.space != ptx::StateSpace::kReg) return !symbols.count(s.decl.name);
    if (s.decl.range < 0) return !registers.count(s.decl.name);
    return !prefixes.count(s.decl.name);
  });
  stats.removed_declarations = static_cast<int>(before - f->body.size());

  if (kept_params) kept_params->clear();
  std::vector<ptx::VariableDecl> params;
  for (size_t p = 0; p < f->params.size(); ++p) {
    if (!remove_params || !f->is_entry || symbols.count(f->params[p].name)) {
      params.push_back(f->params[p]);
      if (kept_params) kept_params->push_back(static_cast<int>(p));
    } else {
      ++stats.removed_params;
    }
  }
  f->params = std::move(params);
  return stats;
}

}  // namespace kfuse::rewriter
