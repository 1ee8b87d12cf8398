// Address ranges per thread block: interval analysis of a kernel for one block of one launch.
//
// Affine address forms (analysis.h) describe one access of one thread; they stop at loops. Block-level fusion
// needs something else: the bytes a whole block may touch, loops included (row loops `for (j = tid.x; j < h;
// j += ntid.x)`, grid-stride loops). BlockRanges runs an abstract interpretation over the kernel's CFG in which
// every integer register holds an interval, for one block: %ctaid is that block's index, %tid ranges over the block,
// %ntid/%nctaid and the .param values are the launch's. Branches on a `setp` comparison narrow the compared
// registers on each edge, so a loop's exit test bounds its induction variable. Values loaded from memory are
// unknown. For each global (or parameter-derived generic) access it returns an interval of bytes that contains
// every byte any thread of the block may touch there: a sound over-approximation, exact for the common row and
// grid-stride loops, and "unbounded" where it cannot say (a gather through loaded indices, a loop whose bound is
// data).
//
// Loops are iterated to a fixpoint without widening (a bounded loop converges in trip-count steps); a loop that
// has not converged within a work budget is given up (its registers become unknown), which keeps the result sound.
//
// Thread-safety: a prepared BlockRanges is immutable; evaluate() may be called from several threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/ir.h"

namespace kfuse::ptx {

struct LaunchBinding {
  std::array<int64_t, 3> ntid{1, 1, 1};
  std::array<int64_t, 3> nctaid{1, 1, 1};
  std::array<int64_t, 3> ctaid{0, 0, 0};  // the block evaluated
  bool all_blocks = false;                // instead: every block of the grid at once (%ctaid in [0, nctaid))
  // The value each .param of the entry was launched with (pointer parameters: the address), by parameter index;
  // nullopt: not known (a by-value struct, a missing argument).
  std::vector<std::optional<int64_t>> params;
};

struct AccessRange {
  bool reached = false;  // some thread of the block may execute the access
  bool bounded = false;  // [lo, hi) holds every byte it may touch; false: it may touch anything
  int64_t lo = 0, hi = 0;
};

class BlockRanges {
 public:
  // Basic blocks x registers beyond which prepare() refuses (evaluate() keeps a 32-byte interval per register per
  // reached block: 256 MiB at most).
  static constexpr uint64_t kMaxStateCells = uint64_t{8} << 20;
  // Prepares `f` (a kernel) for evaluation; `accesses` are analyzeMemoryAccesses(f, ...) and fix the order of the
  // results. Returns nullptr and sets *why when the kernel cannot be analysed this way (it calls a function, its
  // CFG has an indirect branch, or it has more than kMaxStateCells blocks x registers).
  static std::unique_ptr<BlockRanges> prepare(const Function& f, const Cfg& cfg,
                                              const std::vector<MemoryAccess>& accesses, std::string* why);
  ~BlockRanges();

  // The byte ranges of every access, in the order of `accesses`, for the block `binding.ctaid`. `budget`: block
  // visits of the fixpoint iteration before loops still growing are given up.
  std::vector<AccessRange> evaluate(const LaunchBinding& binding, int budget = 20000) const;
  // What one evaluate() touches at least: the kernel's statements plus its registers (each reached basic block's
  // state holds one interval per register). For callers that evaluate many blocks and bound their total work.
  uint64_t size() const;

  struct Impl;

 private:
  explicit BlockRanges(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether every thread of a block that executes some block barrier (bar.sync / barrier.sync / bar.red) also reaches
// the kernel's end having executed the same barriers as the others, which is what a fused kernel needs before it may
// send a part's returning threads to one more barrier. It holds when no thread can leave for a `ret`/`exit` while
// another of its block may still meet a barrier: every branch (or guarded ret) from which both a barrier and a
// barrier-free way out are reachable must be uniform in the block (its predicate derives only from %ntid, %nctaid,
// %ctaid, parameters and constants, never from %tid, memory or warp-level values). Flow-insensitive, so
// conservative. Sets *why (with the PTX line) when it does not hold.
bool threadsExitAfterTheirLastBarrier(const Function& f, const Cfg& cfg, std::string* why);

}  // namespace kfuse::ptx
