// out = relu(a * x + b) * gate with grid-stride loops: 40 blocks of 256 threads over 100,003 elements, repeated.
#include "common.h"

int main(int argc, char** argv) {
  example::Session s(argc, argv, "gridstride");
  const int n = 100003, iterations = 3;
  const unsigned blocks = 40, threads = 256;  // 10,240 threads: each takes about ten elements
  const float a = 0.75f, b = -1.5f;
  std::vector<float> x(n), gate(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float((i * 29) % 300 - 150) / 32.0f;
    gate[i] = float(i % 7) * 0.125f;
    const float v = a * x[i] + b;
    want[i] = (v > 0.f ? v : 0.f) * gate[i];
  }
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr dx = example::upload(x), dg = example::upload(gate), y, out;
  for (CUdeviceptr* p : {&y, &out}) CU_CHECK(cuMemAlloc(p, n * sizeof(float)));
  CUfunction faxpb = s.function("gs_axpb"), frelu = s.function("gs_relu_mul");
  int nn = n;
  float aa = a, bb = b;
  for (int it = 0; it < iterations; ++it) {
    void* a1[] = {&dx, &y, &aa, &bb, &nn};
    CU_CHECK(cuLaunchKernel(faxpb, blocks, 1, 1, threads, 1, 1, 0, stream, a1, nullptr));
    void* a2[] = {&y, &dg, &out, &nn};
    CU_CHECK(cuLaunchKernel(frelu, blocks, 1, 1, threads, 1, 1, 0, stream, a2, nullptr));
  }
  CU_CHECK(cuStreamSynchronize(stream));
  auto got = example::download<float>(out, n);
  size_t bad = example::compare("out", got, want);
  for (CUdeviceptr p : {dx, dg, y, out}) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuStreamDestroy(stream));
  return example::finish("gridstride", bad, example::checksum(got));
}
