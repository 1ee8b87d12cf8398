// Kernels that take their tensors inside a struct passed by value, the way PyTorch's elementwise kernels do
// (vectorized_elementwise_kernel<4, Functor, std::array<char*, N>>(int n, Functor f, std::array<char*, N> data)):
// out = relu(x * a + y), as three launches of two templated kernels. No parameter is a pointer; the recorder finds
// the pointers inside the struct argument, so the trace still has the data flow.
#include "common.h"

template <int N>
struct Array {
  char* data[N];  // data[0] is the output, as in PyTorch
};

struct Scale {
  float a;
  __device__ float operator()(float x) const { return a * x; }
};
struct Relu {
  __device__ float operator()(float x) const { return x > 0.f ? x : 0.f; }
};
struct Add {
  __device__ float operator()(float x, float y) const { return x + y; }
};

template <class F>
__global__ void unary_kernel(int n, F f, Array<2> d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) reinterpret_cast<float*>(d.data[0])[i] = f(reinterpret_cast<const float*>(d.data[1])[i]);
}

template <class F>
__global__ void binary_kernel(int n, F f, Array<3> d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    reinterpret_cast<float*>(d.data[0])[i] =
        f(reinterpret_cast<const float*>(d.data[1])[i], reinterpret_cast<const float*>(d.data[2])[i]);
  }
}

int main() {
  example::printDevice();
  const int n = 1 << 14;
  const float a = 0.75f;
  std::vector<float> x(n), y(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float((i * 29) % 97 - 48) / 8.0f;
    y[i] = float(i % 11) - 5.0f;
    const float t = a * x[i] + y[i];
    want[i] = t > 0.f ? t : 0.f;
  }
  float *dx = example::upload(x), *dy = example::upload(y);
  float *t1 = example::alloc<float>(n), *t2 = example::alloc<float>(n), *out = example::alloc<float>(n);
  const unsigned grid = example::blocksFor(n, 128);
  unary_kernel<<<grid, 128>>>(n, Scale{a}, Array<2>{{reinterpret_cast<char*>(t1), reinterpret_cast<char*>(dx)}});
  binary_kernel<<<grid, 128>>>(
      n, Add{}, Array<3>{{reinterpret_cast<char*>(t2), reinterpret_cast<char*>(t1), reinterpret_cast<char*>(dy)}});
  unary_kernel<<<grid, 128>>>(n, Relu{}, Array<2>{{reinterpret_cast<char*>(out), reinterpret_cast<char*>(t2)}});
  CUDA_CHECK_LAUNCH();
  auto got = example::download(out, n);
  const size_t bad = example::compare("out", got, want);
  for (float* p : {dx, dy, t1, t2, out}) CUDA_CHECK(cudaFree(p));
  return example::finish("struct_args", bad, example::checksum(got));
}
