// Element-remapped (epilogue) fusion: a producer of any launch shape followed by element-wise consumers.
//
// The fused kernel runs the producer's body; right after the producer's one store to the intermediate buffer X,
// the same thread runs every consumer's body as the consumer thread that owns that element: with element index
// e = (store address - the consumers' X pointer) / s, it plays consumer thread e of a 1-D launch (ctaid.x =
// e / ntid.x, tid.x = e % ntid.x). That gives the same memory as the separate launches exactly when, for the
// launch's values:
//  - the producer writes X through one store of s bytes, outside any loop, whose guard is understood exactly
//    (a thread meeting it surely stores), and reads nothing of X; it shares no other written buffer with a consumer;
//  - the map from producer threads to elements is injective and aligned to s (each element written once);
//  - every consumer reads and writes X only at element e, s bytes, in consumer thread e (whatever else it reads
//    at other indices, such as a bias b[e % n], nobody in the pattern writes);
//  - every consumer thread that writes anything owns an element the producer writes (the others would never run);
//  - consumers are 1-D, use no barriers, shared memory, shuffles, atomics or grid sync.
// Elements the producer writes beyond the consumers' launch are skipped by the fused kernel (a bound check), as
// they had no consumer thread.
//
// The check enumerates the launches' threads (at most kMaxThreads each), so it is exact for the bound values and
// costs O(threads). Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "legality/thread_locality.h"

namespace kfuse::analyzer::epilogue {

inline constexpr uint64_t kMaxThreads = uint64_t{1} << 24;

// One kernel of the pattern, bound for one launch.
struct Part {
  const KernelFacts* facts = nullptr;
  locality::Shape shape;
  locality::AtomValues values;  // "paramN" -> value
  std::vector<BufferUse> uses;  // pointer arguments resolved to allocations
};

struct Result {
  Legality legality = Legality::kBlocked;
  std::string why;  // the deciding sentence (proven: what was shown)
  // Proven: the intermediate, as the rewriter needs it.
  int producer_param = -1;      // the producer's parameter pointing into X
  int consumer = -1;            // 0-based among the consumers: the one whose X pointer defines element 0
  int consumer_param = -1;      // its parameter
  int64_t consumer_offset = 0;  // element e lives at that pointer + consumer_offset + e * element_bytes
  uint32_t element_bytes = 0;
  uint64_t elements = 0;  // how many elements the producer writes
};

// `consumers` share one launch shape (the search guarantees it). Thread locality among the consumers is the
// caller's (the thread-local rules), as is visibility (PTX present, no unattributed accesses).
// `enumerated`, when given, is set to the threads the check enumerates (0 when it decides before enumerating).
Result check(const Part& producer, const std::vector<Part>& consumers, uint64_t* enumerated = nullptr);

// The producer's one store to the intermediate (`xs` names it) through its parameter `pp`, as both element-remapped
// kinds need it (epilogue and prologue): every access followed, one store, not atomic, outside any loop, affine, of
// known width, its guard exact and bound for these arguments. A read of the intermediate by the producer is refused
// when `read_refusal` is not empty, with that text after "<producer> reads <xs> (line N)".
struct Store {
  const ParamMemoryAccess* access = nullptr;  // null: refused, for `legality` and `why`
  Legality legality = Legality::kBlocked;
  std::string why;
  locality::LinearForm form;  // its byte offset from the pointer, bound
  locality::Domain domain;    // the threads that store, bound
};
Store producerStore(const Part& producer, const ParamFacts* pp, const std::string& xs, const std::string& read_refusal);

}  // namespace kfuse::analyzer::epilogue
