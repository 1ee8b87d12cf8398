// The kernels of the two-translation-unit example (compiled separately, -rdc off: each unit has its own fatbin).
#include "two_units.h"

__global__ void scale_kernel(float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

cudaError_t launchScale(float* x, float s, int n, cudaStream_t stream) {
  scale_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, s, n);
  return cudaGetLastError();
}
