// out = relu(alpha * x + bias) * gate, as four launches on one stream, repeated a few times.
#include "common.h"

int main(int argc, char** argv) {
  example::Session s(argc, argv, "elementwise_chain");
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
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr dx = example::upload(x), db = example::upload(bias), dg = example::upload(gate), t1, t2, t3, out;
  for (CUdeviceptr* p : {&t1, &t2, &t3, &out}) CU_CHECK(cuMemAlloc(p, n * sizeof(float)));
  CUfunction fscale = s.function("scale"), fadd = s.function("add"), frelu = s.function("relu"),
             fmul = s.function("mul");
  unsigned grid = example::blocksFor(n, 256);
  int nn = n;
  float a = alpha;
  CUevent start, stop;
  CU_CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CU_CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  CU_CHECK(cuEventRecord(start, stream));
  for (int it = 0; it < iterations; ++it) {
    void* a1[] = {&dx, &t1, &a, &nn};
    CU_CHECK(cuLaunchKernel(fscale, grid, 1, 1, 256, 1, 1, 0, stream, a1, nullptr));
    void* a2[] = {&t1, &db, &t2, &nn};
    CU_CHECK(cuLaunchKernel(fadd, grid, 1, 1, 256, 1, 1, 0, stream, a2, nullptr));
    void* a3[] = {&t2, &t3, &nn};
    CU_CHECK(cuLaunchKernel(frelu, grid, 1, 1, 256, 1, 1, 0, stream, a3, nullptr));
    void* a4[] = {&t3, &dg, &out, &nn};
    CU_CHECK(cuLaunchKernel(fmul, grid, 1, 1, 256, 1, 1, 0, stream, a4, nullptr));
  }
  CU_CHECK(cuEventRecord(stop, stream));
  CU_CHECK(cuStreamSynchronize(stream));
  float ms = 0;
  CU_CHECK(cuEventElapsedTime(&ms, start, stop));
  std::printf("elementwise_chain: %d x 4 launches in %.3f ms\n", iterations, ms);
  auto got = example::download<float>(out, n);
  size_t bad = example::compare("out", got, want);
  for (CUdeviceptr p : {dx, db, dg, t1, t2, t3, out}) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuEventDestroy(start));
  CU_CHECK(cuEventDestroy(stop));
  CU_CHECK(cuStreamDestroy(stream));
  return example::finish("elementwise_chain", bad, example::checksum(got));
}
