// A transformer block's "x += f(x); y = layernorm(x)" step, twice: once with a residual add that works one row per
// block, as layernorm does (fusable per block: block b adds and then normalises row b), and once with a grid-stride
// residual add, whose blocks each touch pieces of many rows (not fusable per block: row b is finished only when
// several blocks are done).
extern "C" __global__ void residual_add_rows(float* x, const float* r, int h) {
  float* xr = x + blockIdx.x * h;
  const float* rr = r + blockIdx.x * h;
  for (int j = threadIdx.x; j < h; j += blockDim.x) xr[j] += rr[j];
}

extern "C" __global__ void residual_add_strided(float* x, const float* r, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] += r[i];
}

#include "layernorm.cuh"

// A block reduction feeding a row-wise consumer: row_rms puts row b's root mean square in rms[b] (thread 0 writes
// after the tree reduction); scale_rows divides row b by rms[b] (block-level fusable: block b needs only what block
// b reduced); scale_by_max divides every row by the largest rms (not fusable per block: each block needs every
// block's result). blockDim.x is 128.
extern "C" __global__ void row_rms(const float* x, float* rms, int h) {
  __shared__ float red[128];
  float s = 0.f;
  for (int j = threadIdx.x; j < h; j += blockDim.x) {
    float v = x[blockIdx.x * h + j];
    s += v * v;
  }
  red[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) rms[blockIdx.x] = sqrtf(red[0] / h + 1e-6f);
}

extern "C" __global__ void scale_rows(const float* x, const float* rms, float* y, int h) {
  const float r = rms[blockIdx.x];
  for (int j = threadIdx.x; j < h; j += blockDim.x) y[blockIdx.x * h + j] = x[blockIdx.x * h + j] / r;
}

extern "C" __global__ void scale_by_max(const float* x, const float* rms, float* y, int h, int rows) {
  float m = 0.f;
  for (int r = 0; r < rows; ++r) m = fmaxf(m, rms[r]);
  for (int j = threadIdx.x; j < h; j += blockDim.x) y[blockIdx.x * h + j] = x[blockIdx.x * h + j] / m;
}
