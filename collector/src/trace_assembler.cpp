#include "trace_assembler.h"

#include <algorithm>

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

namespace kfuse::collector {
namespace {

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string demangle(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : "";
  std::free(d);
  return out;
}

std::string fixedString(const char* s, size_t max) {
  return std::string(s, strnlen(s, max));
}

}  // namespace

Status TraceOutput::add(const core::Stat& v) {
  for (auto& s : t_.stats) {
    if (s.name == v.name) {
      s = v;
      return {};
    }
  }
  t_.stats.push_back(v);
  return {};
}

Status TraceOutput::setAllocationFreed(core::Id id, int64_t ns) {
  for (auto& a : t_.allocations) {
    if (a.id == id) a.free_ns = ns;
  }
  return {};
}

TraceAssembler::TraceAssembler(RecordOutput& out, AssemblerOptions options) : out_(out), options_(std::move(options)) {}

Status TraceAssembler::ensureProcess() {
  if (process_written_) return {};
  process_written_ = true;
  return out_.add(core::Process{1, options_.pid, options_.process_name});
}

Expected<core::Id> TraceAssembler::streamId(Handle stream, int64_t native_id) {
  if (native_id >= 0 && stream == 0) {  // CUPTI records: only the native id is known
    auto it = native_streams_.find(native_id);
    if (it != native_streams_.end()) return it->second;
    core::Stream s;
    s.id = ++next_stream_;
    s.native_id = native_id;
    KFUSE_RETURN_IF_ERROR(out_.add(s));
    native_streams_.emplace(native_id, s.id);
    return s.id;
  }
  if (stream == 0x1) stream = 0;  // CU_STREAM_LEGACY is the legacy default stream
  auto it = streams_.find(stream);
  if (it != streams_.end()) return it->second;
  core::Stream s;
  s.id = ++next_stream_;
  s.handle = stream;
  s.native_id = native_id;
  s.is_default = stream == 0 || stream == kPerThreadStream;
  KFUSE_RETURN_IF_ERROR(out_.add(s));
  streams_.emplace(stream, s.id);
  if (native_id >= 0) native_streams_.emplace(native_id, s.id);
  return s.id;
}

core::Id TraceAssembler::resolveAllocation(uint64_t address) {
  if (address == 0) return core::kNoId;
  auto hit = allocations_.find(address);
  return hit ? hit->allocation_id : core::kNoId;
}

Status TraceAssembler::consume(EventKind kind, const uint8_t* p, size_t size) {
  ++consumed_;
  KFUSE_RETURN_IF_ERROR(ensureProcess());
  auto need = [&](size_t n) { return size >= n; };
  switch (kind) {
    case EventKind::kLaunch: {
      if (!need(sizeof(LaunchEvent))) break;
      auto e = load<LaunchEvent>(p);
      if (size < sizeof e + e.arg_size) break;
      return onLaunch(e, p + sizeof e);
    }
    case EventKind::kFunction: {
      if (!need(sizeof(FunctionEvent))) break;
      auto e = load<FunctionEvent>(p);
      if (e.param_count > kMaxParams || size < sizeof e + e.param_count * sizeof(ParamLayout) + e.name_size) break;
      std::vector<ParamLayout> params(e.param_count);
      if (e.param_count) std::memcpy(params.data(), p + sizeof e, e.param_count * sizeof(ParamLayout));
      std::string name(reinterpret_cast<const char*>(p + sizeof e + e.param_count * sizeof(ParamLayout)), e.name_size);
      return onFunction(e, params.data(), name.c_str());
    }
    case EventKind::kModule:
      if (!need(sizeof(ModuleEvent))) break;
      return onModule(load<ModuleEvent>(p));
    case EventKind::kModuleUnload: {
      if (!need(sizeof(ModuleUnloadEvent))) break;
      auto e = load<ModuleUnloadEvent>(p);
      // Handles may be reused by a later load: forget functions of this module.
      modules_.erase(e.module);
      return {};
    }
    case EventKind::kStreamDestroy: {
      if (!need(sizeof(StreamDestroyEvent))) break;
      // A later stream may get the same handle: it will be a new Stream record.
      streams_.erase(load<StreamDestroyEvent>(p).stream);
      return {};
    }
    case EventKind::kAlloc:
      if (!need(sizeof(AllocEvent))) break;
      return onAlloc(load<AllocEvent>(p));
    case EventKind::kFree:
      if (!need(sizeof(FreeEvent))) break;
      return onFree(load<FreeEvent>(p));
    case EventKind::kMemcpy:
      if (!need(sizeof(MemcpyEvent))) break;
      return onMemcpy(load<MemcpyEvent>(p));
    case EventKind::kMemset:
      if (!need(sizeof(MemsetEvent))) break;
      return onMemset(load<MemsetEvent>(p));
    case EventKind::kSync:
      if (!need(sizeof(SyncEvent))) break;
      return onSync(load<SyncEvent>(p));
    case EventKind::kEventRecord:
      if (!need(sizeof(EventRecordEvent))) break;
      return onEventRecord(load<EventRecordEvent>(p));
    case EventKind::kDevice:
      if (!need(sizeof(DeviceEvent))) break;
      return onDevice(load<DeviceEvent>(p));
    case EventKind::kGpuTime: {
      if (!need(sizeof(GpuTimeEvent))) break;
      auto e = load<GpuTimeEvent>(p);
      if (size < sizeof e + e.name_size) break;
      std::string name(reinterpret_cast<const char*>(p + sizeof e), e.name_size);
      return onGpuTime(e, name.c_str());
    }
    case EventKind::kMetric:
      if (!need(sizeof(MetricEvent))) break;
      return onMetric(load<MetricEvent>(p));
    case EventKind::kNvtx: {
      if (!need(sizeof(NvtxEvent))) break;
      auto e = load<NvtxEvent>(p);
      if (size < sizeof e + uint64_t{e.name_size} + e.domain_size) break;
      std::string name(reinterpret_cast<const char*>(p + sizeof e), e.name_size);
      std::string domain(reinterpret_cast<const char*>(p + sizeof e + e.name_size), e.domain_size);
      return onNvtx(e, std::move(name), std::move(domain));
    }
    case EventKind::kStat:
      if (!need(sizeof(StatEvent))) break;
      return onStat(load<StatEvent>(p));
    case EventKind::kGraph:
      if (!need(sizeof(GraphEvent))) break;
      return onGraph(load<GraphEvent>(p));
    case EventKind::kGraphNode:
    case EventKind::kGraphExecKernelNode: {
      if (!need(sizeof(GraphNodeEvent))) break;
      auto e = load<GraphNodeEvent>(p);
      if (size < sizeof e + e.arg_size) break;
      return kind == EventKind::kGraphNode ? onGraphNode(e, p + sizeof e) : onGraphExecKernelNode(e, p + sizeof e);
    }
    case EventKind::kGraphEdge:
      if (!need(sizeof(GraphEdgeEvent))) break;
      return onGraphEdge(load<GraphEdgeEvent>(p));
    case EventKind::kGraphExec:
      if (!need(sizeof(GraphExecEvent))) break;
      return onGraphExec(load<GraphExecEvent>(p));
    case EventKind::kGraphLaunch:
      if (!need(sizeof(GraphLaunchEvent))) break;
      return onGraphLaunch(load<GraphLaunchEvent>(p));
    case EventKind::kCorrelationAlias: {
      if (!need(sizeof(CorrelationAliasEvent))) break;
      const auto e = load<CorrelationAliasEvent>(p);
      if (driver_correlation_.size() > (1u << 20)) driver_correlation_.clear();
      driver_correlation_[e.runtime_correlation_id] = e.driver_correlation_id;
      return {};
    }
    default: break;
  }
  count(core::StatId::kBadEvents);
  return {};
}

Status TraceAssembler::onFunction(const FunctionEvent& e, const ParamLayout* params, const char* name) {
  FunctionInfo info;
  info.id = ++next_function_;
  info.params.assign(params, params + e.param_count);
  info.layout_known = e.layout_known != 0;
  info.static_shared = e.static_shared_bytes;
  info.registers = e.registers_per_thread;
  core::KernelFunction f;
  f.id = info.id;
  auto mod = modules_.find(e.module);
  f.module_id = mod == modules_.end() ? core::kNoId : mod->second;
  f.mangled_name = name;
  f.demangled_name = demangle(f.mangled_name);
  for (uint32_t i = 0; i < e.param_count; ++i) {
    core::KernelParam kp;
    kp.index = static_cast<int>(i);
    kp.offset = static_cast<int>(params[i].offset);
    kp.size = static_cast<int>(params[i].size);
    f.params.push_back(kp);
  }
  functions_[e.function] = std::move(info);
  functions_by_name_[f.mangled_name] = f.id;
  return out_.add(f);
}

Expected<core::Id> TraceAssembler::functionForName(const std::string& name) {
  auto it = functions_by_name_.find(name);
  if (it != functions_by_name_.end()) return it->second;
  core::KernelFunction f;
  f.id = ++next_function_;
  f.mangled_name = name;
  f.demangled_name = demangle(name);
  KFUSE_RETURN_IF_ERROR(out_.add(f));
  functions_by_name_.emplace(name, f.id);
  return f.id;
}

Status TraceAssembler::onLaunch(const LaunchEvent& e, const uint8_t* args) {
  core::Launch l;
  l.id = ++next_launch_;
  l.correlation_id = e.correlation_id;
  l.thread_id = e.thread_id;
  KFUSE_ASSIGN_OR_RETURN(l.stream_id, streamId(e.stream));
  l.grid = e.grid;
  l.block = e.block;
  l.dynamic_shared_bytes = e.dynamic_shared_bytes;
  l.api_start_ns = e.api_start_ns;
  l.api_end_ns = e.api_end_ns;
  l.arg_bytes.assign(args, args + e.arg_size);
  if (e.flags & kLaunchArgsTruncated) count(core::StatId::kLaunchArgsTruncated);
  auto fit = functions_.find(e.function);
  if (fit == functions_.end()) {
    count(core::StatId::kLaunchUnknownFunction);
  } else {
    const FunctionInfo& fi = fit->second;
    l.function_id = fi.id;
    l.static_shared_bytes = fi.static_shared;
    l.registers_per_thread = fi.registers;
    if (!(e.flags & kLaunchLayoutKnown) || !fi.layout_known) {
      count(core::StatId::kLaunchLayoutUnknown);
    } else {
      l.pointer_args = pointerArgs(fi, args, e.arg_size);
    }
  }
  if (launch_by_correlation_.size() > (1u << 20)) launch_by_correlation_.clear();
  launch_by_correlation_[e.correlation_id] = l.id;
  if (e.flags & kLaunchWaitsForGpuTime) {
    return holdPending(pending_, e.correlation_id, std::move(l), core::StatId::kLaunchWithoutGpuTime);
  }
  return out_.add(l);
}

bool TraceAssembler::resolvePointer(uint64_t value, core::Id& allocation, uint64_t& offset) {
  auto hit = allocations_.find(value);
  if (!hit) return false;
  allocation = hit->allocation_id;
  offset = hit->offset;
  // Addresses tell buffers apart everywhere in the analysis (allocations, offsets, the argument values a proof binds),
  // so memory that two live mappings show, or may show, is left unresolved: no proof can rest on it.
  const bool shared = !mappings_.empty() && mappings_.shared(value - hit->offset);
  if (shared) count(core::StatId::kPointerIntoSharedMapping);
  return !shared;
}

std::vector<core::PointerArg> TraceAssembler::pointerArgs(const FunctionInfo& fi, const uint8_t* args,
                                                          uint32_t arg_size) {
  // Every pointer-sized argument that falls inside a live allocation, and every 8 aligned bytes of a larger argument
  // (a struct passed by value: PyTorch's std::array<char*, N>, a params struct) that do. A struct's scan stops at
  // kMaxStructScan bytes and a launch keeps at most kMaxPointerArgs.
  constexpr uint32_t kMaxStructScan = 4096;
  constexpr size_t kMaxPointerArgs = 64;
  std::vector<core::PointerArg> out;
  for (size_t i = 0; i < fi.params.size() && out.size() < kMaxPointerArgs; ++i) {
    const ParamLayout& pl = fi.params[i];
    if (pl.size < 8 || uint64_t{pl.offset} + 8 > arg_size) continue;
    const bool whole = pl.size == 8;
    const uint32_t first = whole ? 0 : (8 - pl.offset % 8) % 8;  // fields at 8-byte aligned addresses
    const uint32_t scan = std::min({pl.size, kMaxStructScan, static_cast<uint32_t>(arg_size - pl.offset)});
    for (uint32_t at = first; at + 8 <= scan && out.size() < kMaxPointerArgs; at += 8) {
      const uint64_t value = load<uint64_t>(args + pl.offset + at);
      if (value == 0) continue;
      core::Id allocation = core::kNoId;
      uint64_t offset = 0;
      if (resolvePointer(value, allocation, offset)) {
        out.push_back(
            core::PointerArg{static_cast<int>(i), value, allocation, offset, whole ? -1 : static_cast<int32_t>(at)});
      }
    }
  }
  return out;
}

template <class T>
Status TraceAssembler::holdPending(std::map<int64_t, T>& pending, int64_t correlation_id, T record,
                                   core::StatId counter) {
  pending.emplace(correlation_id, std::move(record));
  if (pending.size() > options_.max_pending_launches) {
    return flushPending(pending, options_.max_pending_launches / 2, counter);
  }
  return {};
}

template <class T>
std::optional<T> TraceAssembler::takePending(std::map<int64_t, T>& pending, int64_t correlation_id) {
  auto it = pending.find(correlation_id);
  if (it == pending.end()) it = pending.find(driverCorrelation(correlation_id));
  if (it == pending.end()) return std::nullopt;
  T record = std::move(it->second);
  pending.erase(it);
  return record;
}

template <class T>
Status TraceAssembler::flushPending(std::map<int64_t, T>& pending, size_t keep, core::StatId counter) {
  while (pending.size() > keep) {
    count(counter);
    KFUSE_RETURN_IF_ERROR(out_.add(pending.begin()->second));
    pending.erase(pending.begin());
  }
  return {};
}

int64_t TraceAssembler::driverCorrelation(int64_t id) const {
  auto it = driver_correlation_.find(id);
  return it == driver_correlation_.end() ? id : it->second;
}

Status TraceAssembler::onGpuTime(const GpuTimeEvent& e, const char* name) {
  if (e.target != GpuTimeTarget::kLaunch) return {};  // memcpy/memset come with their GPU times
  if (auto waiting = takePending(pending_, e.correlation_id)) {
    core::Launch l = std::move(*waiting);
    l.gpu_start_ns = e.start_ns;
    l.gpu_end_ns = e.end_ns;
    if (e.static_shared_bytes) l.static_shared_bytes = e.static_shared_bytes;
    if (e.registers_per_thread) l.registers_per_thread = e.registers_per_thread;
    return out_.add(l);
  }
  if (ofGraphLaunch(e.correlation_id)) return {};
  // A kernel with no launch callback (a graph node of a launch not recorded, an internal launch): record what the
  // activity record says.
  count(core::StatId::kUnmatchedGpuRecords);
  core::Launch l;
  l.id = ++next_launch_;
  l.correlation_id = e.correlation_id;
  KFUSE_ASSIGN_OR_RETURN(l.stream_id, streamId(0, e.stream_native_id));
  KFUSE_ASSIGN_OR_RETURN(l.function_id, functionForName(name));
  l.grid = e.grid;
  l.block = e.block;
  l.dynamic_shared_bytes = e.dynamic_shared_bytes;
  l.static_shared_bytes = e.static_shared_bytes;
  l.registers_per_thread = e.registers_per_thread;
  l.gpu_start_ns = e.start_ns;
  l.gpu_end_ns = e.end_ns;
  return out_.add(l);
}

Status TraceAssembler::onModule(const ModuleEvent& e) {
  core::Module m;
  m.id = ++next_module_;
  m.kind = e.kind;
  m.load_ns = e.load_ns;
  if (e.image && e.image_size) m.image.assign(e.image, e.image + e.image_size);
  delete[] e.image;
  modules_[e.module] = m.id;
  return out_.add(m);
}

Status TraceAssembler::onAlloc(const AllocEvent& e) {
  if (e.flags & kAllocPhysical) {
    mappings_.noteHandle(e.handle);
    return {};
  }
  core::Allocation a;
  a.id = ++next_alloc_;
  a.address = e.address;
  a.size = e.size;
  a.kind = e.kind;
  a.alloc_ns = e.ns;
  std::vector<core::Id> evicted;
  allocations_.insert(e.address, e.size, a.id, &evicted);
  if (!evicted.empty()) count(core::StatId::kAllocationReplaced, static_cast<int64_t>(evicted.size()));
  mappings_.unmap(e.address, e.size);
  if (e.flags & kAllocMapping) mappings_.map(e.address, e.size, e.handle, e.handle_offset);
  return out_.add(a);
}

Status TraceAssembler::onFree(const FreeEvent& e) {
  if (e.address == 0) return {};
  mappings_.unmap(e.address, 1);
  if (auto id = allocations_.erase(e.address)) return out_.setAllocationFreed(*id, e.ns);
  // Allocated before recording started: known to have existed, origin and size unknown (not guessed).
  count(core::StatId::kFreeOfUnknownAddress);
  core::Allocation a;
  a.id = ++next_alloc_;
  a.address = e.address;
  a.kind = e.host ? core::AllocationKind::kHostPinned : core::AllocationKind::kUnknown;
  a.free_ns = e.ns;
  return out_.add(a);
}

bool TraceAssembler::ofGraphLaunch(int64_t correlation_id) {
  // A record of a recorded graph launch's work (CUPTI gives it the launch's correlation id, or the runtime call's):
  // the graph's nodes stand for it.
  if (graph_launch_correlations_.empty()) return false;
  if (!graph_launch_correlations_.count(correlation_id) &&
      !graph_launch_correlations_.count(driverCorrelation(correlation_id))) {
    return false;
  }
  count(core::StatId::kGraphNodeRecords);
  return true;
}

Status TraceAssembler::onMemcpy(const MemcpyEvent& e) {
  // The activity record of a copy seen in a CUPTI callback: its GPU times complete the callback's copy.
  if (!e.waits_for_gpu_time && e.gpu_start_ns >= 0) {
    if (auto waiting = takePending(pending_copies_, e.correlation_id)) {
      core::Memcpy m = std::move(*waiting);
      m.gpu_start_ns = e.gpu_start_ns;
      m.gpu_end_ns = e.gpu_end_ns;
      if (m.kind == core::MemcpyKind::kUnknown) m.kind = e.kind;
      return out_.add(m);
    }
    if (ofGraphLaunch(e.correlation_id)) return {};
  }
  core::Memcpy m;
  m.id = ++next_memcpy_;
  m.correlation_id = e.correlation_id;
  m.thread_id = e.thread_id;
  KFUSE_ASSIGN_OR_RETURN(m.stream_id, streamId(e.stream, e.stream_native_id));
  m.kind = e.kind;
  m.src_address = e.src;
  m.dst_address = e.dst;
  m.src_allocation_id = resolveAllocation(e.src);
  m.dst_allocation_id = resolveAllocation(e.dst);
  m.bytes = e.bytes;
  m.async = e.async != 0;
  m.api_start_ns = e.api_start_ns;
  m.api_end_ns = e.api_end_ns;
  m.gpu_start_ns = e.gpu_start_ns;
  m.gpu_end_ns = e.gpu_end_ns;
  if (e.waits_for_gpu_time)
    return holdPending(pending_copies_, e.correlation_id, std::move(m), core::StatId::kMemcpyWithoutGpuRecord);
  return out_.add(m);
}

Status TraceAssembler::onMemset(const MemsetEvent& e) {
  if (!e.waits_for_gpu_time && e.gpu_start_ns >= 0) {
    if (auto waiting = takePending(pending_sets_, e.correlation_id)) {
      core::Memset m = std::move(*waiting);
      m.gpu_start_ns = e.gpu_start_ns;
      m.gpu_end_ns = e.gpu_end_ns;
      return out_.add(m);
    }
    if (ofGraphLaunch(e.correlation_id)) return {};
  }
  core::Memset m;
  m.id = ++next_memset_;
  m.correlation_id = e.correlation_id;
  m.thread_id = e.thread_id;
  KFUSE_ASSIGN_OR_RETURN(m.stream_id, streamId(e.stream, e.stream_native_id));
  m.dst_address = e.dst;
  m.dst_allocation_id = resolveAllocation(e.dst);
  m.bytes = e.bytes;
  m.value = e.value;
  m.element_size = static_cast<int>(e.element_size);
  m.async = e.async != 0;
  m.api_start_ns = e.api_start_ns;
  m.api_end_ns = e.api_end_ns;
  m.gpu_start_ns = e.gpu_start_ns;
  m.gpu_end_ns = e.gpu_end_ns;
  if (e.waits_for_gpu_time)
    return holdPending(pending_sets_, e.correlation_id, std::move(m), core::StatId::kMemsetWithoutGpuRecord);
  return out_.add(m);
}

Status TraceAssembler::onSync(const SyncEvent& e) {
  core::Sync s;
  s.id = ++next_sync_;
  s.correlation_id = e.correlation_id;
  s.thread_id = e.thread_id;
  s.kind = e.kind;
  if (e.kind == core::SyncKind::kStream || e.kind == core::SyncKind::kStreamWaitEvent) {
    KFUSE_ASSIGN_OR_RETURN(s.stream_id, streamId(e.stream, e.stream_native_id));
  }
  if (e.event) {
    auto it = events_.find(e.event);
    if (it != events_.end()) s.event_id = it->second;
  }
  s.start_ns = e.start_ns;
  s.end_ns = e.end_ns;
  return out_.add(s);
}

Status TraceAssembler::onEventRecord(const EventRecordEvent& e) {
  core::Event ev;
  ev.id = ++next_event_;
  ev.correlation_id = e.correlation_id;
  ev.handle = e.event;
  KFUSE_ASSIGN_OR_RETURN(ev.stream_id, streamId(e.stream));
  ev.record_ns = e.ns;
  events_[e.event] = ev.id;
  return out_.add(ev);
}

Status TraceAssembler::onDevice(const DeviceEvent& e) {
  core::Device d;
  d.id = ++next_device_;
  d.ordinal = e.ordinal;
  d.name = fixedString(e.name, sizeof e.name);
  d.cc_major = e.cc_major;
  d.cc_minor = e.cc_minor;
  d.sm_count = e.sm_count;
  d.memory_bytes = e.memory_bytes;
  d.clock_khz = e.clock_khz;
  return out_.add(d);
}

Status TraceAssembler::onMetric(const MetricEvent& e) {
  auto it = launch_by_correlation_.find(e.correlation_id);
  if (it == launch_by_correlation_.end()) {
    count(core::StatId::kMetricWithoutLaunch);
    return {};
  }
  core::Metric m;
  m.launch_id = it->second;
  m.name = fixedString(e.name, sizeof e.name);
  m.unit = fixedString(e.unit, sizeof e.unit);
  m.value = e.value;
  m.source = e.source;
  return out_.add(m);
}

Status TraceAssembler::onNvtx(const NvtxEvent& e, std::string name, std::string domain) {
  core::NvtxRange r;
  r.id = ++next_nvtx_;
  r.name = std::move(name);
  r.domain = std::move(domain);
  r.thread_id = e.thread_id;
  r.start_ns = e.start_ns;
  r.end_ns = e.end_ns;
  return out_.add(r);
}

Status TraceAssembler::onStat(const StatEvent& e) {
  core::Stat s;
  s.name = fixedString(e.name, sizeof e.name);
  s.description = fixedString(e.description, sizeof e.description);
  s.severity = e.severity;
  auto [it, inserted] = producer_stats_.emplace(s.name, s);
  if (!inserted)
    it->second.value += e.value;
  else
    it->second.value = e.value;
  return {};
}

Status TraceAssembler::onGraph(const GraphEvent& e) {
  GraphSnapshot snap;
  core::Graph& g = snap.graph;
  g.id = ++next_graph_;
  g.handle = e.graph;
  g.origin = e.origin;
  if (e.stream || e.origin == core::GraphOrigin::kCapture) {
    KFUSE_ASSIGN_OR_RETURN(g.stream_id, streamId(e.stream));
  }
  if (e.parent) {
    auto parent = latest_graph_.find(e.parent);
    if (parent != latest_graph_.end()) g.parent_graph_id = parent->second;
  }
  g.snapshot_ns = e.ns;
  latest_graph_[e.graph] = g.id;
  KFUSE_RETURN_IF_ERROR(out_.add(g));
  graphs_.emplace(g.id, std::move(snap));
  return {};
}

void TraceAssembler::fillKernelNode(core::GraphNode& n, const GraphNodeEvent& e, const uint8_t* args) {
  n.type = core::GraphNodeType::kKernel;
  n.grid = e.grid;
  n.block = e.block;
  n.dynamic_shared_bytes = e.dynamic_shared_bytes;
  n.arg_bytes.assign(args, args + e.arg_size);
  n.function_id = core::kNoId;
  n.pointer_args.clear();
  if (e.flags & kLaunchArgsTruncated) count(core::StatId::kLaunchArgsTruncated);
  auto fit = functions_.find(e.function);
  if (fit == functions_.end()) return;
  n.function_id = fit->second.id;
  if ((e.flags & kLaunchLayoutKnown) && fit->second.layout_known)
    n.pointer_args = pointerArgs(fit->second, args, e.arg_size);
}

Status TraceAssembler::onGraphNode(const GraphNodeEvent& e, const uint8_t* args) {
  auto latest = latest_graph_.find(e.graph);
  if (latest == latest_graph_.end()) {
    count(core::StatId::kBadEvents);  // its graph's event was dropped
    return {};
  }
  GraphSnapshot& snap = graphs_.at(latest->second);
  core::GraphNode n;
  n.id = ++next_graph_node_;
  n.graph_id = snap.graph.id;
  n.index = static_cast<int>(e.index);
  n.handle = e.node;
  n.type = e.type;
  switch (e.type) {
    case core::GraphNodeType::kKernel:
      if (e.function) fillKernelNode(n, e, args);
      break;
    case core::GraphNodeType::kMemcpy:
      n.memcpy_kind = e.memcpy_kind;
      n.src_address = e.src;
      n.dst_address = e.dst;
      n.src_allocation_id = resolveAllocation(e.src);
      n.dst_allocation_id = resolveAllocation(e.dst);
      n.bytes = e.bytes;
      break;
    case core::GraphNodeType::kMemset:
      n.dst_address = e.dst;
      n.dst_allocation_id = resolveAllocation(e.dst);
      n.bytes = e.bytes;
      n.value = e.value;
      n.element_size = static_cast<int>(e.element_size);
      break;
    case core::GraphNodeType::kChildGraph:
      if (auto child = latest_graph_.find(e.child_graph); e.child_graph && child != latest_graph_.end()) {
        n.child_graph_id = child->second;
      }
      break;
    case core::GraphNodeType::kEventRecord:
    case core::GraphNodeType::kEventWait: n.event_handle = e.event; break;
    default: break;
  }
  KFUSE_RETURN_IF_ERROR(out_.add(n));
  snap.node_by_handle[n.handle] = snap.nodes.size();
  snap.nodes.push_back(std::move(n));
  return {};
}

Status TraceAssembler::onGraphEdge(const GraphEdgeEvent& e) {
  auto latest = latest_graph_.find(e.graph);
  if (latest == latest_graph_.end()) {
    count(core::StatId::kBadEvents);
    return {};
  }
  GraphSnapshot& snap = graphs_.at(latest->second);
  auto from = snap.node_by_handle.find(e.from), to = snap.node_by_handle.find(e.to);
  if (from == snap.node_by_handle.end() || to == snap.node_by_handle.end()) return {};  // a node left out (counted)
  core::GraphEdge edge{snap.graph.id, snap.nodes[from->second].id, snap.nodes[to->second].id, static_cast<int>(e.type)};
  KFUSE_RETURN_IF_ERROR(out_.add(edge));
  snap.edges.push_back(edge);
  return {};
}

Status TraceAssembler::onGraphExec(const GraphExecEvent& e) {
  auto latest = latest_graph_.find(e.graph);
  if (latest == latest_graph_.end()) {
    count(core::StatId::kBadEvents);
    return {};
  }
  core::GraphExec x;
  x.id = ++next_graph_exec_;
  x.handle = e.exec;
  x.graph_id = latest->second;
  x.thread_id = e.thread_id;
  x.api_start_ns = e.api_start_ns;
  x.api_end_ns = e.api_end_ns;
  auto it = execs_.find(e.exec);
  if (e.change == GraphExecChange::kUpdate) {
    if (it == execs_.end()) {
      count(core::StatId::kGraphLaunchUnknownExec);
    } else {
      x.update_of = it->second.id;
    }
  }
  execs_[e.exec] = ExecInfo{x.id, x.graph_id};
  return out_.add(x);
}

Status TraceAssembler::onGraphExecKernelNode(const GraphNodeEvent& e, const uint8_t* args) {
  auto exec = execs_.find(e.exec);
  if (exec == execs_.end()) {
    count(core::StatId::kGraphLaunchUnknownExec);
    return {};
  }
  const GraphSnapshot& from = graphs_.at(exec->second.graph_id);
  auto changed = from.node_by_handle.find(e.node);
  if (changed == from.node_by_handle.end()) {
    count(core::StatId::kGraphLaunchUnknownExec);  // a node the recorded graph does not have at its top level
    return {};
  }
  // The exec now runs a copy of its graph with this node's parameters changed: a snapshot of its own, so that
  // every launch links to exactly the nodes it ran.
  GraphSnapshot copy;
  copy.graph = from.graph;
  copy.graph.id = ++next_graph_;
  copy.graph.origin = core::GraphOrigin::kExecNodeUpdate;
  copy.graph.parent_graph_id = from.graph.id;
  copy.graph.snapshot_ns = e.api_end_ns;
  KFUSE_RETURN_IF_ERROR(out_.add(copy.graph));
  std::unordered_map<core::Id, core::Id> new_id;
  for (size_t i = 0; i < from.nodes.size(); ++i) {
    core::GraphNode n = from.nodes[i];
    n.id = ++next_graph_node_;
    n.graph_id = copy.graph.id;
    if (i == changed->second) fillKernelNode(n, e, args);
    new_id[from.nodes[i].id] = n.id;
    KFUSE_RETURN_IF_ERROR(out_.add(n));
    copy.node_by_handle[n.handle] = copy.nodes.size();
    copy.nodes.push_back(std::move(n));
  }
  for (core::GraphEdge edge : from.edges) {
    edge.graph_id = copy.graph.id;
    edge.from_node_id = new_id[edge.from_node_id];
    edge.to_node_id = new_id[edge.to_node_id];
    KFUSE_RETURN_IF_ERROR(out_.add(edge));
    copy.edges.push_back(edge);
  }
  core::GraphExec x;
  x.id = ++next_graph_exec_;
  x.handle = e.exec;
  x.graph_id = copy.graph.id;
  x.update_of = exec->second.id;
  x.thread_id = e.thread_id;
  x.api_start_ns = e.api_start_ns;
  x.api_end_ns = e.api_end_ns;
  exec->second = ExecInfo{x.id, x.graph_id};
  graphs_.emplace(copy.graph.id, std::move(copy));
  return out_.add(x);
}

Status TraceAssembler::onGraphLaunch(const GraphLaunchEvent& e) {
  auto exec = execs_.find(e.exec);
  if (exec == execs_.end()) {
    count(core::StatId::kGraphLaunchUnknownExec);  // instantiated before recording began
    return {};
  }
  core::GraphLaunch l;
  l.id = ++next_graph_launch_;
  l.correlation_id = e.correlation_id;
  if (graph_launch_correlations_.size() > (1u << 20)) graph_launch_correlations_.clear();
  graph_launch_correlations_.insert(e.correlation_id);
  l.thread_id = e.thread_id;
  l.graph_exec_id = exec->second.id;
  KFUSE_ASSIGN_OR_RETURN(l.stream_id, streamId(e.stream));
  l.api_start_ns = e.api_start_ns;
  l.api_end_ns = e.api_end_ns;
  return out_.add(l);
}

Status TraceAssembler::finish(const SinkStats& sink) {
  KFUSE_RETURN_IF_ERROR(ensureProcess());
  KFUSE_RETURN_IF_ERROR(flushPending(pending_, 0, core::StatId::kLaunchWithoutGpuTime));
  KFUSE_RETURN_IF_ERROR(flushPending(pending_copies_, 0, core::StatId::kMemcpyWithoutGpuRecord));
  KFUSE_RETURN_IF_ERROR(flushPending(pending_sets_, 0, core::StatId::kMemsetWithoutGpuRecord));
  core::Stat dropped = core::makeStat(core::StatId::kCollectorDroppedEvents, static_cast<int64_t>(sink.dropped));
  if (sink.dropped) dropped.severity = core::StatSeverity::kWarning;
  KFUSE_RETURN_IF_ERROR(out_.add(core::makeStat(core::StatId::kCollectorEvents, static_cast<int64_t>(sink.events))));
  KFUSE_RETURN_IF_ERROR(out_.add(dropped));
  if (sink.dropped_images) {
    KFUSE_RETURN_IF_ERROR(out_.add(
        core::makeStat(core::StatId::kCollectorDroppedModuleImages, static_cast<int64_t>(sink.dropped_images))));
  }
  if (sink.waits) {
    KFUSE_RETURN_IF_ERROR(
        out_.add(core::makeStat(core::StatId::kCollectorBackpressureWaits, static_cast<int64_t>(sink.waits))));
  }
  for (const auto& [id, n] : counters_) {
    if (n) KFUSE_RETURN_IF_ERROR(out_.add(core::makeStat(id, n)));
  }
  for (const auto& [name, s] : producer_stats_) KFUSE_RETURN_IF_ERROR(out_.add(s));
  return {};
}

}  // namespace kfuse::collector
