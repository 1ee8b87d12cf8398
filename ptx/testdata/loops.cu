// Counted loops as nvcc lays them out (ptx/src/loops_test.cpp). Regenerate loops.ptx with
//   nvcc -arch=sm_90 -ptx -o loops.ptx loops.cu
// The grid-stride idiom with an int index: one loop block, `i += gridDim.x * blockDim.x`.
extern "C" __global__ void gs_axpb(const float* x, float* y, float a, float b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + b;
}
extern "C" __global__ void gs_relu_mul(const float* y, const float* gate, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = y[i];
    out[i] = (v > 0.f ? v : 0.f) * gate[i];
  }
}
// Half the launch's threads as the step: the same start, another step.
extern "C" __global__ void gs_half_stride(const float* y, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x / 2) out[i] = y[i] * 2.f;
}
// Starts one thread later.
extern "C" __global__ void gs_shifted_start(const float* y, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x + 1; i < n; i += gridDim.x * blockDim.x) out[i] = y[i] * 2.f;
}
// A size_t index: a 64-bit induction variable.
extern "C" __global__ void gs_size_t(const float* y, float* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) out[i] = y[i] * 2.f;
}
// Unrolled four times: a remainder loop and a main loop.
extern "C" __global__ void gs_unrolled(const float* y, float* out, int n) {
#pragma unroll 4
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = y[i] * 2.f;
}
// No loop.
extern "C" __global__ void one_element(const float* y, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = y[i] * 2.f;
}
// The body reads the thread index itself: not the same kernel as one element per thread.
extern "C" __global__ void gs_reads_tid(const float* y, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = y[i] + float(threadIdx.x);
}
// A running sum carried from one iteration to the next.
extern "C" __global__ void gs_running_sum(const float* y, float* out, int n) {
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    acc += y[i];
    out[i] = acc;
  }
}
// The stride passed as an argument.
extern "C" __global__ void gs_param_stride(const float* y, float* out, int n, int stride) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = y[i] * 2.f;
}
// threadIdx.x + blockDim.x * blockIdx.x, the bound read after the index: the same loop as gs_axpb.
extern "C" __global__ void gs_other_order(const float* y, float* out, int n) {
  for (int i = threadIdx.x + blockDim.x * blockIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = y[i] * 2.f;
}
