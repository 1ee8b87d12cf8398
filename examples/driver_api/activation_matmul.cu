// An activation feeding a GEMM's operand: the prologue fusion engineers write by hand (the activation applied as
// the GEMM loads its input tile, the activated tensor never stored).

// y[i] = silu(x[i]) = x / (1 + e^-x), element-wise over n elements.
extern "C" __global__ void silu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v / (1.0f + __expf(-v));
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
