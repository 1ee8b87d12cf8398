#include "common.h"

int main(int argc, char** argv) {
  example::Session s(argc, argv, "reduction");
  const int n = 1 << 18, blocks = 64, threads = 256;
  std::vector<float> in(n);
  double want = 0;
  for (int i = 0; i < n; ++i) {
    in[i] = float((i * 2654435761u >> 20) % 16);  // small integers: every partial sum is exact
    want += in[i];
  }
  CUdeviceptr din = example::upload(in), dpart, dout;
  CU_CHECK(cuMemAlloc(&dpart, blocks * sizeof(float)));
  CU_CHECK(cuMemAlloc(&dout, sizeof(float)));
  CUfunction f = s.function("reduce_sum");
  int nn = n, nb = blocks;
  void* a1[] = {&din, &dpart, &nn};
  CU_CHECK(cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, threads * sizeof(float), nullptr, a1, nullptr));
  void* a2[] = {&dpart, &dout, &nb};
  CU_CHECK(cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, threads * sizeof(float), nullptr, a2, nullptr));
  CU_CHECK(cuCtxSynchronize());
  auto got = example::download<float>(dout, 1);
  size_t bad = example::compare("sum", got, std::vector<float>{float(want)});
  for (CUdeviceptr p : {din, dpart, dout}) CU_CHECK(cuMemFree(p));
  return example::finish("reduction", bad, got[0]);
}
