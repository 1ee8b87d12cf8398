// Kernel pairs for the legality soundness suite (tests/soundness/check_soundness.py): each illegal fusion has a
// legal twin. Compiled by nvcc to PTX at build time; soundness.cpp launches them on the stand-in driver.
extern "C" {

// Thread i writes element i + shift / reads element i + shift: legal together only with equal shifts.
__global__ void prod(float* out, const float* x, int shift, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i + shift] = x[i] * 2.f;
}
__global__ void cons(float* y, const float* in, int shift, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = in[i + shift] + 1.f;
}

// The same consumer without a shift, and one whose shift is a constant in the code.
__global__ void cons_same(float* y, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = in[i] + 1.f;
}
__global__ void cons_next(float* y, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = in[i + 1] + 1.f;
}

// A producer writing each element from two threads (i and i - 1), and one where every block writes the same
// elements.
__global__ void prod_twice(float* out, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = x[i];
    out[i + 1] = x[i] * 0.5f;
  }
}
__global__ void prod_per_block(float* out, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[threadIdx.x] = x[i];
}

// Row-major 2-D kernels over a w x h image (w not a multiple of the block width): the bounds guards are what keep
// row r's last column apart from row r + 1's first. The transposed consumer reads another thread's element.
__global__ void prod2d(float* out, const float* x, int w, int h) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < w && row < h) out[row * w + col] = x[row * w + col] * 2.f;
}
__global__ void cons2d(float* y, const float* in, int w, int h) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < w && row < h) y[row * w + col] = in[row * w + col] + 1.f;
}
__global__ void cons2d_transposed(float* y, const float* in, int w, int h) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < w && row < h) y[row * w + col] = in[col * h + row] + 1.f;
}

// One thread per block, chosen by a parameter, writes and reads element 0: thread-local only when both pick the same
// thread; block-level when there is one block (the barrier orders thread 7's write before thread 9's read), never
// with several blocks (every block's thread 7 writes element 0).
__global__ void pick(float* out, const float* x, int k) {
  if (threadIdx.x == k) out[0] = x[k] * 2.f;
}
__global__ void take(float* y, const float* in, int k) {
  if (threadIdx.x == k) y[0] = in[0] + 1.f;
}

// Data passed through a module variable the kernels' parameters do not show.
__device__ float scratch[4096];
__global__ void prod_hidden(float* out, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = x[i];
    scratch[i] = x[i] * 3.f;
  }
}
__global__ void cons_hidden(float* y, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = in[i] + scratch[i + 1];
}

// Legal shapes engineers write that must stay proven: float4 accesses, 64-bit indices with an early return, and
// two elements per thread.
__global__ void prod_vec4(float4* out, const float4* x, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    out[i] = make_float4(v.x * 2.f, v.y * 2.f, v.z * 2.f, v.w * 2.f);
  }
}
__global__ void cons_vec4(float4* y, const float4* in, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = in[i];
    y[i] = make_float4(v.x + 1.f, v.y + 1.f, v.z + 1.f, v.w + 1.f);
  }
}
__global__ void prod_wide(float* out, const float* x, long long n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= (size_t)n) return;
  out[i] = x[i] * 2.f;
}
__global__ void cons_wide(float* y, const float* in, long long n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= (size_t)n) return;
  y[i] = in[i] + 1.f;
}
__global__ void prod_pair(float* out, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * i + 1 < n) {
    out[2 * i] = x[2 * i] * 2.f;
    out[2 * i + 1] = x[2 * i + 1] * 2.f;
  }
}
__global__ void cons_pair(float* y, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * i + 1 < n) {
    y[2 * i] = in[2 * i] + in[2 * i + 1];
    y[2 * i + 1] = in[2 * i + 1] - in[2 * i];
  }
}

}  // extern "C"
