// Several iterations of a multi-layer MLP block (x += W2 * gelu(W1 * layernorm(x) + b1)), checked against a
// C++ reference with a tolerance (layernorm's rsqrt and GELU's tanh are approximations on a GPU).
// Built twice: mlp_block gives every tensor its own cuMemAlloc; mlp_block_arena (KFUSE_ARENA) carves every tensor
// out of one allocation, as PyTorch's caching allocator and llm.c do. Same kernels, same launches, same result.
#include <cmath>

#include "common.h"

namespace {
constexpr int kTokens = 32, kHidden = 64, kFfn = 256, kLayers = 2, kIterations = 2;
}  // namespace

int main(int argc, char** argv) {
  example::Session s(argc, argv, "mlp_block");
  std::vector<float> x(kTokens * kHidden), gamma(kHidden), beta(kHidden);
  std::vector<float> w1(size_t(kLayers) * kHidden * kFfn), b1(size_t(kLayers) * kFfn),
      w2(size_t(kLayers) * kFfn * kHidden);
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

#ifdef KFUSE_ARENA
  // One allocation; each tensor at the next 256-byte boundary (the caching allocator's granule).
  const size_t floats[] = {x.size(),
                           gamma.size(),
                           beta.size(),
                           w1.size(),
                           b1.size(),
                           w2.size(),
                           size_t(kTokens) * kHidden,
                           size_t(kTokens) * kFfn,
                           size_t(kTokens) * kFfn};
  size_t arena_bytes = 0;
  for (size_t f : floats) arena_bytes += (f * sizeof(float) + 255) / 256 * 256;
  CUdeviceptr arena;
  CU_CHECK(cuMemAlloc(&arena, arena_bytes));
  size_t next = 0;
  auto carve = [&](size_t n) {
    CUdeviceptr p = arena + next;
    next += (n * sizeof(float) + 255) / 256 * 256;
    return p;
  };
  auto place = [&](const std::vector<float>& v) {
    CUdeviceptr p = carve(v.size());
    CU_CHECK(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(float)));
    return p;
  };
  CUdeviceptr dx = place(x), dg = place(gamma), db = place(beta);
  CUdeviceptr dw1 = place(w1), db1 = place(b1), dw2 = place(w2);
  CUdeviceptr dh = carve(size_t(kTokens) * kHidden), du = carve(size_t(kTokens) * kFfn),
              dv = carve(size_t(kTokens) * kFfn);
#else
  CUdeviceptr dx = example::upload(x), dg = example::upload(gamma), db = example::upload(beta);
  CUdeviceptr dw1 = example::upload(w1), db1 = example::upload(b1), dw2 = example::upload(w2);
  CUdeviceptr dh, du, dv;
  CU_CHECK(cuMemAlloc(&dh, sizeof(float) * kTokens * kHidden));
  CU_CHECK(cuMemAlloc(&du, sizeof(float) * kTokens * kFfn));
  CU_CHECK(cuMemAlloc(&dv, sizeof(float) * kTokens * kFfn));
#endif
  CUfunction fln = s.function("layernorm"), fmm = s.function("matmul"), fbias = s.function("bias_add"),
             fgelu = s.function("gelu"), fres = s.function("residual_add");
  CUstream stream;
  CU_CHECK(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  int t = kTokens, h = kHidden, f = kFfn, tf = kTokens * kFfn, th = kTokens * kHidden;
  for (int it = 0; it < kIterations; ++it) {
    for (int l = 0; l < kLayers; ++l) {
      CUdeviceptr w1l = dw1 + sizeof(float) * size_t(l) * kHidden * kFfn;
      CUdeviceptr b1l = db1 + sizeof(float) * size_t(l) * kFfn;
      CUdeviceptr w2l = dw2 + sizeof(float) * size_t(l) * kFfn * kHidden;
      void* aln[] = {&dx, &dh, &dg, &db, &h};
      CU_CHECK(cuLaunchKernel(fln, kTokens, 1, 1, 64, 1, 1, 2 * 64 * sizeof(float), stream, aln, nullptr));
      void* amm1[] = {&dh, &w1l, &du, &t, &f, &h};
      CU_CHECK(cuLaunchKernel(fmm, kFfn / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, amm1, nullptr));
      void* abias[] = {&du, &b1l, &t, &f};
      CU_CHECK(cuLaunchKernel(fbias, example::blocksFor(tf, 256), 1, 1, 256, 1, 1, 0, stream, abias, nullptr));
      void* agelu[] = {&du, &dv, &tf};
      CU_CHECK(cuLaunchKernel(fgelu, example::blocksFor(tf, 256), 1, 1, 256, 1, 1, 0, stream, agelu, nullptr));
      void* amm2[] = {&dv, &w2l, &du, &t, &h, &f};
      CU_CHECK(cuLaunchKernel(fmm, kHidden / 16, kTokens / 16, 1, 16, 16, 1, 0, stream, amm2, nullptr));
      void* ares[] = {&dx, &du, &th};
      CU_CHECK(cuLaunchKernel(fres, example::blocksFor(th, 256), 1, 1, 256, 1, 1, 0, stream, ares, nullptr));
    }
  }
  CU_CHECK(cuStreamSynchronize(stream));
  auto got = example::download<float>(dx, x.size());

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
#ifdef KFUSE_ARENA
  CU_CHECK(cuMemFree(arena));
#else
  for (CUdeviceptr p : {dx, dg, db, dw1, db1, dw2, dh, du, dv}) CU_CHECK(cuMemFree(p));
#endif
  CU_CHECK(cuStreamDestroy(stream));
  return example::finish("mlp_block", bad, example::checksum(got));
}
