// Where a kernel's accesses through one pointer argument can fall inside its allocation, for one launch.
//
// Tensors carved out of one allocation (an arena, PyTorch's caching allocator, llm.c's parameter block) are told
// apart by these byte ranges: dependencies and proofs need overlapping ranges, not only a common allocation. The
// range comes from the PTX analysis's affine access forms with the launch's values bound (argument values, launch
// shape) over the threads the guards allow; it is a sound over-approximation. Without PTX, with an access the
// analysis could not follow, or with a form that cannot be bound, it is the whole allocation. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/ptx/ranges.h"
#include "legality/thread_locality.h"

namespace kfuse::analyzer {

// Every memory instruction through the parameter was followed to an address (none is missing from `accesses`).
bool fullyFollowed(const ParamFacts& p);

// Argument `p` of launch `l` when it is 4 or 8 bytes, sign-extended; nullopt for other sizes or bytes the launch
// does not have. Values that do not fit the analysis's arithmetic make the forms that use them fail their checks.
std::optional<int64_t> argumentValue(const core::Launch& l, const ParamFacts& p);

// The value a plan pins for argument `p` of launch `l`: its 1, 2, 4 or 8 bytes, sign-extended (the injector reads
// them the same way); nullopt for other sizes and bytes the launch does not have.
std::optional<int64_t> pinnedValue(const core::Launch& l, const ParamFacts& p);

// Argument `param` of launch `l` when it is itself a pointer into a recorded allocation (not one held inside a
// struct argument), else nullptr.
const core::PointerArg* resolvedPointer(const core::Launch& l, int param);

// The launch's 4- and 8-byte arguments as the atoms of the PTX analysis's forms ("param3").
locality::AtomValues launchValues(const KernelFacts& k, const core::Launch& l);

struct ByteRange {
  uint64_t lo = 0, hi = UINT64_MAX;  // [lo, hi) from the allocation's start; the default is the whole allocation
};

// The same relative to the pointer: [lo, hi) bytes from where the argument points, or unbounded.
struct RelativeRange {
  bool bounded = false;
  int64_t lo = 0, hi = 0;  // lo == hi: nothing is accessed
  ByteRange at(uint64_t pointer_offset) const;
};

// The bytes argument `param` of launch `l` may touch, relative to its pointer. Depends only on the kernel, the
// launch shape (dynamic shared memory included) and the arguments that influence its accesses (KernelFacts::
// influence_params; a pointer into an allocation only by pointing into one): callers may cache on them.
RelativeRange footprint(const KernelFacts* k, const core::Launch& l, int param, const locality::AtomValues& values);

using locality::countsLoopSteps;

// The byte ranges the interval analysis (ptx::BlockRanges, all blocks at once) gives every access of `k` in launch
// `l`, in KernelFacts::block_accesses' order; empty when the kernel has no interval analysis.
std::vector<ptx::AccessRange> launchRanges(const KernelFacts& k, const core::Launch& l);

// An upper bound, for every thread of launch `l`, on the steps of the loop access `a` (through parameter `param`)
// sits in: locality::Shape::iterations for its form. From the interval analysis's bytes for the access (`ranges`,
// launchRanges) and the form: F + S * k inside [lo, hi) gives k <= (hi - bytes - min F) / S. 1 when the form counts
// no steps or the access never runs; nullopt when the bytes are unbounded or the access cannot be matched.
std::optional<int64_t> iterationBound(const KernelFacts& k, const core::Launch& l, int param,
                                      const ParamMemoryAccess& a, const locality::AtomValues& values,
                                      const std::vector<ptx::AccessRange>& ranges);

// What a thread of launch `l` typically steps through the loop of access `a`, for costs, not proofs: the steps of
// the thread whose first address is the highest (for a positive step), which every thread takes at least when the
// threads' ranges end together (a row loop: the row's length; a grid-stride loop: n / the threads, rounded down).
// Same inputs and nullopt as iterationBound, and never above it.
std::optional<int64_t> iterationEstimate(const KernelFacts& k, const core::Launch& l, int param,
                                         const ParamMemoryAccess& a, const locality::AtomValues& values,
                                         const std::vector<ptx::AccessRange>& ranges);

// Footprints of every parameter of a launch, cached by (kernel, launch shape, form-parameter values): a trace of a
// million launches repeats a few distinct keys. Not thread-safe.
class FootprintCache {
 public:
  // Relative ranges by parameter index (empty when the kernel has no PTX).
  const std::vector<RelativeRange>& of(const KernelFacts& k, const core::Launch& l);

 private:
  std::unordered_map<std::string, std::vector<RelativeRange>> cache_;
  std::string key_;
};

}  // namespace kfuse::analyzer
