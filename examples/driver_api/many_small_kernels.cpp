// 32 small, independent kernels on separate buffers, spread over four streams.
#include <cmath>

#include "common.h"

int main(int argc, char** argv) {
  example::Session s(argc, argv, "many_small_kernels");
  const int kBuffers = 32, n = 1024;
  CUfunction faxpb = s.function("axpb"), fsquare = s.function("square");
  CUstream streams[4];
  for (auto& st : streams) CU_CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  std::vector<CUdeviceptr> xs(kBuffers), ys(kBuffers);
  std::vector<std::vector<float>> want(kBuffers, std::vector<float>(n));
  for (int b = 0; b < kBuffers; ++b) {
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = float((i * (b + 3)) % 101) / 7.0f - 5.0f;
    xs[b] = example::upload(x);
    CU_CHECK(cuMemAlloc(&ys[b], n * sizeof(float)));
    float a = 0.5f + b * 0.25f, c = float(b) - 10.0f;
    int nn = n;
    void* args_axpb[] = {&xs[b], &ys[b], &a, &c, &nn};
    void* args_sq[] = {&xs[b], &ys[b], &nn};
    bool sq = b % 3 == 2;
    CU_CHECK(cuLaunchKernel(sq ? fsquare : faxpb, example::blocksFor(n, 128), 1, 1, 128, 1, 1, 0, streams[b % 4],
                            sq ? args_sq : args_axpb, nullptr));
    for (int i = 0; i < n; ++i) want[b][i] = sq ? x[i] * x[i] : std::fma(a, x[i], c);
  }
  size_t bad = 0;
  double sum = 0;
  for (int b = 0; b < kBuffers; ++b) {
    CU_CHECK(cuStreamSynchronize(streams[b % 4]));
    auto got = example::download<float>(ys[b], n);
    bad += example::compare("y", got, want[b]);
    sum += example::checksum(got);
    CU_CHECK(cuMemFree(xs[b]));
    CU_CHECK(cuMemFree(ys[b]));
  }
  for (auto& st : streams) CU_CHECK(cuStreamDestroy(st));
  return example::finish("many_small_kernels", bad, sum);
}
