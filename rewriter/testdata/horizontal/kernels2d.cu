// Kernels with 2-D grids and blocks for the horizontal fusion tests: the fused kernel must rebuild their
// multi-dimensional %tid/%ctaid from linear indices and give them their own %ntid/%nctaid.
extern "C" __global__ void scale2d(const float* in, float* out, int w, int h, float s) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = in[y * w + x] * s + float(gridDim.x * 1000 + gridDim.y * 10 + blockDim.y);
}

// Tiled transpose through shared memory: 32x8 threads move a 32x32 tile, with a CTA barrier in between.
extern "C" __global__ void transpose(const float* in, float* out, int w, int h) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += blockDim.y)
    if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += blockDim.y)
    if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Returns some threads early and synchronises the others: outside CUDA's rules for __syncthreads, yet it runs
// when the returning threads are whole warps, because a whole-CTA barrier stops waiting for exited warps. A
// counted named barrier does not, so a fused version hangs (the emulator reports a barrier deadlock).
extern "C" __global__ void early_exit_sync(const float* in, float* out, int n) {
  __shared__ float s[256];
  int i = threadIdx.x;
  if (i >= n) return;
  s[i] = in[i];
  __syncthreads();
  out[i] = s[(i + 1) % n];
}
