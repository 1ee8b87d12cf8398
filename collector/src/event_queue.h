// EventQueue: a bounded multi-producer, single-consumer ring of variable-sized events (private to the sinks).
//
// Producers copy an event in under one mutex (no allocation: the ring is allocated once). The single consumer
// reads a snapshot of the queued bytes in place without the lock, then releases them, so producers never wait
// for the consumer's work, only for space.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "kfuse/collector/trace_sink.h"

namespace kfuse::collector {

class EventQueue {
 public:
  struct Header {
    uint32_t size;  // bytes of header + payload, multiple of 8
    uint16_t kind;
    uint16_t reserved;
    uint32_t payload_size;
    uint32_t reserved2;
  };
  static_assert(sizeof(Header) == 16);

  explicit EventQueue(size_t capacity_bytes);

  // Copies an event in. Waits up to `timeout_ms` for space; false if it did not fit in time, is larger than
  // the ring, or the queue is closed.
  bool push(EventKind kind, size_t size, TraceSink::FillFn fill, const void* ctx, int timeout_ms);

  // Consumer side. Waits up to `wait_ms` for data (or a wake()), then calls `fn(kind, payload, size)` for every
  // event queued at that moment, in order, and releases their space. Returns the number of events consumed.
  template <class Fn>
  size_t drain(Fn&& fn, int wait_ms);

  void wake();   // makes a waiting drain() return early
  void close();  // later pushes fail; wakes everyone
  bool closed() const;
  size_t capacity() const { return capacity_; }

  // pthread_atfork support: hold the lock across fork() so the child's copy is consistent.
  void lockForFork() { mu_.lock(); }
  void unlockAfterFork() { mu_.unlock(); }
  void closeInChild() { closed_ = true; }

  uint64_t waits() const { return waits_; }
  uint64_t maxUsed() const { return max_used_; }

 private:
  bool reserveLocked(size_t need, size_t& offset);

  const size_t capacity_;
  std::unique_ptr<uint8_t[]> ring_;
  mutable std::mutex mu_;
  std::condition_variable data_cv_, space_cv_;
  size_t head_ = 0, tail_ = 0, used_ = 0;
  bool closed_ = false;
  bool woken_ = false;
  bool consumer_notified_ = false;
  uint64_t waits_ = 0, max_used_ = 0;
};

template <class Fn>
size_t EventQueue::drain(Fn&& fn, int wait_ms) {
  size_t start = 0, bytes = 0;
  {
    std::unique_lock lock(mu_);
    if (used_ == 0 && !closed_ && !woken_) {
      data_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return used_ > 0 || closed_ || woken_; });
    }
    woken_ = false;
    consumer_notified_ = false;
    start = tail_;
    bytes = used_;
  }
  if (bytes == 0) return 0;
  size_t pos = start, left = bytes, count = 0;
  while (left > 0) {
    const auto* h = reinterpret_cast<const Header*>(ring_.get() + pos);
    if (h->kind != static_cast<uint16_t>(EventKind::kPadding)) {
      fn(static_cast<EventKind>(h->kind), ring_.get() + pos + sizeof(Header), size_t{h->payload_size});
      ++count;
    }
    left -= h->size;
    pos += h->size;
    if (pos == capacity_) pos = 0;
  }
  {
    std::lock_guard lock(mu_);
    tail_ = pos;
    used_ -= bytes;
    if (used_ == 0) head_ = tail_ = 0;
  }
  space_cv_.notify_all();
  return count;
}

}  // namespace kfuse::collector
