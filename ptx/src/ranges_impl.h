// What the files of BlockRanges share (ranges.h has the contract): the value domain (intervals of mathematical
// integers, read and written with an instruction's integer type), the kernel decoded for it, the abstract state,
// and BlockRanges::Impl, the prepared kernel. ranges_prepare.cpp decodes a kernel into an Impl, ranges.cpp
// evaluates it for one launch, ranges_barriers.cpp holds the barrier check declared beside it. Private to ptx.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/ranges.h"

namespace kfuse::ptx::ranges_detail {

__extension__ typedef __int128 Wide;          // room for products of 64-bit bounds
inline constexpr Wide kInf = Wide{1} << 100;  // beyond any 64-bit value: an open bound

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

inline Interval join(const Interval& a, const Interval& b) {
  if (a.isEmpty()) return b;
  if (b.isEmpty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

inline Wide clampInf(Wide v) {
  return std::clamp(v, -kInf, kInf);
}

inline Interval add(const Interval& a, const Interval& b) {
  if (a.isEmpty() || b.isEmpty()) return Interval::empty();
  return {clampInf(a.lo + b.lo), clampInf(a.hi + b.hi)};
}
inline Interval neg(const Interval& a) {
  return a.isEmpty() ? a : Interval{-a.hi, -a.lo};
}
inline Interval mul(const Interval& a, const Interval& b) {
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

// The value as read with type `t`: the stored interval when it lies in t's range; an interval of negative values
// read as unsigned is shifted by 2^bits; anything else may be any value of the type.
inline Interval readAs(const Interval& v, IntType t) {
  if (v.isEmpty() || t.bits == 0) return v;
  if (v.lo >= t.minValue() && v.hi <= t.maxValue()) return v;
  if (!t.is_signed && v.hi < 0 && v.lo >= -(Wide{1} << (t.bits - 1))) {
    return {v.lo + (Wide{1} << t.bits), v.hi + (Wide{1} << t.bits)};
  }
  return {t.minValue(), t.maxValue()};
}

// A result written with type `t`: kept when it fits, else it may have wrapped to anything of the type. (The
// register keeps the value as the instruction's type reads it; readAs() reinterprets for other readers.)
inline Interval fitTo(const Interval& v, IntType t) {
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
  // The value written is congruent to `congruent_res` modulo `congruent_mod` (0: nothing known): nvcc's unrolled
  // loop counter `x = a - ((a + c) & (M - 1))`, x = -c (mod M).
  Wide congruent_mod = 0, congruent_res = 0;
};

struct PredFact {
  bool valid = false;
  Cmp cmp = Cmp::kNone;
  Src a, b;
  IntType type;
};

// The abstract state at a program point: an interval per register, and the comparisons known to hold, by the
// predicate register each was computed into. nvcc tests a predicate soon after setting it, so only the latest
// kMaxPredFacts comparisons are kept, in a short list rather than a slot per register: a write costs at most that
// many checks, not the kernel's register count (a 1M-instruction kernel has about as many registers as
// instructions). Forgetting an older comparison only loses precision: the registers it would have narrowed keep
// their wider intervals.
inline constexpr size_t kMaxPredFacts = 64;
struct State {
  bool reached = false;
  std::vector<Interval> regs;
  std::vector<std::pair<int, PredFact>> preds;  // (predicate register, fact), each register at most once, all valid
  const PredFact* pred(int reg) const {
    for (const auto& [r, f] : preds) {
      if (r == reg) return &f;
    }
    return nullptr;
  }
  bool operator==(const State& o) const {
    if (reached != o.reached || regs != o.regs || preds.size() != o.preds.size()) return false;
    for (const auto& [r, x] : preds) {
      const PredFact* y = o.pred(r);
      if (!y || x.cmp != y->cmp || x.a.kind != y->a.kind || x.a.index != y->a.index || x.a.imm != y->a.imm ||
          x.b.kind != y->b.kind || x.b.index != y->b.index || x.b.imm != y->b.imm) {
        return false;
      }
    }
    return true;
  }
};

inline Cmp negate(Cmp c) {
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

}  // namespace kfuse::ptx::ranges_detail

namespace kfuse::ptx {

// The domain's names where BlockRanges' files use them.
using ranges_detail::add;
using ranges_detail::Cmp;
using ranges_detail::Decoded;
using ranges_detail::fitTo;
using ranges_detail::Interval;
using ranges_detail::IntType;
using ranges_detail::join;
using ranges_detail::mul;
using ranges_detail::neg;
using ranges_detail::negate;
using ranges_detail::Op;
using ranges_detail::PredFact;
using ranges_detail::readAs;
using ranges_detail::Src;
using ranges_detail::SrcKind;
using ranges_detail::State;
using ranges_detail::Wide;

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
    int test_iv = -1;  // index into ivs of the register the exit test compares
    Src bound;
    // Added to `bound` when the test reads the variable before its increment (its steps), so that the loop
    // continues while (iv after the increment) cont (bound + lag); empty when it reads it after.
    std::vector<Src> bound_lag;
    // Subtracted from `bound` when the test reads the variable plus these invariants (`add j, i, k; setp j, n`).
    std::vector<Src> bound_minus;
    Cmp cont = Cmp::kNone;  // the loop continues while (iv cont bound)
    IntType test_type;
    // Every value the tested variable enters the loop with is congruent to start_res modulo start_mod (0: not
    // known): its one definition outside the loop, which dominates the header, is a Decoded::congruent_mod value.
    Wide start_mod = 0, start_res = 0;
  };
  std::vector<Loop> loops;
  std::vector<int> loop_of_header;  // by block: index into loops, -1

  // ranges.cpp: the transfer functions of one evaluation.
  Interval value(const Src& s, const State& st, const LaunchBinding& b, IntType as) const;
  void write(State& st, int reg, Interval v, bool guarded) const;
  static void refine(State& st, Cmp cmp, const PredFact& f, const Interval& av, const Interval& bv);
  void branchEdge(State& st, int pred, bool negated, bool taken, const LaunchBinding& b) const;
  static int64_t trips(Cmp cont, Wide init, Wide step, Wide bound, IntType t);
  bool accelerate(const Loop& loop, State& st, const LaunchBinding& b) const;
  void step(const Decoded& d, State& st, const LaunchBinding& b) const;
};

}  // namespace kfuse::ptx
