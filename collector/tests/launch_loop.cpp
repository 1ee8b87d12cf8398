// A driver-API program for recording-fault and concurrency tests, linked against libcuda.so.1 (the test fake):
// THREADS threads, each with STREAMS streams of its own, launch `fill` LAUNCHES times each, round-robin over their
// streams, every launch with distinct arguments (thread, stream, index). Prints how many launches the driver saw.
//
//   launch_loop [--threads T] [--streams S] [--launches N] [--sleep-us U] [--crash abort|segv --at K]
//               [--fork-exec PROGRAM]
//
// --sleep-us slows each launch (for tests that kill the program mid-run); --crash makes thread 0 abort() or
// dereference null after its K-th launch; --fork-exec forks after the launches and execs PROGRAM in the child.
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern "C" int kfuse_test_fake_launches();

int main(int argc, char** argv) {
  int threads = 4, streams = 2, launches = 250, sleep_us = 0, crash_at = -1;
  std::string crash, fork_exec;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (a == "--streams")
      streams = std::atoi(argv[i + 1]);
    else if (a == "--launches")
      launches = std::atoi(argv[i + 1]);
    else if (a == "--sleep-us")
      sleep_us = std::atoi(argv[i + 1]);
    else if (a == "--crash")
      crash = argv[i + 1];
    else if (a == "--at")
      crash_at = std::atoi(argv[i + 1]);
    else if (a == "--fork-exec")
      fork_exec = argv[i + 1];
    else {
      std::fprintf(stderr, "launch_loop: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  static const char kPtx[] = ".version 9.0\n.target sm_90\n.address_size 64\n// fill\n";
  CUmodule mod;
  CUfunction fill;
  if (cuModuleLoadData(&mod, kPtx) != CUDA_SUCCESS) return 1;
  if (cuModuleGetFunction(&fill, mod, "_Z4fillPfif") != CUDA_SUCCESS) return 1;
  std::vector<CUdeviceptr> buffers(static_cast<size_t>(threads));
  for (auto& b : buffers) {
    if (cuMemAlloc(&b, 1 << 20) != CUDA_SUCCESS) return 1;
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<CUstream> own(static_cast<size_t>(streams));
      for (auto& s : own) {
        if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) ++failures;
      }
      for (int i = 0; i < launches; ++i) {
        const int s = i % streams;
        CUdeviceptr p = buffers[static_cast<size_t>(t)] + 4 * static_cast<CUdeviceptr>(i % 1024);
        int n = i;  // distinct per launch: the tests find each launch by (thread, stream, n)
        float v = static_cast<float>(t * 100 + s);
        void* params[] = {&p, &n, &v};
        if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, own[static_cast<size_t>(s)], params, nullptr) != CUDA_SUCCESS) {
          ++failures;
        }
        if (t == 0 && i + 1 == crash_at) {
          std::fflush(stdout);
          if (crash == "abort") std::abort();
          if (crash == "segv") std::raise(SIGSEGV);
        }
        if (sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      }
      for (auto& s : own) {
        if (cuStreamSynchronize(s) != CUDA_SUCCESS) ++failures;
      }
    });
  }
  for (auto& w : workers) w.join();
  std::printf("launch_loop: driver saw %d launches\n", kfuse_test_fake_launches());
  std::fflush(stdout);
  if (!fork_exec.empty()) {
    const pid_t pid = fork();
    if (pid == 0) {
      execl(fork_exec.c_str(), fork_exec.c_str(), "--threads", "1", "--streams", "1", "--launches", "10",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  return failures ? 1 : 0;
}
