// Byte ranges of kernel arguments inside their allocations; see footprint.h.
#include "graph/footprint.h"

#include <algorithm>
#include <cstring>

#include "kfuse/ptx/ranges.h"

namespace kfuse::analyzer {

bool fullyFollowed(const ParamFacts& p) {
  int reads = 0, writes = 0;
  for (const ParamMemoryAccess& a : p.accesses) {
    reads += a.is_read ? 1 : 0;
    writes += a.is_write ? 1 : 0;
  }
  return reads >= p.ptx_reads && writes >= p.ptx_writes;
}

std::optional<int64_t> pinnedValue(const core::Launch& l, const ParamFacts& p) {
  if (p.offset < 0 || (p.size != 1 && p.size != 2 && p.size != 4 && p.size != 8) ||
      static_cast<size_t>(p.offset) + static_cast<size_t>(p.size) > l.arg_bytes.size()) {
    return std::nullopt;
  }
  const uint8_t* b = l.arg_bytes.data() + p.offset;
  switch (p.size) {
    case 1: return static_cast<int8_t>(b[0]);
    case 2: {
      int16_t v;
      std::memcpy(&v, b, 2);
      return v;
    }
    case 4: {
      int32_t v;
      std::memcpy(&v, b, 4);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, b, 8);
      return v;
    }
  }
}

std::optional<int64_t> argumentValue(const core::Launch& l, const ParamFacts& p) {
  if (p.size != 4 && p.size != 8) return std::nullopt;
  return pinnedValue(l, p);
}

const core::PointerArg* resolvedPointer(const core::Launch& l, int param) {
  for (const core::PointerArg& a : l.pointer_args) {
    if (a.param_index == param && a.field_offset < 0 && a.allocation_id != core::kNoId) return &a;
  }
  return nullptr;
}

locality::AtomValues launchValues(const KernelFacts& k, const core::Launch& l) {
  locality::AtomValues values;
  for (const ParamFacts& p : k.params) {
    if (auto v = argumentValue(l, p)) values["param" + std::to_string(p.index)] = *v;
  }
  return values;
}

ByteRange RelativeRange::at(uint64_t pointer_offset) const {
  constexpr int64_t kLimit = int64_t{1} << 60;
  if (!bounded || pointer_offset > static_cast<uint64_t>(kLimit)) return ByteRange{};
  const int64_t base = static_cast<int64_t>(pointer_offset);
  if (lo == hi) return ByteRange{pointer_offset, pointer_offset};  // nothing is accessed
  if (base + lo < 0) return ByteRange{};  // before the allocation's start: not a range kfuse can trust
  return ByteRange{static_cast<uint64_t>(base + lo), static_cast<uint64_t>(base + hi)};
}

std::vector<ptx::AccessRange> launchRanges(const KernelFacts& k, const core::Launch& l) {
  if (!k.block_ranges) return {};
  ptx::LaunchBinding b;
  b.ntid = {l.block.x, l.block.y, l.block.z};
  b.nctaid = {l.grid.x, l.grid.y, l.grid.z};
  b.all_blocks = true;
  for (const ParamFacts& p : k.params) b.params.push_back(argumentValue(l, p));
  return k.block_ranges->evaluate(b);
}

namespace {

// The steps of a loop access for every thread of the launch: `most`, a bound that holds for each (iterationBound),
// and `typical`, what a thread whose start is the latest one takes (iterationEstimate).
struct StepCounts {
  int64_t most = 1, typical = 1;
};

std::optional<StepCounts> stepCounts(const KernelFacts& k, const core::Launch& l, int param, const ParamMemoryAccess& a,
                                     const locality::AtomValues& values, const std::vector<ptx::AccessRange>& ranges) {
  if (!a.loop_steps) return StepCounts{};  // loop_steps implies an offset form
  if (param < 0 || static_cast<size_t>(param) >= k.params.size() || a.bytes == 0) return std::nullopt;
  const auto pointer = argumentValue(l, k.params[static_cast<size_t>(param)]);
  if (!pointer) return std::nullopt;
  // The interval analysis's bytes of every memory instruction on the access's line through the same pointer.
  __extension__ typedef __int128 Wide;
  Wide lo = 0, hi = 0;
  bool matched = false, reached = false;
  for (size_t i = 0; i < ranges.size() && i < k.block_accesses.size(); ++i) {
    const KernelFacts::BlockAccess& b = k.block_accesses[i];
    if (b.line != a.line || b.via_param != param) continue;
    matched = true;
    if (!ranges[i].reached) continue;
    if (!ranges[i].bounded) return std::nullopt;
    lo = reached ? std::min<Wide>(lo, ranges[i].lo) : ranges[i].lo;
    hi = reached ? std::max<Wide>(hi, ranges[i].hi) : ranges[i].hi;
    reached = true;
  }
  if (!matched) return std::nullopt;
  if (!reached) return StepCounts{};  // no thread makes the access
  locality::Shape one{l.grid, l.block, 1};
  std::string why;
  const auto f = locality::bind(*a.offset_form, one, values, &why);
  if (!f) return std::nullopt;
  const int64_t step = f->coef[locality::kIter];
  if (step == 0) return StepCounts{};
  locality::LinearForm start = *f;  // the form at step 0
  start.coef[locality::kIter] = 0;
  const auto span = locality::range(start, locality::Domain{}, one);
  if (!span) return StepCounts{};
  // F + step * s lies in [lo - pointer, hi - pointer - bytes] for every step s the thread takes. The thread that
  // starts nearest the end of that range takes the fewest steps: counting from the other end bounds them all.
  const Wide rlo = lo - *pointer, rhi = hi - *pointer - a.bytes;
  const Wide most = step > 0 ? (rhi - span->first) / step : (span->second - rlo) / -Wide{step};
  const Wide fewest = step > 0 ? (rhi - span->second) / step : (span->first - rlo) / -Wide{step};
  constexpr Wide kLimit = Wide{1} << 40;
  if (most > kLimit) return std::nullopt;
  StepCounts out;
  out.most = most < 0 ? 1 : static_cast<int64_t>(most) + 1;
  out.typical = fewest < 0 ? 1 : std::min(out.most, static_cast<int64_t>(fewest) + 1);
  return out;
}

}  // namespace

std::optional<int64_t> iterationBound(const KernelFacts& k, const core::Launch& l, int param,
                                      const ParamMemoryAccess& a, const locality::AtomValues& values,
                                      const std::vector<ptx::AccessRange>& ranges) {
  const std::optional<StepCounts> c = stepCounts(k, l, param, a, values, ranges);
  if (!c) return std::nullopt;
  return c->most;
}

std::optional<int64_t> iterationEstimate(const KernelFacts& k, const core::Launch& l, int param,
                                         const ParamMemoryAccess& a, const locality::AtomValues& values,
                                         const std::vector<ptx::AccessRange>& ranges) {
  const std::optional<StepCounts> c = stepCounts(k, l, param, a, values, ranges);
  if (!c) return std::nullopt;
  return c->typical;
}

namespace {

// The bytes argument `param` may touch from the kernel's interval analysis over all blocks of the launch (loops
// included; ptx::BlockRanges), relative to its pointer. Whole when some access may go through it without being
// attributed to it, or is unbounded.
RelativeRange loopFootprint(const KernelFacts& k, const core::Launch& l, int param) {
  const RelativeRange whole;
  if (!k.block_ranges) return whole;
  const auto pointer = argumentValue(l, k.params[static_cast<size_t>(param)]);
  if (!pointer) return whole;
  const std::vector<ptx::AccessRange> ranges = launchRanges(k, l);
  constexpr int64_t kLimit = int64_t{1} << 60;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < ranges.size() && i < k.block_accesses.size(); ++i) {
    const KernelFacts::BlockAccess& a = k.block_accesses[i];
    if (a.via_param != param) {
      if (a.via_param < 0) return whole;  // it might go through this pointer unattributed
      continue;
    }
    if (!ranges[i].reached) continue;
    if (!ranges[i].bounded) return whole;
    int64_t rlo = 0, rhi = 0;
    if (__builtin_sub_overflow(ranges[i].lo, *pointer, &rlo) || __builtin_sub_overflow(ranges[i].hi, *pointer, &rhi) ||
        rlo < -kLimit || rhi > kLimit) {
      return whole;
    }
    lo = std::min(lo, rlo);
    hi = std::max(hi, rhi);
  }
  if (lo > hi) return RelativeRange{true, 0, 0};
  return RelativeRange{true, lo, hi};
}

}  // namespace

RelativeRange footprint(const KernelFacts* k, const core::Launch& l, int param, const locality::AtomValues& values) {
  const RelativeRange whole;
  if (!k || !k->has_ptx || param < 0 || static_cast<size_t>(param) >= k->params.size()) return whole;
  const ParamFacts& p = k->params[static_cast<size_t>(param)];
  if (p.source != AccessSource::kPtx) return whole;
  const bool affine =
      fullyFollowed(p) && std::all_of(p.accesses.begin(), p.accesses.end(), [](const ParamMemoryAccess& a) {
        return a.offset_form.has_value() && a.bytes > 0 && !a.loop_steps;
      });
  // Addresses inside loops, or not affine in the thread indices: the interval analysis over every block.
  if (!affine) return loopFootprint(*k, l, param);
  const locality::Shape shape{l.grid, l.block};
  constexpr int64_t kLimit = int64_t{1} << 60;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const ParamMemoryAccess& a : p.accesses) {
    if (!a.offset_form || a.bytes == 0) return whole;
    std::string why;
    const auto f = locality::bind(*a.offset_form, shape, values, &why);
    if (!f) return whole;
    const auto r = locality::range(*f, locality::bindGuard(a.guard_conditions, shape, values), shape);
    if (!r) continue;  // no thread of this launch makes the access
    if (r->first < -kLimit || r->second > kLimit) return whole;
    lo = std::min(lo, r->first);
    hi = std::max(hi, r->second + static_cast<int64_t>(a.bytes));
  }
  if (lo > hi) return RelativeRange{true, 0, 0};
  // Both are sound over-approximations, so the bytes lie in their intersection: the interval analysis narrows
  // on branches the affine ranges do not use (`x != 0` at a stencil's border keeps in[i - w] inside its tensor).
  const RelativeRange loops = loopFootprint(*k, l, param);
  if (loops.bounded) {
    if (loops.lo == loops.hi) return loops;
    lo = std::max(lo, loops.lo);
    hi = std::min(hi, loops.hi);
    if (lo >= hi) return RelativeRange{true, 0, 0};
  }
  return RelativeRange{true, lo, hi};
}

const std::vector<RelativeRange>& FootprintCache::of(const KernelFacts& k, const core::Launch& l) {
  key_.assign(reinterpret_cast<const char*>(&k.function_id), sizeof k.function_id);
  for (const uint32_t v : {l.grid.x, l.grid.y, l.grid.z, l.block.x, l.block.y, l.block.z}) {
    key_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  key_.append(reinterpret_cast<const char*>(&l.dynamic_shared_bytes), sizeof l.dynamic_shared_bytes);
  // Every argument that can move an access: footprints are relative to each pointer, so a pointer into an
  // allocation counts by that fact alone; a scalar, or a pointer into none (null), by its bytes.
  for (int fp : k.influence_params) {
    if (fp < 0 || static_cast<size_t>(fp) >= k.params.size()) continue;
    const bool resolved = resolvedPointer(l, fp) != nullptr;
    const ParamFacts& p = k.params[static_cast<size_t>(fp)];
    const bool absolute = std::binary_search(k.absolute_params.begin(), k.absolute_params.end(), fp);
    if (resolved && !absolute) {
      key_.push_back('P');
    } else if (p.offset >= 0 && p.size > 0 &&
               static_cast<size_t>(p.offset) + static_cast<size_t>(p.size) <= l.arg_bytes.size()) {
      key_.append(reinterpret_cast<const char*>(l.arg_bytes.data() + p.offset), static_cast<size_t>(p.size));
    }
    key_.push_back('|');
  }
  auto it = cache_.find(key_);
  if (it != cache_.end()) return it->second;
  const locality::AtomValues values = launchValues(k, l);
  std::vector<RelativeRange> ranges;
  for (size_t i = 0; i < k.params.size(); ++i) ranges.push_back(footprint(&k, l, static_cast<int>(i), values));
  return cache_.emplace(key_, std::move(ranges)).first->second;
}

}  // namespace kfuse::analyzer
