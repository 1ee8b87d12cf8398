// Cooperative cancellation (cancel.h).
#include "kfuse/core/cancel.h"

namespace kfuse::core {
namespace {

thread_local const std::atomic<bool>* current_flag = nullptr;

}  // namespace

CancelScope::CancelScope(const std::atomic<bool>* flag) : previous_(current_flag) {
  current_flag = flag;
}

CancelScope::~CancelScope() {
  current_flag = previous_;
}

bool cancelRequested() {
  return current_flag && current_flag->load(std::memory_order_relaxed);
}

Status cancelledStatus() {
  return Status(ErrorCode::kCancelled, "cancelled");
}

}  // namespace kfuse::core
