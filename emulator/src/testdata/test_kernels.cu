// Kernels for the emulator unit tests. Compiled with `nvcc -ptx -arch=sm_90` at build time; the tests check
// exact results computed by hand or by a C++ reference.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdio>

extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void reduce_dyn(const float* in, float* out, int n) {
  extern __shared__ float s[];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void hist(const unsigned* in, unsigned* h, int n) {
  __shared__ unsigned local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[in[i] % 16], 1u);
  __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&h[threadIdx.x], local[threadIdx.x]);
}

extern "C" __global__ void atomics_mix(int* v, unsigned* u, float* f, unsigned long long* w) {
  int t = threadIdx.x;
  atomicMax(&v[0], t);
  atomicMin(&v[1], -t);
  atomicAnd(&u[0], ~(1u << (t % 32)));
  atomicOr(&u[1], 1u << (t % 32));
  atomicXor(&u[2], t);
  atomicInc(&u[3], 9u);
  atomicDec(&u[4], 100u);
  atomicCAS(&v[2], t, t + 1000);  // only thread 0 matches (initial 0)
  atomicExch(&v[3], 7);
  atomicAdd(&f[0], 0.5f);
  atomicAdd(&w[0], 1ull << 33);
}

extern "C" __global__ void warp_ops(unsigned* out) {
  unsigned lane = threadIdx.x;
  unsigned v = lane * 3 + 1;
  out[lane] = __shfl_down_sync(0xffffffffu, v, 3);
  out[32 + lane] = __shfl_up_sync(0xffffffffu, v, 5);
  out[64 + lane] = __shfl_xor_sync(0xffffffffu, v, 6);
  out[96 + lane] = __shfl_sync(0xffffffffu, v, 7);
  out[128 + lane] = __shfl_sync(0xffffffffu, v, lane + 1, 8);  // width 8
  out[160 + lane] = __ballot_sync(0xffffffffu, (lane % 3) == 0);
  out[192 + lane] = __any_sync(0xffffffffu, lane == 17) + 2 * __all_sync(0xffffffffu, lane < 32) +
                    4 * __all_sync(0xffffffffu, lane < 31);
  out[224 + lane] = __match_any_sync(0xffffffffu, lane / 4);
  if (lane & 1) out[256 + lane] = __activemask();
  else out[256 + lane] = 0;
  float x = float(lane);
  for (int k = 16; k > 0; k >>= 1) x += __shfl_xor_sync(0xffffffffu, x, k);
  out[288 + lane] = unsigned(x);
}

extern "C" __global__ void divergence(const int* in, int* out) {
  int t = threadIdx.x;
  int x = in[t];
  int acc = 0;
  if (x % 2 == 0) {
    for (int i = 0; i < x; ++i) acc += i;
    if (x > 10) acc = -acc;
  } else {
    int i = x;
    while (i > 1) {
      i = (i % 2) ? 3 * i + 1 : i / 2;
      ++acc;
    }
  }
  // Reconverged: a warp-wide shuffle needs every lane.
  acc += __shfl_xor_sync(0xffffffffu, t, 1);
  out[t] = acc;
}

extern "C" __global__ void barrier_multiwarp(int* out) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = t * 2;
  __syncthreads();
  int v = s[(t + 37) % blockDim.x];
  __syncthreads();
  s[t] = v + 1;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t] + blockIdx.x;
}

extern "C" __global__ void half_ops(const __half* a, const __half* b, __half* o, float* f, __nv_bfloat16* bo) {
  int i = threadIdx.x;
  __half x = a[i], y = b[i];
  o[4 * i + 0] = __hadd(x, y);
  o[4 * i + 1] = __hmul(x, y);
  o[4 * i + 2] = __hfma(x, y, x);
  o[4 * i + 3] = __float2half(__half2float(x) / 3.0f);
  f[i] = __half2float(x) * 2.0f + __half2float(y);
  __nv_bfloat16 bx = __float2bfloat16(__half2float(x));
  bo[i] = __hadd(bx, __float2bfloat16(1.0f));
  __half2 h2 = __halves2half2(x, y);
  __half2 r2 = __hmul2(h2, h2);
  f[32 + i] = __low2float(r2) + __high2float(r2);
}

extern "C" __global__ void int_ops(const int* a, const int* b, long long* o) {
  int i = threadIdx.x;
  int x = a[i], y = b[i];
  unsigned ux = unsigned(x);
  long long* r = o + 16 * i;
  r[0] = x / y;
  r[1] = x % y;
  r[2] = __mulhi(x, y);
  r[3] = __umulhi(ux, unsigned(y));
  r[4] = __popc(ux);
  r[5] = __clz(x);
  r[6] = __brev(ux);
  r[7] = (ux >> 3) & 0x1f;  // bfe
  r[8] = x >> (i % 31);
  r[9] = ux >> (i % 31);
  r[10] = (long long)x * (long long)y;
  r[11] = min(x, y) + max(x, y) * 3;
  r[12] = __byte_perm(ux, unsigned(y), 0x5140);
  r[13] = (ux & 0xf0f0f0f0u) | (~ux & 0x0f0f0f0fu) ^ unsigned(y);
  r[14] = __sad(x, y, 5u);
  r[15] = (long long)(unsigned long long)(~0ull / (unsigned long long)(unsigned(y) | 1u));
}

extern "C" __global__ void cvt_ops(const float* f, int* o, float* of) {
  int i = threadIdx.x;
  float x = f[i];
  o[8 * i + 0] = __float2int_rn(x);
  o[8 * i + 1] = __float2int_rz(x);
  o[8 * i + 2] = __float2int_rd(x);
  o[8 * i + 3] = __float2int_ru(x);
  o[8 * i + 4] = (int)__float2uint_rn(x);
  o[8 * i + 5] = (int)(signed char)x;
  o[8 * i + 6] = (int)__saturatef(x) * 100;
  o[8 * i + 7] = (int)(long long)x;
  of[4 * i + 0] = __fadd_rz(x, 1e-8f);
  of[4 * i + 1] = __fmul_rd(x, 1.1f);
  of[4 * i + 2] = __fmaf_ru(x, 1.1f, 0.3f);
  of[4 * i + 3] = (float)(double(x) / 3.0);
}

extern "C" __global__ void math_ops(const float* f, float* o) {
  int i = threadIdx.x;
  float x = f[i];
  o[8 * i + 0] = __expf(x);
  o[8 * i + 1] = __sinf(x);
  o[8 * i + 2] = __cosf(x);
  o[8 * i + 3] = rsqrtf(fabsf(x) + 1.0f);
  o[8 * i + 4] = __fdividef(x, 3.0f);
  o[8 * i + 5] = tanhf(x);
  o[8 * i + 6] = sqrtf(fabsf(x));
  o[8 * i + 7] = __log2f(fabsf(x) + 1.0f);
}

__device__ __noinline__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
__device__ __noinline__ float scale3(float a, float b, float c) { return a * 2.f + b * 3.f + c; }

extern "C" __global__ void calls(int* o, float* of) {
  int t = threadIdx.x;
  o[t] = fact(t % 8);
  of[t] = scale3(float(t), 1.0f, -2.0f);
}

extern "C" __global__ void prints(int tag) {
  if (threadIdx.x < 2) printf("tag=%d thread=%d half=%.2f str=%s\n", tag, (int)threadIdx.x, 0.5, "ok");
}

extern "C" __global__ void oob(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  p[i + n] = 1.0f;  // every thread writes past the end
}

extern "C" __global__ void local_array(const int* in, int* out) {
  int a[16];
  int t = threadIdx.x;
  for (int i = 0; i < 16; ++i) a[i] = in[(t + i) % 32] * i;
  int k = in[t] & 15;
  out[t] = a[k] + a[(k + 5) & 15];
}

extern "C" __global__ void grid3d(int* out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  int w = gridDim.x * blockDim.x, h = gridDim.y * blockDim.y;
  out[(z * h + y) * w + x] = x + 100 * y + 10000 * z;
}

extern "C" __global__ void dbl_ops(const double* a, double* o) {
  int i = threadIdx.x;
  double x = a[i];
  o[4 * i + 0] = x * 1.5 + 0.25;
  o[4 * i + 1] = x / 7.0;
  o[4 * i + 2] = sqrt(fabs(x));
  o[4 * i + 3] = fma(x, x, -1.0);
}

__constant__ float kCoeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ int gCounter;
extern "C" __global__ void const_global(float* o) {
  int i = threadIdx.x;
  o[i] = kCoeffs[i % 4] * float(i);
  atomicAdd(&gCounter, 1);
}

#include <cuda_pipeline.h>
extern "C" __global__ void cp_async(const float* in, float* out) {
  __shared__ float buf[64];
  __pipeline_memcpy_async(&buf[threadIdx.x], &in[threadIdx.x], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[threadIdx.x] = buf[63 - threadIdx.x] * 2.f;
}

// Warp 0 produces and arrives at named barrier 1; warp 1 waits on it and consumes.
extern "C" __global__ void named_barrier(int* out) {
  __shared__ int s[32];
  int lane = threadIdx.x % 32;
  if (threadIdx.x < 32) {
    s[lane] = lane * 5;
    asm volatile("bar.arrive 1, 64;" ::: "memory");
  } else {
    asm volatile("bar.sync 1, 64;" ::: "memory");
    out[lane] = s[31 - lane] + 1;
  }
}

#include <cassert>
__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
extern "C" __global__ void faults(int mode, int* out) {
  if (threadIdx.x == 3) {
    if (mode == 0) asm volatile("trap;");
    if (mode == 1) assert(out == nullptr);
    if (mode == 2) out[0] = fib(200);  // recursion deeper than the emulator's call depth limit
  }
}

struct StructParams {
  float scale;
  int n;
  double bias;
  float* out;
};
extern "C" __global__ void struct_param(StructParams p) {
  int i = threadIdx.x;
  if (i < p.n) p.out[i] = p.scale * float(i) + float(p.bias);
}

extern "C" __global__ void sync_count(int* out) {
  int t = threadIdx.x;
  int c = __syncthreads_count(t % 3 == 0);
  int a = __syncthreads_and(t < 1000);
  int o = __syncthreads_or(t == 77);
  out[t] = c * 100 + a * 10 + o;
}

// Thread 0 (warp 0, which runs first) spins on a flag that thread 32 (warp 1) sets: needs the scheduler to
// yield. out[2] starts at 0.
extern "C" __global__ void spin_wait(int* out) {
  volatile int* flag = out + 2;
  if (threadIdx.x == 0) {
    int spins = 0;
    while (*flag == 0) ++spins;
    out[0] = *flag;
    out[1] = spins > 0;
  }
  if (threadIdx.x == 32) *flag = 42;
}

extern "C" __global__ void half2_pack(const float* in, float* out) {
  int i = threadIdx.x;
  __half2 h = __floats2half2_rn(in[2 * i], in[2 * i + 1]);
  __half2 r = __hadd2(h, h);
  __nv_bfloat162 b = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
  out[4 * i + 0] = __low2float(r);
  out[4 * i + 1] = __high2float(r);
  out[4 * i + 2] = __low2float(b);
  out[4 * i + 3] = __high2float(b);
}

__device__ float twice_fn(float x) { return 2.0f * x; }
__device__ float square_fn(float x) { return x * x; }
__device__ float (*fn_table[2])(float) = {twice_fn, square_fn};
extern "C" __global__ void indirect_calls(const float* in, float* out) {
  int i = threadIdx.x;
  out[i] = fn_table[i & 1](in[i]);  // neighbouring lanes call different functions
}

// Shared-memory tiled matmul (16x16 tiles, barriers inside the k loop).
extern "C" __global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[16][17];
  __shared__ float tb[16][17];
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += 16) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// Row softmax: warp shuffles for max and sum, shared memory across the 4 warps of a block.
extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) {
  __shared__ float red[4];
  const float* row = x + blockIdx.x * cols;
  int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  float v = row[t];
  float m = v;
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
  __syncthreads();
  float e = expf(v - m);
  float s = e;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) red[warp] = s;
  __syncthreads();
  s = red[0] + red[1] + red[2] + red[3];
  y[blockIdx.x * cols + t] = e / s;
}

// warpSize compiles to the predefined identifier WARP_SZ (no '%').
extern "C" __global__ void warp_size(int* out) { out[threadIdx.x] = warpSize * 1000 + threadIdx.x % warpSize; }

// Cluster special registers without clusters: each block is a cluster of one.
extern "C" __global__ void cluster_ids(unsigned* out) {
  unsigned id, n, size, rank;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(id));
  asm("mov.u32 %0, %%nclusterid.x;" : "=r"(n));
  asm("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(size));
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) {
    out[blockIdx.x * 4 + 0] = id;
    out[blockIdx.x * 4 + 1] = n;
    out[blockIdx.x * 4 + 2] = size;
    out[blockIdx.x * 4 + 3] = rank;
  }
}
// y += a * x: accumulates, so every launch of a graph node shows in the result.
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
