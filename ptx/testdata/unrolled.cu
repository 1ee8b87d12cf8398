// Grid-stride loops nvcc unrolls (ptx/src/loops_test.cpp, GridStrideElementView). Regenerate unrolled.ptx with
//   nvcc -arch=sm_90 -ptx -o unrolled.ptx unrolled.cu
// The step held in a variable: nvcc unrolls the loop four times behind a remainder loop.
extern "C" __global__ void gsu_scale(float* out, const float* in, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i] * 2.f;
}
// A bias added in place, its index taken modulo the row length, the bound a product of two parameters.
extern "C" __global__ void gsu_bias(float* out, const float* bias, int rows, int cols) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows * cols; i += stride) out[i] += bias[i % cols];
}
// A longer body (tanh approximation inlined, no branch).
extern "C" __global__ void gsu_gelu(float* out, const float* in, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float x = in[i];
    out[i] = 0.5f * x * (1.0f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));
  }
}
// Reads its neighbour (out holds n + 1 values): the layout holds and the view is found; that two iterations touch
// one element is the analyzer's to see.
extern "C" __global__ void gsu_next(float* out, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = out[i + 1];
}
// The step is a parameter, not the launch's threads.
extern "C" __global__ void gsu_param_stride(float* out, const float* in, int n, int stride) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i] * 2.f;
}
// A running sum carried from one iteration to the next.
extern "C" __global__ void gsu_running(float* out, const float* in, int n) {
  const int stride = gridDim.x * blockDim.x;
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    acc += in[i];
    out[i] = acc;
  }
}
// Reads the thread's index in its body.
extern "C" __global__ void gsu_reads_tid(float* out, int n) {
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = float(threadIdx.x);
}
