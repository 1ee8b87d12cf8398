// out = relu(a * x + b) * gate with grid-stride loops launched with <<<>>>: the runtime-API twin of
// examples/driver_api/gridstride.
#include "../driver_api/gridstride.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int n = 100003, iterations = 3;
  const unsigned blocks = 40, threads = 256;
  const float a = 0.75f, b = -1.5f;
  std::vector<float> x(n), gate(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float((i * 29) % 300 - 150) / 32.0f;
    gate[i] = float(i % 7) * 0.125f;
    const float v = a * x[i] + b;
    want[i] = (v > 0.f ? v : 0.f) * gate[i];
  }
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *dx = example::upload(x), *dg = example::upload(gate), *y = example::alloc<float>(n),
        *out = example::alloc<float>(n);
  for (int it = 0; it < iterations; ++it) {
    gs_axpb<<<blocks, threads, 0, stream>>>(dx, y, a, b, n);
    gs_relu_mul<<<blocks, threads, 0, stream>>>(y, dg, out, n);
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  auto got = example::download(out, n);
  size_t bad = example::compare("out", got, want);
  for (float* p : {dx, dg, y, out}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return example::finish("gridstride", bad, example::checksum(got));
}
