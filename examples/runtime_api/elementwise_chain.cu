// out = relu(alpha * x + bias) * gate, as four launches on one stream, repeated a few times, timed with events:
// the runtime-API twin of examples/driver_api/elementwise_chain.
#include "../driver_api/elementwise_chain.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int n = 1 << 15, iterations = 3;
  const float alpha = 1.75f;
  std::vector<float> x(n), bias(n), gate(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float((i * 37) % 200 - 100) / 16.0f;
    bias[i] = float(i % 13) - 6.0f;
    gate[i] = float(i % 5) * 0.25f;
    float t = alpha * x[i];
    t = t + bias[i];
    t = t > 0.f ? t : 0.f;
    want[i] = t * gate[i];
  }
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *dx = example::upload(x), *db = example::upload(bias), *dg = example::upload(gate);
  float *t1 = example::alloc<float>(n), *t2 = example::alloc<float>(n), *t3 = example::alloc<float>(n),
        *out = example::alloc<float>(n);
  unsigned grid = example::blocksFor(n, 256);
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, stream));
  for (int it = 0; it < iterations; ++it) {
    scale<<<grid, 256, 0, stream>>>(dx, t1, alpha, n);
    add<<<grid, 256, 0, stream>>>(t1, db, t2, n);
    relu<<<grid, 256, 0, stream>>>(t2, t3, n);
    mul<<<grid, 256, 0, stream>>>(t3, dg, out, n);
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::printf("elementwise_chain: %d x 4 launches in %.3f ms\n", iterations, ms);
  auto got = example::download(out, n);
  size_t bad = example::compare("out", got, want);
  for (float* p : {dx, db, dg, t1, t2, t3, out}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return example::finish("elementwise_chain", bad, example::checksum(got));
}
