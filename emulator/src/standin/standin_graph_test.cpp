// Tests of the stand-in's CUDA graphs: explicit construction with every node type, stream capture in each mode
// with the errors a driver returns, instantiation, repeated launches, executable-graph updates, child graphs and
// one graph launched on two streams. Kernels are nvcc's PTX (testdata/test_kernels.cu).
#include <cuda.h>

#include <string>
#include <thread>
#include <vector>

#include "kfuse/emulator/standin.h"
#include "standin_test_fixture.h"

namespace {

constexpr int kN = 200;

class StandinGraphTest : public StandinTest {
 protected:
  void SetUp() override {
    StandinTest::SetUp();
    std::string ptx = readFile(KFUSE_EMU_TEST_PTX);
    ASSERT_FALSE(ptx.empty());
    ASSERT_EQ(get<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&mod_, ptx.c_str()), CUDA_SUCCESS);
    ASSERT_EQ(get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction")(&axpy_, mod_, "axpy"), CUDA_SUCCESS);
    auto alloc = get<decltype(&cuMemAlloc)>("cuMemAlloc");
    ASSERT_EQ(alloc(&x_, kN * 4), CUDA_SUCCESS);
    ASSERT_EQ(alloc(&y_, kN * 4), CUDA_SUCCESS);
    std::vector<float> x(kN);
    for (int i = 0; i < kN; ++i) x[i] = float(i % 9);
    ASSERT_EQ(get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD")(x_, x.data(), kN * 4), CUDA_SUCCESS);
    ASSERT_EQ(get<decltype(&cuMemsetD32)>("cuMemsetD32")(y_, 0, kN), CUDA_SUCCESS);
    ASSERT_EQ(get<decltype(&cuStreamCreate)>("cuStreamCreate")(&s1_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(get<decltype(&cuStreamCreate)>("cuStreamCreate")(&s2_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  }
  void TearDown() override {
    get<decltype(&cuStreamDestroy)>("cuStreamDestroy")(s1_);
    get<decltype(&cuStreamDestroy)>("cuStreamDestroy")(s2_);
    get<decltype(&cuMemFree)>("cuMemFree")(x_);
    get<decltype(&cuMemFree)>("cuMemFree")(y_);
    get<decltype(&cuModuleUnload)>("cuModuleUnload")(mod_);
  }
  // y += a * x, launched on `s` (captured when `s` captures).
  CUresult launchAxpy(CUstream s, float a) {
    int n = kN;
    void* args[] = {&a, &x_, &y_, &n};
    return get<decltype(&cuLaunchKernel)>("cuLaunchKernel")(axpy_, 2, 1, 1, 128, 1, 1, 0, s, args, nullptr);
  }
  // Kernel node parameters for y += a * x; `a` must outlive the call that takes them.
  CUDA_KERNEL_NODE_PARAMS axpyParams(float* a) {
    args_ = {a, &x_, &y_, &n_};
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = axpy_;
    p.gridDimX = 2, p.gridDimY = 1, p.gridDimZ = 1;
    p.blockDimX = 128, p.blockDimY = 1, p.blockDimZ = 1;
    p.kernelParams = args_.data();
    return p;
  }
  std::vector<float> y() {
    std::vector<float> v(kN);
    EXPECT_EQ(get<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH")(v.data(), y_, kN * 4), CUDA_SUCCESS);
    return v;
  }
  // Checks y == factor * x.
  void expectY(float factor) {
    auto v = y();
    for (int i = 0; i < kN; ++i) ASSERT_EQ(v[i], factor * float(i % 9)) << "at " << i;
  }
  size_t nodeCount(CUgraph g) {
    size_t n = 0;
    EXPECT_EQ(get<decltype(&cuGraphGetNodes)>("cuGraphGetNodes")(g, nullptr, &n), CUDA_SUCCESS);
    return n;
  }
  CUstreamCaptureStatus status(CUstream s) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    EXPECT_EQ(get<decltype(&cuStreamIsCapturing)>("cuStreamIsCapturing")(s, &st), CUDA_SUCCESS);
    return st;
  }
  uint64_t graphKernelNodes() {
    auto count = reinterpret_cast<uint64_t (*)()>(dlsym(handle_, "cuKfuseEmuGraphKernelNodeCount"));
    EXPECT_NE(count, nullptr);
    return count ? count() : 0;
  }

  CUmodule mod_ = nullptr;
  CUfunction axpy_ = nullptr;
  CUdeviceptr x_ = 0, y_ = 0;
  CUstream s1_ = nullptr, s2_ = nullptr;
  int n_ = kN;
  std::vector<void*> args_;
};

void CUDA_CB countCall(void* user) {
  ++*static_cast<int*>(user);
}

TEST_F(StandinGraphTest, ExplicitGraphWithEveryNodeTypeRunsInOrderOnEveryLaunch) {
  CUgraph g, child;
  ASSERT_EQ(get<decltype(&cuGraphCreate)>("cuGraphCreate")(&g, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphCreate)>("cuGraphCreate")(&child, 0), CUDA_SUCCESS);
  auto add_kernel = get<decltype(&cuGraphAddKernelNode)>("cuGraphAddKernelNode", 12000);
  float a = 2.0f, b = 1.0f;
  CUDA_KERNEL_NODE_PARAMS pa = axpyParams(&a);
  CUgraphNode set, k1, sub, copy, host, empty, rec, wait;
  CUDA_MEMSET_NODE_PARAMS mp{y_, 0, 0u, 4u, size_t(kN), 1};
  ASSERT_EQ(get<decltype(&cuGraphAddMemsetNode)>("cuGraphAddMemsetNode")(&set, g, nullptr, 0, &mp, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(add_kernel(&k1, g, &set, 1, &pa), CUDA_SUCCESS);
  a = 50.0f;  // the node copied the value
  CUDA_KERNEL_NODE_PARAMS pb = axpyParams(&b);
  CUgraphNode child_kernel;
  ASSERT_EQ(add_kernel(&child_kernel, child, nullptr, 0, &pb), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphAddChildGraphNode)>("cuGraphAddChildGraphNode")(&sub, g, &k1, 1, child), CUDA_SUCCESS);
  std::vector<float> host_y(kN, -1.f);
  CUDA_MEMCPY3D cp{};
  cp.srcMemoryType = CU_MEMORYTYPE_DEVICE, cp.srcDevice = y_;
  cp.dstMemoryType = CU_MEMORYTYPE_HOST, cp.dstHost = host_y.data();
  cp.WidthInBytes = kN * 4, cp.Height = 1, cp.Depth = 1;
  ASSERT_EQ(get<decltype(&cuGraphAddMemcpyNode)>("cuGraphAddMemcpyNode")(&copy, g, &sub, 1, &cp, nullptr),
            CUDA_SUCCESS);
  int calls = 0;
  CUDA_HOST_NODE_PARAMS hp{countCall, &calls};
  ASSERT_EQ(get<decltype(&cuGraphAddHostNode)>("cuGraphAddHostNode")(&host, g, &copy, 1, &hp), CUDA_SUCCESS);
  CUevent ev;
  ASSERT_EQ(get<decltype(&cuEventCreate)>("cuEventCreate")(&ev, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphAddEmptyNode)>("cuGraphAddEmptyNode")(&empty, g, &host, 1), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphAddEventRecordNode)>("cuGraphAddEventRecordNode")(&rec, g, &empty, 1, ev),
            CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphAddEventWaitNode)>("cuGraphAddEventWaitNode")(&wait, g, &rec, 1, ev), CUDA_SUCCESS);

  // Structure: 8 nodes in a chain, one root, node types, the kernel node's copied arguments.
  EXPECT_EQ(nodeCount(g), 8u);
  size_t edges = 0;
  ASSERT_EQ(get<decltype(&cuGraphGetEdges)>("cuGraphGetEdges", 12030)(g, nullptr, nullptr, nullptr, &edges),
            CUDA_SUCCESS);
  EXPECT_EQ(edges, 7u);
  CUgraphNode from[7], to[7];
  CUgraphEdgeData data[7];
  ASSERT_EQ(get<decltype(&cuGraphGetEdges)>("cuGraphGetEdges", 12030)(g, from, to, data, &edges), CUDA_SUCCESS);
  EXPECT_EQ(from[0], set);
  EXPECT_EQ(to[0], k1);
  CUgraphNode root = nullptr;
  size_t roots = 1;
  ASSERT_EQ(get<decltype(&cuGraphGetRootNodes)>("cuGraphGetRootNodes")(g, &root, &roots), CUDA_SUCCESS);
  EXPECT_EQ(root, set);
  CUgraphNodeType type;
  auto get_type = get<decltype(&cuGraphNodeGetType)>("cuGraphNodeGetType");
  ASSERT_EQ(get_type(sub, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_GRAPH);
  ASSERT_EQ(get_type(wait, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
  CUDA_KERNEL_NODE_PARAMS got{};
  ASSERT_EQ(get<decltype(&cuGraphKernelNodeGetParams)>("cuGraphKernelNodeGetParams", 12000)(k1, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.func, axpy_);
  EXPECT_EQ(got.gridDimX, 2u);
  EXPECT_EQ(*static_cast<float*>(got.kernelParams[0]), 2.0f);
  EXPECT_EQ(*static_cast<CUdeviceptr*>(got.kernelParams[2]), y_);
  CUgraph inner;
  ASSERT_EQ(get<decltype(&cuGraphChildGraphNodeGetGraph)>("cuGraphChildGraphNodeGetGraph")(sub, &inner), CUDA_SUCCESS);
  EXPECT_EQ(nodeCount(inner), 1u);

  // Three launches: each resets y, adds 2x then (child graph) 1x, copies y to the host and calls back.
  CUgraphExec exec;
  ASSERT_EQ(get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags")(&exec, g, 0), CUDA_SUCCESS);
  uint64_t before = graphKernelNodes();
  auto launch = get<decltype(&cuGraphLaunch)>("cuGraphLaunch");
  for (int i = 0; i < 3; ++i) ASSERT_EQ(launch(exec, s1_), CUDA_SUCCESS);
  EXPECT_EQ(graphKernelNodes() - before, 6u);
  EXPECT_EQ(calls, 3);
  expectY(3.0f);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(host_y[i], 3.0f * float(i % 9));
  ASSERT_EQ(get<decltype(&cuEventQuery)>("cuEventQuery")(ev), CUDA_SUCCESS);

  // A clone is independent of its original; its nodes are found from the original's.
  CUgraph clone;
  CUgraphNode k1_clone;
  ASSERT_EQ(get<decltype(&cuGraphClone)>("cuGraphClone")(&clone, g), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphNodeFindInClone)>("cuGraphNodeFindInClone")(&k1_clone, k1, clone), CUDA_SUCCESS);
  EXPECT_NE(k1_clone, k1);
  ASSERT_EQ(get<decltype(&cuGraphDestroyNode)>("cuGraphDestroyNode")(k1_clone), CUDA_SUCCESS);
  EXPECT_EQ(nodeCount(clone), 7u);
  EXPECT_EQ(nodeCount(g), 8u);
  EXPECT_EQ(get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(inner), CUDA_ERROR_INVALID_VALUE);  // owned by sub
  EXPECT_EQ(get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(clone), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(exec), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(g), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(child), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(g), CUDA_ERROR_INVALID_VALUE);
  get<decltype(&cuEventDestroy)>("cuEventDestroy")(ev);
}

TEST_F(StandinGraphTest, EdgesAndInstantiationRejectBadGraphs) {
  CUgraph g, other;
  ASSERT_EQ(get<decltype(&cuGraphCreate)>("cuGraphCreate")(&g, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphCreate)>("cuGraphCreate")(&other, 0), CUDA_SUCCESS);
  CUgraphNode a, b, c;
  auto empty = get<decltype(&cuGraphAddEmptyNode)>("cuGraphAddEmptyNode");
  ASSERT_EQ(empty(&a, g, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(empty(&b, g, &a, 1), CUDA_SUCCESS);
  ASSERT_EQ(empty(&c, other, nullptr, 0), CUDA_SUCCESS);
  EXPECT_EQ(empty(&c, g, &c, 1), CUDA_ERROR_INVALID_VALUE);  // a dependency from another graph
  auto add_deps = get<decltype(&cuGraphAddDependencies)>("cuGraphAddDependencies", 12030);
  EXPECT_EQ(add_deps(g, &a, &b, nullptr, 1), CUDA_ERROR_INVALID_VALUE);  // already there
  // A cycle: instantiation fails, naming a node of the cycle.
  ASSERT_EQ(add_deps(g, &b, &a, nullptr, 1), CUDA_SUCCESS);
  CUgraphExec exec;
  CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
  EXPECT_EQ(get<decltype(&cuGraphInstantiateWithParams)>("cuGraphInstantiateWithParams")(&exec, g, &ip),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(ip.result_out, CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
  EXPECT_NE(ip.hErrNode_out, nullptr);
  // The ABI before 12.3: four arguments, no edge data.
  auto remove_v1 =
      get<CUresult (*)(CUgraph, const CUgraphNode*, const CUgraphNode*, size_t)>("cuGraphRemoveDependencies", 10000);
  ASSERT_EQ(remove_v1(g, &b, &a, 1), CUDA_SUCCESS);
  auto edges_v1 = get<CUresult (*)(CUgraph, CUgraphNode*, CUgraphNode*, size_t*)>("cuGraphGetEdges", 10000);
  size_t n = 0;
  ASSERT_EQ(edges_v1(g, nullptr, nullptr, &n), CUDA_SUCCESS);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(get<decltype(&cuGraphInstantiateWithParams)>("cuGraphInstantiateWithParams")(&exec, g, &ip), CUDA_SUCCESS);
  EXPECT_EQ(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
  EXPECT_EQ(get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(exec), CUDA_SUCCESS);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(g);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(other);
}

TEST_F(StandinGraphTest, CaptureTurnsStreamWorkIntoNodesThatRunOnlyWhenLaunched) {
  std::vector<float> host_y(kN, -1.f);
  int calls = 0;
  uint64_t before = graphKernelNodes();
  ASSERT_EQ(get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture", 10010)(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  EXPECT_EQ(status(s1_), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(status(s2_), CU_STREAM_CAPTURE_STATUS_NONE);
  ASSERT_EQ(get<decltype(&cuMemsetD32Async)>("cuMemsetD32Async")(y_, 0, kN, s1_), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 4.0f), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuMemcpyDtoHAsync)>("cuMemcpyDtoHAsync")(host_y.data(), y_, kN * 4, s1_), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuLaunchHostFunc)>("cuLaunchHostFunc")(s1_, countCall, &calls), CUDA_SUCCESS);
  // Nothing ran: the host buffer, the callback count and y are untouched.
  EXPECT_EQ(host_y[1], -1.f);
  EXPECT_EQ(calls, 0);
  CUstreamCaptureStatus st;
  cuuint64_t id = 0;
  CUgraph capturing = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t ndeps = 0;
  ASSERT_EQ(get<decltype(&cuStreamGetCaptureInfo)>("cuStreamGetCaptureInfo", 12030)(s1_, &st, &id, &capturing, &deps,
                                                                                    nullptr, &ndeps),
            CUDA_SUCCESS);
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(id, 0u);
  ASSERT_EQ(ndeps, 1u);
  CUgraphNodeType type;
  ASSERT_EQ(get<decltype(&cuGraphNodeGetType)>("cuGraphNodeGetType")(deps[0], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_HOST);
  CUgraph g = nullptr;
  ASSERT_EQ(get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture")(s1_, &g), CUDA_SUCCESS);
  EXPECT_EQ(g, capturing);
  EXPECT_EQ(status(s1_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(nodeCount(g), 4u);
  expectY(0.0f);
  EXPECT_EQ(graphKernelNodes(), before);

  CUgraphExec exec;
  ASSERT_EQ(get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags")(&exec, g, 0), CUDA_SUCCESS);
  // Replays: in stream order with other work (the launch between them adds 1x each time).
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(get<decltype(&cuGraphLaunch)>("cuGraphLaunch")(exec, s1_), CUDA_SUCCESS);
    for (int j = 0; j < kN; ++j) ASSERT_EQ(host_y[j], 4.0f * float(j % 9));
    ASSERT_EQ(launchAxpy(s1_, 1.0f), CUDA_SUCCESS);
    expectY(5.0f);
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(graphKernelNodes() - before, 3u);
  get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(exec);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(g);
}

TEST_F(StandinGraphTest, GlobalModeRefusesUnsafeCallsAndInvalidatesTheCapture) {
  auto begin = get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture", 10010);
  auto end = get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture");
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 1.0f), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(get<decltype(&cuMemAlloc)>("cuMemAlloc")(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(status(s1_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(launchAxpy(s1_, 1.0f), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CUgraph g = reinterpret_cast<CUgraph>(1);
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(status(s1_), CU_STREAM_CAPTURE_STATUS_NONE);
  expectY(0.0f);  // nothing captured ever ran

  // Synchronising a capturing stream, or a synchronous copy, is refused too.
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuStreamSynchronize)>("cuStreamSynchronize")(s1_), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  float h[4] = {};
  EXPECT_EQ(get<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH")(h, y_, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  // After the capture ends, the same calls work again.
  ASSERT_EQ(get<decltype(&cuMemAlloc)>("cuMemAlloc")(&p, 64), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuMemFree)>("cuMemFree")(p), CUDA_SUCCESS);
}

TEST_F(StandinGraphTest, ThreadLocalAndRelaxedModesAndTheThreadsCaptureMode) {
  auto begin = get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture", 10010);
  auto end = get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture");
  auto alloc = get<decltype(&cuMemAlloc)>("cuMemAlloc");
  auto free_ = get<decltype(&cuMemFree)>("cuMemFree");
  auto exchange = get<decltype(&cuThreadExchangeStreamCaptureMode)>("cuThreadExchangeStreamCaptureMode");
  CUcontext ctx;
  ASSERT_EQ(get<decltype(&cuCtxGetCurrent)>("cuCtxGetCurrent")(&ctx), CUDA_SUCCESS);
  auto in_other_thread = [&](CUstreamCaptureMode mode) {
    CUresult r = CUDA_ERROR_UNKNOWN;
    std::thread([&] {
      get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx);
      CUstreamCaptureMode m = mode;
      exchange(&m);
      CUdeviceptr p = 0;
      r = alloc(&p, 64);
      if (r == CUDA_SUCCESS) free_(p);
    }).join();
    return r;
  };
  CUgraph g = nullptr;
  // Global: another thread in global mode is refused (and the capture invalidated); in relaxed mode it is not.
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(in_other_thread(CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(in_other_thread(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  EXPECT_EQ(status(s1_), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(in_other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(status(s1_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // Thread-local: other threads are unaffected; the capturing thread is refused.
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  EXPECT_EQ(in_other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 1.0f), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(alloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // Relaxed: unsafe calls are allowed, the capture survives, and another thread may end it.
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 1.0f), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&p, 64), CUDA_SUCCESS);
  ASSERT_EQ(free_(p), CUDA_SUCCESS);
  CUresult ended = CUDA_ERROR_UNKNOWN;
  std::thread([&] {
    get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx);
    ended = end(s1_, &g);
  }).join();
  EXPECT_EQ(ended, CUDA_SUCCESS);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(nodeCount(g), 1u);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(g);

  // A global capture must be ended by the thread that began it.
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  std::thread([&] {
    get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx);
    ended = end(s1_, &g);
  }).join();
  EXPECT_EQ(ended, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  EXPECT_EQ(end(s1_, &g), CUDA_SUCCESS);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(g);

  // The thread's mode is swapped in and out.
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(exchange(&m), CUDA_SUCCESS);
  EXPECT_EQ(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ASSERT_EQ(exchange(&m), CUDA_SUCCESS);
  EXPECT_EQ(m, CU_STREAM_CAPTURE_MODE_RELAXED);
  expectY(0.0f);
}

TEST_F(StandinGraphTest, CaptureRulesGiveTheDriversErrors) {
  auto begin = get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture", 10010);
  auto end = get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture");
  auto record = get<decltype(&cuEventRecord)>("cuEventRecord");
  auto wait = get<decltype(&cuStreamWaitEvent)>("cuStreamWaitEvent");
  CUgraph g = nullptr;
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_ILLEGAL_STATE);  // not capturing
  EXPECT_EQ(begin(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  // A fork that is never joined back.
  CUevent fork, join;
  ASSERT_EQ(get<decltype(&cuEventCreate)>("cuEventCreate")(&fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuEventCreate)>("cuEventCreate")(&join, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 1.0f), CUDA_SUCCESS);
  ASSERT_EQ(record(fork, s1_), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuEventQuery)>("cuEventQuery")(fork), CUDA_ERROR_CAPTURED_EVENT);
  ASSERT_EQ(wait(s2_, fork, 0), CUDA_SUCCESS);
  EXPECT_EQ(status(s2_), CU_STREAM_CAPTURE_STATUS_ACTIVE);  // joined through the event
  ASSERT_EQ(launchAxpy(s2_, 1.0f), CUDA_SUCCESS);
  EXPECT_EQ(end(s2_, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);  // only the origin stream ends a capture
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(status(s2_), CU_STREAM_CAPTURE_STATUS_NONE);

  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(record(fork, s1_), CUDA_SUCCESS);
  ASSERT_EQ(wait(s2_, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s2_, 1.0f), CUDA_SUCCESS);
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(g, nullptr);

  // An event recorded outside the capture cannot be waited on inside it.
  ASSERT_EQ(record(join, s2_), CUDA_SUCCESS);
  ASSERT_EQ(begin(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(wait(s1_, join, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  EXPECT_EQ(end(s1_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // The legacy stream while a blocking stream captures.
  CUstream blocking;
  ASSERT_EQ(get<decltype(&cuStreamCreate)>("cuStreamCreate")(&blocking, 0), CUDA_SUCCESS);
  ASSERT_EQ(begin(blocking, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUstreamCaptureStatus st;
  EXPECT_EQ(get<decltype(&cuStreamIsCapturing)>("cuStreamIsCapturing")(CU_STREAM_LEGACY, &st),
            CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(status(blocking), CU_STREAM_CAPTURE_STATUS_ACTIVE);  // a query does not invalidate
  EXPECT_EQ(launchAxpy(nullptr, 1.0f), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(end(blocking, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  get<decltype(&cuStreamDestroy)>("cuStreamDestroy")(blocking);
  get<decltype(&cuEventDestroy)>("cuEventDestroy")(fork);
  get<decltype(&cuEventDestroy)>("cuEventDestroy")(join);
  expectY(0.0f);
}

TEST_F(StandinGraphTest, ForkJoinCaptureAndOneGraphLaunchedOnTwoStreams) {
  auto record = get<decltype(&cuEventRecord)>("cuEventRecord");
  auto wait = get<decltype(&cuStreamWaitEvent)>("cuStreamWaitEvent");
  CUevent fork, join;
  ASSERT_EQ(get<decltype(&cuEventCreate)>("cuEventCreate")(&fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuEventCreate)>("cuEventCreate")(&join, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture", 10010)(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 1.0f), CUDA_SUCCESS);
  ASSERT_EQ(record(fork, s1_), CUDA_SUCCESS);
  ASSERT_EQ(wait(s2_, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s2_, 2.0f), CUDA_SUCCESS);
  ASSERT_EQ(record(join, s2_), CUDA_SUCCESS);
  ASSERT_EQ(wait(s1_, join, 0), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 4.0f), CUDA_SUCCESS);
  CUgraph g = nullptr;
  ASSERT_EQ(get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture")(s1_, &g), CUDA_SUCCESS);
  EXPECT_EQ(nodeCount(g), 3u);
  size_t edges = 0;
  ASSERT_EQ(get<decltype(&cuGraphGetEdges)>("cuGraphGetEdges", 12030)(g, nullptr, nullptr, nullptr, &edges),
            CUDA_SUCCESS);
  EXPECT_EQ(edges, 3u);  // first -> second, second -> third, and first -> third (stream order on s1)

  // One executable graph launched from two threads on two streams: launches run one after another.
  CUgraphExec exec;
  ASSERT_EQ(get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags")(&exec, g, 0), CUDA_SUCCESS);
  CUcontext ctx;
  ASSERT_EQ(get<decltype(&cuCtxGetCurrent)>("cuCtxGetCurrent")(&ctx), CUDA_SUCCESS);
  auto launch = get<decltype(&cuGraphLaunch)>("cuGraphLaunch");
  CUresult r1 = CUDA_ERROR_UNKNOWN, r2 = CUDA_ERROR_UNKNOWN;
  std::thread t1([&] {
    get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx);
    for (int i = 0; i < 3 && (r1 = launch(exec, s1_)) == CUDA_SUCCESS; ++i) {
    }
  });
  std::thread t2([&] {
    get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx);
    for (int i = 0; i < 3 && (r2 = launch(exec, s2_)) == CUDA_SUCCESS; ++i) {
    }
  });
  t1.join();
  t2.join();
  EXPECT_EQ(r1, CUDA_SUCCESS);
  EXPECT_EQ(r2, CUDA_SUCCESS);
  expectY(6 * 7.0f);
  get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(exec);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(g);
  get<decltype(&cuEventDestroy)>("cuEventDestroy")(fork);
  get<decltype(&cuEventDestroy)>("cuEventDestroy")(join);
}

TEST_F(StandinGraphTest, ADisabledNodeRunsAsAnEmptyNodeUntilEnabledAgain) {
  auto create = get<decltype(&cuGraphCreate)>("cuGraphCreate");
  auto launch = get<decltype(&cuGraphLaunch)>("cuGraphLaunch");
  auto set_enabled = get<decltype(&cuGraphNodeSetEnabled)>("cuGraphNodeSetEnabled");
  auto get_enabled = get<decltype(&cuGraphNodeGetEnabled)>("cuGraphNodeGetEnabled");
  auto reset = [&] { ASSERT_EQ(get<decltype(&cuMemsetD32)>("cuMemsetD32")(y_, 0, kN), CUDA_SUCCESS); };
  CUgraph g;
  ASSERT_EQ(create(&g, 0), CUDA_SUCCESS);
  float a = 2.0f;
  CUgraphNode k, empty;
  CUDA_KERNEL_NODE_PARAMS p = axpyParams(&a);
  ASSERT_EQ(get<decltype(&cuGraphAddKernelNode)>("cuGraphAddKernelNode", 12000)(&k, g, nullptr, 0, &p), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphAddEmptyNode)>("cuGraphAddEmptyNode")(&empty, g, &k, 1), CUDA_SUCCESS);
  CUgraphExec exec;
  ASSERT_EQ(get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags")(&exec, g, 0), CUDA_SUCCESS);
  unsigned enabled = 7;
  ASSERT_EQ(get_enabled(exec, k, &enabled), CUDA_SUCCESS);
  EXPECT_EQ(enabled, 1u);
  ASSERT_EQ(set_enabled(exec, k, 0), CUDA_SUCCESS);
  ASSERT_EQ(get_enabled(exec, k, &enabled), CUDA_SUCCESS);
  EXPECT_EQ(enabled, 0u);
  ASSERT_EQ(launch(exec, s1_), CUDA_SUCCESS);
  expectY(0.0f);
  ASSERT_EQ(set_enabled(exec, k, 1), CUDA_SUCCESS);
  reset();
  ASSERT_EQ(launch(exec, s1_), CUDA_SUCCESS);
  expectY(2.0f);
  // Only kernel, memset and memcpy nodes of the graph the exec was made from (cuda.h).
  EXPECT_EQ(set_enabled(exec, empty, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(get_enabled(exec, k, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUgraph other;
  CUgraphNode elsewhere;
  ASSERT_EQ(create(&other, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphAddKernelNode)>("cuGraphAddKernelNode", 12000)(&elsewhere, other, nullptr, 0, &p),
            CUDA_SUCCESS);
  EXPECT_EQ(set_enabled(exec, elsewhere, 0), CUDA_ERROR_INVALID_VALUE);
  get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(exec);
  for (CUgraph x : {g, other}) get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(x);
}

TEST_F(StandinGraphTest, ExecUpdateAndExecKernelNodeParamsChangeOnlyTheExecutableGraph) {
  auto add_kernel = get<decltype(&cuGraphAddKernelNode)>("cuGraphAddKernelNode", 12000);
  auto create = get<decltype(&cuGraphCreate)>("cuGraphCreate");
  auto launch = get<decltype(&cuGraphLaunch)>("cuGraphLaunch");
  auto reset = [&] { ASSERT_EQ(get<decltype(&cuMemsetD32)>("cuMemsetD32")(y_, 0, kN), CUDA_SUCCESS); };
  CUgraph g, g2, g3;
  ASSERT_EQ(create(&g, 0), CUDA_SUCCESS);
  ASSERT_EQ(create(&g2, 0), CUDA_SUCCESS);
  ASSERT_EQ(create(&g3, 0), CUDA_SUCCESS);
  float a = 1.0f, b = 3.0f;
  CUgraphNode k, k2, k3, extra;
  CUDA_KERNEL_NODE_PARAMS p = axpyParams(&a);
  ASSERT_EQ(add_kernel(&k, g, nullptr, 0, &p), CUDA_SUCCESS);
  CUgraphExec exec;
  ASSERT_EQ(get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags")(&exec, g, 0), CUDA_SUCCESS);
  // Changing the graph after instantiation does not change the executable graph ...
  a = 7.0f;
  ASSERT_EQ(get<decltype(&cuGraphKernelNodeSetParams)>("cuGraphKernelNodeSetParams", 12000)(k, &p), CUDA_SUCCESS);
  ASSERT_EQ(launch(exec, s1_), CUDA_SUCCESS);
  expectY(1.0f);
  // ... cuGraphExecKernelNodeSetParams does.
  a = 2.0f;
  ASSERT_EQ(get<decltype(&cuGraphExecKernelNodeSetParams)>("cuGraphExecKernelNodeSetParams", 12000)(exec, k, &p),
            CUDA_SUCCESS);
  reset();
  ASSERT_EQ(launch(exec, s1_), CUDA_SUCCESS);
  expectY(2.0f);
  // An update from a graph of the same shape takes its parameters.
  CUDA_KERNEL_NODE_PARAMS p2 = axpyParams(&b);
  ASSERT_EQ(add_kernel(&k2, g2, nullptr, 0, &p2), CUDA_SUCCESS);
  auto update = get<decltype(&cuGraphExecUpdate)>("cuGraphExecUpdate", 12000);
  CUgraphExecUpdateResultInfo info{};
  ASSERT_EQ(update(exec, g2, &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  reset();
  ASSERT_EQ(launch(exec, s1_), CUDA_SUCCESS);
  expectY(3.0f);
  // A different topology is refused and leaves the executable graph as it was.
  ASSERT_EQ(add_kernel(&k3, g3, nullptr, 0, &p2), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphAddEmptyNode)>("cuGraphAddEmptyNode")(&extra, g3, &k3, 1), CUDA_SUCCESS);
  EXPECT_EQ(update(exec, g3, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  reset();
  ASSERT_EQ(launch(exec, s1_), CUDA_SUCCESS);
  expectY(3.0f);
  get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(exec);
  for (CUgraph x : {g, g2, g3}) get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(x);
}

TEST_F(StandinGraphTest, GraphLaunchedIntoACaptureBecomesAChildGraphNode) {
  CUgraph inner, outer = nullptr;
  ASSERT_EQ(get<decltype(&cuGraphCreate)>("cuGraphCreate")(&inner, 0), CUDA_SUCCESS);
  float a = 1.0f;
  CUDA_KERNEL_NODE_PARAMS p = axpyParams(&a);
  CUgraphNode k;
  ASSERT_EQ(get<decltype(&cuGraphAddKernelNode)>("cuGraphAddKernelNode", 12000)(&k, inner, nullptr, 0, &p),
            CUDA_SUCCESS);
  CUgraphExec inner_exec, outer_exec;
  auto instantiate = get<decltype(&cuGraphInstantiateWithFlags)>("cuGraphInstantiateWithFlags");
  ASSERT_EQ(instantiate(&inner_exec, inner, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture", 10010)(s1_, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuGraphLaunch)>("cuGraphLaunch")(inner_exec, s1_), CUDA_SUCCESS);
  ASSERT_EQ(launchAxpy(s1_, 2.0f), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuStreamEndCapture)>("cuStreamEndCapture")(s1_, &outer), CUDA_SUCCESS);
  expectY(0.0f);
  CUgraphNode nodes[2];
  size_t n = 2;
  ASSERT_EQ(get<decltype(&cuGraphGetNodes)>("cuGraphGetNodes")(outer, nodes, &n), CUDA_SUCCESS);
  ASSERT_EQ(n, 2u);
  CUgraphNodeType type;
  ASSERT_EQ(get<decltype(&cuGraphNodeGetType)>("cuGraphNodeGetType")(nodes[0], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_GRAPH);
  ASSERT_EQ(instantiate(&outer_exec, outer, 0), CUDA_SUCCESS);
  uint64_t before = graphKernelNodes();
  ASSERT_EQ(get<decltype(&cuGraphLaunch)>("cuGraphLaunch")(outer_exec, s2_), CUDA_SUCCESS);
  expectY(3.0f);
  EXPECT_EQ(graphKernelNodes() - before, 2u);
  get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(inner_exec);
  get<decltype(&cuGraphExecDestroy)>("cuGraphExecDestroy")(outer_exec);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(inner);
  get<decltype(&cuGraphDestroy)>("cuGraphDestroy")(outer);
}

}  // namespace
