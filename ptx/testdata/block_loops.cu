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
// A GEMM loading its w tile by rows of threads: row j = tid.y, tid.y + 16, ... below a constant 64 (the
// activation_matmul example's matmul_tiled_vec4). nvcc unrolls the row loop by four and tests the row before its
// increment (`setp.lt p, j, 0; add t, j, 64; mov j, t; @p bra`), from a start that differs by thread.
extern "C" __global__ void tile_rows(const float* a, const float* w, float* c, int m, int n, int k) {
  __shared__ float as[16][64];
  __shared__ float ws[64][16];
  const int tx = threadIdx.x, ty = threadIdx.y, lin = ty * 16 + tx;
  const int row0 = blockIdx.y * 16, row = row0 + ty, col = blockIdx.x * 16 + tx;
  const int ar = lin / 16, ac = 4 * (lin % 16);
  float acc = 0.f;
  for (int t = 0; t < k; t += 64) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row0 + ar < m && t + ac < k) v = *reinterpret_cast<const float4*>(&a[(row0 + ar) * k + t + ac]);
    as[ar][ac] = v.x;
    as[ar][ac + 1] = v.y;
    as[ar][ac + 2] = v.z;
    as[ar][ac + 3] = v.w;
    for (int j = ty; j < 64; j += 16) ws[j][tx] = t + j < k && col < n ? w[(t + j) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < 64; ++i) acc = fmaf(as[ty][i], ws[i][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}
// Grid-stride with the stride a parameter: nvcc unrolls by four after a remainder loop that counts `trips & 3` down
// to 0 from a start that differs by thread.
extern "C" __global__ void scale_strided(float* z, const float* x, int s, int n) {
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += s) z[e] = x[e] * 2.f + 1.f;
}
// Grid-stride whose exit test reads the index plus an offset (`add j, i, k; setp.lt j, n` after i's step).
extern "C" __global__ void sum_strided_ahead(float* y, const float* z, int k, int s, int n) {
  float acc = 0.f;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e + k < n; e += s) acc += z[e + k];
  y[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
