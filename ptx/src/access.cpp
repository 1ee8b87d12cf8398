// Per-parameter access modes (pointer taint), affine address forms and access guards.
#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "affine_eval.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/special_registers.h"

namespace kfuse::ptx {
namespace {

// Memory instructions whose destination is loaded data, not a value computed from the operands.
bool isMemoryOp(Opcode op) {
  switch (op) {
    case Opcode::kLd:
    case Opcode::kLdu:
    case Opcode::kSt:
    case Opcode::kAtom:
    case Opcode::kRed:
    case Opcode::kTex:
    case Opcode::kTld4:
    case Opcode::kSuld:
    case Opcode::kSust:
    case Opcode::kSured:
    case Opcode::kCp:
    case Opcode::kWmma:
    case Opcode::kMma:
    case Opcode::kWgmma:
    case Opcode::kPrefetch:
    case Opcode::kPrefetchu:
    case Opcode::kMbarrier:
    case Opcode::kLdmatrix:
    case Opcode::kStmatrix:
    case Opcode::kMultimem: return true;
    default: return false;
  }
}

// Non-global state spaces an address can name explicitly.
bool isNonGlobalSpace(const Instruction& in) {
  return in.hasBaseSpace(StateSpace::kShared) || in.hasBaseSpace(StateSpace::kLocal) ||
         in.hasBaseSpace(StateSpace::kParam) || in.hasBaseSpace(StateSpace::kConst);
}

// Whether a memory instruction reads and/or writes through address operand number `idx`.
void accessKind(const Instruction& in, size_t idx, bool* read, bool* write) {
  *read = *write = false;
  switch (in.opcode) {
    case Opcode::kLd:
    case Opcode::kLdu:
    case Opcode::kTex:
    case Opcode::kTld4:
    case Opcode::kSuld:
    case Opcode::kLdmatrix: *read = true; break;
    case Opcode::kSt:
    case Opcode::kSust:
    case Opcode::kStmatrix: *write = true; break;
    case Opcode::kAtom:
    case Opcode::kRed:
    case Opcode::kSured:
    case Opcode::kMbarrier:
    case Opcode::kMultimem: *read = *write = true; break;
    case Opcode::kWmma:
      if (in.has(Mod::kLoad)) {
        *read = true;
      } else if (in.has(Mod::kStore)) {
        *write = true;
      } else {
        *read = *write = true;
      }
      break;
    case Opcode::kCp:
      // cp.async[.bulk] dst, src, ...: the first address is written, the second read
      (idx == 0 ? *write : *read) = true;
      break;
    case Opcode::kPrefetch:
    case Opcode::kPrefetchu: break;  // no data access
    default: *read = *write = true; break;
  }
}

// Bytes moved: the bits of one element of the (last) b/u/s/f type times the vector width; packed types count
// one element (.f16x2 -> 2), as the access size of the instructions analysed here never uses them.
uint32_t accessBytes(const Instruction& in) {
  uint32_t width = 1, bits = 0;
  for (const Modifier& m : in.modifiers) {
    switch (m.asMod()) {
      case Mod::kV2: width = 2; break;
      case Mod::kV4: width = 4; break;
      case Mod::kV8: width = 8; break;
      default: break;
    }
    const DataType t = m.asType();
    const char c = typeClass(t);
    if ((c == 'b' || c == 'u' || c == 's' || c == 'f') && t != DataType::kBF16 && t != DataType::kBF16x2)
      bits = typeElementBits(t);
  }
  return bits ? bits / 8 * width : 0;
}

bool isPointerCandidate(const VariableDecl& p) {
  return p.dims.empty() && p.vector == 0 && p.elementSize() == 8 && p.type != DataType::kF64;
}

std::string lineOf(const Statement& st) {
  return "line " + std::to_string(st.loc.line);
}

// Registers tainted by each parameter (flow-insensitive: any definition from a tainted source taints).
struct Taint {
  std::unordered_map<std::string, std::set<int>> by_reg;
  const std::set<int>* of(const Operand& o) const {
    if (o.kind != OperandKind::kRegister) return nullptr;
    auto it = by_reg.find(o.name);
    return it == by_reg.end() || it->second.empty() ? nullptr : &it->second;
  }
};

Taint computeTaint(const Function& f, std::vector<ParamAccess>* out) {
  Taint t;
  std::vector<std::string> work;  // registers whose taint grew
  auto add = [&](const std::string& reg, const std::set<int>& ps) {
    auto& s = t.by_reg[reg];
    const size_t before = s.size();
    s.insert(ps.begin(), ps.end());
    if (s.size() != before) work.push_back(reg);
  };
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (f.params[i].space == StateSpace::kReg && isPointerCandidate(f.params[i]))
      add(f.params[i].name, {static_cast<int>(i)});
  }
  // Value-propagating instructions indexed by the registers they read (a worklist keeps this linear in the
  // number of def-use edges times the number of parameters, whatever the statement order).
  std::unordered_map<std::string, std::vector<size_t>> users;
  std::vector<std::vector<std::string>> defs_of(f.body.size()), uses_of(f.body.size());
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Statement& st = f.body[i];
    if (st.kind != StatementKind::kInstruction) continue;
    const Instruction& in = st.inst;
    if (in.opcode == Opcode::kLd && in.hasBaseSpace(StateSpace::kParam) && in.operands.size() >= 2 &&
        in.operands[1].kind == OperandKind::kAddress && !in.operands[1].elements.empty()) {
      const int p = f.paramIndex(in.operands[1].elements[0].name);
      if (p >= 0 && isPointerCandidate(f.params[static_cast<size_t>(p)])) {
        std::vector<std::string> defs;
        instructionDefsUses(in, &defs, nullptr);
        for (const auto& d : defs) add(d, {p});
      }
      continue;
    }
    if (isMemoryOp(in.opcode) || in.opcode == Opcode::kCall) continue;
    for (const Operand& o : in.operands) {
      if (o.kind != OperandKind::kSymbol || !out || in.opcode != Opcode::kMov) continue;
      const int p = f.paramIndex(o.name);
      if (p < 0) continue;
      auto& a = (*out)[static_cast<size_t>(p)];
      if (a.mode != AccessMode::kNotPointer && a.mode != AccessMode::kUnknown) {
        a.mode = AccessMode::kUnknown;
        a.reason = "address of the parameter taken at " + lineOf(st);
      }
    }
    instructionDefsUses(in, &defs_of[i], &uses_of[i]);
    if (defs_of[i].empty()) continue;
    for (const auto& u : uses_of[i]) users[u].push_back(i);
  }
  while (!work.empty()) {
    const std::string reg = std::move(work.back());
    work.pop_back();
    auto it = users.find(reg);
    if (it == users.end()) continue;
    const std::set<int> ps = t.by_reg[reg];
    for (size_t i : it->second) {
      for (const auto& d : defs_of[i]) add(d, ps);
    }
  }
  return t;
}

}  // namespace

const char* accessModeName(AccessMode m) {
  switch (m) {
    case AccessMode::kNotAccessed: return "not-accessed";
    case AccessMode::kRead: return "read";
    case AccessMode::kWrite: return "write";
    case AccessMode::kReadWrite: return "read-write";
    case AccessMode::kUnknown: return "unknown";
    case AccessMode::kNotPointer: return "not-pointer";
  }
  return "unknown";
}

namespace {

constexpr int kMaxCallDepth = 8;

struct CalleeCache {
  std::map<const Function*, std::vector<ParamAccess>> done;
  std::set<const Function*> in_progress;
};

std::vector<ParamAccess> paramAccessImpl(const Function& f, const Module* module, CalleeCache& cache, int depth);

// Access modes of `callee`'s parameters, or nullptr when it cannot be followed (no body, recursion, too deep).
const std::vector<ParamAccess>* calleeAccess(const Module* module, const std::string& name, CalleeCache& cache,
                                             int depth) {
  if (!module || depth >= kMaxCallDepth) return nullptr;
  const Function* g = nullptr;
  for (const auto& fn : module->functions) {
    if (fn.name == name && fn.has_body) g = &fn;
  }
  if (!g || cache.in_progress.count(g)) return nullptr;
  auto it = cache.done.find(g);
  if (it == cache.done.end()) {
    cache.in_progress.insert(g);
    auto modes = paramAccessImpl(*g, module, cache, depth + 1);
    cache.in_progress.erase(g);
    it = cache.done.emplace(g, std::move(modes)).first;
  }
  return &it->second;
}

std::vector<ParamAccess> paramAccessImpl(const Function& f, const Module* module, CalleeCache& cache, int depth) {
  std::vector<ParamAccess> out(f.params.size());
  for (size_t i = 0; i < f.params.size(); ++i) {
    out[i].name = f.params[i].name;
    out[i].index = static_cast<int>(i);
    out[i].mode = isPointerCandidate(f.params[i]) ? AccessMode::kNotAccessed : AccessMode::kNotPointer;
  }
  const Taint taint = computeTaint(f, &out);
  auto escape = [&](const std::set<int>& ps, const std::string& why) {
    for (int p : ps) {
      auto& a = out[static_cast<size_t>(p)];
      if (a.mode == AccessMode::kUnknown) continue;
      a.mode = AccessMode::kUnknown;
      a.reason = why;
    }
  };
  auto isReturnParam = [&](const std::string& n) {
    for (const auto& r : f.returns) {
      if (r.name == n) return true;
    }
    return false;
  };
  // call arguments: .param symbol -> parameters whose pointer was stored into it (st.param before the call)
  std::map<std::string, std::pair<std::set<int>, std::string>> pending;
  for (const auto& st : f.body) {
    if (st.kind != StatementKind::kInstruction) continue;
    const Instruction& in = st.inst;
    if (in.opcode == Opcode::kSt && in.hasBaseSpace(StateSpace::kParam) && in.operands.size() >= 2 &&
        in.operands[0].kind == OperandKind::kAddress && !in.operands[0].elements.empty() &&
        in.operands[0].elements[0].kind == OperandKind::kSymbol && !isReturnParam(in.operands[0].elements[0].name)) {
      std::set<int> ps;
      for (size_t k = 1; k < in.operands.size(); ++k) {
        std::vector<const Operand*> vals{&in.operands[k]};
        for (const auto& e : in.operands[k].elements) vals.push_back(&e);
        for (const Operand* v : vals) {
          if (const auto* t = taint.of(*v)) ps.insert(t->begin(), t->end());
        }
      }
      if (!ps.empty()) {
        auto& slot = pending[in.operands[0].elements[0].name];
        slot.first.insert(ps.begin(), ps.end());
        slot.second = lineOf(st);
      }
      continue;
    }
    if (in.opcode == Opcode::kCall) {
      // call[.uni] [(rets),] target, [(args)] [, prototype]
      const Operand* target = nullptr;
      const Operand* args = nullptr;
      for (const auto& o : in.operands) {
        if (!target && o.kind != OperandKind::kList) {
          target = &o;
        } else if (target && !args && o.kind == OperandKind::kList) {
          args = &o;
        }
        if (const auto* ps = taint.of(o)) escape(*ps, "used as an indirect call target at " + lineOf(st));
      }
      if (args) {
        for (size_t k = 0; k < args->elements.size(); ++k) {
          auto it = pending.find(args->elements[k].name);
          if (it == pending.end()) continue;
          const std::set<int>& ps = it->second.first;
          const std::string callee = target && target->kind == OperandKind::kSymbol ? target->name : "an indirect call";
          const auto* modes = target && target->kind == OperandKind::kSymbol
                                  ? calleeAccess(module, target->name, cache, depth)
                                  : nullptr;
          if (!modes || k >= modes->size()) {
            escape(ps, "passed to " + callee + " at " + lineOf(st) + ", which cannot be followed");
            continue;
          }
          const ParamAccess& cm = (*modes)[k];
          switch (cm.mode) {
            case AccessMode::kRead:
            case AccessMode::kWrite:
            case AccessMode::kReadWrite:
              for (int p : ps) {
                out[static_cast<size_t>(p)].reads += cm.reads > 0 || cm.mode != AccessMode::kWrite;
                out[static_cast<size_t>(p)].writes += cm.writes > 0 || cm.mode != AccessMode::kRead;
              }
              break;
            case AccessMode::kNotAccessed: break;
            default:
              escape(ps, "passed to " + callee + " at " + lineOf(st) + " (" +
                             (cm.reason.empty() ? accessModeName(cm.mode) : cm.reason) + ")");
              break;
          }
          pending.erase(it);
        }
      }
      continue;
    }
    if (!isMemoryOp(in.opcode)) continue;
    size_t addr_idx = 0;
    for (const auto& o : in.operands) {
      if (o.kind == OperandKind::kAddress) {
        if (!o.elements.empty()) {
          if (const auto* ps = taint.of(o.elements[0])) {
            bool r, w;
            accessKind(in, addr_idx, &r, &w);
            for (int p : *ps) {
              out[static_cast<size_t>(p)].reads += r;
              out[static_cast<size_t>(p)].writes += w;
            }
          }
        }
        ++addr_idx;
        continue;
      }
      // a pointer value used as data by a memory instruction escapes (stored to memory, returned, ...)
      std::vector<const Operand*> vals{&o};
      if (o.kind == OperandKind::kVector)
        for (const auto& e : o.elements) vals.push_back(&e);
      for (const Operand* v : vals) {
        const auto* ps = taint.of(*v);
        if (!ps) continue;
        if (&o == &in.operands[0] &&
            !(in.opcode == Opcode::kSt || in.opcode == Opcode::kRed || in.opcode == Opcode::kSust))
          continue;
        const std::string what =
            in.hasBaseSpace(StateSpace::kParam) ? "returned or passed through .param" : "stored to memory";
        escape(*ps, "pointer " + what + " at " + lineOf(st) + " (" + in.fullOpcode() + ")");
      }
    }
  }
  for (const auto& [sym, slot] : pending) escape(slot.first, "stored to .param " + sym + " at " + slot.second);
  for (auto& a : out) {
    if (a.mode != AccessMode::kNotAccessed) continue;
    if (a.reads && a.writes) {
      a.mode = AccessMode::kReadWrite;
    } else if (a.reads) {
      a.mode = AccessMode::kRead;
    } else if (a.writes) {
      a.mode = AccessMode::kWrite;
    }
  }
  return out;
}

}  // namespace

std::vector<ParamAccess> analyzeParamAccess(const Function& f, const Cfg& /*cfg*/, const DefUse& /*du*/,
                                            const Module* module) {
  CalleeCache cache;
  cache.in_progress.insert(&f);
  return paramAccessImpl(f, module, cache, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Memory accesses

namespace {

using affine::Evaluator;
using affine::isIntegerType;

// A setp comparison modifier as an operator, negated when `negate`; unsigned for .lo/.ls/.hi/.hs.
std::optional<CmpOp> comparison(Mod cmp, bool negate, bool* is_unsigned) {
  struct Row {
    Mod mod;
    CmpOp op, neg;
    bool is_unsigned;
  };
  static constexpr Row kRows[] = {{Mod::kEq, CmpOp::kEq, CmpOp::kNe, false}, {Mod::kNe, CmpOp::kNe, CmpOp::kEq, false},
                                  {Mod::kLt, CmpOp::kLt, CmpOp::kGe, false}, {Mod::kLe, CmpOp::kLe, CmpOp::kGt, false},
                                  {Mod::kGt, CmpOp::kGt, CmpOp::kLe, false}, {Mod::kGe, CmpOp::kGe, CmpOp::kLt, false},
                                  {Mod::kLo, CmpOp::kLt, CmpOp::kGe, true},  {Mod::kLs, CmpOp::kLe, CmpOp::kGt, true},
                                  {Mod::kHi, CmpOp::kGt, CmpOp::kLe, true},  {Mod::kHs, CmpOp::kGe, CmpOp::kLt, true}};
  for (const auto& r : kRows) {
    if (cmp == r.mod) {
      *is_unsigned = r.is_unsigned;
      return negate ? r.neg : r.op;
    }
  }
  return std::nullopt;
}

// Signedness and width of an integer setp type (.s32, .u64, .b16); nullopt for other types.
std::optional<std::pair<bool, int>> integerType(DataType t) {
  const char c = typeClass(t);
  const uint32_t bits = typeElementBits(t);
  if ((c != 's' && c != 'u' && c != 'b') || typeElements(t) != 1) return std::nullopt;
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return std::nullopt;
  return std::make_pair(c == 's', static_cast<int>(bits));
}

std::string joinConditions(const std::vector<GuardCondition>& c) {
  std::string s;
  for (size_t i = 0; i < c.size(); ++i) s += (i ? " && " : "") + c[i].text;
  return s;
}

GuardCondition opaque(std::string text) {
  GuardCondition c;
  c.text = std::move(text);
  return c;
}

class GuardBuilder {
 public:
  GuardBuilder(const Function& f, const DefUse& du, Evaluator& ev) : f_(f), du_(du), ev_(ev) {}

  // The conjuncts of predicate `p` (or of its negation) as read at statement `stmt`.
  std::vector<GuardCondition> predicate(const std::string& p, size_t stmt, bool negate, int depth = 0) {
    const std::string plain = (negate ? "!" : "") + p;
    if (depth > 8) return {opaque(plain)};
    const auto defs = du_.reachingDefs(stmt, p);
    if (defs.size() != 1) return {opaque(plain)};
    const size_t d = defs[0];
    const Instruction& in = f_.body[d].inst;
    if (!in.guard.empty()) return {opaque(plain)};
    const auto& o = in.operands;
    if (in.opcode == Opcode::kSetp && o.size() >= 3 && !in.modifiers.empty()) {
      if (o.size() >= 4) return {opaque(plain)};  // setp.CMP.BOOLOP with a third predicate operand
      const bool neg = negate != (*o[0].pair == p);
      const bool is_int = isIntegerType(in);
      bool is_unsigned = false;
      const std::optional<CmpOp> op = comparison(in.modifiers[0].asMod(), is_int && neg, &is_unsigned);
      std::string why;
      const std::optional<AffineExpr> lhs = ev_.operand(o[1], d, 0, &why);
      const std::optional<AffineExpr> rhs = ev_.operand(o[2], d, 0, &why);
      const std::string l = lhs ? lhs->toString() : o[1].name, r = rhs ? rhs->toString() : o[2].name;
      GuardCondition c;
      if (op) {
        c.text = l + " " + cmpOpSymbol(*op) + " " + r;
      } else {
        c.text = l + " " + std::string(in.modifierText(in.modifiers[0]).substr(1)) + " " + r;
      }
      if (!is_int) {
        // A float comparison negated is not the opposite comparison (NaN): it stays text.
        if (neg) c.text = "!(" + c.text + ")";
        return {c};
      }
      const std::optional<std::pair<bool, int>> type =
          in.modifiers.size() >= 2 ? integerType(in.modifiers[1].asType()) : std::nullopt;
      if (op && lhs && rhs && type) {
        c.structured = true;
        c.lhs = *lhs;
        c.rhs = *rhs;
        c.cmp = *op;
        c.is_signed = type->first && !is_unsigned;
        c.bits = type->second;
      }
      return {c};
    }
    if (in.opcode == Opcode::kNot && o.size() == 2 && o[1].kind == OperandKind::kRegister)
      return predicate(o[1].name, d, !negate, depth + 1);
    if (in.opcode == Opcode::kMov && o.size() == 2 && o[1].kind == OperandKind::kRegister)
      return predicate(o[1].name, d, negate, depth + 1);
    if ((in.opcode == Opcode::kAnd || in.opcode == Opcode::kOr) && o.size() == 3 &&
        o[1].kind == OperandKind::kRegister && o[2].kind == OperandKind::kRegister) {
      const bool is_and = (in.opcode == Opcode::kAnd) != negate;  // De Morgan
      std::vector<GuardCondition> a = predicate(o[1].name, d, negate, depth + 1);
      std::vector<GuardCondition> b = predicate(o[2].name, d, negate, depth + 1);
      if (is_and) {
        a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
        return a;
      }
      return {opaque("(" + joinConditions(a) + " || " + joinConditions(b) + ")")};
    }
    return {opaque(plain)};
  }

 private:
  const Function& f_;
  const DefUse& du_;
  Evaluator& ev_;
};

}  // namespace

const char* cmpOpSymbol(CmpOp op) {
  switch (op) {
    case CmpOp::kEq: return "==";
    case CmpOp::kNe: return "!=";
    case CmpOp::kLt: return "<";
    case CmpOp::kLe: return "<=";
    case CmpOp::kGt: return ">";
    case CmpOp::kGe: return ">=";
  }
  return "?";
}

namespace {

// Blocks visited by reachedWhenGuarded, stamped per call so that no call clears (or allocates) a whole-kernel array.
struct ReachScratch {
  std::vector<uint32_t> stamp;
  uint32_t generation = 0;
  std::vector<int> work;
};

// How far a question about one access may look: blocks visited by reachedWhenGuarded, and dominators walked for
// guards. Past them the access's guard is not called exact (sound: only proofs that need an exact guard are lost),
// so a generated kernel of a million blocks costs linear time, not quadratic.
constexpr size_t kMaxReachVisits = 4096;
constexpr int kMaxGuardWalk = 512;

// Whether a thread that takes none of the `wrong_way` edges surely reaches statement `stmt` of block `b`: no path
// from the entry that avoids them and `b` can end the thread, and nothing in `b` before `stmt` can end it either.
// False also when the search needs more than kMaxReachVisits blocks.
bool reachedWhenGuarded(const Cfg& cfg, int b, size_t stmt, const std::vector<std::pair<int, int>>& wrong_way,
                        const std::vector<char>& can_leave, const std::vector<size_t>& first_exit,
                        ReachScratch& scratch) {
  const auto& blocks = cfg.blocks();
  if (first_exit[static_cast<size_t>(b)] < stmt) return false;  // a ret/exit before it in its block
  if (b == 0) return true;
  if (scratch.stamp.size() != blocks.size() || ++scratch.generation == 0) {
    scratch.stamp.assign(blocks.size(), 0);
    scratch.generation = 1;
  }
  const uint32_t g = scratch.generation;
  std::vector<int>& work = scratch.work;
  work.assign(1, 0);
  scratch.stamp[0] = g;
  size_t visits = 0;
  while (!work.empty()) {
    const int x = work.back();
    work.pop_back();
    if (can_leave[static_cast<size_t>(x)] || ++visits > kMaxReachVisits) return false;
    for (int s : blocks[static_cast<size_t>(x)].succs) {
      if (s < 0 || s == b || scratch.stamp[static_cast<size_t>(s)] == g) continue;
      if (std::find(wrong_way.begin(), wrong_way.end(), std::pair{x, s}) != wrong_way.end()) continue;
      scratch.stamp[static_cast<size_t>(s)] = g;
      work.push_back(s);
    }
  }
  return true;
}

}  // namespace

std::string MemoryAccess::guardText() const {
  return guard.empty() ? "true" : joinConditions(guard);
}

std::vector<MemoryAccess> analyzeMemoryAccesses(const Function& f, const Cfg& cfg, const Dominators& dom,
                                                const DefUse& du) {
  std::vector<MemoryAccess> out;
  Evaluator ev(f, du);
  GuardBuilder gb(f, du, ev);
  ReachScratch reach;
  std::optional<Taint> taint;  // computed on first need: most addresses are affine in one parameter
  const auto& blocks = cfg.blocks();
  const std::vector<char> in_loop = blocksInLoops(cfg);
  std::vector<char> can_leave(blocks.size(), 0);  // the block may end the thread (ret/exit, or no successor)
  // Each block's first ret/exit (SIZE_MAX: none), found once: looking for it again at each access of a block made a
  // straight-line kernel of a million instructions quadratic.
  std::vector<size_t> first_exit(blocks.size(), SIZE_MAX);
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t k = blocks[b].begin; k < blocks[b].end; ++k) {
      const Statement& st = f.body[k];
      if (st.kind == StatementKind::kInstruction &&
          (st.inst.opcode == Opcode::kRet || st.inst.opcode == Opcode::kExit)) {
        first_exit[b] = k;
        break;
      }
    }
    can_leave[b] = blocks[b].succs.empty() || first_exit[b] != SIZE_MAX;
  }
  auto mayAccessGlobal = [](const Statement& st) {
    if (st.kind != StatementKind::kInstruction) return false;
    const Opcode op = st.inst.opcode;
    return (op == Opcode::kLd || op == Opcode::kLdu || op == Opcode::kSt || op == Opcode::kAtom ||
            op == Opcode::kRed) &&
           !isNonGlobalSpace(st.inst);
  };
  // Room for every access up front (a bound: those without an address are skipped below). Growth by doubling left
  // up to half of a huge kernel's accesses' bytes unused, and trimming it afterwards would hold both copies at once.
  out.reserve(static_cast<size_t>(std::count_if(f.body.begin(), f.body.end(), mayAccessGlobal)));
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Statement& st = f.body[i];
    if (!mayAccessGlobal(st)) continue;
    const Instruction& in = st.inst;
    const Operand* addr = nullptr;
    for (const auto& o : in.operands) {
      if (o.kind == OperandKind::kAddress) {
        addr = &o;
        break;
      }
    }
    if (!addr || addr->elements.empty()) continue;
    MemoryAccess a;
    a.stmt = i;
    a.line = st.loc.line;
    a.opcode = in.fullOpcode();
    a.op = in.opcode;
    accessKind(in, 0, &a.is_read, &a.is_write);
    a.bytes = accessBytes(in);
    std::string why;
    const Operand& base = addr->elements[0];
    std::optional<AffineExpr> e;
    if (base.kind == OperandKind::kSymbol) {
      e = AffineExpr::atom(base.name) + AffineExpr::constant(base.offset);  // NOLINT
    } else {
      e = ev.operand(base, i, 0, &why);
    }
    if (e) {
      a.address = *e + AffineExpr::constant(addr->offset);
      int found = -1, count = 0;
      for (const auto& [k, v] : a.address->terms) {
        if (k.size() == 1 && v == 1 && k[0].rfind("param", 0) == 0 && k[0].find('[') == std::string::npos) {
          const int p = std::atoi(k[0].c_str() + 5);
          if (p >= 0 && static_cast<size_t>(p) < f.params.size()) {
            found = p;
            ++count;
          }
        }
      }
      if (count == 1) {
        a.base_param = found;
        a.offset = *a.address - AffineExpr::atom("param" + std::to_string(found));
      }
    } else {
      a.not_affine_reason = why;
    }
    if (a.base_param >= 0) {
      a.pointer_params = {a.base_param};
    } else {
      if (!taint) taint = computeTaint(f, nullptr);
      if (const auto* ps = taint->of(base)) a.pointer_params.assign(ps->begin(), ps->end());
    }
    // guards: the instruction's own predicate, then each dominating conditional branch whose taken or
    // fall-through edge is the only way into a block that dominates this one
    auto addGuard = [&a](std::vector<GuardCondition> c) {
      a.guard.insert(a.guard.end(), std::make_move_iterator(c.begin()), std::make_move_iterator(c.end()));
    };
    if (!in.guard.empty()) addGuard(gb.predicate(in.guard, i, in.guard_negated));
    const int b = cfg.blockOf(i);
    std::vector<std::pair<int, int>> wrong_way;  // CFG edges a thread meeting every guard never takes
    bool guard_in_loop = false;                  // a guard is decided inside a loop: it may hold only sometimes
    bool walked_all = true;                      // every dominator up to the entry was looked at
    int walked = 0;
    for (int cur = b; cur > 0;) {
      if (++walked > kMaxGuardWalk) {
        walked_all = false;
        break;
      }
      const int d = dom.idom(cur);
      if (d < 0) break;
      const BasicBlock& db = blocks[static_cast<size_t>(d)];
      const Statement& last = f.body[db.end - 1];
      if (last.kind == StatementKind::kInstruction && last.inst.opcode == Opcode::kBra && !last.inst.guard.empty() &&
          db.succs.size() == 2) {
        const int fall = d + 1;
        for (int s : db.succs) {
          const BasicBlock& sb = blocks[static_cast<size_t>(s)];
          if (sb.preds.size() != 1 || !dom.dominates(s, b)) continue;
          const bool taken = s != fall;
          const bool negate = taken ? last.inst.guard_negated : !last.inst.guard_negated;
          addGuard(gb.predicate(last.inst.guard, db.end - 1, negate));
          for (int other : db.succs) {
            if (other != s) wrong_way.emplace_back(d, other);
          }
          guard_in_loop = guard_in_loop || in_loop[static_cast<size_t>(d)];
        }
      }
      cur = d;
    }
    if (b >= 0) {
      a.in_loop = in_loop[static_cast<size_t>(b)] != 0;
      a.guard_exact =
          !cfg.hasIndirectBranch() && !guard_in_loop && walked_all &&
          std::all_of(a.guard.begin(), a.guard.end(), [](const GuardCondition& g) { return g.structured; }) &&
          reachedWhenGuarded(cfg, b, i, wrong_way, can_leave, first_exit, reach);
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace kfuse::ptx
