// residual_add then layernorm_rows (one thread per row, three passes), twice over 512 rows of 256, checked against a
// C++ reference with a tolerance (rsqrt is an approximation on a GPU). The prologue fusion of the pair is proven
// and predicted to lose: kfuse analyze lists it as a proven candidate that does not pay, and rewrite --all leaves it.
#include <cmath>

#include "common.h"

namespace {
constexpr int kRows = 512, kCols = 256, kIterations = 2;
}  // namespace

int main(int argc, char** argv) {
  example::Session s(argc, argv, "rowwise_layernorm");
  const int n = kRows * kCols;
  std::vector<float> a(n), b(n), weight(kCols), bias(kCols);
  for (int i = 0; i < n; ++i) {
    a[i] = float((i * 37) % 200 - 100) / 64.0f;
    b[i] = float((i * 11) % 50) / 128.0f;
  }
  for (int i = 0; i < kCols; ++i) weight[i] = 1.0f + float(i % 9) / 16.0f, bias[i] = float(i % 5) / 8.0f;
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr da = example::upload(a), db = example::upload(b), dw = example::upload(weight),
              dbias = example::upload(bias), sum, y;
  for (CUdeviceptr* p : {&sum, &y}) CU_CHECK(cuMemAlloc(p, n * sizeof(float)));
  CUfunction fadd = s.function("residual_add"), fln = s.function("layernorm_rows");
  int nn = n, rows = kRows, cols = kCols;
  for (int it = 0; it < kIterations; ++it) {
    void* a1[] = {&da, &db, &sum, &nn};
    CU_CHECK(cuLaunchKernel(fadd, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream, a1, nullptr));
    void* a2[] = {&sum, &dw, &dbias, &y, &rows, &cols};
    CU_CHECK(cuLaunchKernel(fln, kRows / 64, 1, 1, 64, 1, 1, 0, stream, a2, nullptr));
  }
  CU_CHECK(cuStreamSynchronize(stream));
  auto got = example::download<float>(y, n);
  std::vector<float> want(n);
  for (int r = 0; r < kRows; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < kCols; ++i) mean += double(a[r * kCols + i] + b[r * kCols + i]);
    mean /= kCols;
    for (int i = 0; i < kCols; ++i) {
      const double d = double(a[r * kCols + i] + b[r * kCols + i]) - mean;
      var += d * d;
    }
    var /= kCols;
    const double scale = 1.0 / std::sqrt(var + 1e-5);
    for (int i = 0; i < kCols; ++i) {
      const double x = double(a[r * kCols + i] + b[r * kCols + i]);
      want[r * kCols + i] = float((x - mean) * scale * weight[i] + bias[i]);
    }
  }
  size_t bad = example::compare("y", got, want, 2e-4);
  for (CUdeviceptr p : {da, db, dw, dbias, sum, y}) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuStreamDestroy(stream));
  return example::finish("rowwise_layernorm", bad, example::checksum(got));
}
