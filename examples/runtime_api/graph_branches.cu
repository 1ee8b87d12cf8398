// Independent kernels on two branches of a CUDA graph, as multi-stream capture makes them: s1 forks s2 through an
// event, y = 2x runs on s1 while z = u + 1 runs on s2, s2 joins back, and w += y + z runs after both. Captured
// once and replayed `replays` times. No path links the two branch kernels, so they may run as one (horizontal
// fusion over graph nodes). Checks the result against a C++ reference, prints the checksum and
// "graph_branches: PASSED".
#include "common.h"

__global__ void twice(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
__global__ void plus_one(const float* u, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = u[i] + 1.0f;
}
__global__ void accumulate_sum(const float* y, const float* z, float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] += y[i] + z[i];
}

int main() {
  example::printDevice();
  const int n = 1 << 13, replays = 5, block = 256, grid = (n + block - 1) / block;
  std::vector<float> x(n), u(n), want(n, 0.0f);
  for (int i = 0; i < n; ++i) {
    x[i] = float((i * 29) % 101 - 50) / 8.0f;
    u[i] = float(i % 17) - 8.0f;
  }
  float *dx, *du, *y, *z, *w;
  for (float** p : {&dx, &du, &y, &z, &w}) CUDA_CHECK(cudaMalloc(p, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(du, u.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(w, 0, n * sizeof(float)));

  cudaStream_t s1, s2;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CUDA_CHECK(cudaEventRecord(fork, s1));
  CUDA_CHECK(cudaStreamWaitEvent(s2, fork, 0));
  twice<<<grid, block, 0, s1>>>(dx, y, n);
  CUDA_CHECK_LAUNCH();
  plus_one<<<grid, block, 0, s2>>>(du, z, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaEventRecord(join, s2));
  CUDA_CHECK(cudaStreamWaitEvent(s1, join, 0));
  accumulate_sum<<<grid, block, 0, s1>>>(y, z, w, n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamEndCapture(s1, &graph));
  size_t nodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::printf("graph_branches: captured %zu nodes\n", nodes);
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < replays; ++r) CUDA_CHECK(cudaGraphLaunch(exec, s1));
  CUDA_CHECK(cudaStreamSynchronize(s1));

  std::vector<float> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), w, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int r = 0; r < replays; ++r) {
    for (int i = 0; i < n; ++i) want[i] += 2.0f * x[i] + (u[i] + 1.0f);
  }
  const size_t bad = example::compare("w", got, want);
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaEventDestroy(fork));
  CUDA_CHECK(cudaEventDestroy(join));
  CUDA_CHECK(cudaStreamDestroy(s1));
  CUDA_CHECK(cudaStreamDestroy(s2));
  for (float* p : {dx, du, y, z, w}) CUDA_CHECK(cudaFree(p));
  return example::finish("graph_branches", bad, example::checksum(got));
}
