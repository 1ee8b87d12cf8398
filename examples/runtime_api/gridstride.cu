// out = relu(a * x + b) * gate with grid-stride loops, then act = gelu(0.5 * out) (a tiled scaling and a grid-stride
// GELU), launched with <<<>>>: the runtime-API twin of examples/driver_api/gridstride.
#include "../common/gridstride.h"
#include "../driver_api/gridstride.cu"
#include "common.h"

int main() {
  example::printDevice();
  const int n = 100003, iterations = 3;
  const unsigned blocks = 40, threads = 256;
  const float a = 0.75f, b = -1.5f;
  std::vector<float> x(n), gate(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float((i * 29) % 300 - 150) / 32.0f;
    gate[i] = float(i % 7) * 0.125f;
    const float v = a * x[i] + b;
    want[i] = (v > 0.f ? v : 0.f) * gate[i];
  }
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *dx = example::upload(x), *dg = example::upload(gate), *y = example::alloc<float>(n),
        *out = example::alloc<float>(n);
  using example::gridstride::kCols, example::gridstride::kRows;
  float *scaled = example::alloc<float>(n), *act = example::alloc<float>(n);
  const dim3 tiles((kCols + 15) / 16, (kRows + 15) / 16), tile(16, 16);
  for (int it = 0; it < iterations; ++it) {
    gs_axpb<<<blocks, threads, 0, stream>>>(dx, y, a, b, n);
    gs_relu_mul<<<blocks, threads, 0, stream>>>(y, dg, out, n);
    tile_scale<<<tiles, tile, 0, stream>>>(out, scaled, kRows, kCols, 0.5f);
    gs_gelu<<<blocks, threads, 0, stream>>>(scaled, act, kRows * kCols);
    CUDA_CHECK_LAUNCH();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  auto got = example::download(out, n);
  size_t bad = example::compare("out", got, want);
  const std::vector<float> want_act = example::gridstride::gelu(want);
  auto got_act = example::download(act, kRows * kCols);
  bad += example::compare("act", got_act, want_act, 1e-5);
  got.insert(got.end(), got_act.begin(), got_act.end());
  for (float* p : {dx, dg, y, out, scaled, act}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return example::finish("gridstride", bad, example::checksum(got));
}
