// Private: host threads that run the blocks of a launch. The caller of run() is worker 0; the pool's threads
// are workers 1..n-1. One launch at a time uses the pool; a concurrent launch runs on its own thread instead.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kfuse::emulator {

class WorkerPool {
 public:
  explicit WorkerPool(unsigned workers);  // starts workers - 1 threads
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned size() const { return unsigned(threads_.size()) + 1; }
  // Runs fn(0..n-1) on n workers (n <= size()) and waits for all. False (nothing run) if another launch is
  // using the pool.
  bool run(unsigned n, const std::function<void(unsigned)>& fn);

 private:
  void loop(unsigned index);

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(unsigned)>* job_ = nullptr;
  unsigned job_workers_ = 0;
  unsigned remaining_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kfuse::emulator
