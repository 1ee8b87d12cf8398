// A multi-threaded launcher: eight host threads each own a stream and buffers, launch a chain of kernels and
// check their own results; the CUDA runtime is shared by all of them.
#include <atomic>
#include <thread>

#include "common.h"

__global__ void iota_scaled(int* x, int scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i * scale;
}
__global__ void add_inplace(int* x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}

int main() {
  example::printDevice();
  const int kThreads = 8, n = 4096, rounds = 5;
  std::atomic<size_t> bad{0};
  std::atomic<long long> sum{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      cudaStream_t s;
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      int* d = example::alloc<int>(n);
      iota_scaled<<<example::blocksFor(n, 128), 128, 0, s>>>(d, t + 1, n);
      for (int r = 0; r < rounds; ++r) add_inplace<<<example::blocksFor(n, 128), 128, 0, s>>>(d, r, n);
      CUDA_CHECK_LAUNCH();
      std::vector<int> got(n), want(n);
      CUDA_CHECK(cudaMemcpyAsync(got.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      for (int i = 0; i < n; ++i) want[i] = i * (t + 1) + rounds * (rounds - 1) / 2;
      bad += example::compare("x", got, want);
      long long local = 0;
      for (int v : got) local += v;
      sum += local;
      CUDA_CHECK(cudaFree(d));
      CUDA_CHECK(cudaStreamDestroy(s));
    });
  for (auto& th : pool) th.join();
  return example::finish("threads", bad, double(sum.load()));
}
