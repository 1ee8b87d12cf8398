// Grid-stride kernels as one element per thread, in the one-loop form and in the layout nvcc gives the loop when it
// unrolls it (loops.h, gridStrideElementView).
//
// The unrolled layout is accepted by evaluating its code symbolically. Integer values are linear combinations of
// atoms: `i` (the iteration's index), `step` (the launch's thread count), `gid`, `n`, parameter values, and opaque
// operations (interned, so that two equal operations on equal operands are one atom). The arithmetic is exact where
// the values are known to be small: 64-bit sums and constant multiples are exact modulo 2^64; a 32-bit sum is taken
// as linear only when it is an index of the loop (i + b * step, 0 <= b <= U), which stays below 2^31 for every
// iteration that runs (the caller's bound n + step < 2^31); any other 32-bit value stays an opaque operation, so
// that two values compare equal only when they are computed by the same operations. The trip count is evaluated
// modulo 2^32, where its value is exact because it lies in [0, n).
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "kfuse/ptx/loops.h"
#include "kfuse/ptx/special_registers.h"
#include "loops_impl.h"

namespace kfuse::ptx {

namespace {

using detail::branchTarget;
using detail::defines;
using detail::instructionsOf;

constexpr const char* kIndex = "i";
constexpr const char* kStep = "step";
constexpr const char* kGid = "gid";
constexpr const char* kBound = "n";
constexpr const char* kTripCount = "<trip>";
constexpr const char* kRemainder = "<rem>";
constexpr const char* kCounter = "<count>";
constexpr const char* kTid = "%tid.x";
constexpr const char* kBlockStart = "mul(%ctaid.x,%ntid.x)";
constexpr size_t kMaxNodes = 200000;
constexpr int kMaxUnroll = 16;
constexpr size_t kMaxTerms = 32;  // atoms of one linear value kept apart

// c0 + sum of coefficient * atom, modulo 2^64 (or 2^32: `narrow`).
struct Lin {
  std::map<std::string, uint64_t> terms;
  uint64_t k = 0;

  static Lin atom(std::string a) {
    Lin l;
    l.terms[std::move(a)] = 1;
    return l;
  }
  static Lin constant(uint64_t c) {
    Lin l;
    l.k = c;
    return l;
  }
  bool isConstant() const { return terms.empty(); }
  Lin plus(const Lin& o, uint64_t scale = 1) const {
    Lin r = *this;
    r.k += o.k * scale;
    for (const auto& [a, c] : o.terms) r.terms[a] += c * scale;
    return r.tidy();
  }
  Lin times(uint64_t c) const {
    Lin r;
    r.k = k * c;
    for (const auto& [a, x] : terms) r.terms[a] = x * c;
    return r.tidy();
  }
  Lin tidy() {
    for (auto it = terms.begin(); it != terms.end();) it = it->second == 0 ? terms.erase(it) : std::next(it);
    return *this;
  }
  Lin narrow() const {
    Lin r;
    r.k = k & 0xffffffffu;
    for (const auto& [a, c] : terms) r.terms[a] = c & 0xffffffffu;
    return r.tidy();
  }
  bool nonNegative() const {
    if (static_cast<int64_t>(k) < 0) return false;
    for (const auto& [a, c] : terms) {
      if (a.rfind("v:", 0) == 0) return false;  // a parameter of either sign
    }
    return true;
  }
  std::string text() const {
    if (terms.empty()) return "#" + std::to_string(static_cast<int64_t>(k));
    if (terms.size() == 1 && terms.begin()->second == 1 && k == 0) return terms.begin()->first;
    std::string t = "lin(" + std::to_string(static_cast<int64_t>(k));
    for (const auto& [a, c] : terms) t += ";" + std::to_string(static_cast<int64_t>(c)) + "*" + a;
    return t + ")";
  }
  bool operator==(const Lin& o) const { return k == o.k && terms == o.terms; }
};

std::optional<uint64_t> integerImmediate(std::string_view t) {
  const auto v = parseIntegerLiteral(t);
  if (!v) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

// Opaque operations, interned: equal texts are one atom. Shared by the evaluations of one function, with the
// parameter values they assume small.
class Nodes {
 public:
  std::set<std::string> small;  // parameter values assumed within +-kGridStrideIndexMargin (index offsets)

  std::optional<std::string> intern(const std::string& text) {
    auto [it, fresh] = ids_.try_emplace(text, ids_.size());
    if (fresh && ids_.size() > kMaxNodes) return std::nullopt;
    return "@" + std::to_string(it->second);
  }

 private:
  std::map<std::string, size_t> ids_;
};

// Instructions whose result is a function of their operands alone, for this evaluation: ValueNumbering's and the
// floating-point and bit operations an element-wise body computes with (approximate ones included: the same inputs
// give the same result on one device).
bool valueOpcode(Opcode op) {
  if (detail::pureOpcode(op)) return true;
  switch (op) {
    case Opcode::kFma:
    case Opcode::kEx2:
    case Opcode::kLg2:
    case Opcode::kRcp:
    case Opcode::kSqrt:
    case Opcode::kRsqrt:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kTanh:
    case Opcode::kCopysign:
    case Opcode::kTestp:
    case Opcode::kSet:
    case Opcode::kSlct:
    case Opcode::kCnot:
    case Opcode::kBfe:
    case Opcode::kBfi:
    case Opcode::kBfind:
    case Opcode::kBrev:
    case Opcode::kClz:
    case Opcode::kPopc:
    case Opcode::kPrmt:
    case Opcode::kLop3:
    case Opcode::kShf:
    case Opcode::kSad:
    case Opcode::kFns: return true;
    default: return false;
  }
}

enum class Mode {
  kExact,  // in a loop: 32-bit sums linear only as indices
  kTrip,   // the trip count: 32-bit arithmetic modulo 2^32
};

// Symbolic evaluation of straight-line statements; see the file comment.
class Evaluator {
 public:
  Evaluator(const Function& f, const ValueNumbering& vn, Nodes& nodes, Mode mode, int unroll, std::string bound)
      : f_(f), vn_(vn), nodes_(nodes), mode_(mode), unroll_(unroll), bound_(std::move(bound)) {}

  std::map<std::string, Lin, std::less<>> env;
  std::vector<std::string> effects;

  // While set, the code evaluated is a preheader run for the iteration with index `index`: the thread's index gid
  // (or its parts %tid.x and %ctaid.x * %ntid.x, summed) stands for that index, as at the loop's first iteration.
  void preheaderOf(std::optional<Lin> index) { preheader_ = std::move(index); }
  size_t loads = 0;  // the next load's number
  int remainder_mask = 0;
  std::string error;

  // Evaluates statements [begin, end), skipping `skip` (branches are the caller's).
  bool run(size_t begin, size_t end, const std::vector<size_t>& skip = {}) {
    for (size_t s = begin; s < end && error.empty(); ++s) {
      if (f_.body[s].kind != StatementKind::kInstruction) continue;
      if (std::find(skip.begin(), skip.end(), s) != skip.end()) continue;
      step(s);
    }
    return error.empty();
  }

  std::optional<Lin> value(const Operand& o, size_t stmt) {
    if (o.kind == OperandKind::kImmediate) {
      if (auto v = integerImmediate(o.name)) return Lin::constant(*v);
      return Lin::atom("imm:" + o.name);
    }
    if (o.kind != OperandKind::kRegister) return fail("an operand it does not model", stmt);
    if (isSpecialRegister(o.name)) return fail("it reads " + o.name + " in its loop", stmt);
    std::optional<Lin> v;
    if (auto it = env.find(o.name); it != env.end()) {
      v = it->second;
    } else {
      v = outside(o.name, stmt);
    }
    if (!v) return std::nullopt;
    if (!o.negated) return v;
    return opaque("!", {*v}, stmt);
  }

 private:
  std::optional<Lin> fail(const std::string& why, size_t stmt) {
    if (error.empty()) error = why + " (line " + std::to_string(f_.body[stmt].loc.line) + ")";
    return std::nullopt;
  }

  // A register set before the evaluated code: its value as ValueNumbering names it.
  std::optional<Lin> outside(const std::string& reg, size_t stmt) {
    const auto text = vn_.registerValue(reg, stmt);
    if (!text)
      return fail("it carries " + reg + " from one iteration to the next, or reads a value set on one path", stmt);
    const auto tree = detail::parseValue(*text);
    const std::string canonical = tree ? detail::canonicalIndex(*tree).text() : std::string();
    if (canonical == detail::kLaunchThreads) return Lin::atom(kStep);
    if (preheader_ && canonical == detail::kLaunchIndex) return *preheader_;
    if (preheader_ && (canonical == kTid || canonical == kBlockStart)) return Lin::atom(canonical);
    if (mode_ == Mode::kTrip && canonical == detail::kLaunchIndex) return Lin::atom(kGid);
    if (mode_ == Mode::kTrip && *text == bound_) return Lin::atom(kBound);
    if (text->find('%') == std::string::npos) return Lin::atom("v:" + *text);
    if (mode_ == Mode::kExact && tree) {
      if (auto l = scaledStep(*tree)) return l;
    }
    return fail("its loop reads " + reg + ", a value of the launch", stmt);
  }

  // The launch's thread count, widened or times a constant (the byte stride of a pointer), as a linear value.
  std::optional<Lin> scaledStep(const detail::ValueTree& t) const {
    if (detail::canonicalIndex(t).text() == detail::kLaunchThreads) return Lin::atom(kStep);
    const bool widen = t.op == "cvt.s64.s32" || t.op == "cvt.u64.u32" || t.op.rfind("mov.", 0) == 0;
    if (widen && t.children.size() == 1) return scaledStep(t.children[0]);
    const bool scale = t.op == "mul.wide.s32" || t.op == "mul.wide.u32" || t.op == "mul.lo.s64" || t.op == "shl.b64";
    if (!scale || t.children.size() != 2 || !t.children[1].children.empty()) return std::nullopt;
    const auto c = integerImmediate(t.children[1].op);
    auto x = scaledStep(t.children[0]);
    if (!c || !x || (*c >> 31) != 0 || (t.op == "shl.b64" && *c > 30)) return std::nullopt;
    return x->times(t.op == "shl.b64" ? uint64_t{1} << *c : *c);
  }

  std::optional<Lin> opaque(const std::string& op, const std::vector<Lin>& xs, size_t stmt) {
    std::string t = op + "(";
    for (size_t i = 0; i < xs.size(); ++i) t += (i ? "," : "") + xs[i].text();
    auto id = nodes_.intern(t + ")");
    if (!id) return fail("its code is too large to compare", stmt);
    return Lin::atom(*id);
  }

  // Whether a 32-bit value is an index of the loop, give or take a little, which stays in (-2^31, 2^31) for every
  // iteration that runs (the caller's bound on n): i + b * step + p + c, with 0 <= b <= U, p at most one parameter
  // assumed within +-kGridStrideIndexMargin (recorded in `small`), |c| <= kGridStrideIndexMargin; in a preheader,
  // %tid.x and %ctaid.x * %ntid.x may also appear once each (parts of gid, at most 2^31 together).
  bool isIndex(const Lin& l) {
    const int64_t c = static_cast<int64_t>(l.k);
    if (c < -kGridStrideIndexMargin || c > kGridStrideIndexMargin || l.terms.empty()) return false;
    int params = 0;
    for (const auto& [a, x] : l.terms) {
      if (a == kIndex || ((a == kTid || a == kBlockStart) && preheader_)) {
        if (x != 1) return false;
      } else if (a == kStep) {
        if (x < 1 || x > static_cast<uint64_t>(unroll_)) return false;
      } else if (smallParameter(a)) {
        if (x != 1 || ++params > 1) return false;
      } else {
        return false;
      }
    }
    for (const auto& [a, x] : l.terms) {
      if (smallParameter(a)) nodes_.small.insert(a);
    }
    return true;
  }

  // A 32-bit parameter's value, loaded as it is.
  static bool smallParameter(const std::string& a) {
    return (a.rfind("v:ld.param.u32(param:", 0) == 0 || a.rfind("v:ld.param.s32(param:", 0) == 0) && a.size() > 3 &&
           a.compare(a.size() - 3, 3, "+0)") == 0;
  }

  // gid's two parts summed become the preheader's index.
  Lin joinGid(Lin l) const {
    const auto t = l.terms.find(kTid), b = l.terms.find(kBlockStart);
    if (!preheader_ || t == l.terms.end() || b == l.terms.end() || t->second != 1 || b->second != 1) return l;
    l.terms.erase(kTid);
    l.terms.erase(kBlockStart);
    return l.plus(*preheader_);
  }

  // A 32-bit result: linear when it is an index (exact mode) or always (trip mode, modulo 2^32).
  std::optional<Lin> narrow(const Lin& l, const std::string& op, const std::vector<Lin>& xs, size_t stmt) {
    if (mode_ == Mode::kTrip) return l.narrow();
    if (isIndex(l)) return joinGid(l);
    return opaque(op, xs, stmt);
  }

  std::optional<std::string> address(const Operand& a, size_t stmt) {
    if (a.kind != OperandKind::kAddress || a.elements.empty()) {
      fail("an address it does not model", stmt);
      return std::nullopt;
    }
    const Operand& base = a.elements[0];
    Lin b;
    if (base.kind == OperandKind::kSymbol) {
      b = Lin::atom("sym:" + base.name).plus(Lin::constant(static_cast<uint64_t>(base.offset)));
    } else {
      auto v = value(base, stmt);
      if (!v) return std::nullopt;
      b = *v;
    }
    return b.plus(Lin::constant(static_cast<uint64_t>(a.offset))).text();
  }

  void set(const Operand& dest, const Lin& v, size_t stmt, const std::string& guard) {
    if (dest.kind != OperandKind::kRegister) return void(fail("a destination it does not model", stmt));
    Lin out = v;
    if (out.terms.size() > kMaxTerms) {  // a sum of many values (hostile code): one opaque value, same cost each use
      auto id = nodes_.intern("sum(" + out.text() + ")");
      if (!id) return void(fail("its code is too large to compare", stmt));
      out = Lin::atom(*id);
    }
    if (!guard.empty()) {
      auto old = value(Operand::reg(dest.name), stmt);
      if (!old) return;
      auto g = opaque("guarded", {Lin::atom(guard), v, *old}, stmt);
      if (!g) return;
      out = *g;
    }
    env[dest.name] = out;
  }

  void step(size_t stmt) {
    const Instruction& in = f_.body[stmt].inst;
    const std::string op = in.fullOpcode();
    std::string guard;
    if (!in.guard.empty()) {
      auto g = value(Operand::reg(in.guard), stmt);
      if (!g) return;
      guard = (in.guard_negated ? "!" : "") + g->text();
    }
    if (auto bad = detail::notInterleavable(in); bad && in.opcode != Opcode::kLd && in.opcode != Opcode::kSt)
      return void(fail("its loop has " + *bad, stmt));
    if (in.opcode == Opcode::kLd && in.hasBaseSpace(StateSpace::kParam)) {
      const auto t = vn_.definedValue(stmt, in.operands[0].name);
      if (!t) return void(fail("a parameter load it cannot name", stmt));
      return set(in.operands[0], Lin::atom("v:" + *t), stmt, guard);
    }
    if (in.opcode == Opcode::kLd || in.opcode == Opcode::kLdu) {
      if (in.hasBaseSpace(StateSpace::kShared) || in.operands.size() != 2)
        return void(fail("a load it does not model", stmt));
      const auto a = address(in.operands[1], stmt);
      if (!a) return;
      const size_t n = loads++;
      effects.push_back(guard + "?" + op + "[" + *a + "]#" + std::to_string(n));
      const Operand& d = in.operands[0];
      if (d.kind == OperandKind::kVector) {
        for (size_t j = 0; j < d.elements.size(); ++j)
          set(d.elements[j], Lin::atom("ld#" + std::to_string(n) + "." + std::to_string(j)), stmt, guard);
      } else {
        set(d, Lin::atom("ld#" + std::to_string(n)), stmt, guard);
      }
      return;
    }
    if (in.opcode == Opcode::kSt) {
      if (in.hasBaseSpace(StateSpace::kShared) || in.operands.size() != 2)
        return void(fail("a store it does not model", stmt));
      const auto a = address(in.operands[0], stmt);
      if (!a) return;
      std::string v;
      const Operand& src = in.operands[1];
      const std::vector<Operand> parts = src.kind == OperandKind::kVector ? src.elements : std::vector<Operand>{src};
      for (const Operand& p : parts) {
        auto x = value(p, stmt);
        if (!x) return;
        v += x->text() + ",";
      }
      effects.push_back(guard + "?" + op + "[" + *a + "]=" + v);
      return;
    }
    if (!valueOpcode(in.opcode) || in.operands.size() < 2 || in.operands[0].kind != OperandKind::kRegister)
      return void(fail("its loop has an instruction it does not model (" + op + ")", stmt));
    std::vector<Lin> xs;
    for (size_t i = 1; i < in.operands.size(); ++i) {
      auto x = value(in.operands[i], stmt);
      if (!x) return;
      xs.push_back(std::move(*x));
    }
    auto result = compute(in, op, xs, stmt);
    if (!result) return;
    set(in.operands[0], *result, stmt, guard);
    if (!in.operands[0].pair->empty()) {
      auto c = opaque("~", {*result}, stmt);
      if (c) set(Operand::reg(*in.operands[0].pair), *c, stmt, guard);
    }
  }

  std::optional<Lin> compute(const Instruction& in, const std::string& op, const std::vector<Lin>& xs, size_t stmt) {
    const DataType t = in.type();
    const char cls = typeClass(t);
    const uint32_t bits = typeElementBits(t);
    const bool integer = (cls == 'b' || cls == 'u' || cls == 's') && (bits == 32 || bits == 64);
    auto result = [&](const Lin& l) -> std::optional<Lin> {
      if (bits == 64) return l;
      return narrow(l, op, xs, stmt);
    };
    if (in.opcode == Opcode::kMov && xs.size() == 1 && (integer || cls == 'f' || cls == 'p')) return xs[0];
    if (integer && in.opcode != Opcode::kCvt) {
      const bool wide = in.has(Mod::kWide);
      if (in.opcode == Opcode::kAdd && xs.size() == 2 && !wide) return result(xs[0].plus(xs[1]));
      if (in.opcode == Opcode::kSub && xs.size() == 2) return result(xs[0].plus(xs[1], ~uint64_t{0}));
      if (in.opcode == Opcode::kNeg && xs.size() == 1) return result(xs[0].times(~uint64_t{0}));
      if (in.opcode == Opcode::kNot && xs.size() == 1)
        return result(Lin::constant(~uint64_t{0}).plus(xs[0], ~uint64_t{0}));
      if (in.opcode == Opcode::kShl && xs.size() == 2 && xs[1].isConstant() && xs[1].k < bits)
        return result(xs[0].times(uint64_t{1} << xs[1].k));
      if ((in.opcode == Opcode::kMul || in.opcode == Opcode::kMad) && (in.has(Mod::kLo) || wide)) {
        const Lin* c = xs[1].isConstant() ? &xs[1] : xs[0].isConstant() ? &xs[0] : nullptr;
        const Lin* x = c == &xs[1] ? &xs[0] : &xs[1];
        if (c) {
          if (wide) {
            // A 32-bit operand widened: exact when it is an index (in [0, 2^31)); the product in 64 bits.
            const bool exact = isIndex(*x) && (typeClass(t) == 's' || x->nonNegative());
            if (mode_ != Mode::kExact || !exact || (c->k >> 31) != 0) return opaque(op, xs, stmt);
            Lin l = x->times(c->k);
            if (in.opcode == Opcode::kMad) l = l.plus(xs[2]);
            return l;
          }
          Lin l = x->times(c->k);
          if (in.opcode == Opcode::kMad) l = l.plus(xs[2]);
          return result(l);
        }
      }
      if (mode_ == Mode::kTrip && in.opcode == Opcode::kDiv && cls == 'u' && bits == 32 && xs.size() == 2) {
        const Lin want =
            Lin::atom(kBound).plus(Lin::atom(kGid), ~uint64_t{0}).plus(Lin::constant(~uint64_t{0})).narrow();
        if (xs[0] == want && xs[1] == Lin::atom(kStep)) return Lin::atom(kTripCount);
      }
      if (mode_ == Mode::kTrip && in.opcode == Opcode::kAnd && bits == 32 && xs.size() == 2 && xs[1].isConstant() &&
          xs[0] == Lin::atom(kTripCount).plus(Lin::constant(1))) {
        const uint64_t m = xs[1].k;
        if (m >= 1 && m < kMaxUnroll && (m & (m + 1)) == 0) {
          remainder_mask = static_cast<int>(m);
          return Lin::atom(kRemainder);
        }
      }
    }
    if (in.opcode == Opcode::kCvt && xs.size() == 1 && in.typeCount() == 2 && !in.has(Mod::kSat)) {
      // An integer widened from 32 to 64 bits: exact for an index.
      const DataType to = in.typeAt(0), from = in.typeAt(1);
      if (typeElementBits(to) == 64 && typeElementBits(from) == 32 && (typeClass(to) == 'u' || typeClass(to) == 's') &&
          (typeClass(from) == 's' || (typeClass(from) == 'u' && xs[0].nonNegative())) && mode_ == Mode::kExact &&
          isIndex(xs[0]))
        return xs[0];
    }
    return opaque(op, xs, stmt);
  }

  const Function& f_;
  const ValueNumbering& vn_;
  Nodes& nodes_;
  Mode mode_;
  int unroll_;
  std::string bound_;
  std::optional<Lin> preheader_;
};

// The blocks of the unrolled layout (loops.h).
struct Layout {
  int rem = -1, main = -1, exit = -1;    // blocks
  size_t guard_stmt = 0, skip_stmt = 0;  // the branches before REM
  size_t main_test_stmt = 0;             // the branch between REM and MAIN
  size_t rem_latch = 0, main_latch = 0;
  std::string index;  // the register i
};

std::string fail(std::string* why, const std::string& w) {
  if (why) *why = w;
  return w;
}

// Registers a single-block loop carries: defined in it and read in it before their first definition there.
std::vector<std::string> carried(const Function& f, const BasicBlock& b) {
  std::vector<std::string> out, defined;
  for (size_t s = b.begin; s < b.end; ++s) {
    if (f.body[s].kind != StatementKind::kInstruction) continue;
    std::vector<std::string_view> defs, uses;
    instructionDefsUsesViews(f.body[s].inst, &defs, &uses);
    for (std::string_view u : uses) {
      const std::string r(u);
      if (std::find(defined.begin(), defined.end(), r) == defined.end() &&
          std::find(out.begin(), out.end(), r) == out.end())
        out.push_back(r);
    }
    for (std::string_view d : defs) defined.emplace_back(d);
  }
  std::vector<std::string> result;
  for (const std::string& r : out) {
    if (std::find(defined.begin(), defined.end(), r) != defined.end()) result.push_back(r);
  }
  return result;
}

std::optional<ElementView> unrolledView(const Function& f, const Cfg& cfg, const DefUse& du, std::string* why) {
  auto refuse = [&](const std::string& w) -> std::optional<ElementView> {
    fail(why, "it has two loops but not nvcc's unrolled grid-stride layout: " + w);
    return std::nullopt;
  };
  if (cfg.hasIndirectBranch()) return refuse("it has an indirect branch");
  const auto& blocks = cfg.blocks();
  const std::vector<char> in_loop = blocksInLoops(cfg);
  Layout l;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!in_loop[b]) continue;
    if (std::find(blocks[b].succs.begin(), blocks[b].succs.end(), static_cast<int>(b)) == blocks[b].succs.end())
      return refuse("a loop is more than one block");
    if (l.rem < 0) {
      l.rem = static_cast<int>(b);
    } else if (l.main < 0) {
      l.main = static_cast<int>(b);
    } else {
      return refuse("it has more than two loops");
    }
  }
  if (l.main < 0) return refuse("it does not have two loops");
  const BasicBlock& rem = blocks[static_cast<size_t>(l.rem)];
  const BasicBlock& main = blocks[static_cast<size_t>(l.main)];
  if (rem.begin > main.begin) return refuse("its loops are laid out in another order");
  // EXIT: the block after MAIN, a plain return, the function's end.
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].begin == main.end && blocks[b].end > blocks[b].begin) l.exit = static_cast<int>(b);
  }
  if (l.exit < 0) return refuse("no block follows its second loop");
  const BasicBlock& exit = blocks[static_cast<size_t>(l.exit)];
  const std::vector<size_t> exit_insts = instructionsOf(f, exit);
  if (exit.label.empty() || exit_insts.size() != 1 || f.body[exit_insts[0]].inst.opcode != Opcode::kRet ||
      !f.body[exit_insts[0]].inst.guard.empty())
    return refuse("the block after its second loop is not a plain return");
  for (size_t s = exit.end; s < f.body.size(); ++s) {
    if (f.body[s].kind == StatementKind::kInstruction || f.body[s].kind == StatementKind::kLabel)
      return refuse("code follows its return");
  }
  // Latches.
  for (const BasicBlock* b : {&rem, &main}) {
    const std::vector<size_t> insts = instructionsOf(f, *b);
    if (b->label.empty() || insts.size() < 3) return refuse("a loop is not a labelled block");
    const Instruction& latch = f.body[insts.back()].inst;
    if (latch.opcode != Opcode::kBra || latch.guard.empty() || latch.guard_negated || branchTarget(latch) != b->label)
      return refuse("a loop does not end in a conditional branch back to its start");
    (b == &rem ? l.rem_latch : l.main_latch) = insts.back();
  }
  // The code outside the loops: straight-line but for the three branches, no memory access but ld.param.
  std::string after_rem_label;
  for (const BasicBlock& b : blocks) {
    if (b.begin == rem.end) after_rem_label = b.label;
  }
  std::vector<size_t> before, between;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int id = static_cast<int>(b);
    if (id == l.rem || id == l.main || id == l.exit) continue;
    const bool early = blocks[b].end <= rem.begin;
    if (!early && !(blocks[b].begin >= rem.end && blocks[b].end <= main.begin))
      return refuse("code is laid out after its loops");
    for (size_t s : instructionsOf(f, blocks[b])) {
      const Instruction& in = f.body[s].inst;
      if (in.opcode == Opcode::kBra) {
        if (in.guard.empty()) return refuse("it branches unconditionally outside its loops");
        (early ? before : between).push_back(s);
        continue;
      }
      if (in.opcode == Opcode::kLd && in.hasBaseSpace(StateSpace::kParam)) continue;
      if (!detail::pureOpcode(in.opcode) || !in.guard.empty())
        return refuse("it does more than compute values outside its loops (" + in.fullOpcode() + ")");
    }
  }
  if (before.size() != 2 || between.size() != 1 || after_rem_label.empty())
    return refuse("its branches are not those of the layout");
  l.guard_stmt = before[0];
  l.skip_stmt = before[1];
  l.main_test_stmt = between[0];
  if (branchTarget(f.body[l.guard_stmt].inst) != exit.label ||
      branchTarget(f.body[l.main_test_stmt].inst) != exit.label ||
      branchTarget(f.body[l.skip_stmt].inst) != after_rem_label || f.body[l.main_test_stmt].inst.guard_negated)
    return refuse("its branches are not those of the layout");

  // The guard: leaves when gid >= n.
  ValueNumbering vn(f, cfg, du);
  const Instruction& guard = f.body[l.guard_stmt].inst;
  const auto guard_text = vn.registerValue(guard.guard, l.guard_stmt);
  const auto cmp = guard_text ? detail::comparison((guard.guard_negated ? "!" : "") + *guard_text) : std::nullopt;
  if (!cmp || cmp->less || (cmp->type != "s32" && cmp->type != "u32") ||
      detail::canonicalIndex(cmp->x).text() != detail::kLaunchIndex)
    return refuse("it is not skipped when the thread's index is at least its bound");
  const std::string bound = cmp->y.text();
  ElementView view;
  view.bound_params = detail::boundParameters(f, cmp->y);
  if (view.bound_params.empty()) return refuse("its bound is not a parameter or a product of parameters");

  // The index register: set to gid before the loops, stepped in both.
  for (const std::string& r : carried(f, rem)) {
    const std::vector<size_t> defs = du.allDefs(r);
    int outside = 0;
    bool in_main = false;
    for (size_t d : defs) {
      const int b = cfg.blockOf(d);
      in_main |= b == l.main;
      if (b != l.rem && b != l.main) {
        ++outside;
        const auto v = vn.definedValue(d, r);
        const auto t = v ? detail::parseValue(*v) : std::nullopt;
        if (!t || detail::canonicalIndex(*t).text() != detail::kLaunchIndex) outside = 99;
      }
    }
    if (outside == 1 && in_main) l.index = r;
  }
  if (l.index.empty()) return refuse("no register steps through the thread's indices in both loops");

  // The trip count T, the remainder r = (T + 1) & (U - 1), and the branches on them.
  Nodes nodes;
  Evaluator trip(f, vn, nodes, Mode::kTrip, 1, bound);
  if (!trip.run(l.guard_stmt + 1, l.skip_stmt)) return refuse(trip.error);
  const int unroll = trip.remainder_mask + 1;
  if (unroll < 2) return refuse("its trip count and remainder are not computed as the layout does");
  // Whether the branch at `br` is taken exactly when `e`'s value of its predicate is one of `texts` (operations
  // as the evaluation interns them: the comparison as computed where it was computed).
  auto branchesOn = [&](Evaluator& e, size_t br, bool negated, const std::vector<std::string>& texts) {
    const Instruction& in = f.body[br].inst;
    if (in.guard_negated != negated) return false;
    const auto v = e.value(Operand::reg(in.guard), br);
    for (const std::string& t : texts) {
      const auto id = nodes.intern(t);
      if (v && id && *v == Lin::atom(*id)) return true;
    }
    return false;
  };
  {
    // REM is skipped when the remainder is 0: setp.eq taken, or setp.ne not taken.
    const std::string args = "(" + Lin::atom(kRemainder).text() + ",#0)";
    bool skips = false;
    for (const char* t : {"s32", "u32", "b32"}) {
      skips = skips || branchesOn(trip, l.skip_stmt, false, {std::string("setp.eq.") + t + args}) ||
              branchesOn(trip, l.skip_stmt, true, {std::string("setp.ne.") + t + args});
    }
    if (!skips) return refuse("it does not skip its remainder loop when the remainder is 0");
  }
  {
    // MAIN is skipped when T < U - 1.
    Evaluator test = trip;
    if (!test.run(rem.end, l.main_test_stmt)) return refuse(test.error);
    if (!branchesOn(test, l.main_test_stmt, false,
                    {"setp.lt.u32(" + Lin::atom(kTripCount).text() + ",#" + std::to_string(unroll - 1) + ")"}))
      return refuse("it does not skip its unrolled loop when fewer than U iterations are left");
  }

  // Values read after REM never come from REM (but i) nor from REM's preheader, which runs only when r > 0.
  for (size_t s = rem.end; s < exit.begin; ++s) {
    if (f.body[s].kind != StatementKind::kInstruction) continue;
    std::vector<std::string_view> defs, uses;
    instructionDefsUsesViews(f.body[s].inst, &defs, &uses);
    for (std::string_view u : uses) {
      for (size_t d : du.reachingDefs(s, u)) {
        const bool from_rem = cfg.blockOf(d) == l.rem && u != l.index;
        if (from_rem || (d > l.skip_stmt && d < rem.begin))
          return refuse("its unrolled loop reads " + std::string(u) + " as the remainder loop leaves it");
      }
    }
  }

  // REM: for iteration index i, the pointers it carries are F(i) and move to F(i + step); its effects E(i).
  const Lin i = Lin::atom(kIndex), stepped = Lin::atom(kIndex).plus(Lin::atom(kStep));
  std::string counter;
  for (const std::string& r : carried(f, rem)) {
    if (r == l.index) continue;
    bool before_rem = false;
    for (size_t d : du.allDefs(r)) before_rem |= d > l.guard_stmt && d < l.skip_stmt;
    if (before_rem && trip.env.count(r) && trip.env.at(r) == Lin::atom(kRemainder)) {
      if (!counter.empty()) return refuse("it counts its remainder twice");
      counter = r;
    }
  }
  if (counter.empty()) return refuse("its remainder loop does not count down the remainder");
  // REM's preheader for iteration index `index`, its loads numbered from `first_load`.
  auto remEntry = [&](const Lin& index, size_t first_load, Evaluator& e) {
    e.env[l.index] = index;
    e.env[counter] = Lin::atom(kCounter);
    e.loads = first_load;
    e.preheaderOf(index);
    const bool ok = e.run(l.skip_stmt + 1, rem.begin);
    e.preheaderOf(std::nullopt);
    return ok;
  };
  Evaluator r0(f, vn, nodes, Mode::kExact, unroll, bound), r1(f, vn, nodes, Mode::kExact, unroll, bound);
  if (!remEntry(i, 0, r0)) return refuse(r0.error);
  const auto entry_values = r0.env;
  if (!r0.run(rem.begin, l.rem_latch)) return refuse(r0.error);
  if (!remEntry(stepped, 0, r1)) return refuse(r1.error);
  const std::vector<std::string> body = r0.effects;
  // An access that depends on the count directly, said early; one that depends on it through an operation is
  // caught below: the unrolled loop has no count, so its accesses cannot be those.
  for (const std::string& e : body) {
    if (e.find(kCounter) != std::string::npos) return refuse("an access of its remainder loop depends on its count");
  }
  for (const std::string& r : carried(f, rem)) {
    const auto end = r0.env.find(r);
    if (end == r0.env.end()) return refuse("its remainder loop carries " + r);
    if (r == l.index) {
      if (!(end->second == stepped))
        return refuse("its remainder loop does not step its index by the launch's threads");
    } else if (r == counter) {
      const Instruction& latch = f.body[l.rem_latch].inst;
      const std::string minus_one = "add.s32(" + Lin::atom(kCounter).text() + ",#-1)";
      // r - 1, tested against 0: REM runs r times.
      const auto dec = nodes.intern(minus_one);
      auto pv = r0.value(Operand::reg(latch.guard), l.rem_latch);
      const auto want = dec ? nodes.intern("setp.ne.s32(" + *dec + ",#0)") : std::nullopt;
      if (!dec || !(end->second == Lin::atom(*dec)) || !pv || !want || !(*pv == Lin::atom(*want)))
        return refuse("its remainder loop does not run exactly the remainder's iterations");
    } else {
      const auto f_i = entry_values.find(r);
      const auto f_next = r1.env.find(r);
      if (f_i == entry_values.end() || f_next == r1.env.end())
        return refuse("its remainder loop carries " + r + ", which is not set from the index before it");
      if (!(end->second == f_next->second))
        return refuse("its remainder loop carries " + r + ", which does not move with its index");
      for (const auto& [a, c] : f_i->second.terms) {
        if (a.find(kCounter) != std::string::npos)
          return refuse("its remainder loop carries " + r + ", which depends on its count");
      }
    }
  }

  // MAIN: copies of the body for i, i + step, ..., i + (U - 1) * step; i moves by U * step while i < n.
  Lin main_next = i;
  for (int c = 0; c < unroll; ++c) main_next = main_next.plus(Lin::atom(kStep));
  Evaluator m0(f, vn, nodes, Mode::kExact, unroll, bound), m1(f, vn, nodes, Mode::kExact, unroll, bound);
  m0.env[l.index] = i;
  m1.env[l.index] = main_next;
  if (!m0.run(l.main_test_stmt + 1, main.begin)) return refuse(m0.error);
  if (!m1.run(l.main_test_stmt + 1, main.begin)) return refuse(m1.error);
  const auto main_entry = m0.env;
  if (!m0.run(main.begin, l.main_latch)) return refuse(m0.error);
  for (const std::string& r : carried(f, main)) {
    const auto end = m0.env.find(r);
    if (end == m0.env.end()) return refuse("its unrolled loop carries " + r);
    if (r == l.index) {
      if (!(end->second == main_next))
        return refuse("its unrolled loop does not step its index by U times the launch's threads");
      continue;
    }
    const auto f_i = main_entry.find(r);
    const auto f_next = m1.env.find(r);
    if (f_i == main_entry.end() || f_next == m1.env.end() || !(end->second == f_next->second))
      return refuse("its unrolled loop carries " + r + ", which does not move with its index");
  }
  {
    // MAIN goes on while i + U * step < n, compared as the guard compares.
    const std::string next = main_next.text(), n = Lin::atom("v:" + bound).text();
    if (!branchesOn(
            m0, l.main_latch, false,
            {"setp.lt." + cmp->type + "(" + next + "," + n + ")", "setp.gt." + cmp->type + "(" + n + "," + next + ")"}))
      return refuse("its unrolled loop does not run while its index is below its bound");
  }
  std::vector<std::string> copies;
  for (int c = 0; c < unroll; ++c) {
    Lin index = i;
    for (int k = 0; k < c; ++k) index = index.plus(Lin::atom(kStep));
    Evaluator e(f, vn, nodes, Mode::kExact, unroll, bound);
    if (!remEntry(index, static_cast<size_t>(c) * r0.loads, e) || !e.run(rem.begin, l.rem_latch))
      return refuse(e.error);
    copies.insert(copies.end(), e.effects.begin(), e.effects.end());
  }
  if (copies != m0.effects)
    return refuse("the accesses of its unrolled loop are not those of its remainder loop's body for i, i + step, ...");

  // The view: REM's first iteration, entered whatever the remainder is.
  for (const std::string& a : nodes.small) {
    // "v:ld.param.u32(param:NAME+0)"
    const size_t b = a.find("(param:") + 7;
    const int p = f.paramIndex(std::string_view(a).substr(b, a.size() - 3 - b));
    if (p < 0) return refuse("an index offset is a parameter it cannot name");
    view.small_params.push_back(p);
  }
  view.unrolled = unroll;
  view.function = f;
  view.function.body.clear();
  for (size_t s = 0; s < rem.end; ++s) {
    if (s == l.skip_stmt || s == l.rem_latch) continue;
    view.function.body.push_back(f.body[s]);
  }
  for (size_t s = exit.begin; s < f.body.size(); ++s) view.function.body.push_back(f.body[s]);
  return view;
}

}  // namespace

std::optional<ElementView> gridStrideElementView(const Function& f, const Cfg& cfg, const DefUse& du,
                                                 std::string* why) {
  std::string simple;
  if (auto g = findGridStrideLoop(f, cfg, du, &simple)) {
    ElementView v;
    v.function = elementPerThread(f, *g);
    v.bound_params = g->bound_params;
    return v;
  }
  const std::vector<char> in_loop = blocksInLoops(cfg);
  if (std::count(in_loop.begin(), in_loop.end(), 1) == 2) {
    std::string unrolled;
    if (auto v = unrolledView(f, cfg, du, &unrolled)) return v;
    if (why) *why = unrolled;
    return std::nullopt;
  }
  if (why) *why = simple;
  return std::nullopt;
}

}  // namespace kfuse::ptx
