// Kernels whose parameter counts hooks::kernelParamCounts reads back from their PTX, cubin and fatbin images
// (module_image_test.cpp; compiled by nvcc at build time).
struct Pair {
  float a[6];
};

extern "C" __global__ void no_params() {}

extern "C" __global__ void three(const float* x, float* y, int n) {
  if (threadIdx.x < n) y[threadIdx.x] = x[threadIdx.x];
}

__global__ void by_value(Pair p, double* out, char c) {
  out[0] = p.a[0] + c;
}
