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

#include "kfuse/rewriter/fusion.h"
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

// Symbols an instruction names (parameters, variables, labels, functions), nested operands included.
void collectSymbols(const Instruction& in, std::set<std::string, std::less<>>* out) {
  std::vector<const Operand*> work;
  for (const Operand& o : in.operands) work.push_back(&o);
  while (!work.empty()) {
    const Operand* o = work.back();
    work.pop_back();
    if (o->kind == OperandKind::kSymbol) out->insert(o->name);
    for (const Operand& e : o->elements) work.push_back(&e);
  }
}

// Removes side-effect-free instructions whose results nobody reads, until none is left.
int eliminateDeadCode(std::vector<Statement>& body) {
  std::unordered_map<std::string, int> uses;
  std::unordered_map<std::string, std::vector<size_t>> defs;
  std::vector<std::vector<std::string>> reads(body.size()), writes(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].kind != StatementKind::kInstruction) continue;
    reads[i] = detail::registersRead(body[i].inst);
    writes[i] = detail::registersWritten(body[i].inst);
    for (const std::string& r : reads[i]) ++uses[r];
    for (const std::string& r : writes[i]) defs[r].push_back(i);
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
    if (removed[i] || !isPure(body[i].inst) || writes[i].empty()) continue;
    const bool dead = std::all_of(writes[i].begin(), writes[i].end(), [&](const std::string& r) {
      auto it = uses.find(r);
      return it == uses.end() || it->second == 0;
    });
    if (!dead) continue;
    removed[i] = 1;
    ++count;
    for (const std::string& r : reads[i]) {
      if (--uses[r] == 0) {
        for (size_t d : defs[r]) work.push_back(d);
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

// Whether register `reg` is one of those a declaration names (`%r` with range 10 names %r0..%r9).
bool declares(const ptx::VariableDecl& d, const std::string& reg) {
  if (d.range < 0) return reg == d.name;
  if (reg.size() <= d.name.size() || reg.compare(0, d.name.size(), d.name) != 0) return false;
  const std::string digits = reg.substr(d.name.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return false;
  }
  return digits.size() < 10 && std::stoll(digits) < d.range;
}

}  // namespace

Expected<CleanupStats> cleanupFunction(ptx::Module& module, const std::string& name, bool remove_params,
                                       std::vector<int>* kept_params) {
  ptx::Function* f = module.findFunction(name);
  if (!f || !f->has_body) return unsupported("no function with a body named '" + name + "' in the module");
  CleanupStats stats;
  for (bool changed = true; changed;) {
    const int branches = removeBranchesToNext(f->body);
    const int dead = eliminateDeadCode(f->body);
    stats.removed_instructions += branches + dead;
    changed = branches + dead > 0;
  }

  // What the body still refers to.
  std::set<std::string, std::less<>> symbols, registers;
  for (const Statement& s : f->body) {
    if (s.kind != StatementKind::kInstruction) continue;
    collectSymbols(s.inst, &symbols);
    for (const std::string& r : detail::registersRead(s.inst)) registers.insert(r);
    for (const std::string& r : detail::registersWritten(s.inst)) registers.insert(r);
  }
  // Labels nobody branches to.
  std::erase_if(f->body, [&](const Statement& s) { return s.kind == StatementKind::kLabel && !symbols.count(s.text); });
  // Declarations nobody uses.
  const size_t before = f->body.size();
  std::erase_if(f->body, [&](const Statement& s) {
    if (s.kind != StatementKind::kDeclaration) return false;
    if (s.decl.space != ptx::StateSpace::kReg) return !symbols.count(s.decl.name);
    if (s.decl.range < 0) return !registers.count(s.decl.name);
    // A range is used when any register it names is.
    auto it = registers.lower_bound(s.decl.name);
    for (; it != registers.end() && it->compare(0, s.decl.name.size(), s.decl.name) == 0; ++it) {
      if (declares(s.decl, *it)) return false;
    }
    return true;
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
  KFUSE_RETURN_IF_ERROR(ptx::verify(*f));
  return stats;
}

}  // namespace kfuse::rewriter
