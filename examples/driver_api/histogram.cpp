#include "common.h"

int main(int argc, char** argv) {
  example::Session s(argc, argv, "histogram");
  const int n = 1 << 18;
  std::vector<unsigned char> data(n);
  std::vector<unsigned> want(256, 0);
  uint32_t seed = 7;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    data[i] = (unsigned char)((seed >> 16) ^ (seed >> 24) ^ (i & 3 ? 0 : 0x80));
    want[data[i]]++;
  }
  CUdeviceptr dd = example::upload(data), dbins;
  CU_CHECK(cuMemAlloc(&dbins, 256 * sizeof(unsigned)));
  CU_CHECK(cuMemsetD32(dbins, 0, 256));
  int nn = n;
  void* args[] = {&dd, &dbins, &nn};
  CU_CHECK(cuLaunchKernel(s.function("histogram"), 64, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU_CHECK(cuCtxSynchronize());
  auto bins = example::download<unsigned>(dbins, 256);
  size_t bad = example::compare("bins", bins, want);
  CU_CHECK(cuMemFree(dd));
  CU_CHECK(cuMemFree(dbins));
  return example::finish("histogram", bad, example::checksum(bins));
}
