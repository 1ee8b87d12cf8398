// Device-function calls (not inlined), structs by value, templates, printf, local arrays.
#include <cstdio>

struct Params {
  float alpha;
  float beta;
  int n;
  int pad;
  double bias;
};

__device__ __noinline__ float combine(float a, float b, float alpha) { return alpha * a + b; }

__global__ void struct_arg(Params p, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) y[i] = combine(x[i], p.beta, p.alpha) + (float)p.bias;
}

template <typename T, int K>
__global__ void stencil(const T* in, T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= K && i < n - K) {
    T acc = T(0);
#pragma unroll
    for (int k = -K; k <= K; ++k) acc += in[i + k];
    out[i] = acc;
  }
}
template __global__ void stencil<float, 1>(const float*, float*, int);
template __global__ void stencil<double, 2>(const double*, double*, int);

__global__ void say_hello(int tag) {
  if (threadIdx.x == 0) printf("hello from block %d tag %d\n", blockIdx.x, tag);
}

__global__ void local_array(const int* in, int* out, int n) {
  int buf[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 32; ++k) buf[k] = in[(i + k) % n];
  out[i % n] = buf[in[i % n] & 31];
}

__constant__ float kCoeffs[4] = {1.0f, 0.5f, 0.25f, 0.125f};
__device__ int gCounter;
__managed__ float gManagedBias;  // `.global .attribute(.managed)`

__global__ void use_constant(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = kCoeffs[0] * x[i] + kCoeffs[i & 3] + gManagedBias;
    atomicAdd(&gCounter, 1);
  }
}

int main() { return 0; }
