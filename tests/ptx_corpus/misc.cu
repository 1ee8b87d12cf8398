// Less common PTX: indirect calls through function pointers (.callprototype), register limits (.maxnreg),
// exact block size (.reqntid), #pragma unroll 1 (.pragma "nounroll"), mbarrier (sm_90 barriers), inline PTX.
#include <cuda/barrier>

#pragma nv_diag_suppress static_var_with_dynamic_init

typedef float (*unary_fn)(float);
__device__ __noinline__ float twice(float x) { return 2.0f * x; }
__device__ __noinline__ float square(float x) { return x * x; }
__device__ unary_fn table[2] = {twice, square};

__global__ void indirect_call(const float* x, float* y, int which, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = table[which & 1](x[i]);
}

__global__ void __maxnreg__(32) limited_regs(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
#pragma unroll 1
  for (int k = 0; k < n; ++k) acc += x[(i + k) % n];
  y[i] = acc;
}

__global__ void __launch_bounds__(128, 4) bounded(float* y) {
  y[blockIdx.x * 128 + threadIdx.x] = 1.0f;
}

__global__ void inline_ptx(const unsigned* in, unsigned* out) {
  unsigned v = in[threadIdx.x], r;
  asm volatile("brev.b32 %0, %1;" : "=r"(r) : "r"(v));
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  out[threadIdx.x] = r ^ lane;
}

#if __CUDA_ARCH__ >= 800 || !defined(__CUDA_ARCH__)
// One m16n8k16 bf16 tensor-core MMA written as inline PTX (the mma instruction, not wmma).
__global__ void mma_bf16(const unsigned* a, const unsigned* b, float* c) {
  unsigned a0 = a[threadIdx.x * 4], a1 = a[threadIdx.x * 4 + 1], a2 = a[threadIdx.x * 4 + 2], a3 = a[threadIdx.x * 4 + 3];
  unsigned b0 = b[threadIdx.x * 2], b1 = b[threadIdx.x * 2 + 1];
  float d0, d1, d2, d3;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%10, %10, %10, %10};"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f));
  c[threadIdx.x * 4] = d0;
  c[threadIdx.x * 4 + 1] = d1;
  c[threadIdx.x * 4 + 2] = d2;
  c[threadIdx.x * 4 + 3] = d3;
}
#endif

#if __CUDA_ARCH__ >= 900 || !defined(__CUDA_ARCH__)
__global__ void mbarrier_wait(float* data) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  data[threadIdx.x] += 1.0f;
  bar.arrive_and_wait();
  data[threadIdx.x] *= 2.0f;
}
#endif

int main() { return 0; }
