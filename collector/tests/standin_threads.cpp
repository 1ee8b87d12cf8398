// 4 host threads, each with its own stream, launch a real `fill` kernel 100 times each (kernel argument `v` = the
// thread index). Runs on the emulator's stand-in driver (or a GPU); the collector must record every launch once.
#include <cuda.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "fill_ptx.h"

int main() {
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  CUdevice dev;
  CUcontext ctx;
  if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) return 1;
  if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 1;
  CUmodule mod;
  CUfunction fill;
  if (cuModuleLoadData(&mod, kFillPtx) != CUDA_SUCCESS) return 1;
  if (cuModuleGetFunction(&fill, mod, "fill") != CUDA_SUCCESS) return 1;
  constexpr int kThreads = 4, kLaunches = 100, kN = 1024;
  std::vector<CUdeviceptr> buffers(kThreads);
  for (auto& b : buffers) {
    if (cuMemAlloc(&b, kN * sizeof(float)) != CUDA_SUCCESS) return 1;
  }
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) ++failures[t];
      CUstream s;
      if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) ++failures[t];
      for (int i = 0; i < kLaunches; ++i) {
        CUdeviceptr p = buffers[t];
        int n = kN;
        float v = static_cast<float>(t);
        void* params[] = {&p, &n, &v};
        if (cuLaunchKernel(fill, kN / 128, 1, 1, 128, 1, 1, 0, s, params, nullptr) != CUDA_SUCCESS) ++failures[t];
      }
      if (cuStreamSynchronize(s) != CUDA_SUCCESS) ++failures[t];
      cuStreamDestroy(s);
    });
  }
  for (auto& th : threads) th.join();
  int failed = 0;
  for (int t = 0; t < kThreads; ++t) {
    std::vector<float> host(kN);
    if (cuMemcpyDtoH(host.data(), buffers[t], kN * sizeof(float)) != CUDA_SUCCESS) ++failed;
    if (host[0] != static_cast<float>(t) || host[kN - 1] != static_cast<float>(t)) ++failed;
    failed += failures[t];
    cuMemFree(buffers[t]);
  }
  std::printf("standin_threads: %s\n", failed ? "FAILED" : "PASSED");
  return failed ? 1 : 0;
}
