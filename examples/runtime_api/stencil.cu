// 5-point Jacobi sweeps on a 2D grid of blocks: the runtime-API twin of examples/driver_api/stencil.
#include <utility>

#include "../driver_api/stencil.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int w = 192, h = 160, sweeps = 6;
  std::vector<float> a(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) a[y * w + x] = (x == 0 || y == 0) ? 100.0f : float((x * 7 + y * 3) % 11);
  float *d0 = example::upload(a), *d1 = example::alloc<float>(a.size());
  for (int it = 0; it < sweeps; ++it) {
    jacobi<<<dim3((w + 15) / 16, (h + 15) / 16), dim3(16, 16)>>>(d0, d1, w, h);
    CUDA_CHECK_LAUNCH();
    std::swap(d0, d1);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  auto got = example::download(d0, a.size());
  std::vector<float> b(a.size());
  for (int it = 0; it < sweeps; ++it) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        int i = y * w + x;
        b[i] = (x == 0 || y == 0 || x == w - 1 || y == h - 1) ? a[i]
                                                              : 0.25f * (a[i - w] + a[i + w] + a[i - 1] + a[i + 1]);
      }
    std::swap(a, b);
  }
  size_t bad = example::compare("grid", got, a);
  CUDA_CHECK(cudaFree(d0));
  CUDA_CHECK(cudaFree(d1));
  return example::finish("stencil", bad, example::checksum(got));
}
