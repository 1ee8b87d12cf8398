// Kernels for the parameter-influence tests (ptx/src/influence_test.cpp); influence.ptx is
// `nvcc -ptx -arch=sm_90 influence.cu` (CUDA 13.0). Parameter names say what each scalar does.
extern "C" {

// k reaches the address only through min: the proof must depend on it. alpha only scales the stored value.
__global__ void min_index(float* y, const float* x, int k, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[min(i, k)];
}
__global__ void max_index(float* y, const float* x, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[max(i, k)];
}
__global__ void div_mod_index(float* y, const float* x, int d, int m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i / d] + x[i % m];
}
__global__ void shift_and_index(float* y, const float* x, int s, unsigned mask, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[(i >> s) & mask];
}
__global__ void select_index(float* y, const float* x, int flip, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[flip ? n - 1 - i : i];
}
// The trip count comes from `reps`; `bias` only changes the data.
__global__ void loop_count(float* y, const float* x, int reps, float bias, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = bias;
  for (int r = 0; r < reps; ++r) s += x[i + r];
  y[i] = s;
}
// An optional pointer: whether bias is null decides whether it is read.
__global__ void optional_bias(float* y, const float* x, const float* bias, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * scale + (bias ? bias[i] : 0.f);
}
// The row width from dynamic shared memory's size.
__global__ void dyn_smem_rows(float* y, const float* x, int n) {
  extern __shared__ float tile[];
  int w = (int)(blockDim.x < 1024 ? blockDim.x : 1024);
  int cols = 0;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(cols));
  cols /= 4;
  int i = blockIdx.x * cols + threadIdx.x;
  if (threadIdx.x < cols && i < n) tile[threadIdx.x] = x[i];
  __syncthreads();
  if (threadIdx.x < cols && i < n) y[i] = tile[(threadIdx.x + 1) % w % cols];
}
// A value kept in a local array and read back as an index.
__global__ void local_array_index(float* y, const float* x, int k, int n) {
  int idx[4];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = 0; j < 4; ++j) idx[j] = (j == (i & 3)) ? k : i;
  if (i < n) y[i] = x[idx[(i >> 2) & 3]];
}
}

// Pointers used as numbers: an index from an address's low bits, and from the distance between two allocations.
// Their absolute values matter (a proof must pin them), unlike a pointer used as a base or checked for null.
extern "C" __global__ void pointer_bits(float* y, const float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int k = (int)(((unsigned long long)z & 0xFFFF) >> 2);
  if (i < n) y[i] = z[max(i, k)];
}
extern "C" __global__ void pointer_distance(float* y, const float* z, const float* q, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int k = (int)(q - z);
  if (i < n) y[i] = z[max(i, k)];
}
