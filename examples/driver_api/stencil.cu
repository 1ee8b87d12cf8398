// 5-point Jacobi stencil: each output reads its neighbours, so consecutive sweeps cannot be fused
// thread-for-thread (a negative case for vertical fusion).
extern "C" __global__ void jacobi(const float* in, float* out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  int i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.25f * (in[i - w] + in[i + w] + in[i - 1] + in[i + 1]);
}
