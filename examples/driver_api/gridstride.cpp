// out = relu(a * x + b) * gate with grid-stride loops: 40 blocks of 256 threads over 100,003 elements, repeated;
// then act = gelu(0.5 * out) over out as a 317 x 315 matrix, the scaling on 16 x 16 tiles, the GELU a grid-stride loop
// on 40 blocks.
#include "../common/gridstride.h"
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
  CUdeviceptr scaled, act;
  for (CUdeviceptr* p : {&y, &out, &scaled, &act}) CU_CHECK(cuMemAlloc(p, n * sizeof(float)));
  CUfunction faxpb = s.function("gs_axpb"), frelu = s.function("gs_relu_mul"), fscale = s.function("tile_scale"),
             fgelu = s.function("gs_gelu");
  using example::gridstride::kCols, example::gridstride::kRows;
  int rows = kRows, cols = kCols, m = kRows * kCols;
  float half = 0.5f;
  int nn = n;
  float aa = a, bb = b;
  for (int it = 0; it < iterations; ++it) {
    void* a1[] = {&dx, &y, &aa, &bb, &nn};
    CU_CHECK(cuLaunchKernel(faxpb, blocks, 1, 1, threads, 1, 1, 0, stream, a1, nullptr));
    void* a2[] = {&y, &dg, &out, &nn};
    CU_CHECK(cuLaunchKernel(frelu, blocks, 1, 1, threads, 1, 1, 0, stream, a2, nullptr));
    void* a3[] = {&out, &scaled, &rows, &cols, &half};
    CU_CHECK(cuLaunchKernel(fscale, (cols + 15) / 16, (rows + 15) / 16, 1, 16, 16, 1, 0, stream, a3, nullptr));
    void* a4[] = {&scaled, &act, &m};
    CU_CHECK(cuLaunchKernel(fgelu, blocks, 1, 1, threads, 1, 1, 0, stream, a4, nullptr));
  }
  CU_CHECK(cuStreamSynchronize(stream));
  auto got = example::download<float>(out, n);
  size_t bad = example::compare("out", got, want);
  const std::vector<float> want_act = example::gridstride::gelu(want);
  auto got_act = example::download<float>(act, kRows * kCols);
  bad += example::compare("act", got_act, want_act, 1e-5);
  got.insert(got.end(), got_act.begin(), got_act.end());
  for (CUdeviceptr p : {dx, dg, y, out, scaled, act}) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuStreamDestroy(stream));
  return example::finish("gridstride", bad, example::checksum(got));
}
