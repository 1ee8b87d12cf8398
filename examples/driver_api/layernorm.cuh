// One row per block: mean and variance by a shared-memory tree reduction (blockDim.x a power of two; dynamic shared
// memory of 2 * blockDim.x floats). Shared by the examples that normalise rows (mlp_block, residual_layernorm).
#pragma once

extern "C" __global__ void layernorm(const float* x, float* y, const float* gamma, const float* beta, int h) {
  extern __shared__ float red[];
  const float* row = x + blockIdx.x * h;
  float s = 0.f, s2 = 0.f;
  for (int i = threadIdx.x; i < h; i += blockDim.x) {
    float v = row[i];
    s += v;
    s2 += v * v;
  }
  red[threadIdx.x] = s;
  red[blockDim.x + threadIdx.x] = s2;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      red[threadIdx.x] += red[threadIdx.x + k];
      red[blockDim.x + threadIdx.x] += red[blockDim.x + threadIdx.x + k];
    }
    __syncthreads();
  }
  float mean = red[0] / h;
  float var = red[blockDim.x] / h - mean * mean;
  float inv = rsqrtf(var + 1e-5f);
  for (int i = threadIdx.x; i < h; i += blockDim.x) y[blockIdx.x * h + i] = (row[i] - mean) * inv * gamma[i] + beta[i];
}
