// A transformer-style MLP block: layernorm -> matmul -> bias add -> GELU -> matmul -> residual add.
extern "C" __global__ void layernorm(const float* x, float* y, const float* gamma, const float* beta, int h) {
  extern __shared__ float red[];
  const float* row = x + blockIdx.x * h;
  float s = 0.f, s2 = 0.f;
  for (int i = threadIdx.x; i < h; i += blockDim.x) {
    float v = row[i];
    s += v;
    s2 += v * v;
  }
  red[threadIdx.x] = s;
  red[blockDim.x + threadIdx.x] = s2;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      red[threadIdx.x] += red[threadIdx.x + k];
      red[blockDim.x + threadIdx.x] += red[blockDim.x + threadIdx.x + k];
    }
    __syncthreads();
  }
  float mean = red[0] / h;
  float var = red[blockDim.x] / h - mean * mean;
  float inv = rsqrtf(var + 1e-5f);
  for (int i = threadIdx.x; i < h; i += blockDim.x) y[blockIdx.x * h + i] = (row[i] - mean) * inv * gamma[i] + beta[i];
}

// c[m][n] = sum_k a[m][k] * w[k][n]
extern "C" __global__ void matmul(const float* a, const float* w, float* c, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc = fmaf(a[row * k + i], w[i * n + col], acc);
  c[row * n + col] = acc;
}

extern "C" __global__ void bias_add(float* c, const float* b, int m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m * n) c[i] += b[i % n];
}

extern "C" __global__ void gelu(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

extern "C" __global__ void residual_add(float* x, const float* r, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += r[i];
}
