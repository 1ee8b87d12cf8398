// The activation_matmul examples' data and C++ reference, shared by the driver-API program and its runtime-API twin:
// silu -> tiled matmul three times per iteration (a prologue fusion, a ragged activation, a GEMM writing over the
// activation's input).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "check.h"

namespace example::activation_matmul {

constexpr int kTokens = 64, kIn = 64, kOut = 64, kIterations = 2, kRagged = 32;
constexpr int kElements = kTokens * kIn;

struct Data {
  std::vector<float> x1, x2, x3, w;
  Data() : x1(kElements), x2(kElements), x3(kElements), w(kIn * kOut) {
    uint32_t seed = 777;
    auto rnd = [&]() {
      seed = seed * 1664525u + 1013904223u;
      return float(int(seed >> 9) % 2001 - 1000) / 1000.0f;
    };
    for (auto* v : {&x1, &x2, &x3}) {
      for (float& f : *v) f = 2.f * rnd();
    }
    for (float& f : w) f = 0.125f * rnd();
  }
};

// What the program computes: y1 = silu(x1) * w; y2 = silu(x2) * w with the last kRagged activations left at 0; x3
// replaced by silu(x3) * w; each kIterations times (x3 feeding the next iteration).
struct Expected {
  std::vector<float> y1, y2, x3;
};
inline Expected reference(const Data& d) {
  Expected e{std::vector<float>(kTokens * kOut), std::vector<float>(kTokens * kOut), d.x3};
  auto silu = [](float v) { return v / (1.0f + std::exp(-v)); };
  std::vector<float> h(kElements), h2(kElements, 0.f);
  for (int it = 0; it < kIterations; ++it) {
    for (int i = 0; i < kElements; ++i) h[i] = silu(d.x1[i]);
    matmulRef(h, d.w.data(), e.y1, kTokens, kOut, kIn);
    for (int i = 0; i < kElements - kRagged; ++i) h2[i] = silu(d.x2[i]);
    matmulRef(h2, d.w.data(), e.y2, kTokens, kOut, kIn);
    for (int i = 0; i < kElements; ++i) h[i] = silu(e.x3[i]);
    matmulRef(h, d.w.data(), e.x3, kTokens, kOut, kIn);
  }
  return e;
}

// Mismatches of the results against the reference (tolerance: __expf is approximate), and all results in one vector
// for the checksum.
inline size_t check(const Data& d, const std::vector<float>& y1, const std::vector<float>& y2,
                    const std::vector<float>& x3, std::vector<float>* all) {
  const Expected e = reference(d);
  const size_t bad = compare("y1", y1, e.y1, 1e-4) + compare("y2", y2, e.y2, 1e-4) + compare("x3", x3, e.x3, 1e-4);
  *all = y1;
  all->insert(all->end(), y2.begin(), y2.end());
  all->insert(all->end(), x3.begin(), x3.end());
  return bad;
}

}  // namespace example::activation_matmul
