// Copies and sets: cuMemcpy* (linear, 2D, peer) and cuMemset* (linear, 2D) between device and host memory, with
// their per-thread-default-stream ABI names. While a capture is in progress the asynchronous ones on a capturing
// stream become memcpy and memset nodes, and the synchronous ones are "potentially unsafe" calls.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "driver_graph.h"
#include "driver_state.h"

using kfuse::standin::captureNode;
using kfuse::standin::capturesActive;
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

// A synchronous copy or set: refused while the calling thread's capture mode prohibits unsafe calls, or while a
// blocking stream captures (it runs on the legacy stream).
CUresult syncCall() {
  if (!capturesActive()) return CUDA_SUCCESS;
  if (CUresult r = kfuse::standin::checkUnsafeCall(); r != CUDA_SUCCESS) return r;
  return kfuse::standin::refuseOnCapturingStream(nullptr);
}

// An asynchronous operation on `s`: *taken when it became a node of a capture (or was refused by one).
CUresult captured(CUstream s, std::unique_ptr<CUgraphNode_st> node, bool* taken) {
  *taken = false;
  if (!capturesActive()) return CUDA_SUCCESS;
  return captureNode(s, std::move(node), taken);
}

uint64_t base3d(CUmemorytype type, const void* host, CUdeviceptr device) {
  return type == CU_MEMORYTYPE_HOST ? reinterpret_cast<uint64_t>(host) : uint64_t(device);
}

CUDA_MEMCPY3D from2d(const CUDA_MEMCPY2D& c) {
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = c.srcXInBytes, d.srcY = c.srcY, d.srcMemoryType = c.srcMemoryType, d.srcHost = c.srcHost;
  d.srcDevice = c.srcDevice, d.srcArray = c.srcArray, d.srcPitch = c.srcPitch, d.srcHeight = c.Height;
  d.dstXInBytes = c.dstXInBytes, d.dstY = c.dstY, d.dstMemoryType = c.dstMemoryType, d.dstHost = c.dstHost;
  d.dstDevice = c.dstDevice, d.dstArray = c.dstArray, d.dstPitch = c.dstPitch, d.dstHeight = c.Height;
  d.WidthInBytes = c.WidthInBytes, d.Height = c.Height, d.Depth = 1;
  return d;
}

CUresult htod(CUdeviceptr dst, const void* src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyToDevice(dst, src, n));
}
CUresult dtoh(void* dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyToHost(dst, src, n));
}
CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return fromStatus(dev()->memory().copyDeviceToDevice(dst, src, n));
}
CUresult anyCopy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  return copyAny(dst, src, n);
}
CUresult setLinear(CUdeviceptr dst, unsigned v, unsigned size, size_t n) {
  KF_REQUIRE_CTX();
  return fromStatus(dev()->memory().fill(dst, v, size, n));
}
CUresult asyncCopy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  KF_REQUIRE_CTX();
  bool taken = false;
  if (CUresult r = captured(s, kfuse::standin::makeCopyNode(dst, src, n), &taken); taken || r != CUDA_SUCCESS) return r;
  return anyCopy(dst, src, n);
}
CUresult asyncSet(CUdeviceptr dst, unsigned v, unsigned size, size_t n, CUstream s) {
  KF_REQUIRE_CTX();
  bool taken = false;
  if (CUresult r = captured(s, kfuse::standin::makeSetNode(dst, n * size, v, size, n, 1), &taken);
      taken || r != CUDA_SUCCESS)
    return r;
  return setLinear(dst, v, size, n);
}

}  // namespace

namespace kfuse::standin {

CUresult copy3d(const CUDA_MEMCPY3D& c) {
  KF_REQUIRE_CTX();
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  if (c.srcMemoryType == CU_MEMORYTYPE_ARRAY || c.dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return notSupported("copies with CUDA arrays");
  size_t src_pitch = c.srcPitch ? c.srcPitch : c.WidthInBytes, dst_pitch = c.dstPitch ? c.dstPitch : c.WidthInBytes;
  size_t src_slice = src_pitch * (c.srcHeight ? c.srcHeight : c.Height);
  size_t dst_slice = dst_pitch * (c.dstHeight ? c.dstHeight : c.Height);
  uint64_t src =
      base3d(c.srcMemoryType, c.srcHost, c.srcDevice) + c.srcZ * src_slice + c.srcY * src_pitch + c.srcXInBytes;
  uint64_t dst =
      base3d(c.dstMemoryType, c.dstHost, c.dstDevice) + c.dstZ * dst_slice + c.dstY * dst_pitch + c.dstXInBytes;
  for (size_t z = 0; z < std::max<size_t>(c.Depth, 1); ++z)
    for (size_t y = 0; y < std::max<size_t>(c.Height, 1); ++y)
      if (CUresult r =
              copyAny(dst + z * dst_slice + y * dst_pitch, src + z * src_slice + y * src_pitch, c.WidthInBytes);
          r != CUDA_SUCCESS)
        return r;
  return CUDA_SUCCESS;
}

}  // namespace kfuse::standin

extern "C" {

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return htod(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return dtoh(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return dtod(dst, src, n);
}
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return anyCopy(dst, src, n);
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return asyncCopy(dst, reinterpret_cast<CUdeviceptr>(src), n, s);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return asyncCopy(reinterpret_cast<CUdeviceptr>(dst), src, n, s);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return asyncCopy(dst, src, n, s);
}
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return asyncCopy(dst, src, n, s);
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return setLinear(dst, v, 1, n);
}
CUresult CUDAAPI cuMemsetD16(CUdeviceptr dst, unsigned short v, size_t n) {
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return setLinear(dst, v, 2, n);
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n) {
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return setLinear(dst, v, 4, n);
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  return asyncSet(dst, v, 1, n, s);
}
CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s) {
  return asyncSet(dst, v, 2, n, s);
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
  return asyncSet(dst, v, 4, n, s);
}

// 2D copies (cudaMemcpy2D, cudaMemcpy2DAsync, cudaMemcpyToArray's linear cases): row by row. Arrays are not
// supported.
CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D* c) {
  KF_REQUIRE_CTX();
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return notSupported("cuMemcpy2D with CUDA arrays");
  if (CUresult r = syncCall(); r != CUDA_SUCCESS) return r;
  return kfuse::standin::copy3d(from2d(*c));
}
CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D* c) {
  return cuMemcpy2DUnaligned(c);
}
CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D* c, CUstream s) {
  KF_REQUIRE_CTX();
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return notSupported("cuMemcpy2D with CUDA arrays");
  bool taken = false;
  if (CUresult r = captured(s, kfuse::standin::makeCopyNode(from2d(*c)), &taken); taken || r != CUDA_SUCCESS) return r;
  return kfuse::standin::copy3d(from2d(*c));
}

// 2D memsets (cudaMemset2D): row by row.
extern "C++" {
template <class T>
static CUresult memset2d(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height, CUstream s, bool async) {
  KF_REQUIRE_CTX();
  bool taken = false;
  if (CUresult r = async ? captured(s, kfuse::standin::makeSetNode(dst, pitch, value, sizeof(T), width, height), &taken)
                         : syncCall();
      taken || r != CUDA_SUCCESS)
    return r;
  std::vector<T> row(width, value);
  for (size_t y = 0; y < height; ++y)
    if (CUresult r = copyAny(dst + y * pitch, reinterpret_cast<uint64_t>(row.data()), width * sizeof(T));
        r != CUDA_SUCCESS)
      return r;
  return CUDA_SUCCESS;
}
}  // extern "C++"
CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) {
  return memset2d<uint8_t>(d, pitch, v, w, h, nullptr, /*async=*/false);
}
CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  return memset2d<uint16_t>(d, pitch, v, w, h, nullptr, /*async=*/false);
}
CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h) {
  return memset2d<uint32_t>(d, pitch, v, w, h, nullptr, /*async=*/false);
}
CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  return memset2d<uint8_t>(d, pitch, v, w, h, s, /*async=*/true);
}
CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  return memset2d<uint16_t>(d, pitch, v, w, h, s, /*async=*/true);
}
CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) {
  return memset2d<uint32_t>(d, pitch, v, w, h, s, /*async=*/true);
}
// One device: peer copies are ordinary copies.
CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n) {
  (void)dc;
  (void)sc;
  return cuMemcpy(dst, src, n);
}
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream s) {
  (void)dc;
  (void)sc;
  return cuMemcpyAsync(dst, src, n, s);
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
