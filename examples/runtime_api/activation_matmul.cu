// silu -> tiled matmul, the runtime-API twin of examples/driver_api/activation_matmul (<<<>>> launches): one prologue
// fusion and its two near misses, checked against the same C++ reference with the same tolerance.
#include "../common/activation_matmul.h"
#include "../driver_api/activation_matmul.cu"
#include "common.h"

using namespace example::activation_matmul;

int main() {
  example::printDevice();
  const Data d;
  const std::vector<float> zeros(kElements, 0.f);
  float *dx1 = example::upload(d.x1), *dx2 = example::upload(d.x2), *dx3 = example::upload(d.x3);
  float *dw = example::upload(d.w), *dh1 = example::upload(zeros), *dh2 = example::upload(zeros);
  float *dh3 = example::upload(zeros), *dy1 = example::alloc<float>(kTokens * kOut);
  float* dy2 = example::alloc<float>(kTokens * kOut);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const unsigned blocks = example::blocksFor(kElements, 256);
  const dim3 grid(kOut / 16, kTokens / 16), block(16, 16);
  for (int it = 0; it < kIterations; ++it) {
    silu<<<blocks, 256, 0, stream>>>(dx1, dh1, kElements);
    matmul_tiled<<<grid, block, 0, stream>>>(dh1, dw, dy1, kTokens, kOut, kIn);
    silu<<<blocks, 256, 0, stream>>>(dx2, dh2, kElements - kRagged);
    matmul_tiled<<<grid, block, 0, stream>>>(dh2, dw, dy2, kTokens, kOut, kIn);
    silu<<<blocks, 256, 0, stream>>>(dx3, dh3, kElements);
    matmul_tiled<<<grid, block, 0, stream>>>(dh3, dw, dx3, kTokens, kOut, kIn);
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> every;
  const size_t bad = check(d, example::download(dy1, size_t(kTokens) * kOut), example::download(dy2, size_t(kTokens) * kOut),
                           example::download(dx3, kElements), &every);
  for (float* p : {dx1, dx2, dx3, dw, dh1, dh2, dh3, dy1, dy2}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return example::finish("activation_matmul", bad, example::checksum(every));
}
