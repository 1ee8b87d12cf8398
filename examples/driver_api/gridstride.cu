// Grid-stride loops, the most common element-wise idiom in CUDA code: a fixed grid (a few waves of the GPU) walks
// n elements, each thread taking i, i + gridDim.x * blockDim.x, ... Two such kernels of one launch shape touch
// element i in the same thread, for any n (the thread-local fusion of grid-stride loops).
extern "C" __global__ void gs_axpb(const float* x, float* y, float a, float b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + b;
}
extern "C" __global__ void gs_relu_mul(const float* y, const float* gate, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = y[i];
    out[i] = (v > 0.f ? v : 0.f) * gate[i];
  }
}
