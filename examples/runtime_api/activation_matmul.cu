// silu -> matmul, the runtime-API twin of examples/driver_api/activation_matmul (<<<>>> launches): two prologue
// fusions (a tiled GEMM, a GEMM loading float4, and the tiled GEMM after a float4 activation) and two near misses,
// checked against the same C++ reference with the same tolerance.
#include "../common/activation_matmul.h"
#include "../driver_api/activation_matmul.cu"
#include "common.h"

using namespace example::activation_matmul;

int main() {
  example::printDevice();
  const Data d;
  const std::vector<float> zeros(kElements, 0.f);
  // Allocated in the driver-API program's order, so that the two traces match.
  float *dx1 = example::upload(d.x1), *dx2 = example::upload(d.x2), *dx3 = example::upload(d.x3);
  float *dx4 = example::upload(d.x4), *dx5 = example::upload(d.x5), *dw = example::upload(d.w);
  float *dh1 = example::upload(zeros), *dh2 = example::upload(zeros), *dh3 = example::upload(zeros);
  float *dh4 = example::upload(zeros), *dh5 = example::upload(zeros);
  float *dy1 = example::alloc<float>(kTokens * kOut), *dy2 = example::alloc<float>(kTokens * kOut);
  float *dy4 = example::alloc<float>(kTokens * kOut), *dy5 = example::alloc<float>(kTokens * kOut);
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
    silu<<<blocks, 256, 0, stream>>>(dx4, dh4, kElements);
    matmul_tiled_vec4<<<grid, block, 0, stream>>>(dh4, dw, dy4, kTokens, kOut, kIn);
    silu_vec4<<<example::blocksFor(kElements / 4, 256), 256, 0, stream>>>(reinterpret_cast<const float4*>(dx5),
                                                                          reinterpret_cast<float4*>(dh5), kElements / 4);
    matmul_tiled<<<grid, block, 0, stream>>>(dh5, dw, dy5, kTokens, kOut, kIn);
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> every;
  const size_t results = size_t(kTokens) * kOut;
  const size_t bad = check(d,
                           {example::download(dy1, results), example::download(dy2, results),
                            example::download(dx3, kElements), example::download(dy4, results),
                            example::download(dy5, results)},
                           &every);
  for (float* p : {dx1, dx2, dx3, dx4, dx5, dw, dh1, dh2, dh3, dh4, dh5, dy1, dy2, dy4, dy5}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return example::finish("activation_matmul", bad, example::checksum(every));
}
