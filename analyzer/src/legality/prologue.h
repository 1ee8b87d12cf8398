// Prologue fusion: an element-wise producer folded into the loads of a consumer of any launch shape.
//
// The fused kernel runs in the consumer's launch. Each consumer load of the intermediate X computes the element
// it loads instead: with e = (load address - where element 0 is) / s, it runs the producer's body as producer
// thread p = e / k (ctaid.x = p / ntid.x, tid.x = p % ntid.x) and takes the value that thread would have stored
// (lane e % k of a vector store of k elements). The
// producer's threads also still run (strided over the consumer's threads) so that X is written as before, unless
// the rewrite drops that part (`--aggressive`, when the trace shows nobody reads X afterwards). That gives the same
// memory as the separate launches exactly when, for the launch's values:
//  - the producer is element-wise over X: one store of s bytes (2, 4 or 8), or a vector of k = 2 or 4 such elements,
//    outside any loop, at s * k * its flat 1-D thread index plus a constant (thread p writes elements kp to
//    kp + k - 1), whose guard is understood exactly; it reads nothing of X and writes nothing else; it uses no
//    barriers, shared memory, shuffles, atomics or grid sync (so thread p can run anywhere);
//  - the consumer only reads X, through one pointer, one element or a vector of 2 or 4 elements per load (loads
//    are naturally aligned and element 0 is at a multiple of s, so each loads whole elements);
//  - every element the consumer may read (its footprint, a sound over-approximation of the addresses its loads
//    can take) is one the producer writes;
//  - the consumer writes nothing the producer reads (the producer's inputs keep their values while the consumer's
//    threads recompute from them).
//
// The check enumerates the producer's threads (at most kMaxThreads), so it is exact for the bound values and costs
// O(threads). Plain values; thread-safe.
#pragma once

#include "legality/epilogue.h"

namespace kfuse::analyzer::prologue {

inline constexpr uint64_t kMaxThreads = uint64_t{1} << 24;

struct Result {
  Legality legality = Legality::kBlocked;
  std::string why;  // the deciding sentence (proven: what was shown)
  // Proven: the intermediate, as the rewriter needs it.
  int producer_param = -1;      // the producer's parameter pointing into X
  int consumer_param = -1;      // the consumer's
  int64_t consumer_offset = 0;  // element e lives at the consumer's pointer + consumer_offset + e * element_bytes
  uint32_t element_bytes = 0;
  uint32_t producer_lanes = 1;  // elements per producer thread (a vector store)
  uint64_t elements = 0;        // how many elements the producer writes
};

// Visibility (PTX present, no unattributed accesses) is the caller's.
// `enumerated`, when given, is set to the threads the check enumerates (0 when it decides before enumerating).
Result check(const epilogue::Part& producer, const epilogue::Part& consumer, uint64_t* enumerated = nullptr);

}  // namespace kfuse::analyzer::prologue
