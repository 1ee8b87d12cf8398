// Counted loops: the shape nvcc gives a kernel whose work is one loop over an induction variable (the grid-stride
// idiom `for (i = gid; i < n; i += gridDim.x * blockDim.x)`), and value numbering, which says when two registers
// hold the same value for every thread.
//
// The vertical fusion of two such kernels can run one loop whose body is both kernels' bodies, instead of one loop
// after the other, when the loops take the same steps (same start, step, guard and exit test): then the consumer
// reads the producer's value in the same iteration, from a register. CountedLoop gives what that needs to compare
// and rewrite; ValueNumbering gives the comparison. Both read a Function they do not own.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/ir.h"

namespace kfuse::ptx {

// The value a register holds, as text: two registers whose texts are equal hold the same value in every thread.
// A value is the pure instruction that defined it applied to its operands' values, through definitions that run at
// most once per thread (one reaching definition outside every loop) or earlier in the same block; leaves are
// immediates, the thread and launch-shape registers (%tid, %ntid, %ctaid, %nctaid) and parameters (`ld.param`,
// named through `param_name`, so that parameters of different kernels that a fusion merges compare equal).
// Anything else (loads of memory, loop-carried registers, clocks, guarded definitions) has no value.
class ValueNumbering {
 public:
  // `param_name` maps a parameter symbol to the name it is compared under (identity when empty).
  ValueNumbering(const Function& f, const Cfg& cfg, const DefUse& du,
                 std::function<std::string(const std::string&)> param_name = {});
  // Names the value `reg` holds on entry to block `block` (an induction variable at the top of its loop).
  void nameAtBlockEntry(int block, const std::string& reg, const std::string& token);
  // The value of `reg` as the instruction at statement `stmt` reads it.
  std::optional<std::string> registerValue(std::string_view reg, size_t stmt) const;
  // The value operand `o` has at `stmt` (registers, immediates, special registers; `!%p` negated).
  std::optional<std::string> operandValue(const Operand& o, size_t stmt) const;
  // The value the instruction at `stmt` gives `reg`, one of its destinations.
  std::optional<std::string> definedValue(size_t stmt, std::string_view reg) const;
  // The address an ld/st at `stmt` accesses: its base's value and constant offset.
  std::optional<std::string> addressValue(size_t stmt) const;

 private:
  std::optional<std::string> registerValue(std::string_view reg, size_t stmt, int depth) const;
  std::optional<std::string> operandValue(const Operand& o, size_t stmt, int depth) const;
  std::optional<std::string> definitionValue(size_t def, std::string_view reg, int depth) const;

  const Function& f_;
  const Cfg& cfg_;
  const DefUse& du_;
  std::vector<char> in_loop_;
  std::function<std::string(const std::string&)> param_name_;
  std::map<std::pair<int, std::string>, std::string, std::less<>> entry_names_;
};

// A kernel made of one counted loop, as nvcc lays it out:
//
//   entry (straight-line, no memory access but ld.param)   i = start; ...; @p bra EXIT   (the guard: its only branch)
//   LOOP:  body (no branch, barrier, call or atomic)        ...; i = i + step; setp q ...; @q bra LOOP
//   EXIT:  ret
//
// i has exactly two definitions (the start and the step); every memory access of the body comes before the
// step, so that an access in the k-th iteration sees i = start + k * step. The texts below are values
// (ValueNumbering) with i named "iv" at the top of the loop: two kernels with equal texts take the same steps and
// leave the loop after the same iteration, for every thread.
struct CountedLoop {
  int loop_block = -1;
  int exit_block = -1;
  size_t loop_begin = 0, loop_end = 0;  // the loop block's statements: [loop_begin, loop_end)
  std::string induction;                // the register i
  size_t start_stmt = 0;                // i's definition before the loop
  size_t step_stmt = 0;                 // `add i, i, step` in the loop
  size_t guard_stmt = 0;                // the conditional branch to EXIT before the loop
  size_t latch_stmt = 0;                // the conditional branch back to LOOP, the loop's last instruction
  std::string start, step, guard, latch;
  // Whether two loops take the same steps for every thread (start, step, guard and latch texts equal).
  bool sameSteps(const CountedLoop& o) const {
    return start == o.start && step == o.step && guard == o.guard && latch == o.latch;
  }
};

// `f` as a counted loop; nullopt with `why` (one clause) when it is not one.
std::optional<CountedLoop> findCountedLoop(const Function& f, const Cfg& cfg, const DefUse& du,
                                           const std::function<std::string(const std::string&)>& param_name,
                                           std::string* why);

// A grid-stride loop: a counted loop `for (i = gid; i < n; i += the launch's threads)`, with gid = %ctaid.x *
// %ntid.x + %tid.x and the step %nctaid.x * %ntid.x (32- or 64-bit, in any order nvcc writes them), whose body
// depends on the launch only through i:
//  - no special register is read in the loop but by the step;
//  - every other value the body reads is computed in the same iteration, from i, or before the loop from
//    parameters and immediates alone (no loop-carried value such as an accumulator);
//  - the guard leaves when gid >= n, the exit test continues while i + step < n, n one parameter (possibly
//    widened) or a product of parameters, compared in one type.
// For a launch of G x B threads (1-D) whose n and G * B fit below 2^31, such a kernel runs its body exactly once for
// each i in [0, n), in some order: it does what the same body does run once per thread, i = gid, on any 1-D launch
// of B-thread blocks with at least n threads (elementPerThread), provided no two iterations touch a common byte with
// one of them writing. That last condition is about memory, and the caller's (the analyzer checks it from the
// access forms for the launch's arguments).
struct GridStrideLoop {
  CountedLoop loop;
  std::vector<int> bound_params;  // n is the product of these parameters (one, usually)
};

// `f` as a grid-stride loop; nullopt with `why` (one clause) when it is not one.
std::optional<GridStrideLoop> findGridStrideLoop(const Function& f, const Cfg& cfg, const DefUse& du, std::string* why);

// `f` with the loop's back edge removed: its body runs once, for i = the thread's linear index (see GridStrideLoop
// for when that is the same kernel).
Function elementPerThread(const Function& f, const GridStrideLoop& g);

// A grid-stride kernel as one element per thread: its body run once, for i = the thread's linear index, on 1-D
// launches of B-thread blocks with at least n threads (see GridStrideLoop for when that is the same kernel).
//
// Besides the one-loop form above, this reads the layout nvcc gives the loop when it unrolls it U times (U a power
// of two) with a remainder loop first:
//
//   entry:  i = gid; @(gid >= n) bra EXIT
//           T = (n - gid - 1) / step (unsigned); r = (T + 1) & (U - 1); @(r == 0) bra MAIN_TEST
//   REM:    body(i); i += step; (pointers += their steps); r -= 1; @(r != 0) bra REM
//   MAIN_TEST: @(T < U - 1) bra EXIT
//   MAIN:   body(i); body(i + step); ...; body(i + (U - 1) * step); i += U * step; @(i < n) bra MAIN
//   EXIT:   ret
//
// It is accepted only when that is exactly what the code does, for every thread whose indices stay below 2^31
// (the caller ensures n + the launch's threads + 4 * kGridStrideIndexMargin <= 2^31 and that each of small_params
// lies within +-kGridStrideIndexMargin; the body may index i + p + c for such a parameter p and
// |c| <= kGridStrideIndexMargin): the trip count and the remainder are those values; every
// value the remainder loop carries besides i and r is a pointer that moves with i (p = F(i) on entry, and
// F(i) + its step = F(i + step)); and the memory accesses of the unrolled loop, one after the other, are those of
// the remainder loop's body for i, i + step, ..., i + (U - 1) * step (same addresses, same values stored, in the
// same order). The view is then the remainder loop's first iteration, entered whatever r is.
constexpr int64_t kGridStrideIndexMargin = int64_t{1} << 20;

struct ElementView {
  Function function;              // the element-per-thread kernel
  std::vector<int> bound_params;  // n is the product of these parameters
  int unrolled = 1;               // U: 1 for the one-loop form
  // Parameters the proof of the unrolled layout takes as index offsets (a[i + k]): it holds for launches where each
  // lies within +-kGridStrideIndexMargin.
  std::vector<int> small_params;
};

// `f` as one element per thread; nullopt with `why` (one clause) when it is not a grid-stride kernel of either form
// (the one-loop form's reason when it has one loop).
std::optional<ElementView> gridStrideElementView(const Function& f, const Cfg& cfg, const DefUse& du, std::string* why);

}  // namespace kfuse::ptx
