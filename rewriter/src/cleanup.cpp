// Cleanup after fusion: what forwarding and dropped stores leave dead, parameters no part reads, declarations
// nothing uses, and branches to the very next statement (each part's former `ret`).
//
// Dead-code elimination only removes instructions that have no effect besides writing registers: arithmetic,
// moves, conversions, comparisons and plain loads. Anything that touches memory other than by a plain load,
// synchronises, communicates across lanes or sets the carry flag stays, whether or not its result is read.
#include <algorithm>
#include <cctype>
#include <string_view>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/name_table.h"
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
    case Opcode::kAbs:
    case Opcode::kAdd:
    case Opcode::kAnd:
    case Opcode::kBfe:
    case Opcode::kBfi:
    case Opcode::kBfind:
    case Opcode::kBrev:
    case Opcode::kClz:
    case Opcode::kCnot:
    case Opcode::kCopysign:
    case Opcode::kCos:
    case Opcode::kCvt:
    case Opcode::kCvta:
    case Opcode::kDiv:
    case Opcode::kEx2:
    case Opcode::kFma:
    case Opcode::kLg2:
    case Opcode::kLop3:
    case Opcode::kMad:
    case Opcode::kMad24:
    case Opcode::kMax:
    case Opcode::kMin:
    case Opcode::kMov:
    case Opcode::kMul:
    case Opcode::kMul24:
    case Opcode::kNeg:
    case Opcode::kNot:
    case Opcode::kOr:
    case Opcode::kPopc:
    case Opcode::kPrmt:
    case Opcode::kRcp:
    case Opcode::kRem:
    case Opcode::kRsqrt:
    case Opcode::kSad:
    case Opcode::kSelp:
    case Opcode::kSet:
    case Opcode::kSetp:
    case Opcode::kShf:
    case Opcode::kShl:
    case Opcode::kShr:
    case Opcode::kSin:
    case Opcode::kSlct:
    case Opcode::kSqrt:
    case Opcode::kSub:
    case Opcode::kTanh:
    case Opcode::kTestp:
    case Opcode::kXor: return true;
    case Opcode::kLd:
      // A plain load only reads; volatile and ordered loads are observable.
      return !in.has(ptx::Mod::kVolatile) && !in.has(ptx::Mod::kAcquire) && !in.has(ptx::Mod::kRelaxed);
    default: return false;
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

// The registers each statement of a body reads and writes, numbered once by views of their names: the passes
// below run on integers (kernels of tens of thousands of instructions are common after fusion). The body must not
// change while this is used.
struct RegisterRefs {
  explicit RegisterRefs(const std::vector<Statement>& body);
  ptx::NameTable ids;
  // Registers read / written by statement i: reads[read_begin[i] .. read_begin[i + 1]), likewise for writes.
  std::vector<size_t> read_begin, write_begin;
  std::vector<int> reads, writes;
};

RegisterRefs::RegisterRefs(const std::vector<Statement>& body)
    : ids(/*expected=*/body.size()), read_begin(body.size() + 1, 0), write_begin(body.size() + 1, 0) {
  std::vector<std::string_view> defs, uses;
  for (size_t i = 0; i < body.size(); ++i) {
    read_begin[i] = reads.size();
    write_begin[i] = writes.size();
    if (body[i].kind != StatementKind::kInstruction) continue;
    defs.clear();
    uses.clear();
    ptx::instructionDefsUsesViews(body[i].inst, &defs, &uses);
    for (std::string_view r : uses) reads.push_back(ids.intern(r));
    for (std::string_view r : defs) writes.push_back(ids.intern(r));
  }
  read_begin[body.size()] = reads.size();
  write_begin[body.size()] = writes.size();
}

// Marks in `removed` the side-effect-free instructions whose results nobody reads, until none is left; returns how
// many it marked.
int markDeadCode(const std::vector<Statement>& body, const RegisterRefs& refs, std::vector<char>* removed) {
  const size_t n = body.size();
  const size_t nregs = refs.ids.size();
  const auto& reads = refs.reads;
  const auto& writes = refs.writes;
  // The statements defining each register: defined_at[def_begin[r] .. def_begin[r + 1]), in statement order.
  std::vector<int> use_count(nregs, 0);
  std::vector<size_t> def_begin(nregs + 1, 0);
  for (int r : reads) ++use_count[static_cast<size_t>(r)];
  for (int r : writes) ++def_begin[static_cast<size_t>(r) + 1];
  for (size_t r = 0; r < nregs; ++r) def_begin[r + 1] += def_begin[r];
  std::vector<size_t> defined_at(writes.size());
  {
    std::vector<size_t> next(def_begin.begin(), def_begin.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = refs.write_begin[i]; k < refs.write_begin[i + 1]; ++k) {
        defined_at[next[static_cast<size_t>(writes[k])]++] = i;
      }
    }
  }
  std::vector<size_t> work;
  for (size_t i = 0; i < n; ++i) {
    if (body[i].kind == StatementKind::kInstruction) work.push_back(i);
  }
  int count = 0;
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    const auto first_write = writes.begin() + static_cast<std::ptrdiff_t>(refs.write_begin[i]);
    const auto last_write = writes.begin() + static_cast<std::ptrdiff_t>(refs.write_begin[i + 1]);
    if ((*removed)[i] || first_write == last_write || !isPure(body[i].inst)) continue;
    const bool dead =
        std::all_of(first_write, last_write, [&](int r) { return use_count[static_cast<size_t>(r)] == 0; });
    if (!dead) continue;
    (*removed)[i] = 1;
    ++count;
    for (size_t k = refs.read_begin[i]; k < refs.read_begin[i + 1]; ++k) {
      const auto r = static_cast<size_t>(reads[k]);
      if (--use_count[r] == 0) {
        for (size_t d = def_begin[r]; d < def_begin[r + 1]; ++d) work.push_back(defined_at[d]);
      }
    }
  }
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
      next = *body[j].text == target;
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
  // From here on every decision is taken on the body as it is now (by views of its names), and the statements
  // dropped are erased once at the end.
  const RegisterRefs refs(f->body);
  std::vector<char> drop(f->body.size(), 0);
  stats.removed_instructions += markDeadCode(f->body, refs, &drop);

  // What the remaining instructions still refer to. A register of a range declaration (%r<10>) is named by its
  // prefix.
  ptx::NameTable symbols, prefixes;
  std::vector<char> named(refs.ids.size(), 0);
  for (size_t i = 0; i < f->body.size(); ++i) {
    if (f->body[i].kind != StatementKind::kInstruction || drop[i]) continue;
    for (const Operand& o : f->body[i].inst.operands) addSymbols(o, &symbols);
    for (size_t k = refs.read_begin[i]; k < refs.read_begin[i + 1]; ++k) named[static_cast<size_t>(refs.reads[k])] = 1;
    for (size_t k = refs.write_begin[i]; k < refs.write_begin[i + 1]; ++k) {
      named[static_cast<size_t>(refs.writes[k])] = 1;
    }
  }
  for (size_t id = 0; id < named.size(); ++id) {
    if (!named[id]) continue;
    const std::string_view r = refs.ids.name(static_cast<int>(id));
    size_t end = r.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(r[end - 1]))) --end;
    if (end < r.size()) prefixes.intern(r.substr(0, end));
  }
  auto isNamed = [&](std::string_view reg) {
    const int id = refs.ids.find(reg);
    return id >= 0 && named[static_cast<size_t>(id)];
  };
  // Labels nobody branches to, and declarations nobody uses.
  for (size_t i = 0; i < f->body.size(); ++i) {
    const Statement& s = f->body[i];
    if (s.kind == StatementKind::kLabel) {
      drop[i] = !symbols.contains(*s.text);
    } else if (s.kind == StatementKind::kDeclaration) {
      if (s.decl->space != ptx::StateSpace::kReg) {
        drop[i] = !symbols.contains(s.decl->name);
      } else if (s.decl->range < 0) {
        drop[i] = !isNamed(s.decl->name);
      } else {
        drop[i] = !prefixes.contains(s.decl->name);
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
