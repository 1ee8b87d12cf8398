// Two translation units, each with its own kernels and fatbin: this one launches its own kernel and one from
// two_units_kernels.cu through a host function.
#include "common.h"
#include "two_units.h"

__global__ void offset_kernel(float* x, float o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += o;
}

int main() {
  example::printDevice();
  const int n = 10000;
  std::vector<float> h(n), want(n);
  for (int i = 0; i < n; ++i) h[i] = float(i % 31), want[i] = (float(i % 31) + 2.0f) * 3.0f;
  float* d = example::upload(h);
  offset_kernel<<<example::blocksFor(n, 256), 256>>>(d, 2.0f, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(launchScale(d, 3.0f, n, nullptr));
  auto got = example::download(d, n);
  CUDA_CHECK(cudaFree(d));
  return example::finish("two_units", example::compare("x", got, want), example::checksum(got));
}
