#include "gpu_timer.h"

#include <cmath>
#include <cstdio>

#include "kfuse/collector/events.h"
#include "kfuse/collector/hook_recorder.h"
#include "kfuse/core/trace.h"

namespace kfuse::collector {

GpuTimer::GpuTimer(DriverTable& table, TraceSink& sink, size_t pairs)
    : table_(table), sink_(sink), pairs_(pairs ? pairs : 1), pool_(new Pair[pairs_]) {}

GpuTimer::~GpuTimer() = default;

void GpuTimer::disable(const char* call, CUresult r) {
  enabled_.store(false, std::memory_order_relaxed);
  if (disabled_reported_.exchange(true)) return;
  std::fprintf(stderr,
               "kfuse: collector: %s failed (CUresult %d); GPU times are off from here on, the application "
               "goes on\n",
               call, static_cast<int>(r));
  sink_.pushStat(core::StatId::kGpuTimeDisabled, 1);
}

void GpuTimer::pushTimes(int64_t correlation_id, int64_t start_ns, int64_t end_ns) {
  GpuTimeEvent g;
  g.correlation_id = correlation_id;
  g.start_ns = start_ns;
  g.end_ns = end_ns;
  g.target = GpuTimeTarget::kLaunch;
  sink_.pushStruct(EventKind::kGpuTime, g);
}

bool GpuTimer::ensureReference(CUstream stream) {
  std::call_once(reference_once_, [&] {
    auto create = table_.EventCreate.load();
    auto record = table_.EventRecordDirect.load();
    if (!create || !record || !table_.EventQuery.load() || !table_.EventElapsedTime.load()) {
      disable("looking up the driver's event functions", CUDA_ERROR_NOT_FOUND);
      return;
    }
    if (CUresult r = create(&reference_, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
      disable("cuEventCreate", r);
      return;
    }
    // The reference's GPU time is taken to be the CPU time of its record: exact when the stream is idle, which
    // it normally is before the first kernel.
    reference_ns_ = collectorNowNs();
    if (CUresult r = record(reference_, stream); r != CUDA_SUCCESS) {
      disable("cuEventRecord", r);
      return;
    }
    reference_ok_.store(true, std::memory_order_release);
  });
  return reference_ok_.load(std::memory_order_acquire);
}

int GpuTimer::begin(CUstream stream) {
  if (!enabled()) return -1;
  if (!ensureReference(stream)) return -1;
  // Reserve first: while in_use_ <= pairs_ after our increment, some slot is free (slots are freed before the
  // count drops), so the probe below ends.
  if (in_use_.fetch_add(1, std::memory_order_acq_rel) >= pairs_) {
    in_use_.fetch_sub(1, std::memory_order_acq_rel);
    pool_full_.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  size_t i = cursor_.fetch_add(1, std::memory_order_relaxed) % pairs_;
  for (;; i = (i + 1) % pairs_) {
    uint32_t expected = kFree;
    if (pool_[i].state.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel)) break;
  }
  Pair& p = pool_[i];
  auto create = table_.EventCreate.load();
  CUresult r = CUDA_SUCCESS;
  if (!p.start) r = create(&p.start, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS && !p.end) r = create(&p.end, CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS) {
    disable("cuEventCreate", r);
    cancel(static_cast<int>(i));
    return -1;
  }
  if (r = table_.EventRecordDirect.load()(p.start, stream); r != CUDA_SUCCESS) {
    disable("cuEventRecord", r);
    cancel(static_cast<int>(i));
    return -1;
  }
  return static_cast<int>(i);
}

bool GpuTimer::end(int slot, CUstream stream) {
  if (slot < 0) return false;
  if (CUresult r = table_.EventRecordDirect.load()(pool_[slot].end, stream); r != CUDA_SUCCESS) {
    disable("cuEventRecord", r);
    cancel(slot);
    return false;
  }
  return true;
}

void GpuTimer::commit(int slot, int64_t correlation_id) {
  if (slot < 0) return;
  Pair& p = pool_[slot];
  p.correlation_id = correlation_id;
  pending_.fetch_add(1, std::memory_order_relaxed);
  p.state.store(kPending, std::memory_order_release);
}

void GpuTimer::cancel(int slot) {
  if (slot < 0) return;
  pool_[slot].state.store(kFree, std::memory_order_release);
  in_use_.fetch_sub(1, std::memory_order_acq_rel);
}

void GpuTimer::resolve(bool final) {
  std::unique_lock lock(resolve_mu_, std::defer_lock);
  if (final) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return;  // another thread is resolving; the next synchronization picks up the rest
  }
  if (pending_.load(std::memory_order_relaxed) == 0 && !final) return;
  auto query = table_.EventQuery.load();
  auto elapsed = table_.EventElapsedTime.load();
  uint64_t unresolved = 0;
  for (size_t i = 0; i < pairs_ && pending_.load(std::memory_order_relaxed) > 0; ++i) {
    Pair& p = pool_[i];
    uint32_t expected = kPending;
    if (!p.state.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel)) continue;
    int64_t start_ns = -1, end_ns = -1;
    bool done = !enabled();  // disabled: release without times
    if (!done) {
      const CUresult q = query(p.end);
      if (q == CUDA_SUCCESS) {
        float to_start = 0, duration = 0;
        CUresult r = elapsed(&to_start, reference_, p.start);
        if (r == CUDA_SUCCESS) r = elapsed(&duration, p.start, p.end);
        if (r == CUDA_SUCCESS) {
          start_ns = reference_ns_ + std::llround(double{to_start} * 1e6);
          end_ns = start_ns + std::llround(double{duration} * 1e6);
          timed_.fetch_add(1, std::memory_order_relaxed);
        } else {
          disable("cuEventElapsedTime", r);
        }
        done = true;
      } else if (q != CUDA_ERROR_NOT_READY) {
        disable("cuEventQuery", q);
        done = true;
      } else if (final) {
        ++unresolved;  // still running at exit: left without times rather than waiting
        done = true;
      }
    }
    if (!done) {
      p.state.store(kPending, std::memory_order_release);
      continue;
    }
    if (start_ns < 0) released_.fetch_add(1, std::memory_order_relaxed);
    pushTimes(p.correlation_id, start_ns, end_ns);  // also releases the launch the assembler holds
    pending_.fetch_sub(1, std::memory_order_relaxed);
    cancel(static_cast<int>(i));
  }
  if (final) {
    if (const uint64_t n = pool_full_.load()) {
      sink_.pushStat(core::StatId::kGpuTimePoolFull, static_cast<int64_t>(n));
    }
    if (unresolved) {
      sink_.pushStat(core::StatId::kGpuTimeUnresolved, static_cast<int64_t>(unresolved));
    }
  }
}

}  // namespace kfuse::collector
