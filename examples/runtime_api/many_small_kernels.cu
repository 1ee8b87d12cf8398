// 32 small, independent kernels on separate buffers, spread over four streams: the runtime-API twin of
// examples/driver_api/many_small_kernels.
#include <cmath>

#include "../driver_api/many_small_kernels.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int kBuffers = 32, n = 1024;
  cudaStream_t streams[4];
  for (auto& st : streams) CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::vector<float*> xs(kBuffers), ys(kBuffers);
  std::vector<std::vector<float>> want(kBuffers, std::vector<float>(n));
  for (int b = 0; b < kBuffers; ++b) {
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = float((i * (b + 3)) % 101) / 7.0f - 5.0f;
    xs[b] = example::upload(x);
    ys[b] = example::alloc<float>(n);
    float a = 0.5f + b * 0.25f, c = float(b) - 10.0f;
    bool sq = b % 3 == 2;
    if (sq)
      square<<<example::blocksFor(n, 128), 128, 0, streams[b % 4]>>>(xs[b], ys[b], n);
    else
      axpb<<<example::blocksFor(n, 128), 128, 0, streams[b % 4]>>>(xs[b], ys[b], a, c, n);
    CUDA_CHECK_LAUNCH();
    for (int i = 0; i < n; ++i) want[b][i] = sq ? x[i] * x[i] : std::fma(a, x[i], c);
  }
  size_t bad = 0;
  double sum = 0;
  for (int b = 0; b < kBuffers; ++b) {
    CUDA_CHECK(cudaStreamSynchronize(streams[b % 4]));
    auto got = example::download(ys[b], n);
    bad += example::compare("y", got, want[b]);
    sum += example::checksum(got);
    CUDA_CHECK(cudaFree(xs[b]));
    CUDA_CHECK(cudaFree(ys[b]));
  }
  for (auto& st : streams) CUDA_CHECK(cudaStreamDestroy(st));
  return example::finish("many_small_kernels", bad, sum);
}
