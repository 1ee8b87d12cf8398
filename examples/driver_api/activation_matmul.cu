// An activation feeding a GEMM's operand: the prologue fusion engineers write by hand (the activation applied as
// the GEMM loads its input tile, the activated tensor never stored). Two GEMMs: both staging 16x16 tiles through
// shared memory, the second loading them as float4 vectors.

// y[i] = silu(x[i]) = x / (1 + e^-x), element-wise over n elements.
extern "C" __global__ void silu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v / (1.0f + __expf(-v));
  }
}

// The same activation four elements at a time (n4 float4 vectors), as vectorised element-wise kernels store them.
extern "C" __global__ void silu_vec4(const float4* x, float4* y, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 v = x[i];
    y[i] = make_float4(v.x / (1.0f + __expf(-v.x)), v.y / (1.0f + __expf(-v.y)), v.z / (1.0f + __expf(-v.z)),
                       v.w / (1.0f + __expf(-v.w)));
  }
}

// c[m][n] = sum_k a[m][k] * w[k][n], 16x16 tiles staged through shared memory (the usual tiled GEMM).
constexpr int kTile = 16;
extern "C" __global__ void matmul_tiled(const float* a, const float* w, float* c, int m, int n, int k) {
  __shared__ float as[kTile][kTile];
  __shared__ float ws[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  float acc = 0.f;
  for (int t = 0; t < k; t += kTile) {
    as[ty][tx] = row < m && t + tx < k ? a[row * k + t + tx] : 0.f;
    ws[ty][tx] = t + ty < k && col < n ? w[(t + ty) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc = fmaf(as[ty][i], ws[i][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

// The same GEMM with 16x64 tiles of a loaded as float4 vectors, one per thread (k a multiple of 4, a 16-byte
// aligned), as vectorised GEMMs do.
constexpr int kTileK = 64;
extern "C" __global__ void matmul_tiled_vec4(const float* a, const float* w, float* c, int m, int n, int k) {
  __shared__ float as[kTile][kTileK];
  __shared__ float ws[kTileK][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y, lin = ty * kTile + tx;
  const int row0 = blockIdx.y * kTile, row = row0 + ty, col = blockIdx.x * kTile + tx;
  const int ar = lin / (kTileK / 4), ac = 4 * (lin % (kTileK / 4));  // this thread's float4 of the a tile
  float acc = 0.f;
  for (int t = 0; t < k; t += kTileK) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row0 + ar < m && t + ac < k) v = *reinterpret_cast<const float4*>(&a[(row0 + ar) * k + t + ac]);
    as[ar][ac] = v.x;
    as[ar][ac + 1] = v.y;
    as[ar][ac + 2] = v.z;
    as[ar][ac + 3] = v.w;
    for (int j = ty; j < kTileK; j += kTile) ws[j][tx] = t + j < k && col < n ? w[(t + j) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < kTileK; ++i) acc = fmaf(as[ty][i], ws[i][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}
