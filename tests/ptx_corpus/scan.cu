// Block-level inclusive scan (Hillis-Steele) with dynamic shared memory.
extern __shared__ float scan_buf[];

__global__ void scan_block(const float* in, float* out, int n) {
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  scan_buf[tid] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    float t = tid >= off ? scan_buf[tid - off] : 0.0f;
    __syncthreads();
    scan_buf[tid] += t;
    __syncthreads();
  }
  if (i < n) out[i] = scan_buf[tid];
}

__global__ void add_block_sums(float* data, const float* sums, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x > 0 && i < n) data[i] += sums[blockIdx.x - 1];
}

int main() { return 0; }
