// 4 host threads, each with its own stream, launch a real `fill` kernel 100 times each (kernel argument `v` = the
// thread index). Runs on the emulator's stand-in driver (or a GPU); the collector must record every launch once.
#include <cuda.h>

#include <cstdio>
#include <thread>
#include <vector>

static const char kPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry fill(.param .u64 p_out, .param .u32 p_n, .param .f32 p_v)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [p_out];
  ld.param.u32 %r1, [p_n];
  ld.param.f32 %f1, [p_v];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.f32 [%rd4], %f1;
DONE:
  ret;
}
)";

int main() {
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  CUdevice dev;
  CUcontext ctx;
  if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) return 1;
  if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 1;
  CUmodule mod;
  CUfunction fill;
  if (cuModuleLoadData(&mod, kPtx) != CUDA_SUCCESS) return 1;
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
