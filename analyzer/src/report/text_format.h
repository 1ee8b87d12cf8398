// Number and text formatting shared by the analyzer's reports and advice sentences. Private to the analyzer.
#pragma once

#include <cstdio>
#include <string>

#include "kfuse/core/text.h"

namespace kfuse::analyzer {

// printf-style formatting of one number ("%.1f").
inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "850 ns", "12.3 us", "4.56 ms", "1.20 s".
inline std::string durationText(double ns) {
  if (ns < 1e3) return fmt("%.0f ns", ns);
  if (ns < 1e6) return fmt("%.1f us", ns / 1e3);
  if (ns < 1e9) return fmt("%.2f ms", ns / 1e6);
  return fmt("%.2f s", ns / 1e9);
}

// Text from the input (kernel and file names) for a Markdown table cell: sanitised as UTF-8, with the characters
// Markdown would read as table or emphasis syntax escaped.
inline std::string mdEscape(const std::string& s) {
  std::string out;
  for (char ch : core::sanitizeUtf8(s)) {
    if (ch == '|' || ch == '*' || ch == '_' || ch == '<' || ch == '>') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace kfuse::analyzer
