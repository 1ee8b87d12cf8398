// Attention-style indexing for BlockRanges tests (ptx/src/ranges_test.cpp). Regenerate attention.ptx with
//   nvcc -arch=sm_90 -ptx -o attention.ptx attention.cu
// A remainder computed from the quotient nvcc also needs: t2 = idx - (idx / T) * T.
extern "C" __global__ void qk_rem(float* out, const float* k, int T) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  const int q = idx / T, t2 = idx % T;
  out[idx] = k[t2] + float(q);
}
// Its twin: idx - (idx / T) * (T + 1) is no remainder (negative for large idx); the range must still hold it.
extern "C" __global__ void qk_not_rem(float* out, const float* k, int T) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  const int q = idx / T;
  out[idx] = k[idx - q * (T + 1) + 4096] + float(q);
}
// A causal row loop: thread `row` reads p[row * T + t2] for t2 <= t = row % T, a bound that differs per thread.
extern "C" __global__ void causal_rows(float* out, const float* p, int rows, int T) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const int t = row % T;
  float acc = 0.f;
#pragma unroll 1
  for (int t2 = 0; t2 <= t; t2++) acc += p[row * T + t2];
  out[row] = acc;
}
// The same loop as nvcc unrolls it by four: a counter t - ((t + 1) & 3) stepping by -4 to -1 (a per-thread trip
// count), then the remainder.
extern "C" __global__ void causal_unrolled(float* out, const float* p, int rows, int T) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const int t = row % T;
  float acc = 0.f;
  for (int t2 = 0; t2 <= t; t2++) acc += p[row * T + t2];
  out[row] = acc;
}
// Attention's value loop: the row's weights against value rows t2 <= t, an inner loop over the head. nvcc tests a
// copy of t2 made at the loop's top (`mov t, t2; ...; add t2, t, 1; setp t < bound`).
extern "C" __global__ void value_rows(float* out, const float* att, const float* v, int rows, int T, int hs) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const int t = row % T;
  float* o = out + row * hs;
  for (int i = 0; i < hs; i++) o[i] = 0.0f;
  for (int t2 = 0; t2 <= t; t2++) {
    const float w = att[row * T + t2];
    for (int i = 0; i < hs; i++) o[i] += w * v[t2 * hs + i];
  }
}
