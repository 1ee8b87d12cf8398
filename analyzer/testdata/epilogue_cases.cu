// Kernels for the epilogue (element-remapped) fusion tests, compiled to PTX at build time (nvcc -ptx -arch=sm_90).
// A 2-D producer writes a matrix; 1-D element-wise consumers follow it. The near misses must be refused, each
// for its own reason.

// Producer: c[row][col] = sum_i a[row][i] (a matmul's shape: 2-D grid, one store per thread outside the loop).
extern "C" __global__ void rowsum2d(const float* a, float* c, int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc += a[row * k + i] * (col + 1);
  c[row * n + col] = acc;
}

// Consumers, element-wise over m*n elements.
extern "C" __global__ void bias(float* c, const float* b, int m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m * n) c[i] += b[i % n];
}
extern "C" __global__ void act(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.1f * x[i];
}

// Near misses.
// Reads the next element with the guard left as it was (off by one): its last thread reads past the producer's
// elements. (A consistent shift alone is fine: thread i would simply run after element i + 1 is stored.)
extern "C" __global__ void act_next(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i + 1];
}
// Reads the matrix transposed.
extern "C" __global__ void transpose_read(const float* x, float* y, int m, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m * n) y[i] = x[(i % n) * m + i / n];
}
// Reads its neighbours (a 3-point stencil).
extern "C" __global__ void smooth(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0f;
}
// Reads a whole row in a loop (a row reduction after an element-wise producer).
extern "C" __global__ void row_total(const float* x, float* y, int m, int n) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m) return;
  float s = 0.f;
  for (int j = 0; j < n; ++j) s += x[r * n + j];
  y[r] = s;
}
// Producer writing each element from every row of its grid (columns only): elements written twice.
extern "C" __global__ void colfill2d(const float* a, float* c, int m, int n) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  c[col] = a[row * n + col];
}
// Producer storing its element twice.
extern "C" __global__ void store_twice2d(const float* a, float* c, int m, int n) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  c[row * n + col] = 0.f;
  c[row * n + col] = a[row * n + col] * 2.f;
}
// Producer whose guard leaves the last row unwritten.
extern "C" __global__ void skip_last_row2d(const float* a, float* c, int m, int n) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m - 1 || col >= n) return;
  c[row * n + col] = a[row * n + col] + 1.f;
}

// A 2-D element-wise producer (no loop): its reads have an affine footprint too.
extern "C" __global__ void scale2d(const float* a, float* c, int m, int n) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  c[row * n + col] = 2.f * a[row * n + col];
}

// Prologue fusion: `act` (element-wise, 1-D) folded into the loads of rowsum2d (2-D, reads a row in a loop), and
// its near misses (see epilogue_test.cpp). A producer that writes two outputs:
extern "C" __global__ void act_both(const float* x, float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = x[i] > 0.f ? x[i] : 0.f;
    z[i] = x[i];
  }
}
// A producer whose thread i writes element 2i (strided): thread e does not write element e.
extern "C" __global__ void act_strided(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[2 * i] = x[i] > 0.f ? x[i] : 0.f;
}
// A producer storing four elements per thread as a float4 (n4 vectors).
extern "C" __global__ void act_vec4(const float4* x, float4* y, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    y[i] = make_float4(v.x > 0.f ? v.x : 0.f, v.y > 0.f ? v.y : 0.f, v.z > 0.f ? v.z : 0.f, v.w > 0.f ? v.w : 0.f);
  }
}
