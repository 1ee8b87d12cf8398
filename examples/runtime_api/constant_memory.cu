// __constant__ coefficients and a __device__ counter set with cudaMemcpyToSymbol and read back with
// cudaMemcpyFromSymbol; the kernel also uses warpSize (PTX's WARP_SZ).
#include "common.h"

__constant__ float kCoef[8];
__device__ unsigned long long g_evaluated;

__global__ void polynomial(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], acc = 0.f;
  for (int k = 7; k >= 0; --k) acc = acc * v + kCoef[k];
  y[i] = acc + float(threadIdx.x % warpSize == 0);
  atomicAdd(&g_evaluated, 1ull);
}

int main() {
  example::printDevice();
  const int n = 5000;
  const float coef[8] = {1.0f, -0.5f, 0.25f, 0.125f, -0.0625f, 0.03125f, 0.0f, 0.5f};
  CUDA_CHECK(cudaMemcpyToSymbol(kCoef, coef, sizeof coef));
  unsigned long long zero = 0, evaluated = 0;
  CUDA_CHECK(cudaMemcpyToSymbol(g_evaluated, &zero, sizeof zero));
  float back[8] = {};
  CUDA_CHECK(cudaMemcpyFromSymbol(back, kCoef, sizeof back));
  std::vector<float> x(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 17) / 8.0f - 1.0f;
    float acc = 0.f;
    for (int k = 7; k >= 0; --k) acc = acc * x[i] + coef[k];
    want[i] = acc + float((i % 128) % 32 == 0);
  }
  float *dx = example::upload(x), *dy = example::alloc<float>(n);
  polynomial<<<example::blocksFor(n, 128), 128>>>(dx, dy, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpyFromSymbol(&evaluated, g_evaluated, sizeof evaluated));
  auto got = example::download(dy, n);
  size_t bad = example::compare("y", got, want);
  for (int k = 0; k < 8; ++k) bad += back[k] != coef[k];
  if (evaluated != unsigned(n)) {
    std::fprintf(stderr, "counter: got %llu, want %d\n", evaluated, n);
    ++bad;
  }
  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  return example::finish("constant_memory", bad, example::checksum(got));
}
