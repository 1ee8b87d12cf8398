// Block-level vertical fusion: a producer and a consumer with the same launch shape, fused so that each block runs
// the producer's body, a block barrier (bar.sync), then the consumer's body.
//
// That gives the same memory as the two launches when no block's consumer part can see or disturb another block's
// producer part, for the launch's values:
//  - no byte a consumer block reads is written by a different producer block (it would read it too early);
//  - no byte a consumer block writes is read or written by a different producer block (it would be overwritten, or
//    change what the producer reads);
// within one block, the barrier orders every producer access before every consumer access, as the kernel boundary
// did. The bytes each block may touch come from ptx::BlockRanges (intervals, loops included), per block of the
// launch: a sound over-approximation, so overlapping intervals refuse the fusion even where the exact bytes would
// not overlap (a grid-stride producer's interval runs from its first element to the end). Both kernels must have
// PTX, and every global access of both must be bounded.
//
// The rewriter's side (fuseVertical with a barrier between the parts) sends the producer's returning threads to that
// barrier, so a producer with barriers of its own (a block reduction) must not let any thread leave while others of
// its block still meet one (ptx::threadsExitAfterTheirLastBarrier); the check refuses that too.
// Plain values; thread-safe.
#pragma once

#include <string>

#include "kfuse/analyzer/analysis.h"

namespace kfuse::analyzer::block_level {

// Blocks a check evaluates at most (each block is an interval analysis of both kernels).
inline constexpr uint64_t kMaxBlocks = 16384;
// Work a check does at most: blocks x (statements + registers) of both kernels (ptx::BlockRanges::size), at about
// 75 ns a unit some two and a half seconds (16,384 blocks of two kernels of 1,000 statements and registers each
// fit). A 1M-instruction kernel launched in 4,096 blocks would otherwise take hours.
inline constexpr uint64_t kMaxWork = uint64_t{32} << 20;
// Byte intervals a check keeps at most: blocks x global accesses of both kernels (24 bytes each, twice over for
// the index of the producer's).
inline constexpr uint64_t kMaxIntervals = uint64_t{4} << 20;

struct Result {
  Legality legality = Legality::kBlocked;
  std::string why;  // the deciding sentence: what was shown, or which access breaks which rule
};

// `producer` then `consumer`, launched as `lp` and `lc` (same grid and block: the caller checked).
Result check(const KernelFacts& producer, const core::Launch& lp, const KernelFacts& consumer, const core::Launch& lc);

}  // namespace kfuse::analyzer::block_level
