#include <utility>

#include "common.h"

int main(int argc, char** argv) {
  example::Session s(argc, argv, "stencil");
  const int w = 192, h = 160, sweeps = 6;
  std::vector<float> a(w * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) a[y * w + x] = (x == 0 || y == 0) ? 100.0f : float((x * 7 + y * 3) % 11);
  CUdeviceptr d0 = example::upload(a), d1;
  CU_CHECK(cuMemAlloc(&d1, a.size() * sizeof(float)));
  CUfunction f = s.function("jacobi");
  int ww = w, hh = h;
  for (int it = 0; it < sweeps; ++it) {
    void* args[] = {&d0, &d1, &ww, &hh};
    CU_CHECK(cuLaunchKernel(f, (w + 15) / 16, (h + 15) / 16, 1, 16, 16, 1, 0, nullptr, args, nullptr));
    std::swap(d0, d1);
  }
  CU_CHECK(cuCtxSynchronize());
  auto got = example::download<float>(d0, a.size());
  std::vector<float> b(a.size());
  for (int it = 0; it < sweeps; ++it) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        int i = y * w + x;
        b[i] =
            (x == 0 || y == 0 || x == w - 1 || y == h - 1) ? a[i] : 0.25f * (a[i - w] + a[i + w] + a[i - 1] + a[i + 1]);
      }
    std::swap(a, b);
  }
  size_t bad = example::compare("grid", got, a);
  CU_CHECK(cuMemFree(d0));
  CU_CHECK(cuMemFree(d1));
  return example::finish("stencil", bad, example::checksum(got));
}
