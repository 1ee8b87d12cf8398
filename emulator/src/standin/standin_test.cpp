// Tests of the stand-in libcuda.so.1, loaded with dlopen the way cudart does (everything through
// cuGetProcAddress_v2), so the test neither links a driver nor depends on LD_LIBRARY_PATH.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kfuse/emulator/standin.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class StandinTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(KFUSE_BINARY_DIR "/standin/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) return;
    get_proc_ = reinterpret_cast<decltype(&cuGetProcAddress)>(dlsym(handle_, "cuGetProcAddress_v2"));
  }
  template <class F>
  F get(const char* name, int version = 13000, cuuint64_t flags = 0) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status;
    EXPECT_EQ(get_proc_(name, &fn, version, flags, &status), CUDA_SUCCESS) << name;
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << name;
    return reinterpret_cast<F>(fn);
  }
  void SetUp() override {
    ASSERT_NE(handle_, nullptr) << dlerror();
    ASSERT_NE(get_proc_, nullptr);
    ASSERT_EQ(get<decltype(&cuInit)>("cuInit")(0), CUDA_SUCCESS);
    CUcontext ctx;
    ASSERT_EQ(get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&ctx, 0), CUDA_SUCCESS);
    ASSERT_EQ(get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx), CUDA_SUCCESS);
  }
  static void* handle_;
  static decltype(&cuGetProcAddress) get_proc_;
};
void* StandinTest::handle_ = nullptr;
decltype(&cuGetProcAddress) StandinTest::get_proc_ = nullptr;

TEST_F(StandinTest, ExportsOnlyDriverSymbols) {
  EXPECT_NE(dlsym(handle_, "cuMemAlloc_v2"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuCtxCreate_v4"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuGetProcAddress"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuLaunchKernelEx"), nullptr);
  EXPECT_EQ(dlsym(handle_, "_ZN5kfuse8emulator6Device6launchERKNS0_6KernelERKNS0_12LaunchConfigESt4spanIKhLm18446744073709551615EEPNS0_14LaunchCountersE"),
            nullptr);
}

TEST_F(StandinTest, ReportsAComputeCapability90DeviceThatIsNotAGpu) {
  char name[256];
  ASSERT_EQ(get<decltype(&cuDeviceGetName)>("cuDeviceGetName")(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_NE(std::string(name).find("not a GPU"), std::string::npos);
  int major = 0, minor = 1, version = 0;
  auto attr = get<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute");
  ASSERT_EQ(attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
  ASSERT_EQ(attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0), CUDA_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(minor, 0);
  ASSERT_EQ(get<decltype(&cuDriverGetVersion)>("cuDriverGetVersion")(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  const char* s = nullptr;
  ASSERT_EQ(get<decltype(&cuGetErrorName)>("cuGetErrorName")(CUDA_ERROR_ILLEGAL_ADDRESS, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST_F(StandinTest, GetProcAddressVersionsAndUnsupportedStubs) {
  void* legacy = nullptr;
  void* v2 = nullptr;
  ASSERT_EQ(get_proc_("cuGetProcAddress", &legacy, 11030, 0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(get_proc_("cuGetProcAddress", &v2, 12000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_NE(legacy, v2);
  EXPECT_EQ(v2, dlsym(handle_, "cuGetProcAddress_v2"));
  void* ptsz = get<void*>("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  EXPECT_NE(ptsz, nullptr);
  // Something the emulator does not implement: a stub that returns CUDA_ERROR_NOT_SUPPORTED.
  auto graph = get<CUresult (*)(CUgraph*, unsigned)>("cuGraphCreate");
  ASSERT_NE(graph, nullptr);
  CUgraph g;
  EXPECT_EQ(graph(&g, 0), CUDA_ERROR_NOT_SUPPORTED);
  // Programs that link an unsupported entry point directly still load; the call fails the same way.
  auto direct = reinterpret_cast<CUresult (*)(CUgraph*, unsigned)>(dlsym(handle_, "cuGraphCreate"));
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(direct(&g, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_NE(dlsym(handle_, "cuEventElapsedTime"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuTexObjectCreate"), nullptr);
}

TEST_F(StandinTest, ExplicitContextsStackPerThread) {
  CUcontext primary = nullptr, created = nullptr, cur = nullptr, popped = nullptr;
  auto get_current = get<decltype(&cuCtxGetCurrent)>("cuCtxGetCurrent");
  ASSERT_EQ(get_current(&primary), CUDA_SUCCESS);
  ASSERT_NE(primary, nullptr);
  ASSERT_EQ(get<decltype(&cuCtxCreate)>("cuCtxCreate")(&created, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(get_current(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, created);
  ASSERT_EQ(get<decltype(&cuCtxPopCurrent)>("cuCtxPopCurrent")(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, created);
  ASSERT_EQ(get_current(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, primary);
  ASSERT_EQ(get<decltype(&cuCtxDestroy)>("cuCtxDestroy")(created), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuCtxDestroy)>("cuCtxDestroy")(created), CUDA_ERROR_INVALID_CONTEXT);
  CUdeviceptr p;
  EXPECT_EQ(get<decltype(&cuMemAlloc)>("cuMemAlloc")(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(StandinTest, RunsKernelsFromPtxAndFatbinsAndReportsFaults) {
  std::string ptx = readFile(KFUSE_EMU_TEST_PTX);
  ASSERT_FALSE(ptx.empty());
  CUmodule mod;
  ASSERT_EQ(get<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&mod, ptx.c_str()), CUDA_SUCCESS);
  CUfunction vadd;
  ASSERT_EQ(get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction")(&vadd, mod, "vadd"), CUDA_SUCCESS);
  const char* fname = nullptr;
  ASSERT_EQ(get<decltype(&cuFuncGetName)>("cuFuncGetName")(&fname, vadd), CUDA_SUCCESS);
  EXPECT_STREQ(fname, "vadd");
  size_t off = 0, size = 0;
  ASSERT_EQ(get<decltype(&cuFuncGetParamInfo)>("cuFuncGetParamInfo")(vadd, 3, &off, &size), CUDA_SUCCESS);
  EXPECT_EQ(off, 24u);
  EXPECT_EQ(size, 4u);

  auto alloc = get<decltype(&cuMemAlloc)>("cuMemAlloc");
  auto htod = get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD");
  auto dtoh = get<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH");
  const int n = 300;
  std::vector<float> a(n, 1.5f), b(n), c(n);
  for (int i = 0; i < n; ++i) b[i] = float(i);
  CUdeviceptr da, db, dc;
  ASSERT_EQ(alloc(&da, n * 4), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&db, n * 4), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&dc, n * 4), CUDA_SUCCESS);
  ASSERT_EQ(htod(da, a.data(), n * 4), CUDA_SUCCESS);
  ASSERT_EQ(htod(db, b.data(), n * 4), CUDA_SUCCESS);
  int nn = n;
  void* args[] = {&da, &db, &dc, &nn};
  CUlaunchConfig cfg{};
  cfg.gridDimX = 3, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 128, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  CUevent e0, e1;
  auto ev_create = get<decltype(&cuEventCreate)>("cuEventCreate");
  auto ev_record = get<decltype(&cuEventRecord)>("cuEventRecord");
  ASSERT_EQ(ev_create(&e0, 0), CUDA_SUCCESS);
  ASSERT_EQ(ev_create(&e1, 0), CUDA_SUCCESS);
  ASSERT_EQ(ev_record(e0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuLaunchKernelEx)>("cuLaunchKernelEx")(&cfg, vadd, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(ev_record(e1, nullptr), CUDA_SUCCESS);
  float ms = -1;
  ASSERT_EQ(get<decltype(&cuEventElapsedTime)>("cuEventElapsedTime")(&ms, e0, e1), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  ASSERT_EQ(dtoh(c.data(), dc, n * 4), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], 1.5f + float(i));

  // The counter API reports the launch.
  auto count = reinterpret_cast<uint64_t (*)()>(dlsym(handle_, "cuKfuseEmuLaunchCount"));
  auto launch_info = reinterpret_cast<int (*)(uint64_t, KfuseEmuLaunchCounters*)>(dlsym(handle_, "cuKfuseEmuGetLaunch"));
  ASSERT_NE(count, nullptr);
  ASSERT_NE(launch_info, nullptr);
  EXPECT_GE(count(), 1u);
  KfuseEmuLaunchCounters lc{};
  lc.struct_size = sizeof lc;
  ASSERT_EQ(launch_info(0, &lc), 0);
  EXPECT_STREQ(lc.kernel, "vadd");
  EXPECT_EQ(lc.global_store_bytes, uint64_t(4 * n));
  EXPECT_EQ(lc.flops_f32, uint64_t(n));
  // The calling thread's last launch is that one; a thread that launched nothing has none.
  auto thread_last = reinterpret_cast<uint64_t (*)()>(dlsym(handle_, "cuKfuseEmuThreadLastLaunch"));
  ASSERT_NE(thread_last, nullptr);
  EXPECT_EQ(thread_last(), lc.sequence);
  uint64_t other_thread_last = 99;
  std::thread([&] { other_thread_last = thread_last(); }).join();
  EXPECT_EQ(other_thread_last, 0u);

  // A fatbin holding compute_90 PTX, through the library API (what cudart 12+/13 uses).
  std::string fatbin = readFile(KFUSE_EMU_TEST_FATBIN);
  ASSERT_FALSE(fatbin.empty());
  CUlibrary lib;
  ASSERT_EQ(get<decltype(&cuLibraryLoadData)>("cuLibraryLoadData")(&lib, fatbin.data(), nullptr, nullptr, 0, nullptr,
                                                                   nullptr, 0),
            CUDA_SUCCESS);
  CUkernel k;
  ASSERT_EQ(get<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel")(&k, lib, "vadd"), CUDA_SUCCESS);
  CUfunction kf;
  ASSERT_EQ(get<decltype(&cuKernelGetFunction)>("cuKernelGetFunction")(&kf, k), CUDA_SUCCESS);
  auto launchk = get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  ASSERT_EQ(launchk(kf, 3, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);

  // An out-of-bounds store fails the launch with CUDA_ERROR_ILLEGAL_ADDRESS and poisons the context.
  CUfunction oob;
  ASSERT_EQ(get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction")(&oob, mod, "oob"), CUDA_SUCCESS);
  void* oargs[] = {&dc, &nn};
  EXPECT_EQ(launchk(oob, 1, 1, 1, 32, 1, 1, 0, nullptr, oargs, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize")(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(get<decltype(&cuDevicePrimaryCtxReset)>("cuDevicePrimaryCtxReset")(0), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize")(), CUDA_SUCCESS);
}

}  // namespace
