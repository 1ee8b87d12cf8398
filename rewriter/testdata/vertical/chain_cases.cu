// Kernels for the vertical fusion tests (compiled to PTX by nvcc at build time).

// An early return in the first kernel must not skip the second: a thread past `n` of early_a still runs late_b.
extern "C" __global__ void early_a(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = x[i] * 2.0f;
}
extern "C" __global__ void late_b(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] + 1.0f;
}

// Read-only loads (ld.global.nc) of a buffer the first kernel writes must become plain loads once fused.
extern "C" __global__ void ldg_b(const float* __restrict__ y, float* __restrict__ z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = __ldg(&y[i]) * 3.0f;
}

// Vector stores and loads: forwarding works element by element.
extern "C" __global__ void vec_a(const float4* x, float4* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 v = x[i];
    y[i] = make_float4(v.x + 1.f, v.y + 2.f, v.z + 3.f, v.w + 4.f);
  }
}
extern "C" __global__ void vec_b(const float4* y, float4* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 v = y[i];
    z[i] = make_float4(v.x * v.y, v.z * v.w, v.x - v.w, v.y + v.z);
  }
}

// A block barrier in a kernel that is not the last of the chain: refused.
extern "C" __global__ void staged_a(const float* x, float* y, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) y[i] = tile[threadIdx.x] + tile[(threadIdx.x + 1) % blockDim.x];
}

// Grid-stride loops (with gridstride.ptx's gs_axpb, which writes y): a consumer that reads the element of the
// thread's next step (y must hold n + step elements), which the producer writes one iteration later. Running the
// loops one after the other is right; one merged loop would read it before it is written.
extern "C" __global__ void gs_read_next(const float* y, float* out, int n) {
  const int step = gridDim.x * blockDim.x;
#pragma unroll 1
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) out[i] = y[i + step];
}
// Reads and writes the producer's element in place.
extern "C" __global__ void gs_square_inplace(float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = y[i] * y[i];
}
