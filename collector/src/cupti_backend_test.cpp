#include "kfuse/collector/cupti_backend.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "../tests/fake_graph_driver.h"
#include "../tests/fake_profiler_api.h"

namespace kfuse::collector {
namespace {

size_t recordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
    default: return 0;
  }
}

// Walks buffers of real CUDA 13.0 record structs laid end to end (8-byte aligned), as CUPTI's would be.
class FakeCuptiApi : public CuptiApi {
 public:
  uint32_t version = 130001;
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  std::string other_tool;
  std::vector<CUpti_ActivityKind> enabled_kinds;
  std::vector<CUpti_CallbackId> enabled_cbids;
  std::vector<CUpti_CallbackDomain> enabled_domains;
  int flushes = 0;

  CUptiResult getVersion(uint32_t* v) override {
    *v = version;
    return CUPTI_SUCCESS;
  }
  CUptiResult subscribe(CUpti_SubscriberHandle* s, CUpti_CallbackFunc, void*, std::string* other) override {
    *s = reinterpret_cast<CUpti_SubscriberHandle>(0x1);
    if (other) *other = other_tool;
    return subscribe_result;
  }
  CUptiResult unsubscribe(CUpti_SubscriberHandle) override { return CUPTI_SUCCESS; }
  CUptiResult enableCallback(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId cbid) override {
    enabled_cbids.push_back(cbid);
    return CUPTI_SUCCESS;
  }
  CUptiResult enableDomain(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain d) override {
    enabled_domains.push_back(d);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityEnable(CUpti_ActivityKind k) override {
    enabled_kinds.push_back(k);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult activityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) override {
    uint8_t* next = buffer;
    if (*record) {
      const size_t size = recordSize((*record)->kind);
      next = reinterpret_cast<uint8_t*>(*record) + ((size + 7) & ~size_t{7});
    }
    if (next >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = reinterpret_cast<CUpti_Activity*>(next);
    return CUPTI_SUCCESS;
  }
  CUptiResult activityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) override {
    *dropped = 3;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityFlushAll(uint32_t) override {
    ++flushes;
    return CUPTI_SUCCESS;
  }
  CUptiResult activityFlushPeriod(uint32_t) override { return CUPTI_SUCCESS; }
  const char* errorString(CUptiResult) override { return "fake error"; }
};

// Builds a buffer the way CUPTI fills one.
class BufferBuilder {
 public:
  template <class T>
  T& add(CUpti_ActivityKind kind) {
    const size_t size = (sizeof(T) + 7) & ~size_t{7};
    EXPECT_EQ(sizeof(T), recordSize(kind));
    offsets_.push_back(bytes_.size());
    bytes_.resize(bytes_.size() + size, 0);
    T* rec = reinterpret_cast<T*>(bytes_.data() + offsets_.back());
    rec->kind = kind;
    return *rec;
  }
  // Copies into a buffer from the backend's own allocator (the backend frees it).
  std::pair<uint8_t*, size_t> finish() {
    uint8_t* buf = nullptr;
    size_t size = 0, max = 0;
    CuptiBackend::requestBuffer(&buf, &size, &max);
    EXPECT_GE(size, bytes_.size());
    std::memcpy(buf, bytes_.data(), bytes_.size());
    return {buf, bytes_.size()};
  }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<size_t> offsets_;
};

CUresult CUDAAPI fParamInfo(CUfunction, size_t i, size_t* off, size_t* size) {
  if (i >= 2) return CUDA_ERROR_INVALID_VALUE;
  *off = i * 8;
  *size = 8;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fName(const char** name, CUfunction) {
  *name = "_Z3addPfS_";
  return CUDA_SUCCESS;
}

struct Fixture {
  FakeCuptiApi api;
  hooks::DriverTable table;
  MemorySink sink;
  HookRecorder recorder{table, sink};
  CuptiBackend backend{api, sink, recorder};
  Fixture() {
    table.FuncGetParamInfo = &fParamInfo;
    table.FuncGetName = &fName;
  }
};

// One API call as CUPTI reports it to a subscriber.
struct ApiCall {
  CUpti_CallbackId cbid;
  void* params;
  uint32_t correlation_id = 0;
  CUcontext context = nullptr;
  CUpti_CallbackDomain domain = CUPTI_CB_DOMAIN_DRIVER_API;
};

// Calls the backend at `site` of a call that succeeded.
void callback(CuptiBackend& backend, const ApiCall& c, CUpti_ApiCallbackSite site, uint64_t* correlation_data) {
  static CUresult ok = CUDA_SUCCESS;  // read by the backend, never written
  CUpti_CallbackData cb{};
  cb.functionParams = c.params;
  cb.functionReturnValue = &ok;
  cb.correlationId = c.correlation_id;
  cb.correlationData = correlation_data;
  cb.context = c.context;
  cb.callbackSite = site;
  backend.onCallback(c.domain, c.cbid, &cb);
}
void exitOnly(CuptiBackend& backend, const ApiCall& c) {
  uint64_t data = 0;
  callback(backend, c, CUPTI_API_EXIT, &data);
}
void enterAndExit(CuptiBackend& backend, const ApiCall& c) {
  uint64_t data = 0;  // what ENTER stores, EXIT reads
  callback(backend, c, CUPTI_API_ENTER, &data);
  callback(backend, c, CUPTI_API_EXIT, &data);
}

// cuLaunchKernel of the fake kernel 0xf1 with `args`.
cuLaunchKernel_params launchParams(void** args, unsigned grid = 1, unsigned block = 1, CUstream stream = nullptr) {
  cuLaunchKernel_params p{};
  p.f = reinterpret_cast<CUfunction>(0xf1);
  p.gridDimX = grid;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = block;
  p.blockDimY = p.blockDimZ = 1;
  p.hStream = stream;
  p.kernelParams = args;
  return p;
}

TEST(CuptiBackendTest, RefusesUnknownCuptiVersions) {
  Fixture f;
  f.api.version = 120800;
  Status s = f.backend.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("120800"), std::string::npos) << s.message();
  EXPECT_TRUE(f.api.enabled_kinds.empty());
}

TEST(CuptiBackendTest, NamesTheOtherToolWhenCuptiIsTaken) {
  Fixture f;
  f.api.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  f.api.other_tool = "nsys";
  Status s = f.backend.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("another tool (nsys)"), std::string::npos) << s.message();
  EXPECT_TRUE(f.api.enabled_kinds.empty());
}

TEST(CuptiBackendTest, StartEnablesLaunchCallbacksAndActivityKinds) {
  Fixture f;
  ASSERT_TRUE(f.backend.start().ok());
  auto has = [&](CUpti_ActivityKind k) {
    return std::find(f.api.enabled_kinds.begin(), f.api.enabled_kinds.end(), k) != f.api.enabled_kinds.end();
  };
  EXPECT_TRUE(has(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_TRUE(has(CUPTI_ACTIVITY_KIND_MEMCPY));
  EXPECT_TRUE(has(CUPTI_ACTIVITY_KIND_DRIVER));
  EXPECT_FALSE(has(CUPTI_ACTIVITY_KIND_KERNEL));  // it serialises kernels
  auto cb = [&](CUpti_CallbackId id) {
    return std::find(f.api.enabled_cbids.begin(), f.api.enabled_cbids.end(), id) != f.api.enabled_cbids.end();
  };
  EXPECT_TRUE(cb(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz));
  EXPECT_TRUE(cb(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
  f.backend.stop();
  EXPECT_EQ(f.api.flushes, 1);
}

TEST(CuptiBackendTest, JoinsLaunchCallbacksWithKernelRecordsByCorrelationId) {
  Fixture f;
  ASSERT_TRUE(f.backend.start().ok());
  // cuMemAlloc_v2 at EXIT: allocations come from callbacks, in API order.
  CUdeviceptr allocated = 0x20000;
  cuMemAlloc_v2_params ap{&allocated, 4096};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &ap});
  // The driver launch callback: ENTER then EXIT, arguments valid during the callback.
  CUdeviceptr a = 0x10000, b = 0x20010;
  void* params[] = {&a, &b};
  cuLaunchKernel_params p = launchParams(params, /*grid=*/16, /*block=*/128);
  enterAndExit(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, &p, 42});

  BufferBuilder bb;
  auto& alloc = bb.add<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  alloc.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  alloc.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  alloc.address = 0x10000;
  alloc.bytes = 4096;
  alloc.timestamp = 10;
  auto& k = bb.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.correlationId = 42;
  k.start = 1000;
  k.end = 2500;
  k.registersPerThread = 32;
  k.staticSharedMemory = 256;
  k.name = "_Z3addPfS_";
  auto& orphan = bb.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  orphan.correlationId = 77;
  orphan.start = 3000;
  orphan.end = 3100;
  orphan.gridX = 2;
  orphan.gridY = orphan.gridZ = 1;
  orphan.blockX = 64;
  orphan.blockY = orphan.blockZ = 1;
  orphan.streamId = 13;
  orphan.name = "_Z10graph_nodev";
  auto& api = bb.add<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_DRIVER);
  api.correlationId = 42;
  auto& copy = bb.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 4096;
  copy.start = 500;
  copy.end = 900;
  copy.streamId = 13;
  copy.correlationId = 41;
  auto& set = bb.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  set.bytes = 128;
  set.value = 0;
  set.start = 950;
  set.end = 960;
  auto& sync = bb.add<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  sync.start = 2600;
  sync.end = 2700;
  sync.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  auto& m1 = bb.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m1.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  m1.id = 5;
  m1.timestamp = 100;
  m1.name = "forward";
  auto& m2 = bb.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m2.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  m2.id = 5;
  m2.timestamp = 2800;
  auto& release = bb.add<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  release.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  release.address = 0x10000;
  release.timestamp = 4000;
  auto [buf, valid] = bb.finish();
  f.backend.onBufferComplete(buf, valid, valid);
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();

  ASSERT_EQ(t.launches.size(), 2u);
  const core::Launch& joined = t.launches[0];
  EXPECT_EQ(joined.correlation_id, 42);
  EXPECT_EQ(joined.gpu_start_ns, 1000);
  EXPECT_EQ(joined.gpu_end_ns, 2500);
  EXPECT_EQ(joined.registers_per_thread, 32u);
  EXPECT_EQ(joined.static_shared_bytes, 256u);
  EXPECT_EQ(joined.grid, (core::Dim3{16, 1, 1}));
  ASSERT_EQ(joined.arg_bytes.size(), 16u);
  // b was allocated through the callback before the launch; a (0x10000) only by a late MEMORY2 record.
  ASSERT_EQ(joined.pointer_args.size(), 1u);
  EXPECT_EQ(joined.pointer_args[0].param_index, 1);
  EXPECT_EQ(joined.pointer_args[0].offset, 0x10u);
  EXPECT_EQ(t.streams[t.launches[0].stream_id - 1].handle, kPerThreadStream);
  const core::Launch& orphan_launch = t.launches[1];
  EXPECT_EQ(orphan_launch.correlation_id, 77);
  EXPECT_EQ(orphan_launch.block, (core::Dim3{64, 1, 1}));
  EXPECT_EQ(t.functions[orphan_launch.function_id - 1].mangled_name, "_Z10graph_nodev");
  EXPECT_EQ(t.streams[orphan_launch.stream_id - 1].native_id, 13);

  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].kind, core::MemcpyKind::kHostToDevice);
  EXPECT_EQ(t.memcpys[0].gpu_start_ns, 500);
  EXPECT_EQ(t.memcpys[0].stream_id, orphan_launch.stream_id);  // same CUPTI stream id 13
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 128u);
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs[0].kind, core::SyncKind::kContext);
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(t.allocations[0].address, 0x20000u);
  EXPECT_EQ(t.allocations[1].size, 4096u);
  EXPECT_EQ(t.allocations[1].free_ns, 4000);
  ASSERT_EQ(t.nvtx_ranges.size(), 1u);
  EXPECT_EQ(t.nvtx_ranges[0].name, "forward");
  EXPECT_EQ(t.nvtx_ranges[0].end_ns, 2800);
  std::map<std::string, int64_t> stats;
  for (const auto& s : t.stats) stats[s.name] = s.value;
  EXPECT_EQ(stats["unmatched_gpu_records"], 1);
  EXPECT_EQ(stats["cupti_dropped_records"], 3);
  EXPECT_EQ(f.backend.recordsDecoded(), 10u);
}

TEST(CuptiBackendTest, ContextDestroyFlushesActivityBuffers) {
  Fixture f;
  ASSERT_TRUE(f.backend.start().ok());
  CUpti_ResourceData rd{};
  f.backend.onCallback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &rd);
  EXPECT_EQ(f.api.flushes, 1);
}

TEST(CuptiBackendTest, MetricsFromTheRangeProfilerReachTheirLaunches) {
  Fixture f;
  testing::FakeProfilerApi profiler;
  RangeMetrics metrics(profiler, f.sink, RangeMetricsOptions{/*ranges_per_session=*/4});
  ASSERT_TRUE(metrics.start().ok());
  f.backend.setRangeMetrics(&metrics);
  ASSERT_TRUE(f.backend.start().ok());
  const CUcontext context = reinterpret_cast<CUcontext>(0xc7);
  CUdeviceptr a = 0x10000, b = 0x20010;
  void* params[] = {&a, &b};
  cuLaunchKernel_params p = launchParams(params, /*grid=*/1, /*block=*/32);
  for (uint32_t corr : {42u, 43u}) {
    const ApiCall launch{CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, corr, context};
    uint64_t correlation_data = 0;
    callback(f.backend, launch, CUPTI_API_ENTER, &correlation_data);
    profiler.runKernel(context);  // the kernel runs between the callbacks
    callback(f.backend, launch, CUPTI_API_EXIT, &correlation_data);
  }
  // cuCtxDestroy delivers the context's metrics.
  CUpti_ResourceData rd{};
  rd.context = context;
  f.backend.onCallback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &rd);
  EXPECT_EQ(profiler.stops, 1);
  EXPECT_EQ(profiler.disables, 1);
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();
  ASSERT_EQ(t.launches.size(), 2u);
  std::map<core::Id, std::map<std::string, double>> per_launch;
  for (const auto& m : t.metrics) {
    EXPECT_EQ(m.source, core::MetricSource::kMeasured);
    per_launch[m.launch_id][m.name] = m.value;
  }
  ASSERT_EQ(per_launch.size(), 2u);
  // Range 0 -> the first launch, range 1 -> the second: dram__bytes_read.sum is profiler metric 0.
  EXPECT_DOUBLE_EQ(per_launch[t.launches[0].id]["dram_bytes_read"], testing::FakeProfilerApi::value(0, 0, 0));
  EXPECT_DOUBLE_EQ(per_launch[t.launches[1].id]["dram_bytes_read"], testing::FakeProfilerApi::value(0, 1, 0));
  EXPECT_EQ(per_launch[t.launches[0].id].size(), 7u);
}

TEST(CuptiBackendTest, MemoryMappedTwiceFromCallbacksIsNotResolvedAsTwoBuffers) {
  Fixture f;
  ASSERT_TRUE(f.backend.start().ok());
  auto cb = [&](CUpti_CallbackId id) {
    return std::find(f.api.enabled_cbids.begin(), f.api.enabled_cbids.end(), id) != f.api.enabled_cbids.end();
  };
  EXPECT_TRUE(cb(CUPTI_DRIVER_TRACE_CBID_cuMemCreate));
  EXPECT_TRUE(cb(CUPTI_DRIVER_TRACE_CBID_cuMemMap));
  CUmemGenericAllocationHandle shared = 5, own = 6;
  cuMemCreate_params c1{&shared, 2 << 20, nullptr, 0}, c2{&own, 2 << 20, nullptr, 0};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c1});
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c2});
  const CUdeviceptr base = 0x7f0000000000ull, mb2 = 2 << 20;
  cuMemMap_params m1{base, mb2, 0, shared, 0}, m2{base + mb2, mb2, 0, shared, 0}, m3{base + 2 * mb2, mb2, 0, own, 0};
  for (cuMemMap_params* m : {&m1, &m2, &m3}) exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemMap, m});
  CUdeviceptr a = base + mb2 + 64, b = base + 2 * mb2 + 64;  // into the second mapping of `shared`, into `own`
  void* params[] = {&a, &b};
  cuLaunchKernel_params p = launchParams(params, /*grid=*/16, /*block=*/128);
  enterAndExit(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, &p, 42});
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();
  EXPECT_EQ(t.allocations.size(), 3u);
  ASSERT_EQ(t.launches.size(), 1u);
  ASSERT_EQ(t.launches[0].pointer_args.size(), 1u);
  EXPECT_EQ(t.launches[0].pointer_args[0].param_index, 1);
  EXPECT_EQ(t.launches[0].pointer_args[0].allocation_id, t.allocations[2].id);
}

TEST(CuptiBackendTest, CopyCallbacksGiveAddressesAndTheirRecordsGiveGpuTimes) {
  Fixture f;
  ASSERT_TRUE(f.backend.start().ok());
  CUdeviceptr buffer = 0x40000;
  cuMemAlloc_v2_params ap{&buffer, 1 << 20};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &ap});
  static float host[16];
  cuMemcpyHtoDAsync_v2_ptsz_params cp{buffer + 256, host, sizeof host, nullptr};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, &cp, 50});
  cuMemsetD32_v2_params sp{buffer, 7u, 64};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, &sp, 51});

  BufferBuilder bb;
  auto& copy = bb.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = sizeof host;
  copy.start = 700;
  copy.end = 800;
  copy.correlationId = 50;
  auto [buf, valid] = bb.finish();
  f.backend.onBufferComplete(buf, valid, valid);  // the memset's record never comes
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();
  ASSERT_EQ(t.memcpys.size(), 1u);
  const core::Memcpy& m = t.memcpys[0];
  EXPECT_EQ(m.kind, core::MemcpyKind::kHostToDevice);
  EXPECT_EQ(m.dst_address, buffer + 256);
  EXPECT_EQ(m.dst_allocation_id, t.allocations[0].id);
  EXPECT_EQ(m.bytes, sizeof host);
  EXPECT_TRUE(m.async);
  EXPECT_EQ(m.gpu_start_ns, 700);
  EXPECT_EQ(m.gpu_end_ns, 800);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].dst_allocation_id, t.allocations[0].id);
  EXPECT_EQ(t.memsets[0].bytes, 256u);
  EXPECT_EQ(t.memsets[0].gpu_start_ns, core::kNoTime);
  int64_t without_record = 0;
  for (const auto& s : t.stats) {
    if (s.name == "memset_without_gpu_record") without_record = s.value;
  }
  EXPECT_EQ(without_record, 1);
}

// A CUPTI stand-in for the watch: counts of driver callbacks, advanced by a fake driver function when "CUPTI sees"
// the call.
std::atomic<uint64_t> g_fake_seen{0};
thread_local uint64_t t_fake_seen = 0;
bool g_fake_cupti_sees = false;
const char* g_blind_reason = nullptr;
int g_blind_calls = 0;
uint64_t fakeSeen() {
  return g_fake_seen.load();
}
uint64_t fakeSeenOnThread() {
  return t_fake_seen;
}
void onBlind(const char* why) {
  g_blind_reason = why;
  ++g_blind_calls;
}
CUresult CUDAAPI fWatchedAlloc(CUdeviceptr* p, size_t) {
  *p = 0x90000;
  if (g_fake_cupti_sees) {
    ++t_fake_seen;
    ++g_fake_seen;
  }
  return CUDA_SUCCESS;
}

TEST(CuptiWatchTest, ACuptiThatSeesNothingIsReportedOnceAndTheCallIsRecorded) {
  g_fake_seen = 0;
  t_fake_seen = 0;
  g_fake_cupti_sees = false;
  g_blind_calls = 0;
  hooks::DriverTable table;
  table.MemAlloc[0] = &fWatchedAlloc;
  MemorySink sink;
  HookRecorder recorder(table, sink);
  CuptiWatch watch(table, recorder, &onBlind, &fakeSeen, &fakeSeenOnThread);
  CUdeviceptr p = 0;
  ASSERT_EQ(watch.MemAlloc(0, &p, 4096), CUDA_SUCCESS);
  EXPECT_EQ(p, 0x90000u);  // forwarded
  EXPECT_TRUE(watch.blind());
  ASSERT_EQ(g_blind_calls, 1);
  EXPECT_NE(std::string(g_blind_reason).find("CUPTI saw none"), std::string::npos);
  ASSERT_EQ(watch.MemAlloc(0, &p, 4096), CUDA_SUCCESS);
  EXPECT_EQ(g_blind_calls, 1);  // decided once; later calls belong to the hook backend
  ASSERT_TRUE(sink.finish().ok());
  ASSERT_EQ(sink.trace().allocations.size(), 1u);  // the call that revealed it, recorded as the hooks would
  EXPECT_EQ(sink.trace().allocations[0].size, 4096u);
}

TEST(CuptiWatchTest, ACuptiThatSeesTheCallsIsLeftAlone) {
  g_fake_seen = 0;
  t_fake_seen = 0;
  g_fake_cupti_sees = true;
  g_blind_calls = 0;
  hooks::DriverTable table;
  table.MemAlloc[0] = &fWatchedAlloc;
  MemorySink sink;
  HookRecorder recorder(table, sink);
  CuptiWatch watch(table, recorder, &onBlind, &fakeSeen, &fakeSeenOnThread);
  CUdeviceptr p = 0;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(watch.MemAlloc(0, &p, 4096), CUDA_SUCCESS);
  // A later call CUPTI misses (another tool's thread, say) no longer matters: CUPTI was seen working.
  g_fake_cupti_sees = false;
  ASSERT_EQ(watch.MemAlloc(0, &p, 4096), CUDA_SUCCESS);
  EXPECT_FALSE(watch.blind());
  EXPECT_EQ(g_blind_calls, 0);
  ASSERT_TRUE(sink.finish().ok());
  EXPECT_TRUE(sink.trace().allocations.empty());  // CUPTI records them, not the watch
}

bool g_cupti_test_capturing = false;
CUresult CUDAAPI fCuptiIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  *status = g_cupti_test_capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

TEST(CuptiBackendTest, LaunchesCapturedIntoAGraphAreCountedNotRecorded) {
  Fixture f;
  f.table.StreamIsCapturing = &fCuptiIsCapturing;
  ASSERT_TRUE(f.backend.start().ok());
  const CUstream stream = reinterpret_cast<CUstream>(0x700);
  CUdeviceptr a = 0x10000, b = 0x20000;
  void* params[] = {&a, &b};
  cuLaunchKernel_params p = launchParams(params, /*grid=*/1, /*block=*/1, stream);
  cuStreamBeginCapture_v2_params begin{stream, CU_STREAM_CAPTURE_MODE_GLOBAL};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &begin, 1});
  g_cupti_test_capturing = true;
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, 2});
  g_cupti_test_capturing = false;
  CUgraph graph = nullptr;
  cuStreamEndCapture_params end{stream, &graph};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, &end, 3});
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, 4});
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].correlation_id, 4);
  int64_t captured = 0;
  for (const auto& s : t.stats) {
    if (s.name == "work_captured_into_graphs") captured = s.value;
  }
  EXPECT_EQ(captured, 1);
}

TEST(CuptiBackendTest, RecordsCarryingTheRuntimeCallsCorrelationIdStillJoin) {
  // cudaLaunchKernel (runtime id 500) calls cuLaunchKernel (driver id 501); cudaMemcpyAsync (502) calls
  // cuMemcpyHtoDAsync (503). The activity records carry the runtime ids.
  Fixture f;
  ASSERT_TRUE(f.backend.start().ok());
  EXPECT_NE(std::find(f.api.enabled_domains.begin(), f.api.enabled_domains.end(), CUPTI_CB_DOMAIN_RUNTIME_API),
            f.api.enabled_domains.end());
  CUdeviceptr a = 0x10000, b = 0x20000;
  void* params[] = {&a, &b};
  cuLaunchKernel_params p = launchParams(params);
  int runtime_params = 0;  // the runtime's own params are not read
  const ApiCall launch_runtime{CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &runtime_params, 500, nullptr,
                               CUPTI_CB_DOMAIN_RUNTIME_API};
  uint64_t data = 0;
  callback(f.backend, launch_runtime, CUPTI_API_ENTER, &data);
  enterAndExit(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, 501});
  callback(f.backend, launch_runtime, CUPTI_API_EXIT, &data);
  static float host[4];
  cuMemcpyHtoDAsync_v2_params cp{0x30000, host, sizeof host, nullptr};
  const ApiCall copy_runtime{CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &runtime_params, 502, nullptr,
                             CUPTI_CB_DOMAIN_RUNTIME_API};
  callback(f.backend, copy_runtime, CUPTI_API_ENTER, &data);
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &cp, 503});
  callback(f.backend, copy_runtime, CUPTI_API_EXIT, &data);
  // A driver call outside any runtime call has no alias.
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, 600});

  BufferBuilder bb;
  auto& k = bb.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.correlationId = 500;
  k.start = 1000;
  k.end = 2000;
  k.name = "_Z3addPfS_";
  auto& k2 = bb.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k2.correlationId = 600;
  k2.start = 3000;
  k2.end = 3500;
  k2.name = "_Z3addPfS_";
  auto& copy = bb.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = sizeof host;
  copy.start = 100;
  copy.end = 200;
  copy.correlationId = 502;
  auto [buf, valid] = bb.finish();
  f.backend.onBufferComplete(buf, valid, valid);
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();
  ASSERT_EQ(t.launches.size(), 2u);  // no duplicate from the runtime-id record
  for (const auto& l : t.launches) EXPECT_NE(l.gpu_start_ns, core::kNoTime) << "launch " << l.correlation_id;
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].dst_address, 0x30000u);
  EXPECT_EQ(t.memcpys[0].gpu_start_ns, 100);
  for (const auto& s : t.stats) {
    EXPECT_NE(s.name, "unmatched_gpu_records");
    EXPECT_NE(s.name, "launch_without_gpu_time");
  }
}

TEST(CuptiBackendTest, FailedLaunchesAreNotRecorded) {
  Fixture f;
  cuLaunchKernel_params p{};
  p.f = reinterpret_cast<CUfunction>(0xf1);
  CUresult failed = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  CUpti_CallbackData cb{};
  cb.functionParams = &p;
  cb.functionReturnValue = &failed;
  cb.callbackSite = CUPTI_API_EXIT;
  f.backend.onCallback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
  ASSERT_TRUE(f.sink.finish().ok());
  EXPECT_TRUE(f.sink.trace().launches.empty());
}

TEST(CuptiBackendTest, ModuleLoadedCallbackStoresTheCubin) {
  Fixture f;
  static const uint8_t kCubin[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41};
  CUpti_ModuleResourceData mod{};
  mod.moduleId = 3;
  mod.cubinSize = sizeof kCubin;
  mod.pCubin = reinterpret_cast<const char*>(kCubin);
  CUpti_ResourceData rd{};
  rd.resourceDescriptor = &mod;
  f.backend.onCallback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &rd);
  ASSERT_TRUE(f.sink.finish().ok());
  ASSERT_EQ(f.sink.trace().modules.size(), 1u);
  EXPECT_EQ(f.sink.trace().modules[0].kind, core::ImageKind::kCubin);
  EXPECT_EQ(f.sink.trace().modules[0].image, std::vector<uint8_t>(kCubin, kCubin + sizeof kCubin));
}

CUresult CUDAAPI fModule(CUmodule* module, CUfunction) {
  *module = reinterpret_cast<CUmodule>(0xabc);
  return CUDA_SUCCESS;
}

TEST(CuptiBackendTest, ModuleLoadCallbackKeepsThePtxAndLinksTheModulesKernels) {
  Fixture f;
  f.table.FuncGetModule = &fModule;
  ASSERT_TRUE(f.backend.start().ok());
  static const char kPtx[] =
      ".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry _Z3addPfS_()\n{\nret;\n}\n";
  CUmodule loaded = reinterpret_cast<CUmodule>(0xabc);
  cuModuleLoadData_params lp{&loaded, kPtx};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &lp});

  CUdeviceptr a = 0x10000, b = 0x20000;
  void* params[] = {&a, &b};
  cuLaunchKernel_params p = launchParams(params);
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, 7});
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_EQ(t.modules[0].kind, core::ImageKind::kPtx);
  // As the hook backend stores it: the text with its NUL terminator.
  EXPECT_EQ(std::string(t.modules[0].image.begin(), t.modules[0].image.end()), std::string(kPtx, sizeof kPtx));
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].module_id, t.modules[0].id);
}

CUresult CUDAAPI libraryModule(CUmodule* module, CUlibrary) {
  *module = reinterpret_cast<CUmodule>(0xabc);
  return CUDA_SUCCESS;
}

// Loads a one-kernel PTX image through cuLibraryLoadData (library 0x1b), launches its kernel and finishes the trace.
const core::Trace& loadLibraryAndLaunch(Fixture& f) {
  static const char kPtx[] =
      ".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry _Z3addPfS_()\n{\nret;\n}\n";
  CUlibrary library = reinterpret_cast<CUlibrary>(0x1b);
  cuLibraryLoadData_params lp{};
  lp.library = &library;
  lp.code = kPtx;
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData, &lp});
  CUdeviceptr a = 0x10000, b = 0x20000;
  void* params[] = {&a, &b};
  cuLaunchKernel_params p = launchParams(params);
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, 7});
  f.backend.stop();
  EXPECT_TRUE(f.sink.finish().ok());
  return f.sink.trace();
}

// The CUDA runtime loads each fatbin with cuLibraryLoadData and launches functions of the library's module in the
// current context: the image must be stored under that module, or the kernels have no PTX in the trace (seen on an
// H100: every <<<>>> kernel was "no PTX: module N is a cubin image").
TEST(CuptiBackendTest, LibraryLoadCallbackLinksTheImageToTheKernelsModule) {
  Fixture f;
  f.table.FuncGetModule = &fModule;
  f.table.LibraryGetModule = &libraryModule;
  ASSERT_TRUE(f.backend.start().ok());
  const core::Trace& t = loadLibraryAndLaunch(f);
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_EQ(t.modules[0].kind, core::ImageKind::kPtx);
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].module_id, t.modules[0].id);
}

CUresult CUDAAPI refuseKernelHandle(CUmodule*, CUfunction) {
  return CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI kernelLibrary(CUlibrary* library, CUkernel) {
  *library = reinterpret_cast<CUlibrary>(0x1b);
  return CUDA_SUCCESS;
}

// On a GPU driver the runtime launches CUkernel handles, which cuFuncGetModule refuses: the kernel's module is
// found through cuKernelGetLibrary and cuLibraryGetModule, the handle its image was stored under (seen on an H100:
// the kernels were linked to the driver's cubin instead, and had no PTX).
TEST(CuptiBackendTest, KernelHandlesAreLinkedToTheirLibrarysImage) {
  Fixture f;
  f.table.FuncGetModule = &refuseKernelHandle;
  f.table.KernelGetLibrary = &kernelLibrary;
  f.table.LibraryGetModule = &libraryModule;
  ASSERT_TRUE(f.backend.start().ok());
  static const uint8_t kCubin[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41};
  // The driver's own cubin arrives first, through the resource callback, under no handle.
  CUpti_ModuleResourceData mod{};
  mod.cubinSize = sizeof kCubin;
  mod.pCubin = reinterpret_cast<const char*>(kCubin);
  CUpti_ResourceData rd{};
  rd.resourceDescriptor = &mod;
  f.backend.onCallback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &rd);
  const core::Trace& t = loadLibraryAndLaunch(f);
  ASSERT_EQ(t.modules.size(), 2u);
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.modules[1].kind, core::ImageKind::kPtx);
  EXPECT_EQ(t.functions[0].module_id, t.modules[1].id);
}

TEST(CuptiBackendTest, Kernel10KeepsTheKernel9PrefixLayout) {
  // The notes' offsetof check: 13.0's record is 12.x's Kernel9 plus isDeviceLaunched.
  EXPECT_EQ(sizeof(CUpti_ActivityKernel10), 216u);
  EXPECT_EQ(offsetof(CUpti_ActivityKernel10, start), 16u);
  EXPECT_EQ(offsetof(CUpti_ActivityKernel10, correlationId), 92u);
  EXPECT_EQ(offsetof(CUpti_ActivityKernel10, name), 104u);
  EXPECT_TRUE(cuptiVersionSupported(130001));
  EXPECT_FALSE(cuptiVersionSupported(130200));
}

// CUDA graphs through CUPTI's callbacks, as the hook backend records them: the captured graph read at
// instantiate, each launch recorded with CUPTI's correlation id, and the kernel records of a launch (which carry
// that id, or the runtime call's) counted instead of becoming launches without arguments.
TEST(CuptiBackendTest, GraphsAreReadAtInstantiateAndTheirReplaysKernelRecordsAreNotLaunches) {
  using namespace fake_graph;  // NOLINT(google-build-using-namespace): the fake driver's names
  Fixture f;
  f.table.GraphGetNodes = &fGetNodes;
  f.table.GraphGetEdges = &fGetEdges;
  f.table.GraphNodeGetType = &fNodeType;
  f.table.GraphKernelNodeGetParams = &fKernelParams;
  ASSERT_TRUE(f.backend.start().ok());
  auto enabled = [&](CUpti_CallbackId id) {
    return std::find(f.api.enabled_cbids.begin(), f.api.enabled_cbids.end(), id) != f.api.enabled_cbids.end();
  };
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2}) {
    EXPECT_TRUE(enabled(id)) << id;
  }
  CUdeviceptr a = 0x10000, b = 0x20000, c = 0x30000;
  void* first_args[] = {&a, &b};
  void* second_args[] = {&b, &c};
  // Two kernel nodes, the second after the first, both the fake kernel 0xf1 (two pointer arguments).
  FakeNode first, second;
  for (auto [node, args] : {std::pair{&first, first_args}, std::pair{&second, second_args}}) {
    node->type = CU_GRAPH_NODE_TYPE_KERNEL;
    node->kernel.func = reinterpret_cast<CUfunction>(0xf1);
    node->kernel.gridDimX = node->kernel.gridDimY = node->kernel.gridDimZ = 1;
    node->kernel.blockDimX = 64;
    node->kernel.blockDimY = node->kernel.blockDimZ = 1;
    node->kernel.kernelParams = args;
  }
  FakeGraph graph{{&first, &second}, {{&first, &second}}};
  const CUstream stream = reinterpret_cast<CUstream>(0x700);
  CUgraph g = handle(graph);
  cuStreamEndCapture_params end{stream, &g};
  exitOnly(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, &end, 1});
  CUgraphExec exec = reinterpret_cast<CUgraphExec>(0x8000);
  cuGraphInstantiateWithFlags_params inst{&exec, g, 0};
  enterAndExit(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &inst, 2});
  // Two replays: the first by the driver call alone (records carry 3), the second inside cudaGraphLaunch (records
  // carry the runtime call's 400).
  cuGraphLaunch_params launch{exec, stream};
  enterAndExit(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &launch, 3});
  int runtime_params = 0;
  const ApiCall runtime{CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &runtime_params, 400, nullptr,
                        CUPTI_CB_DOMAIN_RUNTIME_API};
  uint64_t data = 0;
  callback(f.backend, runtime, CUPTI_API_ENTER, &data);
  enterAndExit(f.backend, {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &launch, 401});
  callback(f.backend, runtime, CUPTI_API_EXIT, &data);
  // A kernel nobody launched through a recorded graph (an internal launch) stays a launch from its record.
  BufferBuilder bb;
  uint64_t at = 1000;
  for (uint32_t corr : {3u, 3u, 400u, 400u, 77u}) {
    auto& k = bb.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    k.correlationId = corr;
    k.start = at;
    k.end = at + 500;
    k.name = "_Z3addPfS_";
    at += 1000;
  }
  // A graph's memset node, replayed: the graph stands for it too; a copy of no graph launch stays a copy.
  auto& set = bb.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  set.correlationId = 3;
  set.bytes = 256;
  set.start = at;
  set.end = at + 100;
  auto& copy = bb.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.correlationId = 78;
  copy.bytes = 256;
  copy.start = at + 200;
  copy.end = at + 300;
  auto [buf, size] = bb.finish();
  f.backend.onBufferComplete(buf, size, size);
  f.backend.stop();
  ASSERT_TRUE(f.sink.finish().ok());
  const core::Trace& t = f.sink.trace();
  ASSERT_EQ(t.graphs.size(), 1u);
  EXPECT_EQ(t.graphs[0].origin, core::GraphOrigin::kCapture);
  ASSERT_EQ(t.graph_nodes.size(), 2u);
  EXPECT_EQ(t.graph_nodes[1].pointer_args.size(), 0u) << "no allocation recorded: the pointers resolve to none";
  EXPECT_EQ(t.graph_edges.size(), 1u);
  ASSERT_EQ(t.graph_execs.size(), 1u);
  ASSERT_EQ(t.graph_launches.size(), 2u);
  EXPECT_EQ(t.graph_launches[0].correlation_id, 3);
  EXPECT_EQ(t.graph_launches[1].correlation_id, 401);
  ASSERT_EQ(t.launches.size(), 1u) << "only the kernel of no recorded graph launch";
  EXPECT_EQ(t.launches[0].correlation_id, 77);
  std::map<std::string, int64_t> stats;
  for (const auto& st : t.stats) stats[st.name] += st.value;
  EXPECT_EQ(stats["graph_node_records"], 5);
  EXPECT_TRUE(t.memsets.empty());
  EXPECT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(stats["unmatched_gpu_records"], 1);
  EXPECT_EQ(stats["graph_launches_not_recorded"], 2);
}

}  // namespace
}  // namespace kfuse::collector
