#include "event_queue.h"

#include <algorithm>

namespace kfuse::collector {

EventQueue::EventQueue(size_t capacity_bytes)
    : capacity_(std::max<size_t>(capacity_bytes & ~size_t{7}, 4096)), ring_(new uint8_t[capacity_]) {}

bool EventQueue::reserveLocked(size_t need, size_t& offset) {
  if (used_ + need > capacity_) return false;
  if (used_ == 0) head_ = tail_ = 0;
  if (head_ >= tail_) {  // free: [head, capacity) and [0, tail)
    if (capacity_ - head_ >= need) {
      offset = head_;
      return true;
    }
    const size_t pad = capacity_ - head_;
    if (tail_ < need || used_ + pad + need > capacity_) return false;
    auto* h = reinterpret_cast<Header*>(ring_.get() + head_);
    *h = Header{static_cast<uint32_t>(pad), static_cast<uint16_t>(EventKind::kPadding), 0, 0, 0};
    used_ += pad;
    head_ = 0;
    offset = 0;
    return true;
  }
  if (tail_ - head_ >= need) {  // free: [head, tail)
    offset = head_;
    return true;
  }
  return false;
}

bool EventQueue::push(EventKind kind, size_t size, TraceSink::FillFn fill, const void* ctx, int timeout_ms) {
  const size_t need = (sizeof(Header) + size + 7) & ~size_t{7};
  if (need > capacity_ / 2 || size > UINT32_MAX) return false;
  std::unique_lock lock(mu_);
  if (closed_) return false;
  size_t offset = 0;
  if (!reserveLocked(need, offset)) {
    ++waits_;
    consumer_notified_ = true;
    data_cv_.notify_one();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!reserveLocked(need, offset)) {
      if (closed_ || space_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        if (closed_ || !reserveLocked(need, offset)) return false;
        break;
      }
    }
  }
  auto* h = reinterpret_cast<Header*>(ring_.get() + offset);
  *h = Header{static_cast<uint32_t>(need), static_cast<uint16_t>(kind), 0, static_cast<uint32_t>(size), 0};
  if (size) fill(ring_.get() + offset + sizeof(Header), ctx);
  head_ = offset + need;
  if (head_ == capacity_) head_ = 0;
  used_ += need;
  if (used_ > max_used_) max_used_ = used_;
  if (!consumer_notified_ && used_ > capacity_ / 4) {
    consumer_notified_ = true;
    data_cv_.notify_one();
  }
  return true;
}

void EventQueue::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  data_cv_.notify_all();
}

void EventQueue::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  data_cv_.notify_all();
  space_cv_.notify_all();
}

bool EventQueue::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

}  // namespace kfuse::collector
