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
// A 2-D producer (a matrix's tiles, as a GEMM's output is written) followed by a grid-stride GELU on another launch
// shape: an epilogue, the GELU's loop run as one element per thread inside the producer.
extern "C" __global__ void tile_scale(const float* x, float* y, int rows, int cols, float s) {
  const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows && c < cols) y[r * cols + c] = x[r * cols + c] * s;
}
extern "C" __global__ void gs_gelu(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}
