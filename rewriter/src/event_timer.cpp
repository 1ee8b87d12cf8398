// Device-event timing over the driver's function table.
#include "kfuse/rewriter/event_timer.h"

#include <algorithm>
#include <vector>

namespace kfuse::rewriter {

std::string whyNotTimed(const hooks::DriverTable& t) {
  if (t.EmuGetLaunch.load()) return "not timed: the stand-in driver runs kernels on the CPU, not a GPU";
  if (!t.EventCreate.load() || !t.EventRecordDirect.load() || !t.EventElapsedTime.load()) {
    return "not timed: the driver has no cuEventCreate, cuEventRecord or cuEventElapsedTime";
  }
  if (!t.CtxSynchronizeDirect.load()) return "not timed: the driver has no cuCtxSynchronize";
  return "";
}

std::optional<uint64_t> medianEventNs(const hooks::DriverTable& t, CUstream stream, int runs,
                                      const std::function<CUresult()>& restore, const std::function<CUresult()>& run,
                                      std::string* why) {
  auto create = t.EventCreate.load();
  auto record = t.EventRecordDirect.load();
  auto elapsed = t.EventElapsedTime.load();
  auto destroy = t.EventDestroy.load();
  auto sync = t.CtxSynchronizeDirect.load();
  if (!create || !record || !elapsed || !sync) {
    *why = "timing failed: the driver has no events";
    return std::nullopt;
  }
  CUevent start = nullptr, stop = nullptr;
  CUresult r = create(&start, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) r = create(&stop, CU_EVENT_DEFAULT);
  std::vector<uint64_t> ns;
  for (int i = 0; i <= runs && r == CUDA_SUCCESS; ++i) {  // run 0 warms up
    r = restore();
    if (r == CUDA_SUCCESS) r = sync();
    if (r == CUDA_SUCCESS) r = record(start, stream);
    if (r == CUDA_SUCCESS) r = run();
    if (r == CUDA_SUCCESS) r = record(stop, stream);
    if (r == CUDA_SUCCESS) r = sync();
    float ms = 0;
    if (r == CUDA_SUCCESS) r = elapsed(&ms, start, stop);
    if (r == CUDA_SUCCESS && i > 0) ns.push_back(static_cast<uint64_t>(static_cast<double>(ms) * 1e6 + 0.5));
  }
  if (destroy) {
    if (start) destroy(start);
    if (stop) destroy(stop);
  }
  if (r != CUDA_SUCCESS || ns.empty()) {
    *why = "timing failed: CUresult " + std::to_string(static_cast<int>(r));
    return std::nullopt;
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace kfuse::rewriter
