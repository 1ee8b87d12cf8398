// c = a + b.
#include "common.h"

int main(int argc, char** argv) {
  example::Session s(argc, argv, "vector_add");
  const int n = 1 << 16;
  std::vector<float> a(n), b(n), want(n);
  for (int i = 0; i < n; ++i) {
    a[i] = float(i % 1000) * 0.5f;
    b[i] = 1.0f / float(i + 1);
    want[i] = a[i] + b[i];
  }
  CUdeviceptr da = example::upload(a), db = example::upload(b), dc = 0;
  CU_CHECK(cuMemAlloc(&dc, n * sizeof(float)));
  int nn = n;
  void* args[] = {&da, &db, &dc, &nn};
  CU_CHECK(
      cuLaunchKernel(s.function("vector_add"), example::blocksFor(n, 256), 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CU_CHECK(cuCtxSynchronize());
  auto c = example::download<float>(dc, n);
  size_t bad = example::compare("c", c, want);
  for (CUdeviceptr p : {da, db, dc}) CU_CHECK(cuMemFree(p));
  return example::finish("vector_add", bad, example::checksum(c));
}
