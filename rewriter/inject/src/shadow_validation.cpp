// Injector::Impl, shadow validation (`kfuse run --validate=N`): the originals and the fused kernel run on the same
// inputs, one after the other, and their results are compared byte for byte.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "injector_impl.h"
#include "kfuse/rewriter/event_timer.h"

namespace kfuse::inject {
namespace {

using hooks::DriverTable;
using rewriter::ArgRef;

}  // namespace

bool Injector::Impl::firstOfTuple(PlanState& st, int row) {
  std::lock_guard lock(st.validated_mu);
  if (std::find(st.validated_rows.begin(), st.validated_rows.end(), row) != st.validated_rows.end()) return false;
  st.validated_rows.push_back(row);
  return true;
}

CUresult Injector::Impl::validateAndLaunch(StreamSlot& s, size_t pi, CUfunction fn, ShadowMode mode) {
  const bool occurrence = mode == ShadowMode::kOccurrence;
  PlanState& st = *plans[pi];
  const RuntimePlan& p = st.plan;
  DriverTable& t = table();
  auto sync = t.CtxSynchronizeDirect.load();
  auto alloc = t.MemAllocDirect.load();
  auto free_ = t.MemFreeDirect.load();
  auto d2d = t.MemcpyDtoDDirect.load();
  auto d2h = t.MemcpyDtoHDirect.load();
  auto h2d = t.MemcpyHtoDDirect.load();
  if (!sync || !alloc || !free_ || !d2d || !d2h || !h2d) {
    disable(st, "--validate needs cuCtxSynchronize, cuMemAlloc, cuMemFree and cuMemcpy from the driver");
    return occurrence ? issueOriginals(s, FlushReason::kUnavailable) : CUDA_SUCCESS;
  }
  // The bytes each pointer argument may reach, one shadow per allocation: a copy must lie inside one allocation
  // (a GPU driver refuses a range running into the next one, however adjacent the two are in address space).
  struct Range {
    uint64_t lo, hi;
    uint64_t allocation;  // base of the allocation holding the range, 0 when the driver cannot say
    ArgRef first;
  };
  std::vector<Range> ranges;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    for (size_t a = 0; a < p.kernels[k].params.size(); ++a) {
      if (!p.kernels[k].params[a].pointer) continue;
      const ArgRef ref{static_cast<int>(k), static_cast<int>(a)};
      const uint64_t lo = pointerArg(s, p, ref);
      const uint64_t n = extent(lo, st.bytes_for[k][a]);
      if (!lo || !n) continue;
      uint64_t base = 0, size = 0;
      if (allocationOf(lo, base, size) && lo >= base && lo - base < size) {
        ranges.push_back({lo, std::min(lo + n, base + size), base, ref});
      } else {
        ranges.push_back({lo, lo + n, 0, ref});
      }
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<Range> merged;
  for (const Range& r : ranges) {
    const bool same_allocation = !merged.empty() && r.allocation == merged.back().allocation &&
                                 (r.allocation ? r.lo <= merged.back().hi : r.lo < merged.back().hi);
    if (same_allocation) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  const int count = s.count;
  CUresult r = sync();
  std::string failed_call = r == CUDA_SUCCESS ? "" : "cuCtxSynchronize";
  std::vector<CUdeviceptr> before(merged.size(), 0);
  for (size_t i = 0; i < merged.size() && r == CUDA_SUCCESS; ++i) {
    const uint64_t n = merged[i].hi - merged[i].lo;
    r = alloc(&before[i], n);
    if (r != CUDA_SUCCESS) {
      failed_call = "cuMemAlloc of " + std::to_string(n) + " bytes";
      break;
    }
    r = d2d(before[i], merged[i].lo, n);
    if (r != CUDA_SUCCESS) {
      const ArgRef& a = merged[i].first;
      failed_call = "cuMemcpyDtoD of " + std::to_string(n) + " bytes from argument " + std::to_string(a.param) +
                    " of " + p.kernels[a.kernel].name;
    }
  }
  std::vector<std::vector<uint8_t>> want(merged.size()), got(merged.size());
  if (r == CUDA_SUCCESS) {
    for (int i = 0; i < count && r == CUDA_SUCCESS; ++i) r = issueOriginal(s, i);
    if (r == CUDA_SUCCESS) r = sync();
    for (size_t i = 0; i < merged.size() && r == CUDA_SUCCESS; ++i) {
      want[i].resize(merged[i].hi - merged[i].lo);
      r = d2h(want[i].data(), merged[i].lo, want[i].size());
      if (r == CUDA_SUCCESS) r = d2d(merged[i].lo, before[i], want[i].size());
    }
  } else {
    // Not enough memory for the shadows: this occurrence runs unchanged.
    for (CUdeviceptr b : before) {
      if (b) free_(b);
    }
    disable(st, "--validate could not make shadow copies (" + failed_call + ": " + errorName(r) + ")");
    return occurrence ? issueOriginals(s, FlushReason::kUnavailable) : CUDA_SUCCESS;
  }
  std::string mismatch;
  const CUresult originals = r;  // what the application gets when the fused kernel fails or differs
  if (r == CUDA_SUCCESS) {
    r = launchFused(s, pi, fn, occurrence);
    if (r == CUDA_SUCCESS) r = sync();
    for (size_t i = 0; i < merged.size() && r == CUDA_SUCCESS; ++i) {
      got[i].resize(want[i].size());
      r = d2h(got[i].data(), merged[i].lo, got[i].size());
      if (r == CUDA_SUCCESS && mismatch.empty() && got[i] != want[i]) {
        const size_t at =
            static_cast<size_t>(std::mismatch(got[i].begin(), got[i].end(), want[i].begin()).first - got[i].begin());
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "byte %zu of the buffer passed as argument %d of %s differs (fused 0x%02x, originals 0x%02x)", at,
                      merged[i].first.param, p.kernels[static_cast<size_t>(merged[i].first.kernel)].name.c_str(),
                      got[i][at], want[i][at]);
        mismatch = buf;
      }
    }
  }
  // Puts the inputs back (kCheckOnly: the graph that runs next must find them as they were).
  const auto restore = [&] {
    CUresult c = CUDA_SUCCESS;
    for (size_t i = 0; i < merged.size() && c == CUDA_SUCCESS; ++i) {
      c = d2d(merged[i].lo, before[i], merged[i].hi - merged[i].lo);
    }
    return c;
  };
  if (!mismatch.empty() || r != CUDA_SUCCESS) {
    for (size_t i = 0; i < merged.size() && occurrence; ++i) {
      if (!want[i].empty()) h2d(merged[i].lo, want[i].data(), want[i].size());
    }
    if (!occurrence) (void)restore();
    st.validations_failed.fetch_add(1);
    disable(st, mismatch.empty() ? "validation run failed: " + errorName(r)
                                 : "validation failed at occurrence " +
                                       std::to_string(st.validations_passed.load() + 1) + ": " + mismatch);
    r = originals;  // the buffers hold the originals' results again
  } else {
    st.validations_passed.fetch_add(1);
    // Correct; on a GPU, is it also faster? Every timing run starts from the shadows of the inputs; at the end the
    // buffers hold the originals' results (which the fused kernel's equal, byte for byte), or, checking a graph's
    // chain, the inputs again.
    timeAgainstOriginals(s, pi, fn, restore, [&] {
      CUresult c = sync();
      for (size_t i = 0; i < merged.size() && c == CUDA_SUCCESS && occurrence; ++i) {
        c = h2d(merged[i].lo, want[i].data(), want[i].size());
      }
      return c;
    });
    if (!occurrence) {
      r = restore();
      if (r == CUDA_SUCCESS) r = sync();
    }
  }
  for (CUdeviceptr b : before) {
    if (b) free_(b);
  }
  return r;
}

void Injector::Impl::timeAgainstOriginals(StreamSlot& s, size_t pi, CUfunction fn,
                                          const std::function<CUresult()>& restore,
                                          const std::function<CUresult()>& finish) {
  PlanState& st = *plans[pi];
  DriverTable& t = table();
  if (options.time_runs <= 0) return;
  std::string why = rewriter::whyNotTimed(t);
  std::optional<uint64_t> originals, fused;
  if (why.empty()) {
    const CUstream stream = s.launches[0].stream;
    originals = rewriter::medianEventNs(
        t, stream, options.time_runs, restore,
        [&] {
          CUresult c = CUDA_SUCCESS;
          for (int i = 0; i < s.count && c == CUDA_SUCCESS; ++i) c = issueOriginal(s, i);
          return c;
        },
        &why);
    if (originals)
      fused = rewriter::medianEventNs(
          t, stream, options.time_runs, restore, [&] { return launchFused(s, pi, fn, false); }, &why);
    if (const CUresult c = finish(); c != CUDA_SUCCESS && why.empty()) why = "timing failed: " + errorName(c);
  }
  if (originals && *originals == 0) why = "not timed: the events measured no time for the original launches";
  if (!originals || !fused || *originals == 0) {
    std::lock_guard lock(st.mu);
    st.not_timed = why;
    return;
  }
  st.timed_originals_ns.store(*originals);
  st.timed_fused_ns.store(*fused);
  if (*fused >= *originals) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "measured no faster on this GPU: the fused kernel took %.1f us, the %d original launches %.1f us "
                  "(medians of %d runs)",
                  static_cast<double>(*fused) / 1e3, s.count, static_cast<double>(*originals) / 1e3, options.time_runs);
    disable(st, buf);
  }
}

}  // namespace kfuse::inject
