#include "kfuse/ptx/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace kfuse::ptx {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Removes a trailing qualifier word (" const", " __restrict") from `s` if present.
bool stripSuffix(std::string_view& s, std::string_view word) {
  if (s.size() > word.size() && s.substr(s.size() - word.size()) == word) {
    s.remove_suffix(word.size());
    s = trim(s);
    return true;
  }
  return false;
}

// True when `word` appears in `s` as a whole word outside template brackets.
bool hasTopLevelWord(std::string_view s, std::string_view word) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth != 0 || s.compare(i, word.size(), word) != 0) continue;
    const bool left = i == 0 || s[i - 1] == ' ' || s[i - 1] == '*' || s[i - 1] == '&';
    const size_t e = i + word.size();
    const bool right = e == s.size() || s[e] == ' ' || s[e] == '*' || s[e] == '&';
    if (left && right) return true;
  }
  return false;
}

std::string removeWord(std::string_view s, std::string_view word) {
  std::string out(s);
  for (size_t p; (p = out.find(word)) != std::string::npos;) {
    out.erase(p, word.size());
    while (p < out.size() && p > 0 && out[p] == ' ' && out[p - 1] == ' ') out.erase(p, 1);
  }
  return std::string(trim(out));
}

ParamType classify(std::string_view text) {
  ParamType t;
  t.text = std::string(text);
  std::string_view s = text;
  // qualifiers of the pointer itself
  for (bool again = true; again;) {
    again = stripSuffix(s, "__restrict") || stripSuffix(s, "restrict") || stripSuffix(s, "const") ||
            stripSuffix(s, "volatile");
  }
  if (!s.empty() && (s.back() == '*' || s.back() == '&')) {
    const char kind = s.back();
    s.remove_suffix(1);
    if (kind == '&' && !s.empty() && s.back() == '&') s.remove_suffix(1);
    s = trim(s);
    t.is_pointer = kind == '*';
    t.is_reference = kind == '&';
    t.pointee_const = hasTopLevelWord(s, "const");
    t.pointee = removeWord(s, "const");
  }
  return t;
}

}  // namespace

std::string demangle(std::string_view mangled) {
  const std::string m(mangled);
  // Only mangled names (_Z...): __cxa_demangle also reads bare type encodings, so an extern "C" kernel named `rd`
  // would come back as "double restrict".
  if (m.rfind("_Z", 0) != 0) return m;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(m.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !out) return m;
  return out.get();
}

Expected<KernelSignature> parseMangledSignature(std::string_view mangled) {
  if (mangled.substr(0, 2) != "_Z") return notFound(std::string(mangled) + " is not a mangled C++ name");
  KernelSignature sig;
  sig.demangled = demangle(mangled);
  if (sig.demangled == mangled) return notFound(std::string(mangled) + " could not be demangled");
  std::string_view d = sig.demangled;
  if (d.empty() || d.back() != ')') return notFound(sig.demangled + " is not a function name");
  // the parameter list is the last balanced (...) group
  int depth = 0;
  size_t open = std::string_view::npos;
  for (size_t i = d.size(); i > 0; --i) {
    const char c = d[i - 1];
    if (c == ')') ++depth;
    if (c == '(' && --depth == 0) {
      open = i - 1;
      break;
    }
  }
  if (open == std::string_view::npos) return badFormat("unbalanced parentheses in " + sig.demangled);
  // name: drop a template function's return type (the last top-level space before the name)
  std::string_view head = d.substr(0, open);
  depth = 0;
  size_t name_start = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c == ' ' && depth == 0) name_start = i + 1;
  }
  sig.name = std::string(head.substr(name_start));
  std::string_view list = d.substr(open + 1, d.size() - open - 2);
  if (trim(list).empty() || trim(list) == "void") return sig;
  depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      sig.params.push_back(classify(trim(list.substr(start, i - start))));
      start = i + 1;
    }
  }
  return sig;
}

std::optional<AccessMode> accessHint(const ParamType& type) {
  if ((type.is_pointer || type.is_reference) && type.pointee_const) return AccessMode::kRead;
  return std::nullopt;
}

}  // namespace kfuse::ptx
