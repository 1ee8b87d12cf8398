#include "kfuse/collector/hook_recorder.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../tests/fake_graph_driver.h"
#include "gpu_timer.h"

namespace kfuse::collector {
namespace {

using namespace fake_graph;  // NOLINT(google-build-using-namespace): the fake driver's names

// A fake driver behind a DriverTable: two kernels with known layouts, a bump allocator.
struct FakeKernel {
  const char* name;
  std::vector<std::pair<size_t, size_t>> params;
};
FakeKernel kSaxpy{"_Z5saxpyifPKfPf", {{0, 4}, {4, 4}, {8, 8}, {16, 8}}};
FakeKernel kNoLayout{"mystery", {}};
std::atomic<int> g_launches{0};
std::atomic<uint64_t> g_next{0x10000};

CUfunction handle(FakeKernel& k) {
  return reinterpret_cast<CUfunction>(&k);
}

CUresult CUDAAPI fLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                         void**, void**) {
  g_launches.fetch_add(1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fLaunchFails(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**) {
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI fLaunchEx(const CUlaunchConfig*, CUfunction, void**, void**) {
  return CUDA_SUCCESS;
}
std::atomic<int> g_refused_param_queries{0};  // what compute-sanitizer would report as API errors
CUresult CUDAAPI fParamInfo(CUfunction f, size_t i, size_t* off, size_t* size) {
  auto* k = reinterpret_cast<FakeKernel*>(f);
  if (k == &kNoLayout) return CUDA_ERROR_NOT_SUPPORTED;
  if (i >= k->params.size()) {
    g_refused_param_queries.fetch_add(1);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *off = k->params[i].first;
  *size = k->params[i].second;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fName(const char** name, CUfunction f) {
  *name = reinterpret_cast<FakeKernel*>(f)->name;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fAlloc(CUdeviceptr* p, size_t n) {
  *p = g_next.fetch_add((n + 255) / 256 * 256);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fFree(CUdeviceptr) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fHtoD(CUdeviceptr, const void*, size_t) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fSetD32Async(CUdeviceptr, unsigned, size_t, CUstream) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fStreamSync(CUstream) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEventRecord(CUevent, CUstream) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fStreamWait(CUstream, CUevent, unsigned) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fLoad(CUmodule* m, const void*) {
  *m = reinterpret_cast<CUmodule>(0xabc);
  return CUDA_SUCCESS;
}

struct Fixture {
  hooks::DriverTable table;
  MemorySink sink;
  HookRecorder recorder{table, sink};
  Fixture() {
    table.LaunchKernel[0] = &fLaunch;
    table.LaunchKernel[1] = &fLaunch;
    table.LaunchKernelEx[0] = &fLaunchEx;
    table.FuncGetParamInfo = &fParamInfo;
    table.FuncGetName = &fName;
    table.MemAlloc[0] = &fAlloc;
    table.MemFree[0] = &fFree;
    table.MemcpyHtoD[0] = &fHtoD;
    table.MemsetD32Async[1] = &fSetD32Async;
    table.StreamSynchronize[0] = &fStreamSync;
    table.EventRecord[0] = &fEventRecord;
    table.StreamWaitEvent[0] = &fStreamWait;
    table.ModuleLoadData[0] = &fLoad;
  }
  const core::Trace& finish() {
    EXPECT_TRUE(sink.finish().ok());
    return sink.trace();
  }
};

CUresult launchSaxpy(HookRecorder& r, int variant, CUstream stream, CUdeviceptr x, CUdeviceptr y, int n = 1024) {
  float a = 2.5f;
  void* params[] = {&n, &a, &x, &y};
  return r.LaunchKernel(variant, handle(kSaxpy), 4, 2, 1, 256, 1, 1, 128, stream, params, nullptr);
}

TEST(HookRecorderTest, RecordsLaunchWithArgumentsLaidOutByParamInfo) {
  Fixture f;
  CUdeviceptr x = 0, y = 0;
  ASSERT_EQ(f.recorder.MemAlloc(0, &x, 4096), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemAlloc(0, &y, 4096), CUDA_SUCCESS);
  const int before = g_launches.load();
  ASSERT_EQ(launchSaxpy(f.recorder, 0, reinterpret_cast<CUstream>(0x700), x, y + 64), CUDA_SUCCESS);
  EXPECT_EQ(g_launches.load(), before + 1);  // forwarded exactly once
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].mangled_name, "_Z5saxpyifPKfPf");
  ASSERT_EQ(t.functions[0].params.size(), 4u);
  ASSERT_EQ(t.launches.size(), 1u);
  const core::Launch& l = t.launches[0];
  EXPECT_EQ(l.grid, (core::Dim3{4, 2, 1}));
  EXPECT_EQ(l.block, (core::Dim3{256, 1, 1}));
  EXPECT_EQ(l.dynamic_shared_bytes, 128u);
  ASSERT_EQ(l.arg_bytes.size(), 24u);
  int n;
  float a;
  std::memcpy(&n, l.arg_bytes.data(), 4);
  std::memcpy(&a, l.arg_bytes.data() + 4, 4);
  EXPECT_EQ(n, 1024);
  EXPECT_EQ(a, 2.5f);
  ASSERT_EQ(l.pointer_args.size(), 2u);
  EXPECT_EQ(l.pointer_args[0].allocation_id, t.allocations[0].id);
  EXPECT_EQ(l.pointer_args[1].allocation_id, t.allocations[1].id);
  EXPECT_EQ(l.pointer_args[1].offset, 64u);
  EXPECT_NE(l.api_start_ns, core::kNoTime);
  EXPECT_LE(l.api_start_ns, l.api_end_ns);
  EXPECT_GT(l.thread_id, 0);
  EXPECT_EQ(t.streams[0].handle, 0x700u);
}

CUresult CUDAAPI fFuncModule(CUmodule* m, CUfunction) {
  *m = reinterpret_cast<CUmodule>(0xabc);  // what fLoad gives
  return CUDA_SUCCESS;
}

TEST(HookRecorderTest, ParameterLayoutComesFromTheModuleImageWithoutARefusedQuery) {
  Fixture f;
  f.table.FuncGetModule = &fFuncModule;
  // The module the kernel comes from, as PTX: its four parameters are asked for, never a fifth.
  const char* ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry _Z5saxpyifPKfPf(\n.param .u32 n,\n.param .f32 a,\n.param .u64 x,\n.param .u64 y\n)\n"
      "{\nret;\n}\n";
  CUmodule m = nullptr;
  ASSERT_EQ(f.recorder.ModuleLoadData(0, &m, ptx), CUDA_SUCCESS);
  const int refused = g_refused_param_queries.load();
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0x1000, 0x2000), CUDA_SUCCESS);
  EXPECT_EQ(g_refused_param_queries.load(), refused);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.functions.size(), 1u);
  ASSERT_EQ(t.functions[0].params.size(), 4u);
  EXPECT_EQ(t.functions[0].params[3].offset, 16u);
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].arg_bytes.size(), 24u);
}

TEST(HookRecorderTest, ParameterLayoutOfAKernelNoImageDescribesIsProbed) {
  Fixture f;
  f.table.FuncGetModule = &fFuncModule;
  CUmodule m = nullptr;
  ASSERT_EQ(f.recorder.ModuleLoadData(0, &m, ".version 8.0\n.target sm_90\n"), CUDA_SUCCESS);
  const int refused = g_refused_param_queries.load();
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0x1000, 0x2000), CUDA_SUCCESS);
  EXPECT_EQ(g_refused_param_queries.load(), refused + 1);  // the one query past the end that finds the count
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(t.functions[0].params.size(), 4u);
}

CUresult CUDAAPI fMemMap(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemUnmap(CUdeviceptr, size_t) {
  return CUDA_SUCCESS;
}
std::atomic<CUmemGenericAllocationHandle> g_next_handle{1};
CUresult CUDAAPI fMemCreate(CUmemGenericAllocationHandle* h, size_t, const CUmemAllocationProp*, unsigned long long) {
  *h = g_next_handle++;
  return CUDA_SUCCESS;
}

TEST(HookRecorderTest, MappedVirtualMemoryResolvesPointersUntilUnmapped) {
  Fixture f;
  f.table.MemMap[0] = &fMemMap;
  f.table.MemUnmap[0] = &fMemUnmap;
  f.table.MemCreate[0] = &fMemCreate;
  const CUdeviceptr base = 0x7f0000000000ull;  // a range reserved with cuMemAddressReserve, mapped in pieces
  CUmemGenericAllocationHandle h1 = 0, h2 = 0;
  ASSERT_EQ(f.recorder.MemCreate(0, &h1, 2 << 20, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemCreate(0, &h2, 2 << 20, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemMap(0, base, 2 << 20, 0, h1, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemMap(0, base + (2 << 20), 2 << 20, 0, h2, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, base + 256, base + (2 << 20) + 512), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemUnmap(0, base + (2 << 20), 2 << 20), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, base, base + (2 << 20)), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(t.allocations[0].kind, core::AllocationKind::kDevice);
  EXPECT_EQ(t.allocations[1].size, uint64_t{2 << 20});
  EXPECT_NE(t.allocations[1].free_ns, core::kNoTime);
  ASSERT_EQ(t.launches.size(), 2u);
  ASSERT_EQ(t.launches[0].pointer_args.size(), 2u);
  EXPECT_EQ(t.launches[0].pointer_args[1].allocation_id, t.allocations[1].id);
  EXPECT_EQ(t.launches[0].pointer_args[1].offset, 512u);
  ASSERT_EQ(t.launches[1].pointer_args.size(), 1u);  // the unmapped piece no longer resolves
  EXPECT_EQ(t.launches[1].pointer_args[0].allocation_id, t.allocations[0].id);
}

int64_t statValue(const core::Trace& t, core::StatId id) {
  for (const core::Stat& s : t.stats) {
    if (s.name == core::statName(id)) return s.value;
  }
  return 0;
}

TEST(HookRecorderTest, MemoryMappedTwiceIsNotResolvedAsTwoBuffers) {
  // One physical allocation at two addresses (a double-mapped ring buffer): a pointer into either cannot be told
  // apart from the other by address, so neither resolves; a third mapping of its own handle still does.
  Fixture f;
  f.table.MemMap[0] = &fMemMap;
  f.table.MemUnmap[0] = &fMemUnmap;
  f.table.MemCreate[0] = &fMemCreate;
  const CUdeviceptr base = 0x7f0000000000ull, mb2 = 2 << 20;
  CUmemGenericAllocationHandle shared = 0, own = 0;
  ASSERT_EQ(f.recorder.MemCreate(0, &shared, mb2, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemCreate(0, &own, mb2, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemMap(0, base, mb2, 0, shared, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemMap(0, base + mb2, mb2, 0, shared, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemMap(0, base + 2 * mb2, mb2, 0, own, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, base + 256, base + mb2 + 260), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, base + 2 * mb2, base + 16), CUDA_SUCCESS);
  // Once the second mapping is gone, the first is one buffer again.
  ASSERT_EQ(f.recorder.MemUnmap(0, base + mb2, mb2), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, base + 256, base + 2 * mb2), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.launches.size(), 3u);
  EXPECT_TRUE(t.launches[0].pointer_args.empty());
  ASSERT_EQ(t.launches[1].pointer_args.size(), 1u);
  EXPECT_EQ(t.launches[1].pointer_args[0].address, base + 2 * mb2);
  EXPECT_EQ(t.launches[2].pointer_args.size(), 2u);
  EXPECT_EQ(statValue(t, core::StatId::kPointerIntoSharedMapping), 3);
}

TEST(HookRecorderTest, MappingOfAHandleNotMadeWhileRecordingIsNotResolved) {
  // An imported or retained handle (or one made before recording) may show bytes another handle shows.
  Fixture f;
  f.table.MemMap[0] = &fMemMap;
  const CUdeviceptr base = 0x7f0000000000ull;
  ASSERT_EQ(f.recorder.MemMap(0, base, 2 << 20, 0, /*handle=*/77, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, base, base + 512), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.allocations.size(), 1u);  // still an allocation (copies and frees name it)
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_TRUE(t.launches[0].pointer_args.empty());
  EXPECT_EQ(statValue(t, core::StatId::kPointerIntoSharedMapping), 2);
}

// A driver with stream capture: stream 0x700 captures between begin and end; other streams never do.
std::atomic<bool> g_capturing{false};
CUresult CUDAAPI fBeginCapture(CUstream, CUstreamCaptureMode) {
  g_capturing = true;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEndCapture(CUstream, CUgraph* g) {
  g_capturing = false;
  *g = reinterpret_cast<CUgraph>(0x6);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fIsCapturing(CUstream s, CUstreamCaptureStatus* status) {
  *status = g_capturing && s == reinterpret_cast<CUstream>(0x700) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                                  : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fMemcpyAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream) {
  return CUDA_SUCCESS;
}

CUresult CUDAAPI fGraphLaunchIntoCapture(CUgraphExec, CUstream) {
  return CUDA_SUCCESS;
}

TEST(HookRecorderTest, WorkCapturedIntoAGraphIsCountedNotRecorded) {
  Fixture f;
  f.table.GraphLaunch[0] = &fGraphLaunchIntoCapture;
  f.table.StreamBeginCapture[0] = &fBeginCapture;
  f.table.StreamEndCapture[0] = &fEndCapture;
  f.table.StreamIsCapturing = &fIsCapturing;
  f.table.MemcpyAsync[0] = &fMemcpyAsync;
  const auto captured = reinterpret_cast<CUstream>(0x700), other = reinterpret_cast<CUstream>(0x800);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, captured, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.StreamBeginCapture(0, captured, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  const int before = g_launches.load();
  ASSERT_EQ(launchSaxpy(f.recorder, 0, captured, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(g_launches.load(), before + 1);  // still forwarded: the driver puts it into the graph
  ASSERT_EQ(f.recorder.MemcpyAsync(0, 0x10, 0x20, 64, captured), CUDA_SUCCESS);
  // A graph launched into the capture becomes a child graph node of the captured graph: it does not run now.
  ASSERT_EQ(f.recorder.GraphLaunch(0, reinterpret_cast<CUgraphExec>(0x9), captured), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, other, 0, 0), CUDA_SUCCESS);  // another stream runs normally
  CUgraph graph = nullptr;
  ASSERT_EQ(f.recorder.StreamEndCapture(0, captured, &graph), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, captured, 0, 0), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  EXPECT_EQ(t.launches.size(), 3u);
  EXPECT_TRUE(t.memcpys.empty());
  int64_t captured_work = 0, unseen = 0;
  for (const auto& s : t.stats) {
    if (s.name == "work_captured_into_graphs") captured_work = s.value;
    if (s.name == "graph_launches_not_recorded") unseen = s.value;
  }
  EXPECT_EQ(captured_work, 3);
  EXPECT_EQ(unseen, 0) << "the graph launched into the capture ran nothing";
}

TEST(HookRecorderTest, PerThreadVariantRecordsThePerThreadDefaultStream) {
  Fixture f;
  ASSERT_EQ(launchSaxpy(f.recorder, hooks::kPerThread, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, hooks::kLegacy, nullptr, 0, 0), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.streams.size(), 2u);
  EXPECT_EQ(t.streams[0].handle, kPerThreadStream);
  EXPECT_EQ(t.streams[1].handle, 0u);
  EXPECT_TRUE(t.streams[0].is_default && t.streams[1].is_default);
}

TEST(HookRecorderTest, FailedLaunchesAreForwardedButNotRecorded) {
  Fixture f;
  f.table.LaunchKernel[0] = &fLaunchFails;
  EXPECT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(f.finish().launches.empty());
}

CUresult CUDAAPI fGraphLaunch(CUgraphExec, CUstream) {
  return CUDA_SUCCESS;
}

TEST(HookRecorderTest, GraphLaunchesAreForwardedAndCountedAsUnseen) {
  Fixture f;
  f.table.GraphLaunch[0] = &fGraphLaunch;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(f.recorder.GraphLaunch(0, reinterpret_cast<CUgraphExec>(0x9), nullptr), CUDA_SUCCESS);
  }
  const core::Trace& t = f.finish();
  EXPECT_TRUE(t.launches.empty());
  int64_t unseen = 0;
  for (const auto& s : t.stats) {
    if (s.name == "graph_launches_not_recorded") unseen = s.value;
  }
  EXPECT_EQ(unseen, 3);
}

CUgraph g_capture_result = nullptr;
CUresult CUDAAPI fEndCaptureGraph(CUstream, CUgraph* g) {
  g_capturing = false;
  *g = g_capture_result;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fInstantiate(CUgraphExec* exec, CUgraph, unsigned long long) {
  static std::atomic<uintptr_t> next{0x8000};
  *exec = reinterpret_cast<CUgraphExec>(next.fetch_add(0x10));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fExecUpdate(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fExecKernelSet(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*) {
  return CUDA_SUCCESS;
}

// A captured graph: saxpy(n, a, x, y) -> memset(y) -> child graph { copy y to the host -> saxpy through an extra
// buffer }, recorded as the fake driver describes it.
struct GraphFixture : Fixture {
  CUdeviceptr x = 0, y = 0;
  int n = 512;
  float a = 0.5f;
  void* params[4] = {&n, &a, &x, &y};
  uint8_t buffer[24] = {};
  size_t buffer_size = sizeof buffer;
  void* extra[5] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &buffer_size,
                    CU_LAUNCH_PARAM_END};
  std::vector<float> host = std::vector<float>(64);
  FakeNode kernel, memset, child_node, copy, inner;
  FakeGraph graph, child;

  GraphFixture() {
    table.GraphGetNodes = &fGetNodes;
    table.GraphGetEdges = &fGetEdges;
    table.GraphNodeGetType = &fNodeType;
    table.GraphKernelNodeGetParams = &fKernelParams;
    table.GraphMemsetNodeGetParams = &fMemsetParams;
    table.GraphMemcpyNodeGetParams = &fMemcpyParams;
    table.GraphChildGraphNodeGetGraph = &fChildGraph;
    table.GraphInstantiateWithFlags[0] = &fInstantiate;
    table.GraphExecUpdate[0] = &fExecUpdate;
    table.GraphExecKernelNodeSetParams[0] = &fExecKernelSet;
    table.GraphLaunch[0] = &fGraphLaunch;
    table.StreamBeginCapture[0] = &fBeginCapture;
    table.StreamEndCapture[0] = &fEndCaptureGraph;
    table.StreamIsCapturing = &fIsCapturing;
    g_capture_result = handle(graph);
    EXPECT_EQ(recorder.MemAlloc(0, &x, 4096), CUDA_SUCCESS);
    EXPECT_EQ(recorder.MemAlloc(0, &y, 4096), CUDA_SUCCESS);
    kernel.type = CU_GRAPH_NODE_TYPE_KERNEL;
    kernel.kernel.func = handle(kSaxpy);
    kernel.kernel.gridDimX = 2;
    kernel.kernel.gridDimY = kernel.kernel.gridDimZ = 1;
    kernel.kernel.blockDimX = 256;
    kernel.kernel.blockDimY = kernel.kernel.blockDimZ = 1;
    kernel.kernel.sharedMemBytes = 64;
    kernel.kernel.kernelParams = params;
    memset.type = CU_GRAPH_NODE_TYPE_MEMSET;
    memset.memset.dst = y + 128;
    memset.memset.value = 3;
    memset.memset.elementSize = 4;
    memset.memset.width = 100;
    memset.memset.height = 1;
    child_node.type = CU_GRAPH_NODE_TYPE_GRAPH;
    child_node.child = handle(child);
    copy.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    copy.copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.copy.srcDevice = y;
    copy.copy.dstMemoryType = CU_MEMORYTYPE_HOST;
    copy.copy.dstHost = host.data();
    copy.copy.WidthInBytes = 256;
    copy.copy.Height = copy.copy.Depth = 1;
    inner = kernel;
    inner.kernel.kernelParams = nullptr;
    inner.kernel.extra = extra;
    const int inner_n = 7;
    std::memcpy(buffer, &inner_n, 4);
    std::memcpy(buffer + 8, &y, 8);
    std::memcpy(buffer + 16, &x, 8);
    graph.nodes = {&kernel, &memset, &child_node};
    graph.edges = {{&kernel, &memset}, {&memset, &child_node}};
    child.nodes = {&copy, &inner};
    child.edges = {{&copy, &inner}};
  }

  // Captures `graph` on stream 0x700 (the fake's end of capture returns it).
  CUgraph capture() {
    EXPECT_EQ(recorder.StreamBeginCapture(0, reinterpret_cast<CUstream>(0x700), CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    CUgraph g = nullptr;
    EXPECT_EQ(recorder.StreamEndCapture(0, reinterpret_cast<CUstream>(0x700), &g), CUDA_SUCCESS);
    return g;
  }
};

const core::Stat* findStat(const core::Trace& t, const std::string& name) {
  for (const auto& s : t.stats) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(HookRecorderGraphTest, InstantiateReadsTheGraphAndEachLaunchIsAReplayOfIt) {
  GraphFixture f;
  const CUgraph g_handle = f.capture();
  ASSERT_EQ(g_handle, handle(f.graph));
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.recorder.GraphInstantiateWithFlags(0, &exec, g_handle, 0), CUDA_SUCCESS);
  f.graph.nodes.clear();  // what the driver says after instantiate does not change what the exec runs
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(f.recorder.GraphLaunch(0, exec, reinterpret_cast<CUstream>(0x710)), CUDA_SUCCESS);
  }
  const core::Trace& t = f.finish();

  ASSERT_EQ(t.graphs.size(), 2u);
  const core::Graph& parent = t.graphs[0];  // opened before its child graph is read
  const core::Graph& c = t.graphs[1];
  EXPECT_EQ(parent.origin, core::GraphOrigin::kCapture);
  EXPECT_EQ(parent.handle, reinterpret_cast<uint64_t>(&f.graph));
  ASSERT_NE(parent.stream_id, core::kNoId);
  EXPECT_EQ(t.streams[static_cast<size_t>(parent.stream_id - 1)].handle, 0x700u);
  EXPECT_NE(parent.snapshot_ns, core::kNoTime);
  EXPECT_EQ(c.origin, core::GraphOrigin::kChild);
  EXPECT_EQ(c.parent_graph_id, parent.id);

  std::vector<const core::GraphNode*> top, inside;
  for (const auto& n : t.graph_nodes) (n.graph_id == parent.id ? top : inside).push_back(&n);
  ASSERT_EQ(top.size(), 3u);
  const core::GraphNode& k = *top[0];
  EXPECT_EQ(k.type, core::GraphNodeType::kKernel);
  EXPECT_EQ(k.index, 0);
  EXPECT_EQ(k.handle, reinterpret_cast<uint64_t>(&f.kernel));
  ASSERT_EQ(t.functions.size(), 1u);
  EXPECT_EQ(k.function_id, t.functions[0].id);
  EXPECT_EQ(k.grid, (core::Dim3{2, 1, 1}));
  EXPECT_EQ(k.block, (core::Dim3{256, 1, 1}));
  EXPECT_EQ(k.dynamic_shared_bytes, 64u);
  ASSERT_EQ(k.arg_bytes.size(), 24u);
  int n = 0;
  float a = 0;
  std::memcpy(&n, k.arg_bytes.data(), 4);
  std::memcpy(&a, k.arg_bytes.data() + 4, 4);
  EXPECT_EQ(n, 512);
  EXPECT_EQ(a, 0.5f);
  ASSERT_EQ(k.pointer_args.size(), 2u);  // x and y, resolved like a launch's
  EXPECT_EQ(k.pointer_args[0].param_index, 2);
  EXPECT_EQ(k.pointer_args[0].allocation_id, t.allocations[0].id);
  EXPECT_EQ(k.pointer_args[1].allocation_id, t.allocations[1].id);
  const core::GraphNode& m = *top[1];
  EXPECT_EQ(m.type, core::GraphNodeType::kMemset);
  EXPECT_EQ(m.dst_address, f.y + 128);
  EXPECT_EQ(m.dst_allocation_id, t.allocations[1].id);
  EXPECT_EQ(m.bytes, 400u);
  EXPECT_EQ(m.value, 3u);
  EXPECT_EQ(m.element_size, 4);
  EXPECT_EQ(top[2]->type, core::GraphNodeType::kChildGraph);
  EXPECT_EQ(top[2]->child_graph_id, c.id);

  ASSERT_EQ(inside.size(), 2u);
  EXPECT_EQ(inside[0]->type, core::GraphNodeType::kMemcpy);
  EXPECT_EQ(inside[0]->memcpy_kind, core::MemcpyKind::kDeviceToHost);
  EXPECT_EQ(inside[0]->src_allocation_id, t.allocations[1].id);
  EXPECT_EQ(inside[0]->dst_address, reinterpret_cast<uint64_t>(f.host.data()));
  EXPECT_EQ(inside[0]->dst_allocation_id, core::kNoId);
  EXPECT_EQ(inside[0]->bytes, 256u);
  // The kernel given an argument buffer (`extra`): its bytes, and the pointers in them.
  ASSERT_EQ(inside[1]->arg_bytes.size(), 24u);
  ASSERT_EQ(inside[1]->pointer_args.size(), 2u);
  EXPECT_EQ(inside[1]->pointer_args[0].address, f.y);
  EXPECT_EQ(inside[1]->pointer_args[1].address, f.x);

  std::vector<core::GraphEdge> edges;
  for (const auto& e : t.graph_edges) {
    if (e.graph_id == parent.id) edges.push_back(e);
  }
  ASSERT_EQ(edges.size(), 2u);
  EXPECT_EQ(edges[0].from_node_id, top[0]->id);
  EXPECT_EQ(edges[0].to_node_id, top[1]->id);
  EXPECT_EQ(edges[1].from_node_id, top[1]->id);
  EXPECT_EQ(edges[1].to_node_id, top[2]->id);
  EXPECT_EQ(t.graph_edges.size(), 3u);  // and the child's one

  ASSERT_EQ(t.graph_execs.size(), 1u);
  EXPECT_EQ(t.graph_execs[0].handle, reinterpret_cast<uint64_t>(exec));
  EXPECT_EQ(t.graph_execs[0].graph_id, parent.id);
  EXPECT_EQ(t.graph_execs[0].update_of, core::kNoId);
  EXPECT_LE(t.graph_execs[0].api_start_ns, t.graph_execs[0].api_end_ns);
  ASSERT_EQ(t.graph_launches.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const core::GraphLaunch& l = t.graph_launches[i];
    EXPECT_EQ(l.id, static_cast<core::Id>(i + 1));
    EXPECT_EQ(l.graph_exec_id, t.graph_execs[0].id);
    ASSERT_NE(l.stream_id, core::kNoId);
    EXPECT_EQ(t.streams[static_cast<size_t>(l.stream_id - 1)].handle, 0x710u);
  }
  EXPECT_TRUE(t.launches.empty());  // graph kernels are nodes, not launch rows
  ASSERT_NE(findStat(t, "graph_launches_not_recorded"), nullptr);
  EXPECT_EQ(findStat(t, "graph_launches_not_recorded")->value, 3);
  EXPECT_EQ(findStat(t, "graphs_not_read"), nullptr);
}

CUresult CUDAAPI fGraphDestroy(CUgraph) {
  return CUDA_SUCCESS;
}

TEST(HookRecorderGraphTest, AHandleReusedAfterTheCapturedGraphWasDestroyedIsAnotherGraph) {
  GraphFixture f;
  f.table.GraphDestroy[0] = &fGraphDestroy;
  const CUgraph g = f.capture();
  ASSERT_EQ(f.recorder.GraphDestroy(0, g), CUDA_SUCCESS);
  // The driver hands the same address to a graph built node by node.
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.recorder.GraphInstantiateWithFlags(0, &exec, g, 0), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_FALSE(t.graphs.empty());
  EXPECT_EQ(t.graphs[0].origin, core::GraphOrigin::kExplicit);
  EXPECT_EQ(t.graphs[0].stream_id, core::kNoId);
}

TEST(HookRecorderGraphTest, ExecKernelNodeUpdateGivesTheExecACopyOfItsGraphWithTheNewParameters) {
  GraphFixture f;
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.recorder.GraphInstantiateWithFlags(0, &exec, handle(f.graph), 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.GraphLaunch(0, exec, nullptr), CUDA_SUCCESS);
  CUDA_KERNEL_NODE_PARAMS p = f.kernel.kernel;
  int n = 9;
  float a = -2.f;
  CUdeviceptr nowhere = 0x42;
  void* params[] = {&n, &a, &nowhere, &f.x};
  p.kernelParams = params;
  p.gridDimX = 5;
  ASSERT_EQ(f.recorder.GraphExecKernelNodeSetParams(0, exec, handle(f.kernel), &p), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.GraphLaunch(0, exec, nullptr), CUDA_SUCCESS);
  const core::Trace& t = f.finish();

  ASSERT_EQ(t.graphs.size(), 3u);  // the graph, its child, and the exec's copy
  const core::Graph& copy = t.graphs[2];
  EXPECT_EQ(copy.origin, core::GraphOrigin::kExecNodeUpdate);
  EXPECT_EQ(copy.parent_graph_id, t.graphs[0].id);
  EXPECT_EQ(copy.handle, t.graphs[0].handle);
  std::vector<const core::GraphNode*> nodes;
  for (const auto& node : t.graph_nodes) {
    if (node.graph_id == copy.id) nodes.push_back(&node);
  }
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0]->grid, (core::Dim3{5, 1, 1}));
  int got_n = 0;
  std::memcpy(&got_n, nodes[0]->arg_bytes.data(), 4);
  EXPECT_EQ(got_n, 9);
  ASSERT_EQ(nodes[0]->pointer_args.size(), 1u);  // 0x42 is in no allocation
  EXPECT_EQ(nodes[0]->pointer_args[0].param_index, 3);
  EXPECT_EQ(nodes[0]->pointer_args[0].allocation_id, t.allocations[0].id);
  EXPECT_EQ(nodes[1]->type, core::GraphNodeType::kMemset);  // the others as they were
  EXPECT_EQ(nodes[2]->child_graph_id, t.graphs[1].id);      // sharing the child's snapshot
  size_t copied_edges = 0;
  for (const auto& e : t.graph_edges) copied_edges += e.graph_id == copy.id;
  EXPECT_EQ(copied_edges, 2u);

  ASSERT_EQ(t.graph_execs.size(), 2u);
  EXPECT_EQ(t.graph_execs[1].handle, t.graph_execs[0].handle);
  EXPECT_EQ(t.graph_execs[1].update_of, t.graph_execs[0].id);
  EXPECT_EQ(t.graph_execs[1].graph_id, copy.id);
  ASSERT_EQ(t.graph_launches.size(), 2u);
  EXPECT_EQ(t.graph_launches[0].graph_exec_id, t.graph_execs[0].id);
  EXPECT_EQ(t.graph_launches[1].graph_exec_id, t.graph_execs[1].id);
}

TEST(HookRecorderGraphTest, ExecUpdateRecordsTheGraphTheExecNowRuns) {
  GraphFixture f;
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.recorder.GraphInstantiateWithFlags(0, &exec, handle(f.child), 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.GraphExecUpdate(0, exec, handle(f.graph), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.GraphLaunch(0, exec, nullptr), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.graph_execs.size(), 2u);
  const core::GraphExec& updated = t.graph_execs[1];
  EXPECT_EQ(updated.update_of, t.graph_execs[0].id);
  const core::Graph* g = nullptr;
  for (const auto& graph : t.graphs) {
    if (graph.id == updated.graph_id) g = &graph;
  }
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->handle, reinterpret_cast<uint64_t>(&f.graph));
  EXPECT_EQ(g->origin, core::GraphOrigin::kExplicit);
  ASSERT_EQ(t.graph_launches.size(), 1u);
  EXPECT_EQ(t.graph_launches[0].graph_exec_id, updated.id);
}

TEST(HookRecorderGraphTest, AGraphThatCannotBeReadIsCountedAndItsLaunchesStillRecorded) {
  GraphFixture f;
  f.table.GraphGetEdges = nullptr;  // a driver without the query
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.recorder.GraphInstantiateWithFlags(0, &exec, handle(f.graph), 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.GraphLaunch(0, exec, nullptr), CUDA_SUCCESS);
  // And a launch of an exec instantiated before recording (or by a path not hooked).
  ASSERT_EQ(f.recorder.GraphLaunch(0, reinterpret_cast<CUgraphExec>(0x9), nullptr), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.graphs.size(), 1u);
  EXPECT_TRUE(t.graph_nodes.empty());
  ASSERT_EQ(t.graph_execs.size(), 1u);
  ASSERT_EQ(t.graph_launches.size(), 1u);
  ASSERT_NE(findStat(t, "graphs_not_read"), nullptr);
  EXPECT_EQ(findStat(t, "graphs_not_read")->value, 1);
  ASSERT_NE(findStat(t, "graph_launch_unknown_exec"), nullptr);
  EXPECT_EQ(findStat(t, "graph_launch_unknown_exec")->value, 1);
}

TEST(HookRecorderGraphTest, NodesBeyondTheLimitAreLeftOutAndCounted) {
  GraphFixture f;
  std::vector<FakeNode> many(HookRecorder::kMaxGraphNodes + 5);
  FakeGraph big;
  for (auto& node : many) big.nodes.push_back(&node);
  big.edges = {{&many[0], &many[1]}, {&many[1], &many.back()}};  // the second names a node left out
  CUgraphExec exec = nullptr;
  ASSERT_EQ(f.recorder.GraphInstantiateWithFlags(0, &exec, handle(big), 0), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  EXPECT_EQ(t.graph_nodes.size(), HookRecorder::kMaxGraphNodes);
  EXPECT_EQ(t.graph_edges.size(), 1u);
  ASSERT_NE(findStat(t, "graph_nodes_left_out"), nullptr);
  EXPECT_EQ(findStat(t, "graph_nodes_left_out")->value, 5);
}

TEST(HookRecorderTest, DisabledRecorderOnlyForwards) {
  Fixture f;
  f.recorder.setEnabled(false);
  const int before = g_launches.load();
  EXPECT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(g_launches.load(), before + 1);
  EXPECT_TRUE(f.finish().launches.empty());
}

TEST(HookRecorderTest, ExtraBufferArgumentsAreCopiedWhole) {
  Fixture f;
  uint8_t buffer[24] = {};
  int n = 77;
  std::memcpy(buffer, &n, 4);
  size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_EQ(f.recorder.LaunchKernel(0, handle(kSaxpy), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.launches.size(), 1u);
  ASSERT_EQ(t.launches[0].arg_bytes.size(), 24u);
  EXPECT_EQ(t.launches[0].arg_bytes[0], 77);
}

TEST(HookRecorderTest, LaunchKernelExRecordsConfigAndAttributesFlag) {
  Fixture f;
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  CUlaunchConfig cfg{};
  cfg.gridDimX = 3;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 64;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = reinterpret_cast<CUstream>(0x900);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 1;
  float a = 1;
  CUdeviceptr x = 0, y = 0;
  void* params[] = {&n, &a, &x, &y};
  ASSERT_EQ(f.recorder.LaunchKernelEx(0, &cfg, handle(kSaxpy), params, nullptr), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].grid, (core::Dim3{3, 1, 1}));
  EXPECT_EQ(t.streams[0].handle, 0x900u);
}

TEST(HookRecorderTest, UnknownLayoutIsCountedNotGuessed) {
  Fixture f;
  int n = 1;
  void* params[] = {&n};
  ASSERT_EQ(f.recorder.LaunchKernel(0, handle(kNoLayout), 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_TRUE(t.launches[0].arg_bytes.empty());
  bool counted = false;
  for (const auto& s : t.stats) counted |= s.name == "launch_layout_unknown";
  EXPECT_TRUE(counted);
}

TEST(HookRecorderTest, RecordsCopiesSetsSyncsEventsAndModuleImages) {
  Fixture f;
  CUdeviceptr x = 0;
  ASSERT_EQ(f.recorder.MemAlloc(0, &x, 1 << 20), CUDA_SUCCESS);
  std::vector<float> host(1024);
  ASSERT_EQ(f.recorder.MemcpyHtoD(0, x + 4096, host.data(), 4096), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemsetD32Async(hooks::kPerThread, x, 7, 256, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.EventRecord(0, reinterpret_cast<CUevent>(0xe1), reinterpret_cast<CUstream>(0x700)),
            CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.StreamWaitEvent(0, reinterpret_cast<CUstream>(0x800), reinterpret_cast<CUevent>(0xe1), 0),
            CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.StreamSynchronize(0, reinterpret_cast<CUstream>(0x800)), CUDA_SUCCESS);
  static const char kPtx[] = ".version 9.0\n.target sm_90\n";
  CUmodule m;
  ASSERT_EQ(f.recorder.ModuleLoadData(0, &m, kPtx), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.MemFree(0, x), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].kind, core::MemcpyKind::kHostToDevice);
  EXPECT_EQ(t.memcpys[0].bytes, 4096u);
  EXPECT_EQ(t.memcpys[0].dst_allocation_id, t.allocations[0].id);
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 1024u);
  EXPECT_EQ(t.memsets[0].element_size, 4);
  EXPECT_TRUE(t.memsets[0].async);
  ASSERT_EQ(t.events.size(), 1u);
  ASSERT_EQ(t.syncs.size(), 2u);
  EXPECT_EQ(t.syncs[0].kind, core::SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.syncs[0].event_id, t.events[0].id);
  EXPECT_EQ(t.syncs[1].kind, core::SyncKind::kStream);
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_EQ(t.modules[0].kind, core::ImageKind::kPtx);
  EXPECT_EQ(t.modules[0].image.size(), sizeof kPtx);
  EXPECT_NE(t.allocations[0].free_ns, core::kNoTime);
}

CUresult CUDAAPI fStreamDestroy(CUstream) {
  return CUDA_SUCCESS;
}

TEST(HookRecorderTest, AStreamHandleReusedAfterDestroyIsANewStream) {
  Fixture f;
  f.table.StreamDestroy[0] = &fStreamDestroy;
  const auto s = reinterpret_cast<CUstream>(0x700);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, s, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.StreamDestroy(0, s), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, s, 0, 0), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.streams.size(), 2u);
  EXPECT_NE(t.launches[0].stream_id, t.launches[1].stream_id);
  EXPECT_EQ(t.streams[0].handle, t.streams[1].handle);
}

TEST(HookRecorderTest, FourThreadsOnFourStreamsRecordEveryLaunchExactlyOnce) {
  Fixture f;
  constexpr int kThreads = 4, kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        launchSaxpy(f.recorder, 0, reinterpret_cast<CUstream>(0x1000 + t), 0, 0, i);
      }
    });
  }
  for (auto& th : threads) th.join();
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.launches.size(), size_t{kThreads * kPerThread});
  EXPECT_EQ(t.functions.size(), 1u);  // described once, however many threads raced
  std::map<core::Id, std::set<int>> per_stream;
  for (const auto& l : t.launches) {
    int n;
    std::memcpy(&n, l.arg_bytes.data(), 4);
    EXPECT_TRUE(per_stream[l.stream_id].insert(n).second);
  }
  ASSERT_EQ(per_stream.size(), size_t{kThreads});
  for (const auto& [stream, ns] : per_stream) EXPECT_EQ(ns.size(), size_t{kPerThread});
}

// A fake GPU clock for --gpu-time: every event record takes the next 0.25 ms tick; while `g_gpu_busy`, end events
// are not complete yet (cuEventQuery says CUDA_ERROR_NOT_READY).
struct FakeEvent {
  float when_ms = -1;
};
FakeEvent g_fake_events[64];
std::atomic<int> g_fake_events_used{0};
std::atomic<int> g_event_records{0};
float g_gpu_clock_ms = 0;
bool g_gpu_busy = false;
CUresult g_event_record_result = CUDA_SUCCESS;

CUresult CUDAAPI fEventCreate(CUevent* e, unsigned) {
  const int i = g_fake_events_used.fetch_add(1);
  if (i >= 64) return CUDA_ERROR_OUT_OF_MEMORY;
  *e = reinterpret_cast<CUevent>(&g_fake_events[i]);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEventRecordDirect(CUevent e, CUstream) {
  if (g_event_record_result != CUDA_SUCCESS) return g_event_record_result;
  g_event_records.fetch_add(1);
  reinterpret_cast<FakeEvent*>(e)->when_ms = g_gpu_clock_ms;
  g_gpu_clock_ms += 0.25f;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fEventQuery(CUevent) {
  return g_gpu_busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult CUDAAPI fEventElapsed(float* ms, CUevent a, CUevent b) {
  *ms = reinterpret_cast<FakeEvent*>(b)->when_ms - reinterpret_cast<FakeEvent*>(a)->when_ms;
  return CUDA_SUCCESS;
}

struct GpuTimeFixture : Fixture {
  explicit GpuTimeFixture(size_t pairs) {
    g_fake_events_used = 0;
    g_event_records = 0;
    g_gpu_clock_ms = 0;
    g_gpu_busy = false;
    g_event_record_result = CUDA_SUCCESS;
    table.EventCreate = &fEventCreate;
    table.EventRecordDirect = &fEventRecordDirect;
    table.EventQuery = &fEventQuery;
    table.EventElapsedTime = &fEventElapsed;
    recorder.enableGpuTime(pairs);
  }
  ~GpuTimeFixture() { g_event_record_result = CUDA_SUCCESS; }
  const core::Trace& finishWithFlush() {
    recorder.flushGpuTimes();
    return finish();
  }
};

int64_t statValue(const core::Trace& t, const std::string& name) {
  for (const auto& s : t.stats) {
    if (s.name == name) return s.value;
  }
  return 0;
}

TEST(HookRecorderTest, GpuTimesFromEventPairsAreResolvedAtStreamSynchronize) {
  GpuTimeFixture f(/*pairs=*/8);
  const auto stream = reinterpret_cast<CUstream>(0x700);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(launchSaxpy(f.recorder, 0, stream, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(g_event_records.load(), 1 + 3 * 2);  // the reference, then a pair per launch (driver's own record)
  ASSERT_EQ(f.recorder.StreamSynchronize(0, stream), CUDA_SUCCESS);
  EXPECT_EQ(f.recorder.gpuTimer()->timed(), 3u);
  const core::Trace& t = f.finishWithFlush();
  ASSERT_EQ(t.launches.size(), 3u);
  EXPECT_TRUE(t.events.empty());  // the collector's own events are not recorded as the application's
  for (size_t i = 0; i < t.launches.size(); ++i) {
    const core::Launch& l = t.launches[i];
    ASSERT_NE(l.gpu_start_ns, core::kNoTime);
    EXPECT_EQ(l.gpu_end_ns - l.gpu_start_ns, 250000);  // 0.25 ms between the pair's records
    if (i > 0) {
      EXPECT_EQ(l.gpu_start_ns - t.launches[i - 1].gpu_start_ns, 500000);
    }
  }
  // Mapped onto the trace clock from the reference event's CPU time: within the recording's CPU span.
  EXPECT_GE(t.launches[0].gpu_start_ns, t.launches[0].api_start_ns - 1'000'000'000);
  EXPECT_EQ(statValue(t, "gpu_time_pool_full"), 0);
}

TEST(HookRecorderTest, GpuTimesWaitForCompletionAndAFullPoolIsCounted) {
  GpuTimeFixture f(/*pairs=*/2);
  g_gpu_busy = true;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(f.recorder.StreamSynchronize(0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(f.recorder.gpuTimer()->timed(), 0u);  // not complete: left pending, nothing blocks
  g_gpu_busy = false;
  ASSERT_EQ(f.recorder.StreamSynchronize(0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(f.recorder.gpuTimer()->timed(), 2u);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_SUCCESS);  // the pool has room again
  const core::Trace& t = f.finishWithFlush();
  ASSERT_EQ(t.launches.size(), 4u);
  int timed = 0;
  for (const auto& l : t.launches) timed += l.gpu_start_ns != core::kNoTime ? 1 : 0;
  EXPECT_EQ(timed, 3);
  // Timed launches are written when their times arrive: find the third launch made by its id.
  std::vector<const core::Launch*> by_id;
  for (const auto& l : t.launches) by_id.push_back(&l);
  std::sort(by_id.begin(), by_id.end(), [](auto* a, auto* b) { return a->id < b->id; });
  EXPECT_EQ(by_id[2]->gpu_start_ns, core::kNoTime);  // launched while both pairs were in flight
  EXPECT_EQ(statValue(t, "gpu_time_pool_full"), 1);
}

TEST(HookRecorderTest, GpuTimeStillPendingAtExitIsLeftUnknown) {
  GpuTimeFixture f(/*pairs=*/4);
  g_gpu_busy = true;
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_SUCCESS);
  const core::Trace& t = f.finishWithFlush();
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].gpu_start_ns, core::kNoTime);
  EXPECT_EQ(statValue(t, "gpu_time_unresolved"), 1);
}

TEST(HookRecorderTest, FailingEventCallTurnsGpuTimeOffAndTheLaunchGoesOn) {
  GpuTimeFixture f(/*pairs=*/4);
  g_event_record_result = CUDA_ERROR_LAUNCH_FAILED;
  const int before = g_launches.load();
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(g_launches.load(), before + 2);
  EXPECT_FALSE(f.recorder.gpuTimer()->enabled());
  const core::Trace& t = f.finishWithFlush();
  ASSERT_EQ(t.launches.size(), 2u);
  for (const auto& l : t.launches) EXPECT_EQ(l.gpu_start_ns, core::kNoTime);
  EXPECT_EQ(statValue(t, "gpu_time_disabled"), 1);
}

TEST(HookRecorderTest, WithoutGpuTimeLaunchesHaveNoGpuTimes) {
  Fixture f;
  ASSERT_EQ(launchSaxpy(f.recorder, 0, nullptr, 0, 0), CUDA_SUCCESS);
  const core::Trace& t = f.finish();
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].gpu_start_ns, core::kNoTime);
  EXPECT_EQ(f.recorder.gpuTimer(), nullptr);
}

TEST(HookRecorderTest, InspectsModuleImageKinds) {
  const char ptx[] = ".version 9.0";
  EXPECT_EQ(hooks::inspectModuleImage(ptx).kind, core::ImageKind::kPtx);
  EXPECT_EQ(hooks::inspectModuleImage(ptx).size, sizeof ptx);
  alignas(8) uint8_t fatbin[64] = {};
  const uint32_t magic = 0xBA55ED50u;
  const uint16_t header = 16;
  const uint64_t payload = 48;
  std::memcpy(fatbin, &magic, 4);
  std::memcpy(fatbin + 6, &header, 2);
  std::memcpy(fatbin + 8, &payload, 8);
  EXPECT_EQ(hooks::inspectModuleImage(fatbin).kind, core::ImageKind::kFatbin);
  EXPECT_EQ(hooks::inspectModuleImage(fatbin).size, 64u);
  struct {
    int magic = 0x466243B1;
    int version = 1;
    const void* data;
    void* unused = nullptr;
  } wrapper{0x466243B1, 1, fatbin, nullptr};
  EXPECT_EQ(hooks::inspectModuleImage(&wrapper).kind, core::ImageKind::kFatbin);
  EXPECT_EQ(hooks::inspectModuleImage(&wrapper).data, fatbin);
}

}  // namespace
}  // namespace kfuse::collector
