// Copies and sets: cuMemcpy* (linear, 2D, peer) and cuMemset* (linear, 2D) between device and host memory, with
// their per-thread-default-stream ABI names.
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "driver_state.h"

using kfuse::standin::dev;
using kfuse::standin::fromStatus;
using kfuse::standin::notSupported;
using kfuse::standin::sticky;

namespace {

// Copies between host pointers and device addresses (unified addressing: anything that is not a live device
// allocation is a host pointer).
bool isDevice(uint64_t p) {
  return dev()->memory().rangeOf(p, nullptr, nullptr).ok();
}

CUresult copyAny(uint64_t dst, uint64_t src, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  bool dd = isDevice(dst), sd = isDevice(src);
  auto& m = dev()->memory();
  if (dd && sd) return fromStatus(m.copyDeviceToDevice(dst, src, n));
  if (dd) return fromStatus(m.copyToDevice(dst, reinterpret_cast<const void*>(src), n));
  if (sd) return fromStatus(m.copyToHost(reinterpret_cast<void*>(dst), src, n));
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyToDevice(dst, src, n));
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyToHost(dst, src, n));
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyDeviceToDevice(dst, src, n));
}
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return copyAny(dst, src, n);
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyHtoD(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyDtoH(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyDtoD(dst, src, n);
}
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpy(dst, src, n);
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  KF_REQUIRE_CTX();
  return fromStatus(dev()->memory().fill(dst, v, 1, n));
}
CUresult CUDAAPI cuMemsetD16(CUdeviceptr dst, unsigned short v, size_t n) {
  KF_REQUIRE_CTX();
  return fromStatus(dev()->memory().fill(dst, v, 2, n));
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n) {
  KF_REQUIRE_CTX();
  return fromStatus(dev()->memory().fill(dst, v, 4, n));
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  (void)s;
  return cuMemsetD8(dst, v, n);
}
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s) {
  (void)s;
  return cuMemsetD16(dst, v, n);
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
  (void)s;
  return cuMemsetD32(dst, v, n);
}

// 2D copies (cudaMemcpy2D, cudaMemcpy2DAsync, cudaMemcpyToArray's linear cases): row by row. Arrays are not
// supported.
static uint64_t memcpy2dBase(CUmemorytype type, const void* host, CUdeviceptr device) {
  return type == CU_MEMORYTYPE_HOST ? reinterpret_cast<uint64_t>(host) : uint64_t(device);
}
CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D* c) {
  KF_REQUIRE_CTX();
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return notSupported("cuMemcpy2D with CUDA arrays");
  uint64_t src = memcpy2dBase(c->srcMemoryType, c->srcHost, c->srcDevice) + c->srcY * c->srcPitch + c->srcXInBytes;
  uint64_t dst = memcpy2dBase(c->dstMemoryType, c->dstHost, c->dstDevice) + c->dstY * c->dstPitch + c->dstXInBytes;
  for (size_t row = 0; row < c->Height; ++row)
    if (CUresult r = copyAny(dst + row * c->dstPitch, src + row * c->srcPitch, c->WidthInBytes); r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D* c) {
  return cuMemcpy2DUnaligned(c);
}
CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D* c, CUstream s) {
  (void)s;
  return cuMemcpy2DUnaligned(c);
}

// 2D memsets (cudaMemset2D): row by row.
extern "C++" {
template <class T>
static CUresult memset2d(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height) {
  KF_REQUIRE_CTX();
  std::vector<T> row(width, value);
  for (size_t y = 0; y < height; ++y)
    if (CUresult r = copyAny(dst + y * pitch, reinterpret_cast<uint64_t>(row.data()), width * sizeof(T));
        r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}
}  // extern "C++"
CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) {
  return memset2d<uint8_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  return memset2d<uint16_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h) {
  return memset2d<uint32_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  (void)s;
  return memset2d<uint8_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  (void)s;
  return memset2d<uint16_t>(d, pitch, v, w, h);
}
CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) {
  (void)s;
  return memset2d<uint32_t>(d, pitch, v, w, h);
}
// One device: peer copies are ordinary copies.
CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
  (void)dc;
  (void)sc;
  return cuMemcpy(dst, src, n);
}
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyPeer(dst, dc, src, sc, n);
}

// Per-thread-default-stream entry points (programs built with CUDA_API_PER_THREAD_DEFAULT_STREAM): the same
// operations, since everything here is synchronous.
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void* s, size_t n) {
  return cuMemcpyHtoD(d, s, n);
}
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* d, CUdeviceptr s, size_t n) {
  return cuMemcpyDtoH(d, s, n);
}
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return cuMemcpyDtoD(d, s, n);
}
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return cuMemcpy(d, s, n);
}
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void* s, size_t n, CUstream st_) {
  return cuMemcpyHtoDAsync(d, s, n, st_);
}
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* d, CUdeviceptr s, size_t n, CUstream st_) {
  return cuMemcpyDtoHAsync(d, s, n, st_);
}
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st_) {
  return cuMemcpyAsync(d, s, n, st_);
}
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) {
  return cuMemsetD8(d, v, n);
}
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) {
  return cuMemsetD32(d, v, n);
}
CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return cuMemsetD8Async(d, v, n, s);
}
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  return cuMemsetD32Async(d, v, n, s);
}

}  // extern "C"
