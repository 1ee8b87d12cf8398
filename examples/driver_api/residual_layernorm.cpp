// Residual add then layernorm, row per block (block-level fusable) and grid-stride (not); then a block reduction
// (row_rms) feeding a row-wise scale (fusable) and a scale by the maximum over all rows (not); over a few
// iterations, checked against a C++ reference with a tolerance (rsqrt and sqrt are approximations on a GPU).
#include <algorithm>
#include <cmath>

#include "common.h"

namespace {
constexpr int kRows = 64, kHidden = 256, kThreads = 128, kIterations = 2;
}  // namespace

int main(int argc, char** argv) {
  example::Session s(argc, argv, "residual_layernorm");
  const int n = kRows * kHidden;
  std::vector<float> x(n), r1(n), r2(n), gamma(kHidden), beta(kHidden);
  uint32_t seed = 4242;
  auto rnd = [&]() {
    seed = seed * 1664525u + 1013904223u;
    return float(int(seed >> 9) % 2001 - 1000) / 1000.0f;
  };
  for (auto& v : x) v = rnd();
  for (auto& v : r1) v = 0.5f * rnd();
  for (auto& v : r2) v = 0.25f * rnd();
  for (int i = 0; i < kHidden; ++i) gamma[i] = 1.0f + 0.1f * rnd(), beta[i] = 0.1f * rnd();

  CUdeviceptr dx = example::upload(x), dr1 = example::upload(r1), dr2 = example::upload(r2);
  CUdeviceptr dg = example::upload(gamma), db = example::upload(beta);
  CUdeviceptr dy1, dy2, dy3, dy4, drms, drms2;
  for (CUdeviceptr* p : {&dy1, &dy2, &dy3, &dy4}) CU_CHECK(cuMemAlloc(p, sizeof(float) * n));
  CU_CHECK(cuMemAlloc(&drms, sizeof(float) * kRows));
  CU_CHECK(cuMemAlloc(&drms2, sizeof(float) * kRows));
  CUfunction frows = s.function("residual_add_rows"), fstrided = s.function("residual_add_strided"),
             fln = s.function("layernorm"), frms = s.function("row_rms"), fscale = s.function("scale_rows"),
             fmax = s.function("scale_by_max");
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  int h = kHidden, nn = n, rows = kRows;
  const unsigned shared = 2 * kThreads * sizeof(float);
  for (int it = 0; it < kIterations; ++it) {
    void* arows[] = {&dx, &dr1, &h};
    CU_CHECK(cuLaunchKernel(frows, kRows, 1, 1, kThreads, 1, 1, 0, stream, arows, nullptr));
    void* aln1[] = {&dx, &dy1, &dg, &db, &h};
    CU_CHECK(cuLaunchKernel(fln, kRows, 1, 1, kThreads, 1, 1, shared, stream, aln1, nullptr));
    void* astrided[] = {&dx, &dr2, &nn};
    CU_CHECK(cuLaunchKernel(fstrided, kRows, 1, 1, kThreads, 1, 1, 0, stream, astrided, nullptr));
    void* aln2[] = {&dx, &dy2, &dg, &db, &h};
    CU_CHECK(cuLaunchKernel(fln, kRows, 1, 1, kThreads, 1, 1, shared, stream, aln2, nullptr));
    void* arms[] = {&dx, &drms, &h};
    CU_CHECK(cuLaunchKernel(frms, kRows, 1, 1, kThreads, 1, 1, 0, stream, arms, nullptr));
    void* ascale[] = {&dx, &drms, &dy3, &h};
    CU_CHECK(cuLaunchKernel(fscale, kRows, 1, 1, kThreads, 1, 1, 0, stream, ascale, nullptr));
    void* arms2[] = {&dx, &drms2, &h};
    CU_CHECK(cuLaunchKernel(frms, kRows, 1, 1, kThreads, 1, 1, 0, stream, arms2, nullptr));
    void* amax[] = {&dx, &drms2, &dy4, &h, &rows};
    CU_CHECK(cuLaunchKernel(fmax, kRows, 1, 1, kThreads, 1, 1, 0, stream, amax, nullptr));
  }
  CU_CHECK(cuStreamSynchronize(stream));
  auto got1 = example::download<float>(dy1, n);
  auto got2 = example::download<float>(dy2, n);
  auto got3 = example::download<float>(dy3, n);
  auto got4 = example::download<float>(dy4, n);

  std::vector<float> y1(n), y2(n), y3(n), y4(n), rms(kRows);
  for (int it = 0; it < kIterations; ++it) {
    for (int i = 0; i < n; ++i) x[i] += r1[i];
    example::layernormRef(x, y1, gamma, beta, kRows, kHidden);
    for (int i = 0; i < n; ++i) x[i] += r2[i];
    example::layernormRef(x, y2, gamma, beta, kRows, kHidden);
    float largest = 0.f;
    for (int t = 0; t < kRows; ++t) {
      double s2 = 0;
      for (int j = 0; j < kHidden; ++j) s2 += double(x[t * kHidden + j]) * x[t * kHidden + j];
      rms[t] = float(std::sqrt(s2 / kHidden + 1e-6));
      largest = std::max(largest, rms[t]);
    }
    for (int i = 0; i < n; ++i) y3[i] = x[i] / rms[i / kHidden], y4[i] = x[i] / largest;
  }
  size_t bad = example::compare("y1", got1, y1, 2e-4) + example::compare("y2", got2, y2, 2e-4) +
               example::compare("y3", got3, y3, 2e-4) + example::compare("y4", got4, y4, 2e-4);
  for (CUdeviceptr p : {dx, dr1, dr2, dg, db, dy1, dy2, dy3, dy4, drms, drms2}) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuStreamDestroy(stream));
  std::vector<float> all(got1);
  for (const auto* g : {&got2, &got3, &got4}) all.insert(all.end(), g->begin(), g->end());
  return example::finish("residual_layernorm", bad, example::checksum(all));
}
