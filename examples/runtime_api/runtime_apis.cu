// The runtime calls around kernels that programs use besides cudaMalloc/cudaMemcpy: pitched 2D memory
// (cudaMallocPitch, cudaMemset2D, cudaMemcpy2D), pointer attributes, mapped pinned memory, stream-ordered
// allocation and memory pools, stream callbacks, function attributes, occupancy, error strings and device reset.
#include <cstdint>
#include <cstring>

#include "common.h"

__global__ void add_rows(float* m, size_t pitch, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) reinterpret_cast<float*>(reinterpret_cast<char*>(m) + y * pitch)[x] += float(y);
}

void CUDART_CB onDone(cudaStream_t, cudaError_t status, void* user) {
  *static_cast<int*>(user) = status == cudaSuccess ? 1 : -1;
}

int main() {
  example::printDevice();
  size_t bad = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) std::fprintf(stderr, "runtime_apis: %s failed\n", what), ++bad;
  };
  // Pitched memory: memset every byte to 0, copy a host matrix into it, add the row index, copy back.
  const int w = 100, h = 20;
  float* m = nullptr;
  size_t pitch = 0;
  CUDA_CHECK(cudaMallocPitch(&m, &pitch, w * sizeof(float), h));
  expect(pitch >= w * sizeof(float), "pitch");
  CUDA_CHECK(cudaMemset2D(m, pitch, 0, w * sizeof(float), h));
  std::vector<float> hm(w * h), want(w * h);
  for (int i = 0; i < w * h; ++i) hm[i] = float(i % 7), want[i] = float(i % 7) + float(i / w);
  CUDA_CHECK(cudaMemcpy2D(m, pitch, hm.data(), w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice));
  add_rows<<<dim3(example::blocksFor(w, 64), h), 64>>>(m, pitch, w, h);
  CUDA_CHECK_LAUNCH();
  std::vector<float> got(w * h);
  CUDA_CHECK(cudaMemcpy2D(got.data(), w * sizeof(float), m, pitch, w * sizeof(float), h, cudaMemcpyDeviceToHost));
  bad += example::compare("pitched", got, want);
  // Pointer attributes: device, pinned host and plain host memory.
  cudaPointerAttributes a{};
  CUDA_CHECK(cudaPointerGetAttributes(&a, m));
  expect(a.type == cudaMemoryTypeDevice && a.devicePointer == m, "device pointer attributes");
  float* pinned = nullptr;
  CUDA_CHECK(cudaHostAlloc(&pinned, 64 * sizeof(float), cudaHostAllocMapped));
  CUDA_CHECK(cudaPointerGetAttributes(&a, pinned));
  expect(a.type == cudaMemoryTypeHost && a.hostPointer == pinned, "pinned pointer attributes");
  float* mapped = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&mapped, pinned, 0));
  expect(mapped == pinned, "mapped pointer");
  std::vector<float> plain(4);
  CUDA_CHECK(cudaPointerGetAttributes(&a, plain.data()));
  expect(a.type == cudaMemoryTypeUnregistered, "host pointer attributes");
  // Stream-ordered allocation, a peer copy (one device) and a callback after the work.
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  float* tmp = nullptr;
  CUDA_CHECK(cudaMallocAsync(&tmp, w * sizeof(float), s));
  CUDA_CHECK(cudaMemcpyPeerAsync(tmp, 0, m, 0, w * sizeof(float), s));
  CUDA_CHECK(cudaMemcpyAsync(pinned, tmp, 64 * sizeof(float), cudaMemcpyDeviceToHost, s));
  int done = 0;
  CUDA_CHECK(cudaStreamAddCallback(s, onDone, &done, 0));
  CUDA_CHECK(cudaFreeAsync(tmp, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  expect(done == 1, "stream callback");
  expect(std::memcmp(pinned, want.data(), 64 * sizeof(float)) == 0, "peer copy");
  // Memory pools: the default pool's release threshold and usage, a pool of the program's own.
  cudaMemPool_t pool = nullptr, mine = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t threshold = UINT64_MAX, used = 1;
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  CUDA_CHECK(cudaMallocAsync(&tmp, 4096, s));
  CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  expect(used >= 4096, "default pool usage");
  CUDA_CHECK(cudaFreeAsync(tmp, s));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  CUDA_CHECK(cudaMemPoolCreate(&mine, &props));
  CUDA_CHECK(cudaMallocFromPoolAsync(&tmp, 256, mine, s));
  CUDA_CHECK(cudaMemsetAsync(tmp, 0, 256, s));
  CUDA_CHECK(cudaFreeAsync(tmp, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaMemPoolGetAttribute(mine, cudaMemPoolAttrUsedMemCurrent, &used));
  expect(used == 0, "own pool usage after free");
  CUDA_CHECK(cudaMemPoolTrimTo(mine, 0));
  CUDA_CHECK(cudaMemPoolDestroy(mine));
  // Function attributes and occupancy.
  cudaFuncAttributes fa{};
  CUDA_CHECK(cudaFuncGetAttributes(&fa, add_rows));
  expect(fa.maxThreadsPerBlock >= 64, "function attributes");
  int blocks = 0, min_grid = 0, block = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, add_rows, 256, 0));
  expect(blocks >= 1, "occupancy");
  CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, add_rows));
  expect(block >= 32 && min_grid >= 1, "potential block size");
  // Errors: an invalid argument is reported, named and cleared.
  cudaError_t e = cudaMemcpy(nullptr, m, 4, cudaMemcpyKind(99));
  expect(e != cudaSuccess && std::strlen(cudaGetErrorString(e)) > 0, "invalid memcpy kind");
  cudaGetLastError();
  CUDA_CHECK(cudaFreeHost(pinned));
  CUDA_CHECK(cudaFree(m));
  CUDA_CHECK(cudaStreamDestroy(s));
  CUDA_CHECK(cudaDeviceReset());
  // The runtime re-initialises after a reset.
  float* again = nullptr;
  CUDA_CHECK(cudaMalloc(&again, 16));
  CUDA_CHECK(cudaFree(again));
  return example::finish("runtime_apis", bad, example::checksum(got));
}
