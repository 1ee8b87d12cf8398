// NVTX ranges of every kind around real launches of a `fill` kernel (driver API; the emulator's stand-in or a GPU).
// The collector, as the NVTX tool, must record: a range opened before the driver was first touched and closed
// after ("setup"); a registered-string range in a named domain ("step" in "kfuse.test") with a default-domain range
// nested inside it ("inner"); a wide-character range ("wide"); a start/end range ended on another thread ("async");
// and not record a range that ends before the driver was touched ("before_cuda") nor one never closed ("open").
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <thread>

#include "fill_ptx.h"

static int launch(CUfunction fill, CUdeviceptr out, int n, float v) {
  void* params[] = {&out, &n, &v};
  return cuLaunchKernel(fill, n / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS ? 0 : 1;
}

int main() {
  nvtxRangePushA("before_cuda");
  nvtxRangePop();

  nvtxRangePushA("setup");
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  CUdevice dev;
  CUcontext ctx;
  if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) return 1;
  if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 1;
  CUmodule mod;
  CUfunction fill;
  if (cuModuleLoadData(&mod, kFillPtx) != CUDA_SUCCESS) return 1;
  if (cuModuleGetFunction(&fill, mod, "fill") != CUDA_SUCCESS) return 1;
  constexpr int kN = 1024;
  CUdeviceptr buffer;
  if (cuMemAlloc(&buffer, kN * sizeof(float)) != CUDA_SUCCESS) return 1;
  nvtxRangePop();  // setup

  int failed = 0;
  const nvtxRangeId_t async = nvtxRangeStartA("async");
  nvtxDomainHandle_t domain = nvtxDomainCreateA("kfuse.test");
  nvtxEventAttributes_t step{};
  step.version = NVTX_VERSION;
  step.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  step.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  step.message.registered = nvtxDomainRegisterStringA(domain, "step");
  nvtxDomainRangePushEx(domain, &step);
  failed += launch(fill, buffer, kN, 1.0f);
  nvtxRangePushA("inner");
  failed += launch(fill, buffer, kN, 2.0f);
  nvtxRangePop();  // inner
  nvtxDomainRangePop(domain);

  nvtxRangePushW(L"wide");
  failed += launch(fill, buffer, kN, 3.0f);
  nvtxRangePop();
  std::thread([async] { nvtxRangeEnd(async); }).join();

  float host[kN];
  if (cuMemcpyDtoH(host, buffer, sizeof host) != CUDA_SUCCESS || host[kN - 1] != 3.0f) ++failed;
  cuMemFree(buffer);
  nvtxRangePushA("open");
  std::printf("nvtx_ranges: %s\n", failed ? "FAILED" : "PASSED");
  return failed ? 1 : 0;
}
