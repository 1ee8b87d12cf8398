// c = a + b: the runtime-API twin of examples/driver_api/vector_add (same kernel, same launch, same buffers).
#include "../driver_api/vector_add.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int n = 1 << 16;
  std::vector<float> a(n), b(n), want(n);
  for (int i = 0; i < n; ++i) {
    a[i] = float(i % 1000) * 0.5f;
    b[i] = 1.0f / float(i + 1);
    want[i] = a[i] + b[i];
  }
  float *da = example::upload(a), *db = example::upload(b), *dc = example::alloc<float>(n);
  vector_add<<<example::blocksFor(n, 256), 256>>>(da, db, dc, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  auto c = example::download(dc, n);
  size_t bad = example::compare("c", c, want);
  for (float* p : {da, db, dc}) CUDA_CHECK(cudaFree(p));
  return example::finish("vector_add", bad, example::checksum(c));
}
