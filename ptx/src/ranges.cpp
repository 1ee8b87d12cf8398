#include "kfuse/ptx/ranges.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

namespace kfuse::ptx {
namespace {

__extension__ typedef __int128 Wide;   // room for products of 64-bit bounds
constexpr Wide kInf = Wide{1} << 100;  // beyond any 64-bit value: an open bound

// A set of mathematical integers [lo, hi]; lo > hi is empty (unreached). Open bounds are ±kInf.
struct Interval {
  Wide lo = -kInf, hi = kInf;
  static Interval top() { return {}; }
  static Interval empty() { return {1, 0}; }
  static Interval point(Wide v) { return {v, v}; }
  bool isEmpty() const { return lo > hi; }
  bool bounded() const { return lo > -kInf && hi < kInf; }
  bool operator==(const Interval&) const = default;
};

Interval join(const Interval& a, const Interval& b) {
  if (a.isEmpty()) return b;
  if (b.isEmpty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Wide clampInf(Wide v) {
  return std::clamp(v, -kInf, kInf);
}

Interval add(const Interval& a, const Interval& b) {
  if (a.isEmpty() || b.isEmpty()) return Interval::empty();
  return {clampInf(a.lo + b.lo), clampInf(a.hi + b.hi)};
}
Interval neg(const Interval& a) {
  return a.isEmpty() ? a : Interval{-a.hi, -a.lo};
}
Interval mul(const Interval& a, const Interval& b) {
  if (a.isEmpty() || b.isEmpty()) return Interval::empty();
  if (!a.bounded() || !b.bounded()) return Interval::top();
  Wide c[4];
  const Wide x[] = {a.lo, a.lo, a.hi, a.hi}, y[] = {b.lo, b.hi, b.lo, b.hi};
  for (int i = 0; i < 4; ++i) {
    // Bounds up to 2^100 multiply past 128 bits: such a product may be anything.
    if (__builtin_mul_overflow(x[i], y[i], &c[i])) return Interval::top();
  }
  return {clampInf(*std::min_element(c, c + 4)), clampInf(*std::max_element(c, c + 4))};
}

// How an instruction reads or writes an integer register: `bits` wide, signed or not.
struct IntType {
  int bits = 0;  // 0: not an integer type
  bool is_signed = false;
  Wide minValue() const { return is_signed ? -(Wide{1} << (bits - 1)) : 0; }
  Wide maxValue() const { return is_signed ? (Wide{1} << (bits - 1)) - 1 : (Wide{1} << bits) - 1; }
};

IntType intType(DataType t) {
  const char c = typeClass(t);
  if (c != 'u' && c != 's' && c != 'b') return {};
  const int bits = static_cast<int>(typeElementBits(t));
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return {};
  return {bits, c == 's'};
}

// The value as read with type `t`: the stored interval when it lies in t's range; an interval of negative values
// read as unsigned is shifted by 2^bits; anything else may be any value of the type.
Interval readAs(const Interval& v, IntType t) {
  if (v.isEmpty() || t.bits == 0) return v;
  if (v.lo >= t.minValue() && v.hi <= t.maxValue()) return v;
  if (!t.is_signed && v.hi < 0 && v.lo >= -(Wide{1} << (t.bits - 1))) {
    return {v.lo + (Wide{1} << t.bits), v.hi + (Wide{1} << t.bits)};
  }
  return {t.minValue(), t.maxValue()};
}

// A result written with type `t`: kept when it fits, else it may have wrapped to anything of the type. (The
// register keeps the value as the instruction's type reads it; readAs() reinterprets for other readers.)
Interval fitTo(const Interval& v, IntType t) {
  if (v.isEmpty() || t.bits == 0) return v;
  if (v.lo >= t.minValue() && v.hi <= t.maxValue()) return v;
  if (t.bits == 64 || !v.bounded()) return {t.minValue(), t.maxValue()};
  // A result that fits the other signedness of the same width is the same bits: keep it as that.
  const IntType other{t.bits, !t.is_signed};
  if (v.lo >= other.minValue() && v.hi <= other.maxValue()) return v;
  return {t.minValue(), t.maxValue()};
}

enum class SrcKind : uint8_t { kNone, kReg, kImm, kTid, kNtid, kCtaid, kNctaid, kUnknown };
struct Src {
  SrcKind kind = SrcKind::kNone;
  int index = 0;  // register index, dimension (0..2), or parameter index
  Wide imm = 0;
};

enum class Op : uint8_t {
  kOther,  // writes its destination(s) with unknown values
  kNop,    // writes no tracked register
  kMov,
  kLdParam,
  kAdd,
  kSub,
  kMulLo,
  kMulWide,
  kMadLo,
  kMadWide,
  kShl,
  kShr,
  kAnd,
  kCvt,
  kMin,
  kMax,
  kNeg,
  kDiv,
  kRem,
  kSelp,
  kSetp,
  kBra,
  // `sub d, a, b` where b = (a + z) & -M (M a power of two), z unchanged since: nvcc's signed `a % M`, whose value
  // is -z + ((a + z) & (M - 1)), in [-z.hi, M - 1 - z.lo] (c is z; kNone when b = a & -M). nvcc also writes the mask
  // as the bits from log2(M) up to some bit h (0x3ffffff0), equal to -M while 0 <= a + z < 2^(h+1) (mask_limit).
  kRemMask,
};

enum class Cmp : uint8_t { kNone, kEq, kNe, kLt, kLe, kGt, kGe };

struct Decoded {
  Op op = Op::kNop;
  int dst = -1;               // register index written (-1 none)
  std::vector<int> clobbers;  // further registers written with unknown values (vector destinations, pairs)
  Src a, b, c;
  IntType type;      // instruction type (destination)
  IntType src_type;  // cvt's source type; mul/mad.wide operand type
  Cmp cmp = Cmp::kNone;
  int guard = -1;  // predicate register index of @%p
  bool guard_negated = false;
  int target = -1;  // kBra: target block
  int param = -1;   // kLdParam: parameter index
  int64_t param_offset = 0;
  Wide mask = 0;         // kRemMask: M
  Wide mask_limit = -1;  // kRemMask: a + z must lie in [0, mask_limit] (-1: no limit)
};

struct PredFact {
  bool valid = false;
  Cmp cmp = Cmp::kNone;
  Src a, b;
  IntType type;
};

struct State {
  bool reached = false;
  std::vector<Interval> regs;
  std::vector<PredFact> preds;  // by register index (only predicate registers get facts)
  bool operator==(const State& o) const {
    if (reached != o.reached || regs != o.regs) return false;
    for (size_t i = 0; i < preds.size(); ++i) {
      const PredFact& x = preds[i];
      const PredFact& y = o.preds[i];
      if (x.valid != y.valid) return false;
      if (x.valid && (x.cmp != y.cmp || x.a.kind != y.a.kind || x.a.index != y.a.index || x.a.imm != y.a.imm ||
                      x.b.kind != y.b.kind || x.b.index != y.b.index || x.b.imm != y.b.imm)) {
        return false;
      }
    }
    return true;
  }
};

bool sameSrc(const Src& x, const Src& y) {
  return x.kind == y.kind && x.index == y.index && x.imm == y.imm;
}

void joinInto(State& into, const State& from) {
  if (!from.reached) return;
  if (!into.reached) {
    into = from;
    return;
  }
  for (size_t i = 0; i < into.regs.size(); ++i) into.regs[i] = join(into.regs[i], from.regs[i]);
  for (size_t i = 0; i < into.preds.size(); ++i) {
    PredFact& x = into.preds[i];
    const PredFact& y = from.preds[i];
    if (x.valid && !(y.valid && x.cmp == y.cmp && sameSrc(x.a, y.a) && sameSrc(x.b, y.b))) x.valid = false;
  }
}

Cmp cmpOf(const Instruction& in) {
  for (const Modifier& m : in.modifiers) {
    switch (m.asMod()) {
      case Mod::kEq: return Cmp::kEq;
      case Mod::kNe: return Cmp::kNe;
      case Mod::kLt:
      case Mod::kLo: return Cmp::kLt;
      case Mod::kLe:
      case Mod::kLs: return Cmp::kLe;
      case Mod::kGt:
      case Mod::kHi: return Cmp::kGt;
      case Mod::kGe:
      case Mod::kHs: return Cmp::kGe;
      default: break;
    }
  }
  return Cmp::kNone;
}

Cmp negate(Cmp c) {
  switch (c) {
    case Cmp::kEq: return Cmp::kNe;
    case Cmp::kNe: return Cmp::kEq;
    case Cmp::kLt: return Cmp::kGe;
    case Cmp::kLe: return Cmp::kGt;
    case Cmp::kGt: return Cmp::kLe;
    case Cmp::kGe: return Cmp::kLt;
    default: return Cmp::kNone;
  }
}

}  // namespace

struct BlockRanges::Impl {
  Cfg cfg;                    // a copy: the prepared object outlives the caller's analyses
  std::vector<Decoded> code;  // per statement
  int registers = 0;
  // Per access (in the caller's order): statement, address operand (register + constant offset, or a parameter's
  // address), bytes.
  struct Addr {
    size_t stmt = 0;
    Src base;
    int64_t offset = 0;
    uint32_t bytes = 0;
  };
  std::vector<Addr> addrs;

  // A natural loop whose trip count follows from one induction variable's exit test (nvcc's rotated loops:
  // `add iv, iv, step; setp.cc p, iv, bound; @p bra header` in the latch). Its basic induction variables (one
  // `add x, x, c` per iteration, c invariant) then take init + c * [0, trips) at the header, computed from the entry
  // values instead of iterated: this bounds loops a plain interval analysis cannot (a count-down `!= 0` test with
  // bumped pointers, as nvcc unrolls by four).
  struct Loop {
    int header = -1;
    std::vector<char> body;  // by block
    struct Iv {
      int reg = -1;
      std::vector<Src> steps;  // added once per iteration (invariant values; a chain of adds gives several)
      IntType type;
    };
    std::vector<Iv> ivs;
    int test_iv = -1;  // index into ivs of the register the exit test compares (after its increment)
    Src bound;
    Cmp cont = Cmp::kNone;  // the loop continues while (iv cont bound)
    IntType test_type;
  };
  std::vector<Loop> loops;
  std::vector<int> loop_of_header;  // by block: index into loops, -1

  Interval value(const Src& s, const State& st, const LaunchBinding& b, IntType as) const {
    switch (s.kind) {
      case SrcKind::kReg: return readAs(st.regs[static_cast<size_t>(s.index)], as);
      case SrcKind::kImm: return Interval::point(s.imm);
      case SrcKind::kTid: return {0, b.ntid[static_cast<size_t>(s.index)] - 1};
      case SrcKind::kNtid: return Interval::point(b.ntid[static_cast<size_t>(s.index)]);
      case SrcKind::kCtaid:
        if (b.all_blocks) return {0, b.nctaid[static_cast<size_t>(s.index)] - 1};
        return Interval::point(b.ctaid[static_cast<size_t>(s.index)]);
      case SrcKind::kNctaid: return Interval::point(b.nctaid[static_cast<size_t>(s.index)]);
      default: return Interval::top();
    }
  }

  void write(State& st, int reg, Interval v, bool guarded) const {
    if (reg < 0) return;
    Interval& r = st.regs[static_cast<size_t>(reg)];
    r = guarded ? join(r, v) : v;
    for (PredFact& f : st.preds) {
      if (!f.valid) continue;
      if ((f.a.kind == SrcKind::kReg && f.a.index == reg) || (f.b.kind == SrcKind::kReg && f.b.index == reg)) {
        f.valid = false;
      }
    }
    st.preds[static_cast<size_t>(reg)].valid = false;
  }

  // Narrows the registers of a comparison known to hold (`cmp` may be negated by the caller).
  static void refine(State& st, Cmp cmp, const PredFact& f, const Interval& av, const Interval& bv) {
    Interval na = av, nb = bv;
    switch (cmp) {
      case Cmp::kLt:
        na.hi = std::min(na.hi, bv.hi - 1);
        nb.lo = std::max(nb.lo, av.lo + 1);
        break;
      case Cmp::kLe:
        na.hi = std::min(na.hi, bv.hi);
        nb.lo = std::max(nb.lo, av.lo);
        break;
      case Cmp::kGt:
        na.lo = std::max(na.lo, bv.lo + 1);
        nb.hi = std::min(nb.hi, av.hi - 1);
        break;
      case Cmp::kGe:
        na.lo = std::max(na.lo, bv.lo);
        nb.hi = std::min(nb.hi, av.hi);
        break;
      case Cmp::kEq:
        na = {std::max(av.lo, bv.lo), std::min(av.hi, bv.hi)};
        nb = na;
        break;
      case Cmp::kNe:
        // Only an endpoint equal to the other side's single value can go.
        if (bv.lo == bv.hi) {
          if (na.lo == bv.lo) ++na.lo;
          if (na.hi == bv.lo) --na.hi;
        }
        if (av.lo == av.hi) {
          if (nb.lo == av.lo) ++nb.lo;
          if (nb.hi == av.lo) --nb.hi;
        }
        break;
      default: return;
    }
    if (na.isEmpty() || nb.isEmpty()) {
      st.reached = false;  // the edge cannot be taken
      return;
    }
    // Only registers the comparison read in the register's own representation are narrowed.
    if (f.a.kind == SrcKind::kReg &&
        readAs(st.regs[static_cast<size_t>(f.a.index)], f.type) == st.regs[static_cast<size_t>(f.a.index)]) {
      st.regs[static_cast<size_t>(f.a.index)] = na;
    }
    if (f.b.kind == SrcKind::kReg &&
        readAs(st.regs[static_cast<size_t>(f.b.index)], f.type) == st.regs[static_cast<size_t>(f.b.index)]) {
      st.regs[static_cast<size_t>(f.b.index)] = nb;
    }
  }

  // Applies the edge condition of a branch on `pred` (taken or not) to `st`.
  void branchEdge(State& st, int pred, bool negated, bool taken, const LaunchBinding& b) const {
    if (pred < 0) return;
    const PredFact f = st.preds[static_cast<size_t>(pred)];
    if (!f.valid) return;
    const bool holds = taken != negated;
    const Cmp c = holds ? f.cmp : negate(f.cmp);
    refine(st, c, f, value(f.a, st, b, f.type), value(f.b, st, b, f.type));
  }

  // The number of iterations of `loop` entered with `entry` (at least one: the header is reached), or 0 when it
  // cannot be computed from point values.
  static int64_t trips(Cmp cont, Wide init, Wide step, Wide bound, IntType t) {
    if (step == 0) return 0;
    // v_m = init + m * step after the m-th increment (m >= 1); the loop runs again while cont(v_m, bound).
    Wide m = 0;  // the first m >= 1 with !cont(v_m): the trip count
    auto ceilDiv = [](Wide a, Wide b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };  // b > 0
    switch (cont) {
      case Cmp::kNe: {
        const Wide d = bound - init;
        if (d % step != 0 || d / step < 1) return 0;  // never meets the bound: it would wrap
        m = d / step;
        break;
      }
      case Cmp::kLt:
      case Cmp::kLe: {
        if (step < 0) return 0;
        const Wide limit = cont == Cmp::kLt ? bound : bound + 1;  // v < limit
        m = std::max<Wide>(1, ceilDiv(limit - init, step));
        break;
      }
      case Cmp::kGt:
      case Cmp::kGe: {
        if (step > 0) return 0;
        const Wide limit = cont == Cmp::kGt ? bound : bound - 1;  // v > limit
        m = std::max<Wide>(1, ceilDiv(init - limit, -step));
        break;
      }
      default: return 0;
    }
    // Every value the variable takes must fit its type (no wrap-around on the way).
    const Wide last = init + m * step;
    if (m > (Wide{1} << 40) || std::min(init, last) < t.minValue() || std::max(init, last) > t.maxValue()) return 0;
    return static_cast<int64_t>(m);
  }

  // The header's state from the loop's entry state: induction variables over their whole range. False when the
  // trip count cannot be computed (the caller then iterates as usual).
  bool accelerate(const Loop& loop, State& st, const LaunchBinding& b) const {
    auto stepOf = [&](const Loop::Iv& iv) {
      Interval sum = Interval::point(0);
      for (const Src& c : iv.steps) sum = add(sum, value(c, st, b, iv.type));
      return sum;
    };
    const Loop::Iv& t = loop.ivs[static_cast<size_t>(loop.test_iv)];
    const Interval init = readAs(st.regs[static_cast<size_t>(t.reg)], loop.test_type);
    const Interval step = stepOf(t), bound = value(loop.bound, st, b, loop.test_type);
    if (init.isEmpty() || init.lo != init.hi || step.lo != step.hi || bound.lo != bound.hi) return false;
    const int64_t n = trips(loop.cont, init.lo, step.lo, bound.lo, loop.test_type);
    if (n <= 0) return false;
    std::vector<Interval> ranges;
    for (const Loop::Iv& iv : loop.ivs) {
      const Interval x = st.regs[static_cast<size_t>(iv.reg)];
      const Interval s = stepOf(iv);
      if (x.isEmpty() || s.lo != s.hi) return false;
      ranges.push_back(fitTo(add(x, mul(s, Interval{0, n - 1})), iv.type));
    }
    for (size_t v = 0; v < loop.ivs.size(); ++v) st.regs[static_cast<size_t>(loop.ivs[v].reg)] = ranges[v];
    return true;
  }

  void step(const Decoded& d, State& st, const LaunchBinding& b) const {
    const bool guarded = d.guard >= 0;
    for (int r : d.clobbers) write(st, r, Interval::top(), false);
    auto v = [&](const Src& s, IntType t) { return value(s, st, b, t); };
    switch (d.op) {
      case Op::kNop:
      case Op::kBra: return;
      case Op::kOther: write(st, d.dst, Interval::top(), false); return;
      case Op::kMov: write(st, d.dst, fitTo(v(d.a, d.type), d.type), guarded); return;
      case Op::kLdParam: {
        Interval r = Interval::top();
        if (d.param >= 0 && static_cast<size_t>(d.param) < b.params.size() && b.params[static_cast<size_t>(d.param)] &&
            d.param_offset == 0) {
          r = readAs(Interval::point(*b.params[static_cast<size_t>(d.param)]), d.type);
        }
        write(st, d.dst, r, guarded);
        return;
      }
      case Op::kAdd: write(st, d.dst, fitTo(add(v(d.a, d.type), v(d.b, d.type)), d.type), guarded); return;
      case Op::kSub: write(st, d.dst, fitTo(add(v(d.a, d.type), neg(v(d.b, d.type))), d.type), guarded); return;
      case Op::kMulLo: write(st, d.dst, fitTo(mul(v(d.a, d.type), v(d.b, d.type)), d.type), guarded); return;
      case Op::kMulWide: write(st, d.dst, fitTo(mul(v(d.a, d.src_type), v(d.b, d.src_type)), d.type), guarded); return;
      case Op::kMadLo:
        write(st, d.dst, fitTo(add(mul(v(d.a, d.type), v(d.b, d.type)), v(d.c, d.type)), d.type), guarded);
        return;
      case Op::kMadWide:
        write(st, d.dst, fitTo(add(mul(v(d.a, d.src_type), v(d.b, d.src_type)), v(d.c, d.type)), d.type), guarded);
        return;
      case Op::kShl: {
        const Interval k = v(d.b, IntType{32, false});
        if (k.lo != k.hi || k.lo < 0 || k.lo > 62) return write(st, d.dst, Interval::top(), guarded);
        write(st, d.dst, fitTo(mul(v(d.a, d.type), Interval::point(Wide{1} << static_cast<int>(k.lo))), d.type),
              guarded);
        return;
      }
      case Op::kShr: {
        const Interval k = v(d.b, IntType{32, false});
        const Interval x = v(d.a, d.type);
        if (k.lo != k.hi || k.lo < 0 || k.lo > 62 || x.isEmpty() || !x.bounded() || (x.lo < 0 && !d.type.is_signed)) {
          return write(st, d.dst, Interval::top(), guarded);
        }
        const int s = static_cast<int>(k.lo);
        write(st, d.dst, {x.lo >> s, x.hi >> s}, guarded);
        return;
      }
      case Op::kAnd: {
        Interval x = v(d.a, d.type), m = v(d.b, d.type);
        if (m.lo != m.hi || m.lo < 0) std::swap(x, m);
        if (m.lo != m.hi || m.lo < 0 || x.isEmpty()) return write(st, d.dst, Interval::top(), guarded);
        if (x.lo == x.hi && x.lo >= 0) return write(st, d.dst, Interval::point(x.lo & m.lo), guarded);
        write(st, d.dst, x.lo >= 0 ? Interval{0, std::min(x.hi, m.lo)} : Interval{0, m.lo}, guarded);
        return;
      }
      case Op::kCvt: write(st, d.dst, fitTo(v(d.a, d.src_type), d.type), guarded); return;
      case Op::kMin:
      case Op::kMax: {
        const Interval x = v(d.a, d.type), y = v(d.b, d.type);
        if (x.isEmpty() || y.isEmpty()) return write(st, d.dst, Interval::empty(), guarded);
        write(st, d.dst,
              d.op == Op::kMin ? Interval{std::min(x.lo, y.lo), std::min(x.hi, y.hi)}
                               : Interval{std::max(x.lo, y.lo), std::max(x.hi, y.hi)},
              guarded);
        return;
      }
      case Op::kNeg: write(st, d.dst, fitTo(neg(v(d.a, d.type)), d.type), guarded); return;
      case Op::kDiv:
      case Op::kRem: {
        const Interval x = v(d.a, d.type), c = v(d.b, d.type);
        if (c.lo != c.hi || c.lo <= 0 || x.isEmpty() || !x.bounded() || x.lo < 0) {
          return write(st, d.dst, Interval::top(), guarded);
        }
        write(st, d.dst, d.op == Op::kDiv ? Interval{x.lo / c.lo, x.hi / c.lo} : Interval{0, std::min(x.hi, c.lo - 1)},
              guarded);
        return;
      }
      case Op::kRemMask: {
        const Interval z = d.c.kind == SrcKind::kNone ? Interval::point(0) : v(d.c, d.type);
        if (z.isEmpty() || !z.bounded() || z.lo < 0 || z.hi > d.mask - 1)
          return write(st, d.dst, Interval::top(), guarded);
        if (d.mask_limit >= 0) {
          const Interval sum = add(v(d.a, d.type), z);
          if (sum.isEmpty() || !sum.bounded() || sum.lo < 0 || sum.hi > d.mask_limit) {
            return write(st, d.dst, Interval::top(), guarded);
          }
        }
        write(st, d.dst, fitTo(Interval{-z.hi, d.mask - 1 - z.lo}, d.type), guarded);
        return;
      }
      case Op::kSelp: write(st, d.dst, join(v(d.a, d.type), v(d.b, d.type)), guarded); return;
      case Op::kSetp: {
        write(st, d.dst, Interval::top(), false);
        if (d.dst < 0 || guarded || d.cmp == Cmp::kNone || d.type.bits == 0) return;
        PredFact& f = st.preds[static_cast<size_t>(d.dst)];
        f.valid = true;
        f.cmp = d.cmp;
        f.a = d.a;
        f.b = d.b;
        f.type = d.type;
        return;
      }
    }
  }
};

BlockRanges::BlockRanges(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlockRanges::~BlockRanges() = default;

std::unique_ptr<BlockRanges> BlockRanges::prepare(const Function& f, const Cfg& cfg,
                                                  const std::vector<MemoryAccess>& accesses, std::string* why) {
  if (cfg.hasIndirectBranch()) {
    if (why) *why = "it has an indirect branch";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->cfg = cfg;
  std::unordered_map<std::string, int> reg_index;
  auto regOf = [&](const std::string& name) {
    auto [it, added] = reg_index.emplace(name, static_cast<int>(reg_index.size()));
    return it->second;
  };
  std::unordered_map<std::string, int> block_of_label;
  for (size_t i = 0; i < cfg.blocks().size(); ++i) {
    if (!cfg.blocks()[i].label.empty()) block_of_label[cfg.blocks()[i].label] = static_cast<int>(i);
  }
  auto src = [&](const Operand& o) {
    Src s;
    if (o.kind == OperandKind::kImmediate) {
      if (auto v = o.intValue()) {
        s.kind = SrcKind::kImm;
        s.imm = *v;
      } else {
        s.kind = SrcKind::kUnknown;
      }
      return s;
    }
    if (o.kind == OperandKind::kSymbol) {
      s.kind = SrcKind::kUnknown;
      return s;
    }
    if (o.kind != OperandKind::kRegister || o.negated) {
      s.kind = SrcKind::kUnknown;
      return s;
    }
    static const std::pair<const char*, SrcKind> kSpecial[] = {{"%tid.", SrcKind::kTid},
                                                               {"%ntid.", SrcKind::kNtid},
                                                               {"%ctaid.", SrcKind::kCtaid},
                                                               {"%nctaid.", SrcKind::kNctaid}};
    for (const auto& [prefix, kind] : kSpecial) {
      const std::string_view p(prefix);
      if (o.name.size() == p.size() + 1 && o.name.compare(0, p.size(), p) == 0) {
        const char c = o.name.back();
        if (c >= 'x' && c <= 'z') {
          s.kind = kind;
          s.index = c - 'x';
          return s;
        }
      }
    }
    if (o.name.rfind("%", 0) == 0 && o.name.find('.') != std::string::npos) {
      s.kind = SrcKind::kUnknown;  // another special register (%laneid, %clock...)
      return s;
    }
    s.kind = SrcKind::kReg;
    s.index = regOf(o.name);
    return s;
  };

  impl->code.resize(f.body.size());
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Statement& stmt = f.body[i];
    if (stmt.kind != StatementKind::kInstruction) continue;
    const Instruction& in = stmt.inst;
    Decoded& d = impl->code[i];
    if (!in.guard.empty()) {
      d.guard = regOf(in.guard);
      d.guard_negated = in.guard_negated;
    }
    const std::vector<Operand>& o = in.operands;
    d.type = intType(in.type());
    // Destination registers: operand 0 of everything that writes (not st, bra, ret, bar...).
    auto dest = [&]() {
      if (o.empty()) return;
      if (o[0].kind == OperandKind::kRegister) {
        d.dst = regOf(o[0].name);
        if (!o[0].pair.empty()) d.clobbers.push_back(regOf(o[0].pair));
      } else if (o[0].kind == OperandKind::kVector) {
        for (const Operand& e : o[0].elements) {
          if (e.kind == OperandKind::kRegister) d.clobbers.push_back(regOf(e.name));
        }
      }
    };
    switch (in.opcode) {
      case Opcode::kCall:
        if (why) *why = "it calls a function (line " + std::to_string(in.loc.line) + ")";
        return nullptr;
      case Opcode::kBra:
        d.op = Op::kBra;
        if (!o.empty() && o[0].kind == OperandKind::kSymbol) {
          auto it = block_of_label.find(o[0].name);
          d.target = it == block_of_label.end() ? -1 : it->second;
        }
        continue;
      case Opcode::kSt:
      case Opcode::kRet:
      case Opcode::kExit:
      case Opcode::kBar:
      case Opcode::kBarrier:
      case Opcode::kMembar:
      case Opcode::kFence:
      case Opcode::kRed:
      case Opcode::kPrefetch:
      case Opcode::kTrap: d.op = Op::kNop; continue;
      default: break;
    }
    dest();
    const bool wide = in.has(Mod::kWide);
    switch (in.opcode) {
      case Opcode::kMov:
        if (o.size() == 2 && d.type.bits) {
          d.op = Op::kMov;
          d.a = src(o[1]);
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kLd:
        if (in.hasBaseSpace(StateSpace::kParam) && o.size() == 2 && o[1].kind == OperandKind::kAddress &&
            !o[1].elements.empty() && o[1].elements[0].kind == OperandKind::kSymbol && d.type.bits) {
          d.op = Op::kLdParam;
          d.param = f.paramIndex(o[1].elements[0].name);
          d.param_offset = o[1].offset + o[1].elements[0].offset;
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kCvta:
        d.op = o.size() == 2 ? Op::kMov : Op::kOther;
        if (o.size() == 2) d.a = src(o[1]);
        d.type = IntType{64, false};
        break;
      case Opcode::kAdd:
      case Opcode::kSub:
      case Opcode::kMin:
      case Opcode::kMax:
      case Opcode::kAnd:
      case Opcode::kShl:
      case Opcode::kShr:
      case Opcode::kDiv:
      case Opcode::kRem:
        if (o.size() == 3 && d.type.bits && !in.has(Mod::kCc) && !in.has(Mod::kSat)) {
          d.op = in.opcode == Opcode::kAdd   ? Op::kAdd
                 : in.opcode == Opcode::kSub ? Op::kSub
                 : in.opcode == Opcode::kMin ? Op::kMin
                 : in.opcode == Opcode::kMax ? Op::kMax
                 : in.opcode == Opcode::kAnd ? Op::kAnd
                 : in.opcode == Opcode::kShl ? Op::kShl
                 : in.opcode == Opcode::kShr ? Op::kShr
                 : in.opcode == Opcode::kDiv ? Op::kDiv
                                             : Op::kRem;
          d.a = src(o[1]);
          d.b = src(o[2]);
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kMul:
      case Opcode::kMad:
        if (d.type.bits && (in.has(Mod::kLo) || wide) && !in.has(Mod::kCc) &&
            o.size() == (in.opcode == Opcode::kMul ? 3u : 4u)) {
          d.a = src(o[1]);
          d.b = src(o[2]);
          if (in.opcode == Opcode::kMad) d.c = src(o[3]);
          if (wide) {
            d.src_type = d.type;
            d.type = IntType{d.type.bits * 2, d.type.is_signed};
            d.op = in.opcode == Opcode::kMul ? Op::kMulWide : Op::kMadWide;
          } else {
            d.op = in.opcode == Opcode::kMul ? Op::kMulLo : Op::kMadLo;
          }
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kNeg:
        d.op = o.size() == 2 && d.type.bits ? Op::kNeg : Op::kOther;
        if (o.size() == 2) d.a = src(o[1]);
        break;
      case Opcode::kCvt: {
        const IntType to = intType(in.typeAt(0)), from = intType(in.typeAt(1));
        if (o.size() == 2 && to.bits && from.bits && !in.has(Mod::kSat)) {
          d.op = Op::kCvt;
          d.type = to;
          d.src_type = from;
          d.a = src(o[1]);
        } else {
          d.op = Op::kOther;
        }
        break;
      }
      case Opcode::kSelp:
        d.op = o.size() == 4 && d.type.bits ? Op::kSelp : Op::kOther;
        if (o.size() == 4) {
          d.a = src(o[1]);
          d.b = src(o[2]);
        }
        break;
      case Opcode::kSetp:
        d.op = Op::kSetp;
        if (o.size() == 3 && o[0].pair.empty()) {
          d.a = src(o[1]);
          d.b = src(o[2]);
          d.cmp = cmpOf(in);
        } else {
          d.cmp = Cmp::kNone;
        }
        break;
      default: d.op = Op::kOther; break;
    }
  }

  // nvcc's signed remainder by a power of two: `and b, c, -M` (c = a, or `add c, a, z`), then `sub d, a, b`, all in
  // one block, unguarded, with a, z and b unchanged in between.
  for (const BasicBlock& bb : cfg.blocks()) {
    for (size_t i = bb.begin; i < bb.end; ++i) {
      Decoded& d = impl->code[i];
      if (d.op != Op::kSub || d.guard >= 0 || d.a.kind != SrcKind::kReg || d.b.kind != SrcKind::kReg) continue;
      // The last definition of `reg` before statement `at` in this block, and whether any of `kept` is written
      // after it (before `at`); SIZE_MAX when none.
      auto lastDef = [&](int reg, size_t at, std::initializer_list<int> kept, bool* clobbered) {
        *clobbered = false;
        for (size_t j = at; j-- > bb.begin;) {
          const Decoded& e = impl->code[j];
          const bool writes_reg =
              e.dst == reg || std::find(e.clobbers.begin(), e.clobbers.end(), reg) != e.clobbers.end();
          if (writes_reg) return j;
          for (int k : kept) {
            if (e.dst == k || std::find(e.clobbers.begin(), e.clobbers.end(), k) != e.clobbers.end()) *clobbered = true;
          }
        }
        return SIZE_MAX;
      };
      bool clobbered = false;
      const size_t and_at = lastDef(d.b.index, i, {d.a.index}, &clobbered);
      if (and_at == SIZE_MAX || clobbered) continue;
      const Decoded& an = impl->code[and_at];
      if (an.op != Op::kAnd || an.guard >= 0 || an.type.bits != d.type.bits) continue;
      const Src& x = an.b.kind == SrcKind::kImm ? an.a : an.b;
      const Src& m = an.b.kind == SrcKind::kImm ? an.b : an.a;
      if (m.kind != SrcKind::kImm || x.kind != SrcKind::kReg || d.type.bits == 0 || d.type.bits > 64) continue;
      // The mask: -M in the instruction's width (every bit from log2(M) up), or the bits from log2(M) up to some h.
      const Wide width_mask = d.type.bits == 64 ? ~Wide{0} : (Wide{1} << d.type.bits) - 1;
      const Wide bits = m.imm & width_mask;
      const Wide neg = bits & (0 - bits);  // M: the lowest set bit
      if (neg < 2 || neg > (Wide{1} << 30)) continue;
      Wide limit = -1;
      if (((0 - neg) & width_mask) != bits) {
        const Wide top = bits + neg;  // 2^(h+1) when the set bits are contiguous
        if ((top & (top - 1)) != 0) continue;
        limit = top - 1;
      }
      Src z;  // kNone: x is a itself
      if (x.index != d.a.index) {
        const size_t add_at = lastDef(x.index, and_at, {}, &clobbered);
        if (add_at == SIZE_MAX) continue;
        const Decoded& ad = impl->code[add_at];
        if (ad.op != Op::kAdd || ad.guard >= 0 || ad.type.bits != d.type.bits) continue;
        if (ad.a.kind == SrcKind::kReg && ad.a.index == d.a.index && ad.b.kind == SrcKind::kReg) {
          z = ad.b;
        } else if (ad.b.kind == SrcKind::kReg && ad.b.index == d.a.index && ad.a.kind == SrcKind::kReg) {
          z = ad.a;
        } else {
          continue;
        }
        // a and z keep their values from the add to the sub.
        bool moved = false;
        for (size_t j = add_at + 1; j < i && !moved; ++j) {
          const Decoded& e = impl->code[j];
          for (int r : {d.a.index, z.index}) {
            moved = moved || e.dst == r || std::find(e.clobbers.begin(), e.clobbers.end(), r) != e.clobbers.end();
          }
        }
        if (moved) continue;
      }
      d.op = Op::kRemMask;
      d.c = z;
      d.mask = neg;
      d.mask_limit = limit;
    }
  }

  impl->loop_of_header.assign(cfg.blocks().size(), -1);
  const Dominators dom = Dominators::compute(cfg);
  const std::vector<BasicBlock>& cb = cfg.blocks();
  for (size_t h = 0; h < cb.size(); ++h) {
    std::vector<int> latches;
    for (int u : cb[h].preds) {
      if (dom.dominates(static_cast<int>(h), u)) latches.push_back(u);
    }
    if (latches.size() != 1) continue;
    Impl::Loop loop;
    loop.header = static_cast<int>(h);
    loop.body.assign(cb.size(), 0);
    loop.body[h] = 1;
    std::vector<int> work{latches[0]};
    while (!work.empty()) {
      const int b = work.back();
      work.pop_back();
      if (loop.body[static_cast<size_t>(b)]) continue;
      loop.body[static_cast<size_t>(b)] = 1;
      for (int q : cb[static_cast<size_t>(b)].preds) work.push_back(q);
    }
    const int latch = latches[0];
    // Registers defined in the loop, and how often.
    std::unordered_map<int, int> defs;
    for (size_t b = 0; b < cb.size(); ++b) {
      if (!loop.body[b]) continue;
      for (size_t i = cb[b].begin; i < cb[b].end; ++i) {
        const Decoded& d = impl->code[i];
        if (d.dst >= 0) ++defs[d.dst];
        for (int r : d.clobbers) defs[r] += 2;  // never an induction variable
      }
    }
    auto invariant = [&](const Src& x) { return x.kind != SrcKind::kReg || !defs.count(x.index); };
    // Induction variables: x defined once in the loop, on every iteration, as x's value at the header plus
    // invariant amounts, directly (`add x, x, c`) or through a chain (`add t, x, c; add x, t, c`, as nvcc bumps a
    // pointer by a row stride in an unrolled loop). The blocks that run on every iteration, in dominance order.
    std::vector<int> every;
    for (size_t b = 0; b < cb.size(); ++b) {
      if (loop.body[b] && dom.dominates(static_cast<int>(b), latch)) every.push_back(static_cast<int>(b));
    }
    std::sort(every.begin(), every.end(), [&](int x, int y) { return x != y && dom.dominates(x, y); });
    // ... once per iteration: a block on a cycle of its own inside the loop (a nested loop's) may run many times.
    auto inInnerCycle = [&](int b) {
      std::vector<char> seen(cb.size(), 0);
      std::vector<int> stack(cb[static_cast<size_t>(b)].succs.begin(), cb[static_cast<size_t>(b)].succs.end());
      while (!stack.empty()) {
        const int x = stack.back();
        stack.pop_back();
        if (x == b) return true;
        if (x == static_cast<int>(h) || !loop.body[static_cast<size_t>(x)] || seen[static_cast<size_t>(x)]) continue;
        seen[static_cast<size_t>(x)] = 1;
        for (int y : cb[static_cast<size_t>(x)].succs) stack.push_back(y);
      }
      return false;
    };
    if (std::any_of(every.begin(), every.end(), [&](int b) { return b != static_cast<int>(h) && inInnerCycle(b); })) {
      continue;  // iterated as usual
    }
    std::unordered_map<int, size_t> stmt_of_iv;
    std::unordered_map<int, std::pair<int, std::vector<Src>>> derived;  // register -> (header register, amounts)
    std::set<int> redefined;
    for (int b : every) {
      for (size_t i = cb[static_cast<size_t>(b)].begin; i < cb[static_cast<size_t>(b)].end; ++i) {
        const Decoded& d = impl->code[i];
        if (d.dst < 0) continue;
        std::optional<std::pair<int, std::vector<Src>>> form;
        if ((d.op == Op::kAdd || d.op == Op::kSub) && d.guard < 0) {
          for (int side = 0; side < (d.op == Op::kAdd ? 2 : 1); ++side) {
            const Src& y = side == 0 ? d.a : d.b;
            Src c = side == 0 ? d.b : d.a;
            if (y.kind != SrcKind::kReg || !invariant(c) || c.kind == SrcKind::kUnknown) continue;
            if (d.op == Op::kSub) {
              if (c.kind != SrcKind::kImm) continue;
              c.imm = -c.imm;
            }
            if (auto it = derived.find(y.index); it != derived.end()) {
              form = it->second;
            } else if (defs.count(y.index) && !redefined.count(y.index)) {
              form = std::pair<int, std::vector<Src>>{y.index, {}};
            } else {
              continue;
            }
            form->second.push_back(c);
            break;
          }
        }
        redefined.insert(d.dst);
        for (int r : d.clobbers) {
          redefined.insert(r);
          derived.erase(r);
        }
        if (!form) {
          derived.erase(d.dst);
          continue;
        }
        if (form->first == d.dst && defs[d.dst] == 1) {
          Impl::Loop::Iv iv;
          iv.reg = d.dst;
          iv.steps = form->second;
          iv.type = d.type;
          stmt_of_iv[d.dst] = i;
          loop.ivs.push_back(std::move(iv));
          derived.erase(d.dst);
        } else if (defs[d.dst] == 1) {
          derived[d.dst] = std::move(*form);
        } else {
          // Also defined on a path these blocks do not show: its value where a later add reads it is not this one.
          derived.erase(d.dst);
        }
      }
    }
    // The exit test: the latch ends in `@p bra header`, p set in the latch after the tested variable's increment.
    const BasicBlock& lb = cb[static_cast<size_t>(latch)];
    const Decoded* bra = nullptr;
    size_t bra_at = 0;
    for (size_t i = lb.begin; i < lb.end; ++i) {
      if (impl->code[i].op == Op::kBra) {
        bra = &impl->code[i];
        bra_at = i;
        break;
      }
    }
    if (bra && bra->guard >= 0 && bra->target == static_cast<int>(h)) {
      for (size_t i = bra_at; i-- > lb.begin;) {
        const Decoded& d = impl->code[i];
        if (d.dst != bra->guard) continue;
        if (d.op != Op::kSetp || d.guard >= 0 || d.cmp == Cmp::kNone || d.type.bits == 0) break;
        for (size_t v = 0; v < loop.ivs.size(); ++v) {
          const Impl::Loop::Iv& iv = loop.ivs[v];
          auto it = stmt_of_iv.find(iv.reg);
          const bool incremented_before =
              it != stmt_of_iv.end() && (impl->cfg.blockOf(it->second) != latch || it->second < i);
          if (!incremented_before || !invariant(d.b) || d.b.kind == SrcKind::kUnknown) continue;
          if (d.a.kind == SrcKind::kReg && d.a.index == iv.reg) {
            loop.test_iv = static_cast<int>(v);
            loop.bound = d.b;
            loop.cont = bra->guard_negated ? negate(d.cmp) : d.cmp;
            loop.test_type = d.type;
          }
        }
        break;
      }
    }
    if (loop.test_iv < 0) continue;
    impl->loop_of_header[h] = static_cast<int>(impl->loops.size());
    impl->loops.push_back(std::move(loop));
  }

  for (const MemoryAccess& a : accesses) {
    Impl::Addr addr;
    addr.stmt = a.stmt;
    addr.bytes = a.bytes;
    const Instruction& in = f.body[a.stmt].inst;
    const Operand* mem = nullptr;
    for (const Operand& o : in.operands) {
      if (o.kind == OperandKind::kAddress) {
        mem = &o;
        break;
      }
    }
    if (mem && !mem->elements.empty()) {
      const Operand& base = mem->elements[0];
      addr.offset = mem->offset + base.offset;
      if (base.kind == OperandKind::kRegister) {
        addr.base = src(base);
      } else {
        addr.base.kind = SrcKind::kUnknown;
      }
    }
    impl->addrs.push_back(addr);
  }
  impl->registers = static_cast<int>(reg_index.size());
  return std::unique_ptr<BlockRanges>(new BlockRanges(std::move(impl)));
}

std::vector<AccessRange> BlockRanges::evaluate(const LaunchBinding& binding, int budget) const {
  const Impl& m = *impl_;
  const std::vector<BasicBlock>& blocks = m.cfg.blocks();
  std::vector<AccessRange> out(m.addrs.size());
  if (blocks.empty()) return out;
  State init;
  init.reached = true;
  init.regs.assign(static_cast<size_t>(m.registers), Interval::top());
  init.preds.assign(static_cast<size_t>(m.registers), PredFact{});
  State unreached = init;
  unreached.reached = false;
  std::vector<State> in(blocks.size(), unreached);
  in[0] = init;
  std::vector<char> queued(blocks.size(), 0);
  std::vector<int> work{0};
  queued[0] = 1;
  int visits = 0;
  // Loop headers with a computable trip count: their state is the accelerated entry state joined with the back
  // edge's, induction variables clamped to their range.
  std::vector<State> entry(blocks.size(), unreached), back(blocks.size(), unreached);
  auto push = [&](int s, const State& st, int from) {
    if (!st.reached || s < 0) return;
    State merged = in[static_cast<size_t>(s)];
    const int li = m.loop_of_header[static_cast<size_t>(s)];
    bool accelerated = false;
    // Past the budget no header is recomputed from its entry state any more: plain joins, whose given-up registers
    // stay given up, are what makes the iteration end.
    if (li >= 0 && visits <= budget) {
      const Impl::Loop& loop = m.loops[static_cast<size_t>(li)];
      joinInto(loop.body[static_cast<size_t>(from)] ? back[static_cast<size_t>(s)] : entry[static_cast<size_t>(s)], st);
      State head = entry[static_cast<size_t>(s)];
      if (head.reached && m.accelerate(loop, head, binding)) {
        accelerated = true;
        State b2 = back[static_cast<size_t>(s)];
        if (b2.reached) {
          for (const Impl::Loop::Iv& iv : loop.ivs)
            b2.regs[static_cast<size_t>(iv.reg)] = head.regs[static_cast<size_t>(iv.reg)];
          joinInto(head, b2);
        }
        merged = std::move(head);
      }
    }
    if (!accelerated) joinInto(merged, st);
    if (merged == in[static_cast<size_t>(s)]) return;
    if (visits > budget && in[static_cast<size_t>(s)].reached) {
      // Still growing after the budget: give up on the registers that changed (unknown from here on). Joins
      // only grow intervals, so this ends.
      for (size_t r = 0; r < merged.regs.size(); ++r) {
        if (!(merged.regs[r] == in[static_cast<size_t>(s)].regs[r])) merged.regs[r] = Interval::top();
      }
    }
    in[static_cast<size_t>(s)] = std::move(merged);
    if (!queued[static_cast<size_t>(s)]) {
      queued[static_cast<size_t>(s)] = 1;
      work.push_back(s);
    }
  };
  while (!work.empty()) {
    // Lowest block first: loops settle before what follows them is revisited.
    auto lowest = std::min_element(work.begin(), work.end());
    const int bi = *lowest;
    work.erase(lowest);
    queued[static_cast<size_t>(bi)] = 0;
    ++visits;
    const BasicBlock& bb = blocks[static_cast<size_t>(bi)];
    State st = in[static_cast<size_t>(bi)];
    if (!st.reached) continue;
    const Decoded* branch = nullptr;
    for (size_t i = bb.begin; i < bb.end; ++i) {
      const Decoded& d = m.code[i];
      if (d.op == Op::kBra) {
        branch = &d;
        break;  // a branch ends its block
      }
      m.step(d, st, binding);
    }
    if (branch && branch->target >= 0) {
      State taken = st, fall = st;
      if (branch->guard >= 0) {
        m.branchEdge(taken, branch->guard, branch->guard_negated, /*taken=*/true, binding);
        m.branchEdge(fall, branch->guard, branch->guard_negated, /*taken=*/false, binding);
      }
      for (int s : bb.succs) {
        if (s == branch->target) {
          push(s, taken, bi);
        } else if (branch->guard >= 0) {
          push(s, fall, bi);
        }
      }
      // A block whose fall-through is also the target (a branch to the next label): both states joined above.
    } else {
      for (int s : bb.succs) push(s, st, bi);
    }
  }

  // Addresses: replay each reached block once more from its final in-state and record the accesses.
  std::vector<int> addr_of_stmt(m.code.size(), -1);
  for (size_t k = 0; k < m.addrs.size(); ++k) addr_of_stmt[m.addrs[k].stmt] = static_cast<int>(k);
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    State st = in[bi];
    if (!st.reached) continue;
    for (size_t i = blocks[bi].begin; i < blocks[bi].end; ++i) {
      const int k = addr_of_stmt[i];
      if (k >= 0) {
        const Impl::Addr& a = m.addrs[static_cast<size_t>(k)];
        AccessRange& r = out[static_cast<size_t>(k)];
        const Interval base = m.value(a.base, st, binding, IntType{64, false});
        const bool first = !r.reached;
        r.reached = true;
        if (!base.isEmpty() && base.bounded() && a.bytes > 0 && (first || r.bounded)) {
          const Wide lo = base.lo + a.offset, hi = base.hi + a.offset + a.bytes;
          if (lo >= INT64_MIN && hi <= INT64_MAX) {
            r.lo = first ? static_cast<int64_t>(lo) : std::min(r.lo, static_cast<int64_t>(lo));
            r.hi = first ? static_cast<int64_t>(hi) : std::max(r.hi, static_cast<int64_t>(hi));
            r.bounded = true;
          } else {
            r.bounded = false;
          }
        } else {
          r.bounded = false;
        }
      }
      if (m.code[i].op == Op::kBra) break;
      m.step(m.code[i], st, binding);
    }
  }
  return out;
}

namespace {

bool isBlockBarrier(const Instruction& in) {
  return (in.opcode == Opcode::kBar || in.opcode == Opcode::kBarrier) && !in.has(Mod::kWarp) && !in.has(Mod::kArrive);
}

// Registers whose value may differ between the threads of one block: from %tid/%laneid/%warpid/%clock, memory,
// warp-level operations, or another such register. Flow-insensitive: a register is varying if any definition is.
std::set<std::string> varyingRegisters(const Function& f) {
  std::set<std::string> varying;
  auto isVaryingOperand = [&](const Operand& o, auto& self) -> bool {
    if (o.kind == OperandKind::kRegister) {
      if (o.name.rfind("%ctaid.", 0) == 0 || o.name.rfind("%nctaid.", 0) == 0 || o.name.rfind("%ntid.", 0) == 0 ||
          o.name.rfind("%nclusterid", 0) == 0) {
        return false;
      }
      if (o.name.find('.') != std::string::npos || o.name.rfind("%laneid", 0) == 0 || o.name.rfind("%warpid", 0) == 0 ||
          o.name.rfind("%clock", 0) == 0 || o.name.rfind("%globaltimer", 0) == 0) {
        return true;  // %tid.x and other per-thread special registers
      }
      return varying.count(o.name) > 0;
    }
    for (const Operand& e : o.elements) {
      if (self(e, self)) return true;
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Statement& st : f.body) {
      if (st.kind != StatementKind::kInstruction || st.inst.operands.empty()) continue;
      const Instruction& in = st.inst;
      const Operand& dst = in.operands[0];
      std::vector<std::string> outs;
      if (dst.kind == OperandKind::kRegister) {
        outs.push_back(dst.name);
        if (!dst.pair.empty()) outs.push_back(dst.pair);
      } else if (dst.kind == OperandKind::kVector) {
        for (const Operand& e : dst.elements) {
          if (e.kind == OperandKind::kRegister) outs.push_back(e.name);
        }
      }
      if (outs.empty() || in.opcode == Opcode::kSt || in.opcode == Opcode::kBra) continue;
      bool v = !in.guard.empty() && varying.count(in.guard) > 0;
      const bool memory_or_warp = in.opcode == Opcode::kLd || in.opcode == Opcode::kLdu || in.opcode == Opcode::kAtom ||
                                  in.opcode == Opcode::kShfl || in.opcode == Opcode::kVote ||
                                  in.opcode == Opcode::kMatch || in.opcode == Opcode::kActivemask ||
                                  in.opcode == Opcode::kRedux || in.opcode == Opcode::kCall ||
                                  in.opcode == Opcode::kTex || in.opcode == Opcode::kSuld;
      // ld.param of the kernel's own parameters is the same for every thread.
      const bool param_load = in.opcode == Opcode::kLd && in.hasBaseSpace(StateSpace::kParam);
      if (memory_or_warp && !param_load) v = true;
      for (size_t i = 1; i < in.operands.size() && !v; ++i) v = isVaryingOperand(in.operands[i], isVaryingOperand);
      if (!v) continue;
      for (const std::string& r : outs) changed = varying.insert(r).second || changed;
    }
  }
  return varying;
}

}  // namespace

bool threadsExitAfterTheirLastBarrier(const Function& f, const Cfg& cfg, std::string* why) {
  const std::vector<BasicBlock>& blocks = cfg.blocks();
  std::vector<char> barrier(blocks.size(), 0), exits(blocks.size(), 0);
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t i = blocks[b].begin; i < blocks[b].end; ++i) {
      const Statement& st = f.body[i];
      if (st.kind != StatementKind::kInstruction) continue;
      if (isBlockBarrier(st.inst)) barrier[b] = 1;
      if (st.inst.opcode == Opcode::kRet || st.inst.opcode == Opcode::kExit) exits[b] = 1;
    }
  }
  if (std::none_of(barrier.begin(), barrier.end(), [](char c) { return c != 0; })) return true;
  if (cfg.hasIndirectBranch()) {
    if (why) *why = "it has an indirect branch";
    return false;
  }
  // reaches_barrier[b]: a barrier can be executed from the start of b; free_exit[b]: a ret/exit can be reached from
  // the start of b without executing a barrier (b itself included).
  std::vector<char> reaches_barrier(barrier), free_exit(blocks.size(), 0);
  for (size_t b = 0; b < blocks.size(); ++b) free_exit[b] = exits[b] && !barrier[b];
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 0; b < blocks.size(); ++b) {
      for (int s : blocks[b].succs) {
        if (reaches_barrier[static_cast<size_t>(s)] && !reaches_barrier[b]) {
          reaches_barrier[b] = 1;
          changed = true;
        }
        if (free_exit[static_cast<size_t>(s)] && !barrier[b] && !free_exit[b]) {
          free_exit[b] = 1;
          changed = true;
        }
      }
    }
  }
  const std::set<std::string> varying = varyingRegisters(f);
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].end == blocks[b].begin) continue;
    // The block's last statement decides where its threads go: a guarded branch, or a guarded ret/exit.
    size_t last = blocks[b].end;
    while (last > blocks[b].begin && f.body[last - 1].kind != StatementKind::kInstruction) --last;
    if (last == blocks[b].begin) continue;
    const Instruction& in = f.body[last - 1].inst;
    const bool diverges =
        !in.guard.empty() && (in.opcode == Opcode::kBra || in.opcode == Opcode::kRet || in.opcode == Opcode::kExit);
    if (!diverges || barrier[b]) continue;
    bool to_barrier = false, to_exit = in.opcode != Opcode::kBra;
    for (int s : blocks[b].succs) {
      to_barrier = to_barrier || reaches_barrier[static_cast<size_t>(s)];
      to_exit = to_exit || free_exit[static_cast<size_t>(s)];
    }
    if (to_barrier && to_exit && varying.count(in.guard)) {
      if (why) {
        *why = "at line " + std::to_string(in.loc.line) +
               " some threads may leave the kernel while others of their "
               "block still meet a barrier (the branch depends on the thread)";
      }
      return false;
    }
  }
  return true;
}

}  // namespace kfuse::ptx
