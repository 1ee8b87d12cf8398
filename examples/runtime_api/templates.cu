// Function templates instantiated for several types and a functor parameter: mangled kernel names
// (_Z9transformIf6SquareEvPKT_PS2_T0_i, ...) registered by cudart and launched with <<<>>>.
#include <cstdint>

#include "common.h"

struct Square {
  template <class T>
  __device__ T operator()(T v) const { return v * v; }
};
struct AddConstant {
  int c;
  template <class T>
  __device__ T operator()(T v) const { return v + T(c); }
};

template <class T, class Op>
__global__ void transform(const T* in, T* out, Op op, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = op(in[i]);
}

template <class T, class Op, class Ref>
size_t run(const char* what, Op op, Ref ref) {
  const int n = 3000;
  std::vector<T> in(n), want(n);
  for (int i = 0; i < n; ++i) in[i] = T(i % 50) - T(20), want[i] = ref(in[i], op);
  T *din = example::upload(in), *dout = example::alloc<T>(n);
  transform<<<example::blocksFor(n, 128), 128>>>(din, dout, op, n);
  CUDA_CHECK_LAUNCH();
  auto got = example::download(dout, n);
  CUDA_CHECK(cudaFree(din));
  CUDA_CHECK(cudaFree(dout));
  return example::compare(what, got, want);
}

int main() {
  example::printDevice();
  size_t bad = 0;
  bad += run<float>("float square", Square{}, [](float v, Square) { return v * v; });
  bad += run<double>("double square", Square{}, [](double v, Square) { return v * v; });
  bad += run<int>("int add", AddConstant{7}, [](int v, AddConstant a) { return v + a.c; });
  bad += run<int64_t>("int64 add", AddConstant{-3}, [](int64_t v, AddConstant a) { return v + int64_t(a.c); });
  return example::finish("templates", bad, double(bad));
}
