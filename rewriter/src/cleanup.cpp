// Cleanup after fusion: what forwarding and dropped stores leave dead, parameters no part reads, declarations
// nothing uses, and branches to the very next statement (each part's former `ret`).
//
// Dead-code elimination only removes instructions that have no effect besides writing registers: arithmetic,
// moves, conversions, comparisons and plain loads. Anything that touches memory other than by a plain load,
// synchronises, communicates across lanes or sets the carry flag stays, whether or not its result is read.
#include <algorithm>
#include <cctype>
#include <string_view>

#include "kfuse/rewriter/fusion.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/name_table.h"
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

// Keeps the statements of `body` not marked in `drop`, in order. In place: the body of a fused kernel is megabytes.
void eraseMarked(std::vector<Statement>& body, const std::vector<char>& drop) {
  size_t kept = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    if (drop[i]) continue;
    if (kept != i) body[kept] = std::move(body[i]);
    ++kept;
  }
  body.erase(body.begin() + static_cast<std::ptrdiff_t>(kept), body.end());
}

// Removes side-effect-free instructions whose results nobody reads, until none is left. Registers are numbered
// once (by views of their names in `body`, which stays unchanged until the dead statements are erased) so the work
// list runs on integers: kernels of tens of thousands of instructions are common after fusion.
int eliminateDeadCode(std::vector<Statement>& body) {
  const size_t n = body.size();
  ptx::NameTable ids(/*expected=*/n);
  // Registers read / written by statement i: reads[read_begin[i] .. read_begin[i + 1]), likewise for writes.
  std::vector<size_t> read_begin(n + 1, 0), write_begin(n + 1, 0);
  std::vector<int> reads, writes;
  std::vector<std::string_view> defs, uses;
  for (size_t i = 0; i < n; ++i) {
    read_begin[i] = reads.size();
    write_begin[i] = writes.size();
    if (body[i].kind != StatementKind::kInstruction) continue;
    defs.clear();
    uses.clear();
    ptx::instructionDefsUsesViews(body[i].inst, &defs, &uses);
    for (std::string_view r : uses) reads.push_back(ids.intern(r));
    for (std::string_view r : defs) writes.push_back(ids.intern(r));
  }
  read_begin[n] = reads.size();
  write_begin[n] = writes.size();
  // The statements defining each register: defined_at[def_begin[r] .. def_begin[r + 1]), in statement order.
  std::vector<int> use_count(ids.size(), 0);
  std::vector<size_t> def_begin(ids.size() + 1, 0);
  for (int r : reads) ++use_count[static_cast<size_t>(r)];
  for (int r : writes) ++def_begin[static_cast<size_t>(r) + 1];
  for (size_t r = 0; r < ids.size(); ++r) def_begin[r + 1] += def_begin[r];
  std::vector<size_t> defined_at(writes.size());
  {
    std::vector<size_t> next(def_begin.begin(), def_begin.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = write_begin[i]; k < write_begin[i + 1]; ++k) defined_at[next[static_cast<size_t>(writes[k])]++] = i;
    }
  }
  std::vector<char> removed(n, 0);
  std::vector<size_t> work;
  for (size_t i = 0; i < n; ++i) {
    if (body[i].kind == StatementKind::kInstruction) work.push_back(i);
  }
  int count = 0;
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    if (removed[i] || write_begin[i] == write_begin[i + 1] || !isPure(body[i].inst)) continue;
    const bool dead = std::all_of(writes.begin() + static_cast<std::ptrdiff_t>(write_begin[i]),
                                  writes.begin() + static_cast<std::ptrdiff_t>(write_begin[i + 1]),
                                  [&](int r) { return use_count[static_cast<size_t>(r)] == 0; });
    if (!dead) continue;
    removed[i] = 1;
    ++count;
    for (size_t k = read_begin[i]; k < read_begin[i + 1]; ++k) {
      const auto r = static_cast<size_t>(reads[k]);
      if (--use_count[r] == 0) {
        for (size_t d = def_begin[r]; d < def_begin[r + 1]; ++d) work.push_back(defined_at[d]);
      }
    }
  }
  if (count > 0) eraseMarked(body, removed);
  return count;
}

void addSymbols(const Operand& o, ptx::NameTable* out) {
  if (o.kind == OperandKind::kSymbol) out->intern(o.name);
  for (const Operand& e : o.elements) addSymbols(e, out);
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

  // What the body still refers to, as views of the names in it: every decision below is taken before the body
  // changes. A register of a range declaration (%r<10>) is named by its prefix.
  ptx::NameTable symbols, registers(/*expected=*/f->body.size()), prefixes;
  std::vector<std::string_view> defs, uses;
  for (const Statement& s : f->body) {
    if (s.kind != StatementKind::kInstruction) continue;
    for (const Operand& o : s.inst.operands) addSymbols(o, &symbols);
    defs.clear();
    uses.clear();
    ptx::instructionDefsUsesViews(s.inst, &defs, &uses);
    for (const std::vector<std::string_view>* list : {&defs, &uses}) {
      for (std::string_view r : *list) {
        size_t end = r.size();
        while (end > 0 && std::isdigit(static_cast<unsigned char>(r[end - 1]))) --end;
        if (end < r.size()) prefixes.intern(r.substr(0, end));
        registers.intern(r);
      }
    }
  }
  // Labels nobody branches to, and declarations nobody uses.
  std::vector<char> drop(f->body.size(), 0);
  for (size_t i = 0; i < f->body.size(); ++i) {
    const Statement& s = f->body[i];
    if (s.kind == StatementKind::kLabel) {
      drop[i] = !symbols.contains(s.text);
    } else if (s.kind == StatementKind::kDeclaration) {
      if (s.decl.space != ptx::StateSpace::kReg) {
        drop[i] = !symbols.contains(s.decl.name);
      } else if (s.decl.range < 0) {
        drop[i] = !registers.contains(s.decl.name);
      } else {
        drop[i] = !prefixes.contains(s.decl.name);
      }
      stats.removed_declarations += drop[i];
    }
  }

  if (kept_params) kept_params->clear();
  std::vector<ptx::VariableDecl> params;
  for (size_t p = 0; p < f->params.size(); ++p) {
    if (!remove_params || !f->is_entry || symbols.contains(f->params[p].name)) {
      params.push_back(f->params[p]);
      if (kept_params) kept_params->push_back(static_cast<int>(p));
    } else {
      ++stats.removed_params;
    }
  }
  eraseMarked(f->body, drop);
  f->params = std::move(params);
  return stats;
}

}  // namespace kfuse::rewriter
