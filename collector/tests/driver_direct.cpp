// A pure driver-API program linked against libcuda.so.1 (the test fake): 4 threads, each with its own stream,
// launch `fill` 250 times each. With the collector preloaded every launch must be recorded exactly once.
#include <cuda.h>

#include <cstdio>
#include <thread>
#include <vector>

extern "C" int kfuse_test_fake_launches();

int main() {
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  static const char kPtx[] = ".version 9.0\n.target sm_90\n.address_size 64\n// fill\n";
  CUmodule mod;
  CUfunction fill;
  if (cuModuleLoadData(&mod, kPtx) != CUDA_SUCCESS) return 1;
  if (cuModuleGetFunction(&fill, mod, "_Z4fillPfif") != CUDA_SUCCESS) return 1;
  constexpr int kThreads = 4, kLaunches = 250;
  std::vector<CUdeviceptr> buffers(kThreads);
  for (auto& b : buffers) {
    if (cuMemAlloc(&b, 1 << 20) != CUDA_SUCCESS) return 1;
  }
  std::vector<std::thread> threads;
  int failures = 0;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CUstream s;
      if (cuStreamCreate(&s, 0) != CUDA_SUCCESS) ++failures;
      for (int i = 0; i < kLaunches; ++i) {
        CUdeviceptr p = buffers[t] + 4 * i;
        int n = 256;
        float v = static_cast<float>(t);
        void* params[] = {&p, &n, &v};
        if (cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, s, params, nullptr) != CUDA_SUCCESS) ++failures;
      }
      if (cuStreamSynchronize(s) != CUDA_SUCCESS) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  for (auto b : buffers) cuMemFree(b);
  std::printf("driver_direct: driver saw %d launches\n", kfuse_test_fake_launches());
  return failures ? 1 : 0;
}
