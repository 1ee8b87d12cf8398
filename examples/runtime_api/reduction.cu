// Two-pass sum with dynamic shared memory and warp shuffles: the runtime-API twin of
// examples/driver_api/reduction.
#include "../driver_api/reduction.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int n = 1 << 18, blocks = 64, threads = 256;
  std::vector<float> in(n);
  double want = 0;
  for (int i = 0; i < n; ++i) {
    in[i] = float((i * 2654435761u >> 20) % 16);  // small integers: every partial sum is exact
    want += in[i];
  }
  float *din = example::upload(in), *dpart = example::alloc<float>(blocks), *dout = example::alloc<float>(1);
  reduce_sum<<<blocks, threads, threads * sizeof(float)>>>(din, dpart, n);
  reduce_sum<<<1, threads, threads * sizeof(float)>>>(dpart, dout, blocks);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  auto got = example::download(dout, 1);
  size_t bad = example::compare("sum", got, std::vector<float>{float(want)});
  for (float* p : {din, dpart, dout}) CUDA_CHECK(cudaFree(p));
  return example::finish("reduction", bad, got[0]);
}
