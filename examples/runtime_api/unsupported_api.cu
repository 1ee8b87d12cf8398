// Calls a runtime API the stand-in does not implement (CUDA arrays): the program must get a clear error, not a
// crash, and keep working afterwards. Prints "unsupported_api: PASSED" when the call failed cleanly (or, on a
// GPU, succeeded) and later work still runs.
#include <cstring>

#include "common.h"

__global__ void touch(int* x) { x[threadIdx.x] = int(threadIdx.x); }

int main() {
  example::printDevice();
  cudaArray_t array = nullptr;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaError_t e = cudaMallocArray(&array, &desc, 64, 64);
  std::printf("unsupported_api: cudaMallocArray -> %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
  if (e == cudaSuccess) CUDA_CHECK(cudaFreeArray(array));
  cudaGetLastError();  // clear it
  int* d = example::alloc<int>(32);
  touch<<<1, 32>>>(d);
  CUDA_CHECK_LAUNCH();
  auto got = example::download(d, 32);
  std::vector<int> want(32);
  for (int i = 0; i < 32; ++i) want[i] = i;
  CUDA_CHECK(cudaFree(d));
  return example::finish("unsupported_api", example::compare("x", got, want), example::checksum(got));
}
