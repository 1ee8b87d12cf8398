// Shared helpers for the runtime-API examples: error checking and device buffers. These programs are ordinary
// CUDA runtime programs (<<<>>> launches, nvcc defaults: static cudart), so they run unchanged on a GPU and on
// kfuse's CPU stand-in libcuda.so.1 (put its directory on LD_LIBRARY_PATH).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../common/check.h"

#define CUDA_CHECK(call)                                                                                   \
  do {                                                                                                     \
    cudaError_t e_ = (call);                                                                               \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_), \
                   cudaGetErrorString(e_));                                                                \
      std::exit(1);                                                                                        \
    }                                                                                                      \
  } while (0)

// After a <<<>>> launch: the launch error, if any.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

namespace example {

inline void printDevice() {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  std::printf("device: %s (sm_%d%d)\n", p.name, p.major, p.minor);
}

template <class T>
T* upload(const std::vector<T>& v) {
  T* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, v.size() * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}
template <class T>
std::vector<T> download(const T* p, size_t n) {
  std::vector<T> v(n);
  CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}
template <class T>
T* alloc(size_t n) {
  T* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  return p;
}

}  // namespace example
