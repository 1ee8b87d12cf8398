// A driver-API program for the collector's GPU tests (label `gpu`): loads a hand-written saxpy PTX, runs it 10
// times on a real GPU and checks the result. Exit code 0 when the numbers are right.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <vector>

static const char kPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry _Z5saxpyifPKfPf(.param .u32 p_n, .param .f32 p_a, .param .u64 p_x, .param .u64 p_y)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<8>;
  ld.param.u32 %r1, [p_n];
  ld.param.f32 %f1, [p_a];
  ld.param.u64 %rd1, [p_x];
  ld.param.u64 %rd2, [p_y];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.s32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f2, [%rd6];
  ld.global.f32 %f3, [%rd7];
  fma.rn.f32 %f4, %f1, %f2, %f3;
  st.global.f32 [%rd7], %f4;
DONE:
  ret;
}
)";

#define CHECK(x)                                                                    \
  do {                                                                              \
    CUresult r_ = (x);                                                              \
    if (r_ != CUDA_SUCCESS) {                                                       \
      std::fprintf(stderr, "gpu_saxpy: %s failed: %d\n", #x, static_cast<int>(r_)); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

int main() {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CHECK(cuModuleLoadData(&mod, kPtx));
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, mod, "_Z5saxpyifPKfPf"));
  int n = 1 << 20;
  std::vector<float> hx(n, 1.0f), hy(n, 2.0f);
  CUdeviceptr x, y;
  CHECK(cuMemAlloc(&x, n * sizeof(float)));
  CHECK(cuMemAlloc(&y, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(x, hx.data(), n * sizeof(float)));
  CHECK(cuMemcpyHtoD(y, hy.data(), n * sizeof(float)));
  float a = 0.5f;
  void* params[] = {&n, &a, &x, &y};
  for (int i = 0; i < 10; ++i)
    CHECK(cuLaunchKernel(saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(hy.data(), y, n * sizeof(float)));
  CHECK(cuMemFree(x));
  CHECK(cuMemFree(y));
  CHECK(cuModuleUnload(mod));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  const bool ok = std::fabs(hy[0] - 7.0f) < 1e-6f && std::fabs(hy[n - 1] - 7.0f) < 1e-6f;
  std::printf("gpu_saxpy: %s\n", ok ? "ok" : "wrong result");
  return ok ? 0 : 2;
}
