// Result checks shared by the driver-API and runtime-API examples: block counts, comparison with a C++
// reference, checksums and the PASSED/FAILED line the tests look for. Plain C++, no CUDA.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

namespace example {

inline unsigned blocksFor(size_t n, unsigned block) {
  return unsigned((n + block - 1) / block);
}

// y = layernorm(x) row by row (rows x h, row-major), in double: the reference for the examples' layernorm kernel.
inline void layernormRef(const std::vector<float>& x, std::vector<float>& y, const std::vector<float>& g,
                         const std::vector<float>& b, int rows, int h) {
  for (int t = 0; t < rows; ++t) {
    double s = 0, s2 = 0;
    for (int i = 0; i < h; ++i) {
      double v = x[size_t(t) * h + i];
      s += v;
      s2 += v * v;
    }
    double mean = s / h, var = s2 / h - mean * mean;
    double inv = 1.0 / std::sqrt(var + 1e-5);
    for (int i = 0; i < h; ++i) y[size_t(t) * h + i] = float((x[size_t(t) * h + i] - mean) * inv * g[i] + b[i]);
  }
}

// c = a * w (m x k times k x n, row-major), accumulated with fma in float as the examples' matmul kernels do.
inline void matmulRef(const std::vector<float>& a, const float* w, std::vector<float>& c, int m, int n, int k) {
  for (int r = 0; r < m; ++r)
    for (int col = 0; col < n; ++col) {
      float acc = 0.f;
      for (int i = 0; i < k; ++i) acc = std::fma(a[size_t(r) * k + i], w[size_t(i) * n + col], acc);
      c[size_t(r) * n + col] = acc;
    }
}

// Compares with a tolerance (0 = exact) and reports the first mismatch; returns the number of mismatches.
template <class T>
size_t compare(const char* what, const std::vector<T>& got, const std::vector<T>& want, double tol = 0) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = double(got[i]), w = double(want[i]);
    bool ok = tol == 0 ? got[i] == want[i] : std::fabs(g - w) <= tol * (1.0 + std::fabs(w));
    if (!ok && bad++ == 0) std::fprintf(stderr, "%s: mismatch at %zu: got %.9g, want %.9g\n", what, i, g, w);
  }
  return bad;
}

template <class T>
double checksum(const std::vector<T>& v) {
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += double(v[i]) * double(1 + i % 7);
  return s;
}

inline int finish(const char* name, size_t mismatches, double sum) {
  std::printf("%s: checksum %.6f\n", name, sum);
  if (mismatches) {
    std::printf("%s: FAILED (%zu mismatches)\n", name, mismatches);
    return 1;
  }
  std::printf("%s: PASSED\n", name);
  return 0;
}

}  // namespace example
