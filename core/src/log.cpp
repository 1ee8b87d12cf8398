#include "kfuse/core/log.h"

#include <atomic>
#include <cstdio>

namespace kfuse::core {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kWarning};
}

void setLogLevel(LogLevel level) {
  g_level.store(level, std::memory_order_relaxed);
}
LogLevel logLevel() {
  return g_level.load(std::memory_order_relaxed);
}

void logMessage(LogLevel level, std::string_view message) {
  if (level < logLevel()) return;
  static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
  // One fprintf per line so lines from several threads do not interleave.
  std::fprintf(stderr, "kfuse: %s: %.*s\n", kNames[static_cast<int>(level)], static_cast<int>(message.size()),
               message.data());
}

}  // namespace kfuse::core
