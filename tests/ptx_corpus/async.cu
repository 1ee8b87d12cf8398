// sm_80+ features: cp.async, wmma tensor cores, grid-wide sync via cooperative groups.
#include <mma.h>
#include <cooperative_groups.h>
#include <cuda_pipeline.h>
using namespace nvcuda;

__global__ void wmma_16x16(const __half* a, const __half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

__global__ void copy_async(const float* in, float* out, int n) {
  __shared__ float buf[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __pipeline_memcpy_async(&buf[threadIdx.x], &in[i], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (i < n) out[i] = buf[threadIdx.x] * 2.0f;
}

__global__ void grid_sync(float* data, int n) {
  cooperative_groups::grid_group g = cooperative_groups::this_grid();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
  g.sync();
  if (i < n) data[i] *= 2.0f;
}

int main() { return 0; }
