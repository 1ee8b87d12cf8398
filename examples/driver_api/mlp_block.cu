// A transformer-style MLP block: layernorm -> matmul -> bias add -> GELU -> matmul -> residual add.
#include "layernorm.cuh"

// c[m][n] = sum_k a[m][k] * w[k][n]
extern "C" __global__ void matmul(const float* a, const float* w, float* c, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc = fmaf(a[row * k + i], w[i * n + col], acc);
  c[row * n + col] = acc;
}

extern "C" __global__ void bias_add(float* c, const float* b, int m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m * n) c[i] += b[i % n];
}

extern "C" __global__ void gelu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

extern "C" __global__ void residual_add(float* x, const float* r, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += r[i];
}
