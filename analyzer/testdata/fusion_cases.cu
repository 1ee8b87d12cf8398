// Kernels for the analyzer's legality tests, compiled to PTX at build time (nvcc -ptx -arch=sm_90).
// Each pair is a producer and a consumer a vertical fusion might join.

// Elementwise producer/consumer: each thread reads only what the same thread wrote -> proven.
__global__ void produce(const float* in, float* mid, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) mid[i] = in[i] * 2.0f;
}
__global__ void consume(const float* mid, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mid[i] + 1.0f;
}

// A 3-point stencil reads its neighbours' values -> blocked.
__global__ void blur(const float* mid, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) out[i] = (mid[i - 1] + mid[i] + mid[i + 1]) / 3.0f;
}

// A gather through an index array: the address is data-dependent, not affine -> likely (not proven).
__global__ void gather(const float* mid, const int* idx, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mid[idx[i]];
}

// Atomics on the shared buffer: every producer thread must finish first -> blocked.
__global__ void histogram(const int* keys, unsigned* bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[keys[i] & 255], 1u);
}
__global__ void normalize(const unsigned* bins, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = bins[i] / 256.0f;
}
// Grid-stride loops over the launch's threads: the same steps when n is the same (one merged loop when fused).
__global__ void gs_produce(const float* in, float* mid, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) mid[i] = in[i] * 2.0f;
}
__global__ void gs_consume(const float* mid, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = mid[i] + 1.0f;
}
// In place, each iteration reading the element the next one writes: run in another order (one element per
// thread), a thread could read an element already overwritten.
__global__ void gs_shift(const float* mid, float* a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = a[i + 1] + mid[i];
}
