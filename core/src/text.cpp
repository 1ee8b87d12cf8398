#include "kfuse/core/text.h"

#include <nlohmann/json.hpp>

namespace kfuse::core {
namespace {

// Length of the well-formed UTF-8 sequence at s[i], or 0 when the byte there does not start one (Unicode 15,
// table 3-7).
size_t sequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

bool isValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string sanitizeUtf8(std::string_view s) {
  if (isValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string dumpJson(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::string describeJsonValue(const nlohmann::json& j, size_t max_chars) {
  if (j.is_array()) return "an array of " + std::to_string(j.size());
  if (j.is_object()) return "an object of " + std::to_string(j.size()) + " members";
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s.size() <= max_chars) return dumpJson(j);
    return dumpJson(nlohmann::json(sanitizeUtf8(s.substr(0, max_chars)))) + " (cut; " + std::to_string(s.size()) +
           " bytes)";
  }
  return dumpJson(j);
}

std::string htmlEscape(std::string_view s) {
  const std::string text = sanitizeUtf8(s);
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace kfuse::core
