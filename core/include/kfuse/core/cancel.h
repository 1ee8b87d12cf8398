// Cooperative cancellation of long work (importing and analysing a trace for the GUI).
//
// A caller installs a flag for the duration of a call with CancelScope; long loops on the same thread ask
// cancelRequested() every few milliseconds of work and stop early, and the function that owns the stage returns
// cancelledStatus(). The flag is thread-local: work on other threads (and code with no scope installed) never sees
// a cancellation. The flag is read with relaxed atomics; it must outlive the scope.
#pragma once

#include <atomic>

#include "kfuse/core/status.h"

namespace kfuse::core {

class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>* flag);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// Whether the innermost scope's flag is set (false without a scope).
bool cancelRequested();

// Status(ErrorCode::kCancelled, "cancelled").
Status cancelledStatus();

// Returns cancelledStatus() from the enclosing function when cancellation was requested.
#define KFUSE_RETURN_IF_CANCELLED()                                                \
  do {                                                                             \
    if (::kfuse::core::cancelRequested()) return ::kfuse::core::cancelledStatus(); \
  } while (0)

}  // namespace kfuse::core
