// A linear layer as naive reference CUDA code writes it: one thread per output computes a dot product (no bias),
// then a grid-stride loop adds the bias in place, its step held in a variable (so nvcc unrolls the loop four times
// behind a remainder loop), then a GELU, one thread per element. Weights and activations are carved out of two
// allocations. The bias is added once on the matmul's own grid (48 blocks: an epilogue of the same launch shape)
// and once on a fixed 16 blocks (an epilogue of another shape); kfuse proves both on the loop's element view.
#include <cmath>

#include "common.h"

__global__ void matmul_fwd(float* out, const float* inp, const float* w, int rows, int k, int cols) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= rows * cols) return;
  const int r = idx / cols, c = idx % cols;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc = fmaf(inp[r * k + i], w[i * cols + c], acc);
  out[idx] = acc;
}

__global__ void add_bias(float* out, const float* bias, int rows, int cols) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows * cols; i += stride) out[i] += bias[i % cols];
}

__global__ void gelu_fwd(float* out, const float* inp, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
  }
}

int main() {
  example::printDevice();
  constexpr int kRows = 64, kIn = 48, kHidden = 96, kOut = 48, kIterations = 2;
  constexpr unsigned kBlock = 128;
  // Parameters: w1 (kIn x kHidden), b1, w2 (kHidden x kOut), b2; activations: x, h, g, y.
  std::vector<float> params(kIn * kHidden + kHidden + kHidden * kOut + kOut), x(kRows * kIn);
  for (size_t i = 0; i < params.size(); ++i) params[i] = float(int((i * 37) % 101) - 50) / 256.0f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int((i * 13) % 61) - 30) / 16.0f;
  const float* w1 = params.data();
  const float* b1 = w1 + kIn * kHidden;
  const float* w2 = b1 + kHidden;
  const float* b2 = w2 + kHidden * kOut;

  // The reference, in the kernels' order of operations.
  std::vector<float> h(kRows * kHidden), g(kRows * kHidden), want(kRows * kOut);
  example::matmulRef(x, w1, h, kRows, kHidden, kIn);
  for (int i = 0; i < kRows * kHidden; ++i) {
    h[i] += b1[i % kHidden];
    const float v = h[i];
    g[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  example::matmulRef(g, w2, want, kRows, kOut, kHidden);
  for (int i = 0; i < kRows * kOut; ++i) want[i] += b2[i % kOut];

  float* dparams = example::upload(params);
  float* acts = example::alloc<float>(x.size() + 2 * h.size() + want.size());
  float *dx = acts, *dh = dx + x.size(), *dg = dh + h.size(), *dy = dg + g.size();
  const float *dw1 = dparams, *db1 = dw1 + kIn * kHidden, *dw2 = db1 + kHidden, *db2 = dw2 + kHidden * kOut;
  CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const unsigned hidden_blocks = example::blocksFor(h.size(), kBlock), out_blocks = 16;
  for (int it = 0; it < kIterations; ++it) {
    matmul_fwd<<<hidden_blocks, kBlock, 0, stream>>>(dh, dx, dw1, kRows, kIn, kHidden);
    add_bias<<<hidden_blocks, kBlock, 0, stream>>>(dh, db1, kRows, kHidden);
    gelu_fwd<<<hidden_blocks, kBlock, 0, stream>>>(dg, dh, kRows * kHidden);
    matmul_fwd<<<example::blocksFor(want.size(), kBlock), kBlock, 0, stream>>>(dy, dg, dw2, kRows, kHidden, kOut);
    add_bias<<<out_blocks, kBlock, 0, stream>>>(dy, db2, kRows, kOut);
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  auto got = example::download(dy, want.size());
  const size_t bad = example::compare("y", got, want, 1e-4);
  CUDA_CHECK(cudaFree(dparams));
  CUDA_CHECK(cudaFree(acts));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return example::finish("linear_bias", bad, example::checksum(got));
}
