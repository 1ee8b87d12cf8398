// Kernels for BlockRanges tests (ranges_test.cpp); block_loops.ptx is `nvcc -ptx -arch=sm_90` output of this file.
// Row per block: block b touches row b only.
extern "C" __global__ void residual_add_rows(float* x, const float* r, int h) {
  float* xr = x + blockIdx.x * h;
  const float* rr = r + blockIdx.x * h;
  for (int j = threadIdx.x; j < h; j += blockDim.x) xr[j] += rr[j];
}
// Grid-stride: block b touches elements b*ntid + k*nctaid*ntid.
extern "C" __global__ void residual_add_strided(float* x, const float* r, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] += r[i];
}
// Row per block with a shared-memory reduction.
extern "C" __global__ void row_sum(const float* x, float* out, int h) {
  __shared__ float red[256];
  float s = 0.f;
  for (int j = threadIdx.x; j < h; j += blockDim.x) s += x[blockIdx.x * h + j];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = red[0];
}
// A gather: the address comes from memory.
extern "C" __global__ void gather(const float* x, const int* idx, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[idx[i]];
}
// A loop bounded by data: the trip count is loaded.
extern "C" __global__ void data_bound(const float* x, const int* len, float* y) {
  float s = 0.f;
  for (int j = threadIdx.x; j < len[blockIdx.x]; j += blockDim.x) s += x[j];
  y[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// c[m][n] = sum_k a[m][k] * w[k][n]: nvcc unrolls the k loop by four, bumping pointers and counting down.
extern "C" __global__ void matmul(const float* a, const float* w, float* c, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc = fmaf(a[row * k + i], w[i * n + col], acc);
  c[row * n + col] = acc;
}
// Barriers after an early return: one that depends on the thread (some threads leave while others meet the
// barrier) and one uniform in the block.
extern "C" __global__ void early_exit_then_barrier(float* x, int n) {
  __shared__ float s[128];
  if (threadIdx.x >= n) return;
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[(threadIdx.x + 1) % n];
}
extern "C" __global__ void uniform_exit_then_barrier(float* x, int n) {
  __shared__ float s[128];
  if (blockIdx.x >= n) return;
  s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  x[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}
