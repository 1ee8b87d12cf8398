// Several iterations of a multi-layer MLP block (x += W2 * gelu(W1 * layernorm(x) + b1)): the runtime-API twin of
// examples/driver_api/mlp_block, checked against the same C++ reference with the same tolerance.
#include <cmath>

#include "../driver_api/mlp_block.cu"
#include "common.h"

namespace {
constexpr int kTokens = 32, kHidden = 64, kFfn = 256, kLayers = 2, kIterations = 2;
}  // namespace

int main() {
  example::printDevice();
  std::vector<float> x(kTokens * kHidden), gamma(kHidden), beta(kHidden);
  std::vector<float> w1(size_t(kLayers) * kHidden * kFfn), b1(size_t(kLayers) * kFfn), w2(size_t(kLayers) * kFfn * kHidden);
  uint32_t seed = 12345;
  auto rnd = [&]() {
    seed = seed * 1664525u + 1013904223u;
    return float(int(seed >> 9) % 2001 - 1000) / 1000.0f;
  };
  for (auto& v : x) v = rnd();
  for (int i = 0; i < kHidden; ++i) gamma[i] = 1.0f + 0.1f * rnd(), beta[i] = 0.1f * rnd();
  for (auto& v : w1) v = rnd() * 0.125f;
  for (auto& v : b1) v = rnd() * 0.1f;
  for (auto& v : w2) v = rnd() * 0.0625f;

  float *dx = example::upload(x), *dg = example::upload(gamma), *db = example::upload(beta);
  float *dw1 = example::upload(w1), *db1 = example::upload(b1), *dw2 = example::upload(w2);
  float *dh = example::alloc<float>(kTokens * kHidden), *du = example::alloc<float>(kTokens * kFfn),
        *dv = example::alloc<float>(kTokens * kFfn);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const int tf = kTokens * kFfn, th = kTokens * kHidden;
  for (int it = 0; it < kIterations; ++it) {
    for (int l = 0; l < kLayers; ++l) {
      const float* w1l = dw1 + size_t(l) * kHidden * kFfn;
      const float* b1l = db1 + size_t(l) * kFfn;
      const float* w2l = dw2 + size_t(l) * kFfn * kHidden;
      layernorm<<<kTokens, 64, 2 * 64 * sizeof(float), stream>>>(dx, dh, dg, db, kHidden);
      matmul<<<dim3(kFfn / 16, kTokens / 16), dim3(16, 16), 0, stream>>>(dh, w1l, du, kTokens, kFfn, kHidden);
      bias_add<<<example::blocksFor(tf, 256), 256, 0, stream>>>(du, b1l, kTokens, kFfn);
      gelu<<<example::blocksFor(tf, 256), 256, 0, stream>>>(du, dv, tf);
      matmul<<<dim3(kHidden / 16, kTokens / 16), dim3(16, 16), 0, stream>>>(dv, w2l, du, kTokens, kHidden, kFfn);
      residual_add<<<example::blocksFor(th, 256), 256, 0, stream>>>(dx, du, th);
      CUDA_CHECK_LAUNCH();
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  auto got = example::download(dx, x.size());

  std::vector<float> hh(kTokens * kHidden), uu(kTokens * kFfn), vv(kTokens * kHidden);
  for (int it = 0; it < kIterations; ++it)
    for (int l = 0; l < kLayers; ++l) {
      example::layernormRef(x, hh, gamma, beta, kTokens, kHidden);
      example::matmulRef(hh, &w1[size_t(l) * kHidden * kFfn], uu, kTokens, kFfn, kHidden);
      for (int i = 0; i < tf; ++i) {
        float u = uu[i] + b1[size_t(l) * kFfn + i % kFfn];
        uu[i] = float(0.5 * u * (1.0 + std::tanh(0.7978845608 * (u + 0.044715 * double(u) * u * u))));
      }
      example::matmulRef(uu, &w2[size_t(l) * kFfn * kHidden], vv, kTokens, kHidden, kFfn);
      for (int i = 0; i < th; ++i) x[i] += vv[i];
    }
  size_t bad = example::compare("x", got, x, 2e-4);
  for (float* p : {dx, dg, db, dw1, db1, dw2, dh, du, dv}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return example::finish("mlp_block", bad, example::checksum(got));
}
