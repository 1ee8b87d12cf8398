// The activation_matmul examples' data and C++ reference, shared by the driver-API program and its runtime-API twin:
// silu -> tiled matmul three times per iteration (a prologue fusion, a ragged activation, a GEMM writing over the
// activation's input), then silu -> a matmul reading its operand as float4 (a prologue fusion with vector loads), and
// silu_vec4 (four elements per thread, a vector store) -> the tiled matmul.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "check.h"

namespace example::activation_matmul {

constexpr int kTokens = 64, kIn = 64, kOut = 64, kIterations = 2, kRagged = 32;
constexpr int kElements = kTokens * kIn;

struct Data {
  std::vector<float> x1, x2, x3, x4, x5, w;
  Data() : x1(kElements), x2(kElements), x3(kElements), x4(kElements), x5(kElements), w(kIn * kOut) {
    uint32_t seed = 777;
    auto rnd = [&]() {
      seed = seed * 1664525u + 1013904223u;
      return float(int(seed >> 9) % 2001 - 1000) / 1000.0f;
    };
    for (auto* v : {&x1, &x2, &x3, &x4, &x5}) {
      for (float& f : *v) f = 2.f * rnd();
    }
    for (float& f : w) f = 0.125f * rnd();
  }
};

// What the program computes: y1 = silu(x1) * w; y2 = silu(x2) * w with the last kRagged activations left at 0; x3
// replaced by silu(x3) * w; y4 = silu(x4) * w; y5 = silu(x5) * w; each kIterations times (x3 feeding the next
// iteration).
struct Expected {
  std::vector<float> y1, y2, x3, y4, y5;
};
inline Expected reference(const Data& d) {
  Expected e{std::vector<float>(kTokens * kOut), std::vector<float>(kTokens * kOut), d.x3,
             std::vector<float>(kTokens * kOut), std::vector<float>(kTokens * kOut)};
  auto silu = [](float v) { return v / (1.0f + std::exp(-v)); };
  std::vector<float> h(kElements), h2(kElements, 0.f);
  for (int it = 0; it < kIterations; ++it) {
    for (int i = 0; i < kElements; ++i) h[i] = silu(d.x1[i]);
    matmulRef(h, d.w.data(), e.y1, kTokens, kOut, kIn);
    for (int i = 0; i < kElements - kRagged; ++i) h2[i] = silu(d.x2[i]);
    matmulRef(h2, d.w.data(), e.y2, kTokens, kOut, kIn);
    for (int i = 0; i < kElements; ++i) h[i] = silu(e.x3[i]);
    matmulRef(h, d.w.data(), e.x3, kTokens, kOut, kIn);
    for (int i = 0; i < kElements; ++i) h[i] = silu(d.x4[i]);
    matmulRef(h, d.w.data(), e.y4, kTokens, kOut, kIn);
    for (int i = 0; i < kElements; ++i) h[i] = silu(d.x5[i]);
    matmulRef(h, d.w.data(), e.y5, kTokens, kOut, kIn);
  }
  return e;
}

// Mismatches of the results against the reference (tolerance: __expf is approximate), and all results in one vector
// for the checksum.
inline size_t check(const Data& d, const Expected& got, std::vector<float>* all) {
  const Expected e = reference(d);
  const size_t bad = compare("y1", got.y1, e.y1, 1e-4) + compare("y2", got.y2, e.y2, 1e-4) +
                     compare("x3", got.x3, e.x3, 1e-4) + compare("y4", got.y4, e.y4, 1e-4) +
                     compare("y5", got.y5, e.y5, 1e-4);
  *all = got.y1;
  for (const auto* v : {&got.y2, &got.x3, &got.y4, &got.y5}) all->insert(all->end(), v->begin(), v->end());
  return bad;
}

}  // namespace example::activation_matmul
