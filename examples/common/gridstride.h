// The gridstride examples' second stage, shared by the driver-API program and its runtime-API twin: the first
// stage's output as a kRows x kCols matrix, scaled by 0.5 on 16 x 16 tiles, then a grid-stride GELU.
#pragma once

#include <cmath>
#include <vector>

namespace example::gridstride {

constexpr int kRows = 317, kCols = 315;

// act[i] = gelu(0.5 * out[i]) for the matrix's elements, as the kernels compute it.
inline std::vector<float> gelu(const std::vector<float>& out) {
  std::vector<float> act(kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i) {
    const float v = out[i] * 0.5f;
    act[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return act;
}

}  // namespace example::gridstride
