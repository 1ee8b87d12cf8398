// Kernels whose ptxas -v reports exercise the resource parser (resources_test.cpp). resources.ptx is this file's
// PTX: nvcc -ptx -arch=sm_80 resources.cu -o resources.ptx (CUDA 13.0), with the comment line on top.
__device__ float g_table[64];
__constant__ float c_coef[16];

// A device function: ptxas reports its properties without a "Compiling entry function" line.
__device__ __noinline__ float helper(float x, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += x * c_coef[i & 15];
  return s;
}

// Static shared memory, a barrier and a call.
__global__ void scale(float* out, const float* in, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  if (i < n) out[i] = helper(tile[255 - threadIdx.x], n) + g_table[i & 63];
}

// 64 live values under a 32-register cap: spills.
__global__ void __maxnreg__(32) heavy(float* out, const float* in, int n) {
  float v[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) v[k] = in[threadIdx.x + k * n];
  float s = 0;
#pragma unroll
  for (int k = 0; k < 64; ++k) s += v[k] * v[63 - k] * v[(k * 5) & 63];
  __syncthreads();
#pragma unroll
  for (int k = 0; k < 64; ++k) out[threadIdx.x + k * n] = v[k] * s;
}

// A mangled template instance with nothing special.
template <typename T>
__global__ void bump(T* p) { p[threadIdx.x] += 1; }
template __global__ void bump<int>(int*);
