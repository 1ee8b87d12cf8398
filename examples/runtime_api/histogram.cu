// 256-bin histogram with shared and global atomics: the runtime-API twin of examples/driver_api/histogram.
#include "../driver_api/histogram.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int n = 1 << 18;
  std::vector<unsigned char> data(n);
  std::vector<unsigned> want(256, 0);
  uint32_t seed = 7;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    data[i] = (unsigned char)((seed >> 16) ^ (seed >> 24) ^ (i & 3 ? 0 : 0x80));
    want[data[i]]++;
  }
  unsigned char* dd = example::upload(data);
  unsigned* dbins = example::alloc<unsigned>(256);
  CUDA_CHECK(cudaMemset(dbins, 0, 256 * sizeof(unsigned)));
  histogram<<<64, 256>>>(dd, dbins, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  auto bins = example::download(dbins, 256);
  size_t bad = example::compare("bins", bins, want);
  CUDA_CHECK(cudaFree(dd));
  CUDA_CHECK(cudaFree(dbins));
  return example::finish("histogram", bad, example::checksum(bins));
}
