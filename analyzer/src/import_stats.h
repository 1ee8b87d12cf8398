// Counts bad or missing input data met while importing (tier-1 errors of STYLE.md) by name, with a severity and
// a description fixed at the first count. Private to the analyzer; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/trace.h"

namespace kfuse::analyzer::detail {

class ProblemCounter {
 public:
  void add(std::string_view name, core::StatSeverity severity, std::string_view description, int64_t n = 1);
  void info(std::string_view name, std::string_view description, int64_t n = 1) {
    add(name, core::StatSeverity::kInfo, description, n);
  }
  void warning(std::string_view name, std::string_view description, int64_t n = 1) {
    add(name, core::StatSeverity::kWarning, description, n);
  }
  void error(std::string_view name, std::string_view description, int64_t n = 1) {
    add(name, core::StatSeverity::kError, description, n);
  }
  int64_t count(std::string_view name) const;
  // Non-zero counts, sorted by name.
  std::vector<core::Stat> stats() const;

 private:
  std::map<std::string, core::Stat, std::less<>> stats_;
};

}  // namespace kfuse::analyzer::detail
