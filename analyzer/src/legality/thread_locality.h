// Thread locality of two kernels' accesses to one buffer, decided by integer arithmetic on affine forms.
//
// A vertical fusion runs the producer's body and then the consumer's in the same thread. That gives the same
// memory as running the two kernels one after the other exactly when no two *different* threads touch a common
// byte of the buffer with at least one of them writing (within one thread, program order is kept). This unit
// decides that for one pair of accesses from the PTX analysis's affine forms with one launch's values bound:
// argument values for `paramN`, the launch's block and grid for `ntid.*` and `nctaid.*`. What remains is a
// linear form in the six thread variables (`tid.x..z`, `ctaid.x..z`) over the box the launch shape gives,
// narrowed by the guards both kernels put on the access.
//
// The decision is sound: kThreadLocal only when no two distinct threads can overlap; kCrossThread only with a
// witness (two threads, one variable apart); kUnknown for everything else. Guards that cannot be bound, or whose
// comparison could wrap in its type, are dropped, which only widens the domain. Byte offsets must stay within
// [0, 2^31) over the whole launch: the PTX analysis models integer arithmetic without wrapping, and that bound
// keeps 32-bit index arithmetic from wrapping. Plain values, no state; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kfuse/core/trace.h"
#include "kfuse/ptx/analysis.h"

namespace kfuse::analyzer::locality {

// The six thread indices, and kIter: the step count of a loop's induction variable (ptx::kIterationPrefix), a whole
// number in [0, Shape::iterations) that a thread goes through one after the other. A thread is the six indices; the
// proofs treat kIter as one more coordinate, so two accesses that no two (thread, step) tuples share are also
// thread-local.
enum Var : int { kTidX, kTidY, kTidZ, kCtaidX, kCtaidY, kCtaidZ, kIter, kVarCount };
inline constexpr int kThreadVars = kIter;

// sum(coef[v] * v) + constant over the thread variables.
struct LinearForm {
  std::array<int64_t, kVarCount> coef{};
  int64_t constant = 0;
  bool sameLinearPart(const LinearForm& o) const { return coef == o.coef; }
  bool hasVariables() const;
  std::string toString() const;  // "1024*ctaid.x + 4*tid.x + 8"
};

// The launch a form is bound for.
struct Shape {
  core::Dim3 grid, block;
  // Steps a loop's induction variable may take, an upper bound for every thread of the launch (footprint.h's
  // iterationBound); 0: not known, and bind() refuses forms that count steps.
  int64_t iterations = 0;
  int64_t extent(Var v) const;  // number of values v takes: block.x for kTidX, grid.y for kCtaidY, ...
};

// Values of the atoms other than thread and launch-shape variables: "param3" -> 42.
using AtomValues = std::map<std::string, int64_t>;

// Binds `e` for one launch. nullopt, with `why`, when an atom has no value (a global symbol, a field of a by-value
// aggregate), a term multiplies two thread variables, or `e` counts the steps of a loop (kIter) when the shape gives
// no bound on them, or of two loops.
std::optional<LinearForm> bind(const ptx::AffineExpr& e, const Shape& shape, const AtomValues& values,
                               std::string* why);

// lo <= form <= hi, with `form` having no constant and a positive first coefficient.
struct Constraint {
  LinearForm form;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
};

struct Domain {
  bool never = false;  // some conjunct is false for every thread: the access never executes
  bool exact = true;   // every conjunct was bound (none dropped): the domain is exactly the guard, not wider
  std::vector<Constraint> constraints;
};

// One thread: its value of each Var.
using Thread = std::array<int64_t, kVarCount>;
// f(t), in 128-bit arithmetic clamped to int64 (forms bound for a launch stay far inside it).
int64_t evaluate(const LinearForm& f, const Thread& t);
// Whether thread `t` satisfies every constraint of `d` (false when `d.never`).
bool contains(const Domain& d, const Thread& t);
// The least and greatest value of `f` over the threads of the launch in `d` (bounds that hold; tight for the box
// and for constraints on independent variables); nullopt when no thread is in `d`.
std::optional<std::pair<int64_t, int64_t>> range(const LinearForm& f, const Domain& d, const Shape& shape);

// Access pairs (one access of each kernel to a shared buffer) a thread-locality check binds and compares at most;
// each takes a few microseconds, so this is about half a second. Past it the buffer is left unproven.
inline constexpr uint64_t kMaxAccessPairs = uint64_t{1} << 17;

// Whether `form` counts the steps of a loop (an atom with ptx::kIterationPrefix: a grid-stride or row loop's
// induction variable).
bool countsLoopSteps(const ptx::AffineExpr& form);

// What a guard's conjuncts say about the thread variables, for one launch. Conjuncts that count a loop's steps are
// left out (the domain is then not exact): their counter need not be the one of the access they guard.
Domain bindGuard(const std::vector<ptx::GuardCondition>& guard, const Shape& shape, const AtomValues& values);

// One access, bound: bytes [base + offset(t), base + offset(t) + bytes) of the buffer, for threads in `domain`.
// `base` is where the kernel's pointer argument points inside the buffer; `offset` is what the kernel adds.
struct Access {
  LinearForm offset;
  int64_t base = 0;
  uint32_t bytes = 0;
  Domain domain;
};

enum class Verdict { kThreadLocal, kCrossThread, kUnknown };

struct PairVerdict {
  Verdict verdict = Verdict::kUnknown;
  std::string why;  // one clause naming the forms and the reason
};

// Whether two threads t != t' exist with a's bytes at t' overlapping b's bytes at t (either order).
PairVerdict checkPair(const Access& a, const Access& b, const Shape& shape);

// The least |f(t) - f(t')| over distinct threads t, t' of the box narrowed by `domain` (a guaranteed lower bound;
// INT64_MAX when at most one thread is in the domain). Exposed for tests.
int64_t separation(const LinearForm& f, const std::vector<Constraint>& domain, const Shape& shape);

}  // namespace kfuse::analyzer::locality
