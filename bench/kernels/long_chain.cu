// Two long elementwise kernels for the rewriter benchmark: fully unrolled, about 5,000 PTX instructions each,
// so their vertical fusion is a kernel of about 10,000 instructions.
extern "C" __global__ void long_a(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
#pragma unroll
  for (int k = 0; k < 1660; ++k) v = fmaf(v, 1.0001f, static_cast<float>(k)) * 0.5f;
  y[i] = v;
}
extern "C" __global__ void long_b(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = y[i];
#pragma unroll
  for (int k = 0; k < 1660; ++k) v = fmaf(v, 0.9999f, static_cast<float>(k)) * 1.5f;
  z[i] = v;
}
