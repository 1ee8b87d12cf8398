// Kernels of the red-team soundness suite (tests/redteam/check_redteam.py): small kernels whose fusion is legal for
// the arguments the recording sees and illegal for others the same program passes later (a scalar reaching an
// address only through min/max/div/rem/shift/and/select, a pointer into another allocation, an alias, a partial
// overwrite, a guard, a loop trip count, the dynamic shared memory size ...). Compiled by nvcc to PTX at build time;
// redteam.cpp launches them on the stand-in driver. Every kernel is race-free on its own for the arguments the
// launcher passes, so the program's output is deterministic on a GPU as on the emulator.
extern "C" {

#define GID (int)(blockIdx.x * blockDim.x + threadIdx.x)

__device__ __forceinline__ unsigned dynamicSmemSize() {
  unsigned r;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}

// ---- Element-wise building blocks (1-D) --------------------------------------------------------------------------

// out[i] = 2 x[i] + 1 for i < n: the producer of most chains.
__global__ void ew_scale(float* out, const float* x, int n) {
  int i = GID;
  if (i < n) out[i] = x[i] * 2.f + 1.f;
}
// y[i] = in[i] + 3.
__global__ void ew_add(float* y, const float* in, int n) {
  int i = GID;
  if (i < n) y[i] = in[i] + 3.f;
}
// y[i] = in[i] + w[i].
__global__ void ew_add2(float* y, const float* in, const float* w, int n) {
  int i = GID;
  if (i < n) y[i] = in[i] + w[i];
}
// z[i] = y[i] + 5: writes back into the buffer a gather read (the WAR half of the class-1 cases).
__global__ void wr_from(float* z, const float* y, int n) {
  int i = GID;
  if (i < n) z[i] = y[i] + 5.f;
}

// ---- Class 1: a scalar reaching an address only through non-affine arithmetic --------------------------------------

// RAW direction (reads ahead of the thread): wrong when a later thread's element is read before it is written.
__global__ void rd_max(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[max(i, k)] + 3.f;
}
__global__ void rd_sel(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[k ? i : n - 1 - i] + 3.f;
}
__global__ void rd_mul(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[i * k] + 3.f;
}
__global__ void rd_or(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[i | k] + 3.f;
}
// WAR direction (reads behind the thread): wrong when an earlier thread already overwrote what is read.
__global__ void rd_min(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[min(i, k)] * 2.f;
}
__global__ void rd_div(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[i / k] * 2.f;
}
__global__ void rd_rem(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[i % k] * 2.f;
}
__global__ void rd_shr(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[i >> k] * 2.f;
}
__global__ void rd_and(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[i & k] * 2.f;
}

// 2-D consumers (16x16 blocks over a w x h image, element e = row * w + col): a consumer of another launch shape than
// an element-wise producer, so the pair is a prologue rather than an epilogue.
#define ROW (int)(blockIdx.y * blockDim.y + threadIdx.y)
#define COL (int)(blockIdx.x * blockDim.x + threadIdx.x)
__global__ void p2_rd_min(float* y, const float* z, int k, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) y[row * w + col] = z[min(row * w + col, k)] * 3.f;
}
__global__ void p2_rd_max(float* y, const float* z, int k, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) y[row * w + col] = z[max(row * w + col, k)] * 3.f;
}
__global__ void p2_rd_or(float* y, const float* z, int k, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) y[row * w + col] = z[(row * w + col) | k] * 3.f;
}
// The plain 2-D consumer (reads its own element) and its reversed and gathering twins.
__global__ void p2_rd(float* y, const float* z, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) y[row * w + col] = z[row * w + col] * 3.f;
}
__global__ void p2_rd_rev(float* y, const float* z, int n, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w && row * w + col < n) y[row * w + col] = z[n - 1 - (row * w + col)] * 3.f;
}
__global__ void p2_gather(float* y, const float* z, const int* idx, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) y[row * w + col] = z[idx[row * w + col]] * 3.f;
}
// A 2-D producer (the epilogue's anchor: a matmul's grid) writing every element of a w x h image once.
__global__ void p2_scale(float* z, const float* x, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) z[row * w + col] = x[row * w + col] * 2.f + 1.f;
}
// The same producer reading x at min(e, k) (a WAR hazard with a consumer writing x).
__global__ void p2_scale_min(float* z, const float* x, int k, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) z[row * w + col] = x[min(row * w + col, k)] * 2.f + 1.f;
}
// 2-D thread-local pair with a scalar pitch: the consumer reads row * pitch + col.
__global__ void p2_rd_pitch(float* y, const float* z, int pitch, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) y[row * w + col] = z[row * pitch + col] + 3.f;
}

// ---- Block-level: one row of h elements per block (row pointers, as examples/driver_api/residual_layernorm) ----

__global__ void blk_scale(float* z, const float* x, int h) {
  const int b = blockIdx.x;
  float* zr = z + b * h;
  const float* xr = x + b * h;
  for (int j = threadIdx.x; j < h; j += blockDim.x) zr[j] = xr[j] * 2.f + 1.f;
}
// The consumers read element j of a row and the row's last element, which another thread of the block writes (so the
// pairs are block-level, not thread-local). Rows read reversed (zr[h - 1 - j]) would do too, but nvcc writes
// h - 1 - j as h + ~j (not.b32), which kfuse's interval analysis does not follow today (the reads come out unbounded).
// Reads row max(b, k).
__global__ void blk_rd_max(float* y, const float* z, int h, int k) {
  const int b = blockIdx.x;
  const float* zr = z + max(b, k) * h;
  for (int j = threadIdx.x; j < h; j += blockDim.x) y[b * h + j] = zr[j] + zr[h - 1] * 0.5f;
}
// The same without a loop: one element per thread, rows of blockDim.x elements.
__global__ void blk_rd_max1(float* y, const float* z, int k) {
  const int b = blockIdx.x, t = threadIdx.x, h = blockDim.x;
  const float* zr = z + max(b, k) * h;
  y[b * h + t] = zr[t] + zr[0] * 0.5f;
}
// Rows from a pointer used as a number: the distance to another buffer, or an address's low bits, minus a bias.
__global__ void blk_rd_distance(float* y, const float* z, const float* q, long bias) {
  const int b = blockIdx.x, t = threadIdx.x, h = blockDim.x;
  const long k = (q - z) - bias;
  const float* zr = z + max(long(b), k) * h;
  y[b * h + t] = zr[t] + zr[0] * 0.5f;
}
__global__ void blk_rd_bits(float* y, const float* z, int bias) {
  const int b = blockIdx.x, t = threadIdx.x, h = blockDim.x;
  const int k = int((reinterpret_cast<unsigned long long>(z) & 0xFFFF) >> 2) - bias;
  const float* zr = z + max(b, k) * h;
  y[b * h + t] = zr[t] + zr[0] * 0.5f;
}
__global__ void blk_rd_min(float* y, const float* z, int h, int k) {
  const int b = blockIdx.x;
  const float* zr = z + min(b, k) * h;
  for (int j = threadIdx.x; j < h; j += blockDim.x) y[b * h + j] = zr[j] * 2.f + zr[h - 1];
}
// Row b of y into row b of z (the writer after blk_rd_min).
__global__ void blk_wr_row(float* z, const float* y, int h) {
  const int b = blockIdx.x;
  const float* yr = y + b * h;
  for (int j = threadIdx.x; j < h; j += blockDim.x) z[b * h + j] = yr[j] + yr[h - 1] + 5.f;
}
// Row b reversed through a pointer one element into z: in[b * h + h - 2 - j] = z[b * h + h - 1 - j] for j < h - 1.
__global__ void blk_rd_rev_m1(float* y, const float* in, int h) {
  const int b = blockIdx.x;
  const float* ir = in + b * h;
  for (int j = threadIdx.x; j < h - 1; j += blockDim.x) y[b * h + j] = ir[h - 2 - j] + 3.f;
}
// Row b, the loop bounded by k (k = h reads exactly row b; output rows of k elements).
__global__ void blk_rd_loop(float* y, const float* z, int h, int k) {
  const int b = blockIdx.x;
  const float* zr = z + b * h;
  for (int j = threadIdx.x; j < k; j += blockDim.x) y[b * k + j] = zr[j] + zr[k - 1] * 0.5f;
}
// Row b over the first h - dynamic_smem_size / 4 elements.
__global__ void blk_rd_dsm(float* y, const float* z, int h) {
  const int b = blockIdx.x;
  const float* zr = z + b * h;
  const int lim = h - (int)(dynamicSmemSize() / 4);
  for (int j = threadIdx.x; j < lim; j += blockDim.x) y[b * h + j] = zr[j] + zr[h - 1] * 0.5f;
}
// Row b staged through dynamic shared memory (h floats), then written reversed into z's row b.
__global__ void blk_stage(float* z, const float* x, int h) {
  extern __shared__ float stage[];
  const int b = blockIdx.x;
  for (int j = threadIdx.x; j < h; j += blockDim.x) stage[j] = x[b * h + j];
  __syncthreads();
  for (int j = threadIdx.x; j < h; j += blockDim.x) z[b * h + j] = stage[h - 1 - j] * 2.f + 1.f;
}
// Writes row b of z, and row b - s of x (when b >= s): a second output whose rows may belong to another block.
__global__ void blk_scale_wx(float* z, float* x, const float* src, int h, int s) {
  const int b = blockIdx.x;
  for (int j = threadIdx.x; j < h; j += blockDim.x) {
    z[b * h + j] = src[b * h + j] * 2.f + 1.f;
    if (b >= s) x[(b - s) * h + j] = 100.f + j;
  }
}
// Row b of z into row b of x (the second writer of x).
__global__ void blk_wx_row(float* x, const float* z, int h) {
  const int b = blockIdx.x;
  const float* zr = z + b * h;
  for (int j = threadIdx.x; j < h; j += blockDim.x) x[b * h + j] = zr[j] + zr[h - 1] - 7.f;
}

// ---- Horizontal: independent kernels on one stream ----------------------------------------------------------------

// Reads r, writes y.
__global__ void hz_read(float* y, const float* r, int n) {
  int i = GID;
  if (i < n) y[i] = r[i] * 2.f + 1.f;
}
// Writes w[max(i, k)] (every thread of an element writes the same value).
__global__ void hz_write_max(float* w, float v, int k, int n) {
  int i = GID;
  if (i < n) {
    int e = max(i, k);
    w[e] = v * (float)(e & 1023) + 1.f;
  }
}
__global__ void hz_write_min(float* w, float v, int k, int n) {
  int i = GID;
  if (i < n) {
    int e = min(i, k);
    w[e] = v * (float)(e & 1023) + 1.f;
  }
}
// Writes w[i] (a plain independent writer).
__global__ void hz_write(float* w, float v, int n) {
  int i = GID;
  if (i < n) w[i] = v * (float)i + 1.f;
}
// Writes through a pointer it loads from memory (table[0]): which buffer that is, no analysis of the PTX can tell.
__global__ void hz_indirect(float* const* table, float v, int n) {
  int i = GID;
  if (i < n) table[0][i] = v * (float)i + 3.f;
}

// ---- Class 2: writes after writes --------------------------------------------------------------------------------

// rd: r[i] = x[i] for i < m (x[0..m)).
__global__ void rd_prefix(float* r, const float* x, int m) {
  int i = GID;
  if (i < m) r[i] = x[i] * 2.f;
}
// slowfill: one block loops over x[0..m) (slow on a GPU: every element from 1 block).
__global__ void slowfill(float* x, float v, int m) {
  for (int j = threadIdx.x; j < m; j += blockDim.x) x[j] = v + 0.5f * j;
}
// The same loop run by the grid's last block only (its other blocks return): on a GPU as slow as slowfill, and a
// block that runs late when the launch shares a fused grid with another kernel.
__global__ void lastfill(float* x, float v, int m) {
  if (blockIdx.x != gridDim.x - 1) return;
  for (int j = threadIdx.x; j < m; j += blockDim.x) x[j] = v + 0.5f * j;
}
// fill: x[i] = v + i / 4 for i < n.
__global__ void fill(float* x, float v, int n) {
  int i = GID;
  if (i < n) x[i] = v + 0.25f * i;
}
// Writes y[i] (own) and x[i - s] (a second output that may belong to another thread).
__global__ void wr_back(float* y, float* x, const float* src, int s, int n) {
  int i = GID;
  if (i < n) {
    y[i] = src[i] * 2.f;
    if (i >= s) x[i - s] = 7.f + i;
  }
}
// x[i] = y[i] + 1: the second writer of x.
__global__ void wr_own(float* x, const float* y, int n) {
  int i = GID;
  if (i < n) x[i] = y[i] + 1.f;
}
// Writes x[i + s] from y[i] for i < m (a partial, maybe shifted, overwrite after a read).
__global__ void wr_shift(float* x, const float* y, int s, int m) {
  int i = GID;
  if (i < m) x[i + s] = y[i] * 3.f;
}

// ---- Class 4 ------------------------------------------------------------------------------------------------------

// Atomics: counts into c[i / k], then reads the count back.
__global__ void at_count(int* c, const float* x, float* z, int k, int n) {
  int i = GID;
  if (i < n) {
    atomicAdd(&c[i / k], 1);
    z[i] = x[i] * 2.f;
  }
}
__global__ void at_use(float* y, const int* c, const float* z, int k, int n) {
  int i = GID;
  if (i < n) y[i] = z[i] + (float)c[i / k];
}
// A gather through an index array.
__global__ void gather(float* y, const float* z, const int* idx, int n) {
  int i = GID;
  if (i < n) y[i] = z[idx[i]] + 3.f;
}
// Reversed indices.
__global__ void rd_rev(float* y, const float* z, int n) {
  int i = GID;
  if (i < n) y[i] = z[n - 1 - i] + 3.f;
}
// An address depending on the dynamic shared memory size.
__global__ void rd_dsm(float* y, const float* z, int n) {
  int i = GID;
  int s = (int)(dynamicSmemSize() / 4);
  if (i < n) y[i] = z[min(i + s, n - 1)] + 3.f;
}
// Values depending on the dynamic shared memory size (the producer of a prologue, the consumer of an epilogue, one
// part of a horizontal group): a fused launch has one size for all of them.
__global__ void ew_scale_dsm(float* out, const float* x, int n) {
  int i = GID;
  if (i < n) out[i] = x[i] * 2.f + (float)(dynamicSmemSize() / 4);
}
__global__ void ew_add_dsm(float* y, const float* in, int n) {
  int i = GID;
  if (i < n) y[i] = in[i] + (float)(dynamicSmemSize() / 4);
}
__global__ void hz_write_dsm(float* w, int n) {
  int i = GID;
  if (i < n) w[i] = (float)(dynamicSmemSize() / 4) + (float)i;
}
// No guard: every thread of the launch writes, so the grid alone decides what is written.
__global__ void ew_add_ng(float* y, const float* in) {
  int i = GID;
  y[i] = in[i] + 3.f;
}
// A guard on a scalar selecting a neighbour read.
__global__ void rd_guard(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < k)
    y[i] = z[i] + z[i + 1];
  else if (i < n)
    y[i] = z[i] + 3.f;
}
// y[i] = z[i] + 3 for i < k (the guard alone decides which consumer threads write).
__global__ void rd_upto(float* y, const float* z, int k) {
  int i = GID;
  if (i < k) y[i] = z[i] + 3.f;
}
// An optional bias (NULL or not).
// A 2-D reader of z with an optional bias (a prologue consumer): y = 3 z (+ bias) per element.
__global__ void p2_bias_opt(float* y, const float* z, const float* bias, int w, int h) {
  int row = ROW, col = COL;
  if (row < h && col < w) {
    float v = z[row * w + col] * 3.f;
    if (bias != nullptr) v += bias[row * w + col];
    y[row * w + col] = v;
  }
}
// Row per block with an optional bias (a block-level consumer): z[b h + j] = y[b h + j] (+ bias[j]).
__global__ void blk_bias_opt(float* z, const float* y, const float* bias, int h) {
  const int b = blockIdx.x;
  for (int j = threadIdx.x; j < h; j += blockDim.x) z[b * h + j] = y[b * h + j] + (bias ? bias[j] : 0.f);
}
__global__ void bias_opt(float* y, const float* z, const float* bias, int n) {
  int i = GID;
  if (i < n) {
    float v = z[i];
    if (bias) v += bias[i];
    y[i] = v;
  }
}
// A loop whose trip count is a scalar: y[i] = sum over j < k of z[i + 128 j].
__global__ void rd_loop(float* y, const float* z, int k, int n) {
  int i = GID;
  if (i < n) {
    float acc = 0.f;
    for (int j = 0; j < k; ++j)
      if (i + 128 * j < n) acc += z[i + 128 * j];
    y[i] = acc;
  }
}
// Grid-stride loops with a scalar stride: z[e] for e = i, i + s, ... < n; the consumer sums its elements.
__global__ void gs_scale(float* z, const float* x, int s, int n) {
  for (int e = GID; e < n; e += s) z[e] = x[e] * 2.f + 1.f;
}
__global__ void gs_sum(float* y, const float* z, int s, int n) {
  float acc = 0.f;
  for (int e = GID; e < n; e += s) acc += z[e];
  y[GID] = acc;
}
// The same reading k elements ahead of its own: z[e + k] for e + k < n.
__global__ void gs_sum_ahead(float* y, const float* z, int k, int s, int n) {
  float acc = 0.f;
  for (int e = GID; e + k < n; e += s) acc += z[e + k];
  y[GID] = acc;
}
// Grid-stride y[e] = z[e] + 1 (its own elements, like gs_scale).
__global__ void gs_inc(float* y, const float* z, int s, int n) {
  for (int e = GID; e < n; e += s) y[e] = z[e] + 1.f;
}

// Grid-stride loops stepping by the launch's threads (one merged loop when fused: rewriter/src/vertical.cpp).
__global__ void gsl_scale(float* z, const float* x, int n) {
  for (int e = GID; e < n; e += gridDim.x * blockDim.x) z[e] = x[e] * 2.f + 1.f;
}
// y[e] = z[e + k] + 1: k = the launch's thread count reads what the same thread's next step of gsl_scale writes.
__global__ void gsl_read_ahead(float* y, const float* z, int k, int n) {
#pragma unroll 1
  for (int e = GID; e < n; e += gridDim.x * blockDim.x) y[e] = z[e + k] + 1.f;
}
// y[e] = z[e] + 1 over the same steps.
__global__ void gsl_inc(float* y, const float* z, int n) {
  for (int e = GID; e < n; e += gridDim.x * blockDim.x) y[e] = z[e] + 1.f;
}
// In place: a[e] = a[e + k] + z[e]. k = 0 touches one element per iteration; k = 1 reads the element the next
// iteration (another thread's, or the same thread's next step) overwrites: run as one element per thread, in another
// order, it could read the new value.
__global__ void gsl_shift(float* a, const float* z, int k, int n) {
  for (int e = GID; e < n; e += gridDim.x * blockDim.x) a[e] = a[e + k] + z[e];
}
// Causal rows (attention's softmax and value loops), one row of `stride` floats per thread: row r writes
// a[r * stride + t2] for t2 <= r % T (nvcc unrolls the loop by four with a per-thread trip count), then reads them
// back k elements on (its test reads a copy of its counter made at the loop's top).
__global__ void causal_wr(float* a, const float* p, int T, int stride, int n) {
  int row = GID;
  if (row >= n) return;
  const int t = row % T;
  for (int t2 = 0; t2 <= t; t2++) a[row * stride + t2] = p[row * stride + t2] * 2.f;
}
__global__ void causal_rd(float* y, const float* a, const float* v, int T, int stride, int hs, int k, int n) {
  int row = GID;
  if (row >= n) return;
  const int t = row % T;
  float acc = 0.f;
  for (int t2 = 0; t2 <= t; t2++) {
    const float w = a[row * stride + t2 + k];
    for (int i = 0; i < hs; i++) acc += w * v[t2 * hs + i];
  }
  y[row] = acc;
}
// A remainder computed from the quotient nvcc also needs (i - (i / T) * T): reads k[i % T], one row of T values.
__global__ void rd_rowrem(float* y, const float* k, int T, int n) {
  int i = GID;
  if (i < n) y[i] = k[i % T] + float(i / T);
}
// The step held in a variable: nvcc unrolls these loops four times behind a remainder loop (docs/analyzer.md).
// gsl_shift's body.
__global__ void gsu_shift(float* a, const float* z, int k, int n) {
  const int step = gridDim.x * blockDim.x;
  for (int e = GID; e < n; e += step) a[e] = a[e + k] + z[e];
}
// A bias added in place over rows * cols elements, as after a GEMM.
__global__ void gsu_bias(float* y, const float* bias, int rows, int cols) {
  const int step = gridDim.x * blockDim.x;
  for (int e = GID; e < rows * cols; e += step) y[e] += bias[e % cols];
}

}  // extern "C"
