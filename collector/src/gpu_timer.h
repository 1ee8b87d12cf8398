// GpuTimer: GPU start/end times for launches in the hook backend (`kfuse record --gpu-time`), from CUDA events.
//
// Each timed launch takes a pair of events from a pool sized once (created lazily, one slot at a time, and
// reused): the start event is recorded on the launch's stream just before the real launch, the end event just
// after. Pairs are resolved later, never on the launch path: resolve() (called at synchronizations the
// application makes, and at exit) queries each pending end event without blocking; completed pairs are turned
// into times on the trace clock through cuEventElapsedTime against one reference event recorded on the first
// timed launch's stream (reference CPU time + elapsed ms * 1e6) and pushed as kGpuTime events for the launch's
// correlation id. Only the driver's own event functions (DriverTable query slots) are called, never hooks.
//
// Failure policy: the application's behaviour never changes. When an event call fails, GPU timing is switched
// off with one line on stderr; pending pairs are released without times. A full pool leaves further launches
// untimed (counted, stat `gpu_time_pool_full`).
//
// Thread-safety: begin()/finish()/cancel() may be called from any thread concurrently (lock-free slot claims);
// resolve() serialises itself and returns at once if another thread is resolving (unless `final`).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "kfuse/collector/trace_sink.h"
#include "kfuse/hooks/driver_hooks.h"

namespace kfuse::collector {

class GpuTimer {
 public:
  static constexpr size_t kDefaultPairs = 4096;

  GpuTimer(hooks::DriverTable& table, TraceSink& sink, size_t pairs = kDefaultPairs);
  ~GpuTimer();  // does not destroy the driver's events (the driver may be gone at exit)

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // Before the real launch on `stream`: claims a pair and records its start event. -1 = not timed.
  int begin(CUstream stream);
  // After a successful launch: records the end event. False (slot released) if that failed.
  bool end(int slot, CUstream stream);
  // The launch was recorded with kLaunchWaitsForGpuTime under `correlation_id`: the pair may now be resolved.
  void commit(int slot, int64_t correlation_id);
  // The launch failed or was not recorded: release the pair unused.
  void cancel(int slot);

  // Resolves completed pairs (cuEventQuery == CUDA_SUCCESS) into kGpuTime events. `final` (exit): waits for a
  // concurrent resolve, then releases pairs still pending without times and pushes the statistics.
  void resolve(bool final);

  uint64_t timed() const { return timed_.load(); }
  uint64_t poolFull() const { return pool_full_.load(); }

 private:
  enum State : uint32_t { kFree = 0, kClaimed, kPending, kResolving };
  struct Pair {
    std::atomic<uint32_t> state{kFree};
    CUevent start = nullptr, end = nullptr;  // created on first use, kept
    int64_t correlation_id = 0;
  };

  bool ensureReference(CUstream stream);
  void disable(const char* call, CUresult r);
  void pushTimes(int64_t correlation_id, int64_t start_ns, int64_t end_ns);

  hooks::DriverTable& table_;
  TraceSink& sink_;
  const size_t pairs_;
  std::unique_ptr<Pair[]> pool_;
  std::atomic<bool> enabled_{true};
  std::atomic<bool> disabled_reported_{false};
  std::atomic<size_t> cursor_{0};
  std::atomic<size_t> in_use_{0};
  std::atomic<uint64_t> pending_{0};
  std::atomic<uint64_t> timed_{0}, pool_full_{0}, released_{0};
  std::once_flag reference_once_;
  std::atomic<bool> reference_ok_{false};
  CUevent reference_ = nullptr;
  int64_t reference_ns_ = 0;
  std::mutex resolve_mu_;
};

}  // namespace kfuse::collector
