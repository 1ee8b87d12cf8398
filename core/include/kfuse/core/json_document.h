// core::parseJsonDocument: a whole JSON document parsed with its nesting bounded, for every reader of files kfuse
// did not write itself (traces, plans, reports, Execution Traces).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kfuse/core/status.h"

namespace kfuse::core {

// The deepest nesting of arrays and objects a JSON document kfuse reads may have. Real documents nest a few levels
// (an Execution Trace's lists of tensors, a plan's argument sets); one nested 100,000 deep would exhaust the stack
// of code that copies or walks it.
inline constexpr int kMaxJsonDepth = 512;

// Whether `text` nests arrays and objects deeper than `max_depth` (brackets inside strings do not count). One
// linear pass over the bytes, far cheaper than the parse it guards.
inline bool jsonNestsDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

// Parses a whole JSON document, refusing one nested deeper than `max_depth` before anything copies or walks it.
// The message says what is wrong; the caller names the file.
inline Expected<nlohmann::json> parseJsonDocument(std::string_view text, int max_depth = kMaxJsonDepth) {
  if (jsonNestsDeeperThan(text, max_depth)) {
    return badFormat("invalid JSON: arrays and objects nested deeper than " + std::to_string(max_depth) + " levels");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {  // a parse error, or a number out of range (1e99999)
    return badFormat(std::string("invalid JSON: ") + e.what());
  }
}

}  // namespace kfuse::core
