// Block reduction with shared memory and __syncthreads, plus a warp-shuffle reduction and atomics.
#define BLOCK 256

__global__ void __launch_bounds__(BLOCK) reduce_sum(const float* in, float* out, int n) {
  __shared__ float smem[BLOCK];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  smem[tid] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) smem[tid] += smem[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = smem[0];
}

__inline__ __device__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

__global__ void reduce_shfl(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

__global__ void histogram(const unsigned char* data, unsigned int* bins, int n) {
  __shared__ unsigned int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

__global__ void vote_count(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned mask = __ballot_sync(0xffffffffu, i < n && in[i] > 0);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, __popc(mask));
}

int main() { return 0; }
