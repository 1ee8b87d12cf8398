// silu -> tiled matmul three times per iteration: once as a prologue fusion can take it, and twice as near misses
// it must refuse (the activation leaves the last 32 elements of the GEMM's input unwritten; the GEMM writes its
// result over the activation's input). Checked against a C++ reference with a tolerance (__expf is approximate).
#include <cmath>

#include "common.h"

namespace {
constexpr int kTokens = 64, kIn = 64, kOut = 64, kIterations = 2, kRagged = 32;

void matmulRef(const std::vector<float>& a, const std::vector<float>& w, std::vector<float>& c) {
  for (int r = 0; r < kTokens; ++r)
    for (int col = 0; col < kOut; ++col) {
      float acc = 0.f;
      for (int i = 0; i < kIn; ++i) acc = std::fma(a[r * kIn + i], w[i * kOut + col], acc);
      c[r * kOut + col] = acc;
    }
}
}  // namespace

int main(int argc, char** argv) {
  example::Session s(argc, argv, "activation_matmul");
  const int n = kTokens * kIn;
  std::vector<float> x1(n), x2(n), x3(n), w(kIn * kOut), zeros(n, 0.f);
  uint32_t seed = 777;
  auto rnd = [&]() {
    seed = seed * 1664525u + 1013904223u;
    return float(int(seed >> 9) % 2001 - 1000) / 1000.0f;
  };
  for (auto* v : {&x1, &x2, &x3}) {
    for (float& f : *v) f = 2.f * rnd();
  }
  for (float& f : w) f = 0.125f * rnd();
  CUdeviceptr dx1 = example::upload(x1), dx2 = example::upload(x2), dx3 = example::upload(x3);
  CUdeviceptr dw = example::upload(w), dh1 = example::upload(zeros), dh2 = example::upload(zeros);
  CUdeviceptr dh3 = example::upload(zeros), dy1, dy2;
  CU_CHECK(cuMemAlloc(&dy1, sizeof(float) * kTokens * kOut));
  CU_CHECK(cuMemAlloc(&dy2, sizeof(float) * kTokens * kOut));
  CUfunction fsilu = s.function("silu"), fmm = s.function("matmul_tiled");
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  int t = kTokens, in = kIn, out = kOut, all = n, ragged = n - kRagged;
  const unsigned blocks = (n + 255) / 256;
  for (int it = 0; it < kIterations; ++it) {
    void* a1[] = {&dx1, &dh1, &all};
    CU_CHECK(cuLaunchKernel(fsilu, blocks, 1, 1, 256, 1, 1, 0, stream, a1, nullptr));
    void* m1[] = {&dh1, &dw, &dy1, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fmm, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m1, nullptr));
    void* a2[] = {&dx2, &dh2, &ragged};
    CU_CHECK(cuLaunchKernel(fsilu, blocks, 1, 1, 256, 1, 1, 0, stream, a2, nullptr));
    void* m2[] = {&dh2, &dw, &dy2, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fmm, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m2, nullptr));
    void* a3[] = {&dx3, &dh3, &all};
    CU_CHECK(cuLaunchKernel(fsilu, blocks, 1, 1, 256, 1, 1, 0, stream, a3, nullptr));
    void* m3[] = {&dh3, &dw, &dx3, &t, &out, &in};
    CU_CHECK(cuLaunchKernel(fmm, kOut / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, m3, nullptr));
  }
  CU_CHECK(cuStreamSynchronize(stream));
  auto got1 = example::download<float>(dy1, size_t(kTokens) * kOut);
  auto got2 = example::download<float>(dy2, size_t(kTokens) * kOut);
  auto got3 = example::download<float>(dx3, n);

  std::vector<float> h(n), y1(kTokens * kOut), y2(kTokens * kOut);
  auto silu = [](float v) { return v / (1.0f + std::exp(-v)); };
  std::vector<float> h2(n, 0.f);
  for (int it = 0; it < kIterations; ++it) {
    for (int i = 0; i < n; ++i) h[i] = silu(x1[i]);
    matmulRef(h, w, y1);
    for (int i = 0; i < n - kRagged; ++i) h2[i] = silu(x2[i]);
    matmulRef(h2, w, y2);
    for (int i = 0; i < n; ++i) h[i] = silu(x3[i]);
    matmulRef(h, w, x3);
  }
  size_t bad = example::compare("y1", got1, y1, 1e-4) + example::compare("y2", got2, y2, 1e-4) +
               example::compare("x3", got3, x3, 1e-4);
  for (CUdeviceptr p : {dx1, dx2, dx3, dw, dh1, dh2, dh3, dy1, dy2}) CU_CHECK(cuMemFree(p));
  CU_CHECK(cuStreamDestroy(stream));
  std::vector<float> every(got1);
  every.insert(every.end(), got2.begin(), got2.end());
  every.insert(every.end(), got3.begin(), got3.end());
  return example::finish("activation_matmul", bad, example::checksum(every));
}
