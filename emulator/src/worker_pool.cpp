#include "worker_pool.h"

namespace kfuse::emulator {

WorkerPool::WorkerPool(unsigned workers) {
  for (unsigned i = 1; i < workers; ++i) threads_.emplace_back([this, i] { loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool WorkerPool::run(unsigned n, const std::function<void(unsigned)>& fn) {
  std::unique_lock run_lock(run_mu_, std::try_to_lock);
  if (!run_lock.owns_lock()) return false;
  if (n > size()) n = size();
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    job_workers_ = n;
    remaining_ = n - 1;
    ++generation_;
  }
  if (n > 1) start_cv_.notify_all();
  fn(0);
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return remaining_ == 0; });
  job_ = nullptr;
  return true;
}

void WorkerPool::loop(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(unsigned)>* job;
    {
      std::unique_lock lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= job_workers_) continue;
      job = job_;
    }
    (*job)(index);
    {
      std::lock_guard lock(mu_);
      if (--remaining_ == 0) done_cv_.notify_all();
    }
  }
}

}  // namespace kfuse::emulator
