// Sum reduction: grid-stride accumulation, a shared-memory tree per block (dynamic shared memory), warp
// shuffles for the last 32 values, then a second pass over the per-block partial sums.
extern "C" __global__ void reduce_sum(const float* in, float* out, int n) {
  extern __shared__ float sdata[];
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += in[i];
  sdata[threadIdx.x] = acc;
  __syncthreads();
  for (int k = blockDim.x / 2; k >= 32; k >>= 1) {
    if (threadIdx.x < k) sdata[threadIdx.x] += sdata[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    float v = sdata[threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  }
}
