// fp16 / bf16 arithmetic.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

__global__ void half_axpy(__half a, const __half* x, __half* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __hfma(a, x[i], y[i]);
}

__global__ void half2_mul(const __half2* x, const __half2* y, __half2* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = __hmul2(x[i], y[i]);
}

__global__ void bf16_to_float(const __nv_bfloat16* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __bfloat162float(x[i]) * 0.5f;
}

int main() { return 0; }
