// Device-side printf: vprintf(format, argument buffer) as nvcc lays it out (each argument aligned to its size;
// integers promoted to 4 or 8 bytes, floating point promoted to double, pointers 8 bytes).
#include <cstdio>
#include <string>

#include "interp.h"

namespace kfuse::emulator {

std::string formatDevicePrintf(const std::string& fmt, const std::function<bool(uint64_t, void*, size_t)>& read_arg,
                               const std::function<std::string(uint64_t)>& read_string) {
  std::string out;
  uint64_t off = 0;
  auto take = [&](size_t n, void* dst) -> bool {
    off = (off + n - 1) / n * n;
    bool ok = read_arg(off, dst, n);
    off += n;
    return ok;
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < fmt.size() && std::string("-+ #0").find(fmt[j]) != std::string::npos) ++j;
    while (j < fmt.size() && (isdigit(static_cast<unsigned char>(fmt[j])) || fmt[j] == '.')) ++j;
    int longs = 0;
    bool half = false;
    while (j < fmt.size() && std::string("hlLqjzt").find(fmt[j]) != std::string::npos) {
      if (fmt[j] == 'l' || fmt[j] == 'L' || fmt[j] == 'q' || fmt[j] == 'j' || fmt[j] == 'z' || fmt[j] == 't') ++longs;
      if (fmt[j] == 'h') half = true;
      ++j;
    }
    if (j >= fmt.size()) {
      out += fmt.substr(i);
      break;
    }
    char conv = fmt[j];
    std::string spec = fmt.substr(i, j - i);
    // Strip length modifiers; re-add the ones snprintf needs for 64-bit values.
    std::string base;
    for (char ch : spec)
      if (std::string("hlLqjzt").find(ch) == std::string::npos) base += ch;
    char buf[512];
    switch (conv) {
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'c': {
        uint64_t v = 0;
        if (longs > 0) {
          if (!take(8, &v)) return out + "<bad printf argument>";
        } else {
          uint32_t w = 0;
          if (!take(4, &w)) return out + "<bad printf argument>";
          v = (conv == 'd' || conv == 'i') ? uint64_t(int64_t(int32_t(w))) : w;
          if (half) v = (conv == 'd' || conv == 'i') ? uint64_t(int64_t(int16_t(w))) : uint16_t(w);
        }
        std::string f = base + "ll" + conv;
        if (conv == 'c')
          std::snprintf(buf, sizeof buf, (base + 'c').c_str(), int(v));
        else
          std::snprintf(buf, sizeof buf, f.c_str(), static_cast<long long>(v));
        out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
      case 'a':
      case 'A': {
        double v = 0;
        if (!take(8, &v)) return out + "<bad printf argument>";
        std::snprintf(buf, sizeof buf, (base + conv).c_str(), v);
        out += buf;
        break;
      }
      case 's': {
        uint64_t p = 0;
        if (!take(8, &p)) return out + "<bad printf argument>";
        std::string s = read_string(p);
        std::snprintf(buf, sizeof buf, (base + 's').c_str(), s.c_str());
        out += buf;
        break;
      }
      case 'p': {
        uint64_t p = 0;
        if (!take(8, &p)) return out + "<bad printf argument>";
        std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(p));
        out += buf;
        break;
      }
      default: out += spec + conv; break;
    }
    i = j;
  }
  return out;
}

}  // namespace kfuse::emulator
