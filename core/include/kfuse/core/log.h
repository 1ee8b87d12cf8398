// Minimal leveled logging to stderr ("kfuse: warning: ..."). Thread-safe; one line per call.
#pragma once

#include <string_view>

namespace kfuse::core {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void setLogLevel(LogLevel level);
LogLevel logLevel();
void logMessage(LogLevel level, std::string_view message);

inline void logInfo(std::string_view m) {
  logMessage(LogLevel::kInfo, m);
}
inline void logWarning(std::string_view m) {
  logMessage(LogLevel::kWarning, m);
}
inline void logError(std::string_view m) {
  logMessage(LogLevel::kError, m);
}

}  // namespace kfuse::core
