// Kineto import, phase 2: joining the collected records by correlation id and writing the model. Devices,
// processes and streams come first; then launches, copies and sets (each joined with its runtime call: host span,
// thread, external id, graph launch), events and syncs, caching-allocator allocations, CPU operators and scopes,
// each kind in time order.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "import/api_names.h"
#include "import/kineto_parse.h"
#include "kfuse/core/cancel.h"

namespace kfuse::analyzer::detail::kineto {
namespace {

// The host side of a copy or set (Memcpy / Memset): when and on which thread it was issued, and whether it was
// an Async call.
template <typename Record>
void takeApiSpan(Record& r, const ApiCall* api) {
  if (!api) return;
  r.api_start_ns = api->start_ns;
  r.api_end_ns = api->end_ns;
  r.thread_id = api->tid;
  r.async = api->name.find("Async") != std::string_view::npos;
}

std::optional<core::SyncKind> syncKindOfKineto(std::string_view kind) {
  if (kind == "Stream Sync") return core::SyncKind::kStream;
  if (kind == "Context Sync") return core::SyncKind::kContext;
  if (kind == "Event Sync") return core::SyncKind::kEvent;
  if (kind == "Stream Wait Event") return core::SyncKind::kStreamWaitEvent;
  if (kind == "Unknown") return core::SyncKind::kUnknown;
  return std::nullopt;
}

core::MemcpyKind memcpyKind(std::string_view name, std::string_view kind_arg) {
  for (std::string_view text : {kind_arg, name}) {
    if (text.find("HtoD") != std::string_view::npos) return core::MemcpyKind::kHostToDevice;
    if (text.find("DtoH") != std::string_view::npos) return core::MemcpyKind::kDeviceToHost;
    if (text.find("DtoD") != std::string_view::npos) return core::MemcpyKind::kDeviceToDevice;
    if (text.find("HtoH") != std::string_view::npos) return core::MemcpyKind::kHostToHost;
    if (text.find("PtoP") != std::string_view::npos || text.find("Peer") != std::string_view::npos) {
      return core::MemcpyKind::kPeer;
    }
  }
  return core::MemcpyKind::kUnknown;
}

}  // namespace

void KinetoParse::build() {
  core::Trace& t = result_.trace;
  setImportMetadata(t.metadata, "kineto", path_);
  for (auto& [k, v] : meta_extra_) t.metadata.extra[k] = v;
  ModelTracker model(t);

  std::sort(devices_.begin(), devices_.end(), [](const DeviceProps& a, const DeviceProps& b) { return a.id < b.id; });
  for (const DeviceProps& d : devices_) {
    core::Device dev;
    dev.ordinal = static_cast<int>(d.id);
    dev.name = std::string(d.name);
    dev.sm_count = static_cast<int>(std::clamp<int64_t>(d.sms, 0, 1 << 20));
    dev.memory_bytes = d.memory > 0 ? static_cast<uint64_t>(d.memory) : 0;
    dev.cc_major = static_cast<int>(std::clamp<int64_t>(d.major, 0, 1000));
    dev.cc_minor = static_cast<int>(std::clamp<int64_t>(d.minor, 0, 1000));
    model.addDevice(std::move(dev));
  }

  // Processes: those that called the GPU APIs.
  std::vector<int64_t> pids;
  for (const ApiCall& a : apis_) pids.push_back(a.pid);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  for (int64_t pid : pids) {
    auto it = process_names_.find(pid);
    model.process(pid, it == process_names_.end() ? std::string_view() : std::string_view(it->second));
  }

  // Streams in (device, native id) order, before any record refers to them.
  std::vector<std::pair<int64_t, int64_t>> stream_keys;
  for (const GpuOp& op : gpu_ops_) stream_keys.emplace_back(op.device, op.stream);
  for (const SyncEvent& s : syncs_) {
    if (validStream(s.stream)) stream_keys.emplace_back(s.device, s.stream);
    if (validStream(s.wait_on_stream)) stream_keys.emplace_back(s.device, s.wait_on_stream);
  }
  std::sort(stream_keys.begin(), stream_keys.end());
  stream_keys.erase(std::unique(stream_keys.begin(), stream_keys.end()), stream_keys.end());
  for (const auto& [dev, s] : stream_keys) {
    bool created = false;
    model.device(dev, &created);
    if (created) {
      problems_.add(core::StatId::kKinetoDeviceWithoutProperties);
    }
    model.stream(dev, s);
  }
  if (t.processes.size() == 1) model.setContextProcess(t.processes.front().id);

  // Correlation id -> API call.
  std::unordered_map<int64_t, size_t> api_by_corr;
  api_by_corr.reserve(apis_.size());
  for (size_t i = 0; i < apis_.size(); ++i) {
    if (!api_by_corr.emplace(apis_[i].correlation, i).second) {
      problems_.add(core::StatId::kKinetoDuplicateApiCorrelation);
    }
  }
  auto apiFor = [&](int64_t corr) -> const ApiCall* {
    if (corr == 0) return nullptr;
    auto it = api_by_corr.find(corr);
    return it == api_by_corr.end() ? nullptr : &apis_[it->second];
  };

  // GPU operations, each kind numbered in GPU start order (then stream, then file order).
  std::sort(gpu_ops_.begin(), gpu_ops_.end(), [](const GpuOp& a, const GpuOp& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.device != b.device) return a.device < b.device;
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.order < b.order;
  });
  // Cancellation (core/cancel.h) returns from here, in its loops and between its steps: run() then says so and
  // the half-built trace is dropped.
  if (core::cancelRequested()) return;
  for (const GpuOp& op : gpu_ops_) {
    if (core::cancelRequested()) return;
    const Id stream_id = model.stream(op.device, op.stream);
    const ApiCall* api = apiFor(op.correlation);
    const int64_t external_id = op.external_id != 0 ? op.external_id : (api ? api->external_id : 0);
    if (op.cls == EventClass::kKernel) {
      core::Launch l;
      l.id = static_cast<Id>(t.launches.size()) + 1;
      l.correlation_id = op.correlation;
      l.stream_id = stream_id;
      l.function_id = model.function(/*mangled=*/"", op.name);
      l.grid = op.grid;
      l.block = op.block;
      l.static_shared_bytes = op.shared;
      l.registers_per_thread = op.registers;
      l.gpu_start_ns = op.start_ns;
      l.gpu_end_ns = op.end_ns;
      if (api) {
        l.api_start_ns = api->start_ns;
        l.api_end_ns = api->end_ns;
        l.thread_id = api->tid;
      } else {
        problems_.add(core::StatId::kKinetoKernelWithoutApi);
      }
      if (external_id != 0) result_.launch_external_ids[l.id] = external_id;
      if (api && isGraphLaunchApi(api->name)) result_.launch_graph_ids[l.id] = api->correlation;
      t.launches.push_back(std::move(l));
    } else if (op.cls == EventClass::kMemcpy) {
      core::Memcpy m;
      m.id = static_cast<Id>(t.memcpys.size()) + 1;
      m.correlation_id = op.correlation;
      m.stream_id = stream_id;
      m.kind = memcpyKind(op.name, op.copy_kind);
      if (m.kind == core::MemcpyKind::kUnknown) {
        problems_.add(core::StatId::kKinetoMemcpyKindUnknown);
      }
      m.bytes = op.bytes > 0 ? static_cast<uint64_t>(op.bytes) : 0;
      m.gpu_start_ns = op.start_ns;
      m.gpu_end_ns = op.end_ns;
      takeApiSpan(m, api);
      if (external_id != 0) result_.memcpy_external_ids[m.id] = external_id;
      t.memcpys.push_back(m);
    } else {
      core::Memset m;
      m.id = static_cast<Id>(t.memsets.size()) + 1;
      m.correlation_id = op.correlation;
      m.stream_id = stream_id;
      m.bytes = op.bytes > 0 ? static_cast<uint64_t>(op.bytes) : 0;
      m.gpu_start_ns = op.start_ns;
      m.gpu_end_ns = op.end_ns;
      takeApiSpan(m, api);
      if (external_id != 0) result_.memset_external_ids[m.id] = external_id;
      t.memsets.push_back(m);
    }
  }

  if (core::cancelRequested()) return;
  buildEventsAndSyncs(model);
  if (core::cancelRequested()) return;
  buildAllocations(model);
  if (core::cancelRequested()) return;

  std::stable_sort(result_.cpu_ops.begin(), result_.cpu_ops.end(), [](const CpuOp& a, const CpuOp& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.external_id < b.external_id;
  });
  // Module and annotation ranges by start (the outer one first when two start together), numbered.
  std::stable_sort(scopes_.begin(), scopes_.end(), [](const core::NvtxRange& a, const core::NvtxRange& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  for (core::NvtxRange& r : scopes_) {
    r.id = static_cast<Id>(t.nvtx_ranges.size()) + 1;
    t.nvtx_ranges.push_back(std::move(r));
  }
  scopes_.clear();
}

void KinetoParse::buildEventsAndSyncs(ModelTracker& model) {
  core::Trace& t = result_.trace;
  // Events: one per event-record call, in call order.
  std::vector<const ApiCall*> records;
  for (const ApiCall& a : apis_) {
    if (isEventRecordApi(a.name)) records.push_back(&a);
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const ApiCall* a, const ApiCall* b) { return a->start_ns < b->start_ns; });
  std::unordered_map<int64_t, size_t> event_by_corr;
  for (const ApiCall* a : records) {
    core::Event e;
    e.id = static_cast<Id>(t.events.size()) + 1;
    e.correlation_id = a->correlation;
    e.record_ns = a->start_ns;
    event_by_corr.emplace(a->correlation, t.events.size());
    t.events.push_back(e);
  }

  // Syncs: the union of Kineto's cuda_sync events and host synchronisation calls, one per correlation id.
  struct Pending {
    const SyncEvent* gpu = nullptr;
    const ApiCall* api = nullptr;
    int64_t start = kNoTime;
    size_t order = 0;
  };
  std::vector<Pending> pending;
  std::unordered_map<int64_t, size_t> by_corr;
  for (const SyncEvent& s : syncs_) {
    Pending p;
    p.gpu = &s;
    p.order = pending.size();
    if (s.correlation != 0) by_corr.emplace(s.correlation, pending.size());
    pending.push_back(p);
  }
  for (const ApiCall& a : apis_) {
    auto it = by_corr.find(a.correlation);
    if (it != by_corr.end()) {
      if (!pending[it->second].api) pending[it->second].api = &a;
      continue;
    }
    if (!syncKindOfApi(a.name)) continue;
    Pending p;
    p.api = &a;
    p.order = pending.size();
    by_corr.emplace(a.correlation, pending.size());
    pending.push_back(p);
  }
  for (Pending& p : pending) p.start = p.api ? p.api->start_ns : p.gpu->start_ns;
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.order < b.order;
  });
  for (const Pending& p : pending) {
    core::Sync s;
    s.id = static_cast<Id>(t.syncs.size()) + 1;
    std::optional<core::SyncKind> kind;
    if (p.gpu) {
      kind = syncKindOfKineto(p.gpu->kind);
      s.correlation_id = p.gpu->correlation;
      const bool on_stream = kind == core::SyncKind::kStream || kind == core::SyncKind::kStreamWaitEvent;
      if (on_stream && validStream(p.gpu->stream)) s.stream_id = model.stream(p.gpu->device, p.gpu->stream);
      if (p.gpu->wait_record_corr >= 0) {
        auto it = event_by_corr.find(p.gpu->wait_record_corr);
        if (it != event_by_corr.end()) {
          core::Event& e = t.events[it->second];
          s.event_id = e.id;
          if (validStream(p.gpu->wait_on_stream) && e.stream_id == kNoId) {
            e.stream_id = model.stream(p.gpu->device, p.gpu->wait_on_stream);
          }
        } else {
          problems_.add(core::StatId::kKinetoSyncEventRecordMissing);
        }
      }
      s.start_ns = p.gpu->start_ns;
      s.end_ns = p.gpu->end_ns;
    }
    if (!kind && p.api) kind = syncKindOfApi(p.api->name);
    if (!kind) {
      problems_.add(core::StatId::kKinetoSyncKindUnknown);
    }
    s.kind = kind.value_or(core::SyncKind::kUnknown);
    if (p.api) {
      s.correlation_id = p.api->correlation;
      s.thread_id = p.api->tid;
      s.start_ns = p.api->start_ns;
      s.end_ns = p.api->end_ns;
    }
    if (!p.gpu && (s.kind == core::SyncKind::kStream || s.kind == core::SyncKind::kStreamWaitEvent)) {
      problems_.add(core::StatId::kKinetoSyncStreamUnknown);
    }
    t.syncs.push_back(s);
  }
}

void KinetoParse::buildAllocations(ModelTracker& model) {
  core::Trace& t = result_.trace;
  std::stable_sort(memory_.begin(), memory_.end(), [](const MemoryEvent& a, const MemoryEvent& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    return a.order < b.order;
  });
  std::unordered_map<int64_t, size_t> live;  // address -> index in t.allocations
  for (const MemoryEvent& m : memory_) {
    if (m.bytes == 0) continue;
    if (m.bytes > 0) {
      auto it = live.find(m.addr);
      if (it != live.end()) {
        problems_.add(core::StatId::kKinetoMemoryAllocOverLive);
        t.allocations[it->second].free_ns = m.ts_ns;
        live.erase(it);
      }
      core::Allocation a;
      a.id = static_cast<Id>(t.allocations.size()) + 1;
      a.context_id = model.context(m.device);
      a.address = static_cast<uint64_t>(m.addr);
      a.size = static_cast<uint64_t>(m.bytes);
      a.kind = core::AllocationKind::kPool;
      a.alloc_ns = m.ts_ns;
      live.emplace(m.addr, t.allocations.size());
      t.allocations.push_back(a);
      continue;
    }
    auto it = live.find(m.addr);
    if (it != live.end()) {
      core::Allocation& a = t.allocations[it->second];
      a.free_ns = m.ts_ns;
      if (a.size != static_cast<uint64_t>(-m.bytes)) {
        problems_.add(core::StatId::kKinetoMemoryFreeSizeMismatch);
      }
      live.erase(it);
      continue;
    }
    problems_.add(core::StatId::kKinetoMemoryFreeWithoutAlloc);
    core::Allocation a;
    a.id = static_cast<Id>(t.allocations.size()) + 1;
    a.context_id = model.context(m.device);
    a.address = static_cast<uint64_t>(m.addr);
    a.size = m.bytes == std::numeric_limits<int64_t>::min() ? 0 : static_cast<uint64_t>(-m.bytes);
    a.kind = core::AllocationKind::kPool;
    a.free_ns = m.ts_ns;
    t.allocations.push_back(a);
  }
}

}  // namespace kfuse::analyzer::detail::kineto
