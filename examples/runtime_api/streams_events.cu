// Two streams, ordered by an event, timed with events: a producer on stream A, a consumer on stream B that
// waits for it, cudaMemcpyAsync into pinned host memory, and the elapsed time between the events.
#include "common.h"

__global__ void fill(float* x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v * float(i % 100);
}
__global__ void square_plus(const float* x, float* y, float c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i] + c;
}

int main() {
  example::printDevice();
  const int n = 1 << 16;
  cudaStream_t a, b;
  CUDA_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithPriority(&b, cudaStreamNonBlocking, 0));
  cudaEvent_t start, produced, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreate(&stop));
  float *x = example::alloc<float>(n), *y = example::alloc<float>(n), *host = nullptr;
  CUDA_CHECK(cudaMallocHost(&host, n * sizeof(float)));
  CUDA_CHECK(cudaEventRecord(start, a));
  fill<<<example::blocksFor(n, 256), 256, 0, a>>>(x, 0.5f, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaEventRecord(produced, a));
  CUDA_CHECK(cudaStreamWaitEvent(b, produced, 0));
  square_plus<<<example::blocksFor(n, 256), 256, 0, b>>>(x, y, 1.0f, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpyAsync(host, y, n * sizeof(float), cudaMemcpyDeviceToHost, b));
  CUDA_CHECK(cudaEventRecord(stop, b));
  CUDA_CHECK(cudaEventSynchronize(stop));
  CUDA_CHECK(cudaStreamQuery(b));
  float ms = -1;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::printf("streams_events: elapsed %.3f ms\n", ms);
  std::vector<float> got(host, host + n), want(n);
  for (int i = 0; i < n; ++i) {
    float v = 0.5f * float(i % 100);
    want[i] = v * v + 1.0f;
  }
  size_t bad = example::compare("y", got, want) + (ms >= 0 ? 0 : 1);
  CUDA_CHECK(cudaFreeHost(host));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  for (cudaEvent_t e : {start, produced, stop}) CUDA_CHECK(cudaEventDestroy(e));
  CUDA_CHECK(cudaStreamDestroy(a));
  CUDA_CHECK(cudaStreamDestroy(b));
  return example::finish("streams_events", bad, example::checksum(got));
}
