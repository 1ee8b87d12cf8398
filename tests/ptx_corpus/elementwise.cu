// Elementwise kernels: the access-mode and affine-address reference cases.
__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

__global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void add_offset(const int* in, int* out, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n) out[i + 1] = in[i] + k;
}

__global__ void unused_param(const float* x, float* y, float* unused, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}

__global__ void gather(const float* x, const int* idx, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[idx[i]];
}

__global__ void grid_stride(const double* x, double* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = x[i] + 1.0;
}

__global__ void pointer_escape(float** table, float* p) {
  if (threadIdx.x == 0) table[0] = p;
}

int main() { return 0; }
