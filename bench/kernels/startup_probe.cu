// The runtime-API program whose start-up standin_startup_bench measures: one kernel (so cudart registers a
// fatbin), then the first cudaMalloc. Prints how long that first call took from main (the runtime initialises
// the driver, its export tables and the context inside it) and exits.
#include <chrono>
#include <cstdio>

__global__ void probe_kernel(float* x) { x[threadIdx.x] = 1.0f; }

int main() {
  auto t0 = std::chrono::steady_clock::now();
  float* p = nullptr;
  cudaError_t e = cudaMalloc(&p, 256);
  auto t1 = std::chrono::steady_clock::now();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "startup_probe: cudaMalloc failed: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("first_cudaMalloc_us %lld\n",
              (long long)std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
  cudaFree(p);
  return 0;
}
