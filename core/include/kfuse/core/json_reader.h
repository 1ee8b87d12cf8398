// core::JsonReader: typed, path-naming reads of JSON documents, shared by the plan and report readers.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/json_document.h"
#include "kfuse/core/status.h"

namespace kfuse::core {

// Reads typed fields out of JSON documents (plans, reports): each call checks a field's type and range and
// records the first problem, naming the source and the field's path (`pattern.kernels[1].module_hash: expected
// 64 hex digits`); after a failure every call does nothing. Not thread-safe; cheap to construct.
class JsonReader {
 public:
  using json = nlohmann::json;
  explicit JsonReader(std::string source) : source_(std::move(source)) {}

  static std::string join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }
  static std::string indexed(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  void fail(const std::string& path, const std::string& what, ErrorCode code = ErrorCode::kBadFormat) {
    if (!status_.ok()) return;
    status_ = Status(code, source_ + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  // True when `j` is an object whose keys are all in `allowed`.
  bool object(const json& j, const std::string& path, std::initializer_list<const char*> allowed) {
    if (!ok()) return false;
    if (!j.is_object()) {
      fail(path.empty() ? "(document)" : path, "expected an object");
      return false;
    }
    for (const auto& item : j.items()) {
      bool known = false;
      for (const char* a : allowed) known = known || item.key() == a;
      if (!known) {
        fail(join(path, item.key()), "unknown field");
        return false;
      }
    }
    return true;
  }

  // The member `name` of object `j`, or null (failing when it is required).
  const json* member(const json& j, const std::string& path, const char* name, bool required) {
    if (!ok()) return nullptr;
    auto it = j.find(name);
    if (it == j.end()) {
      if (required) fail(join(path, name), "missing required field");
      return nullptr;
    }
    return &*it;
  }

  void str(const json& j, const std::string& path, const char* name, std::string& out, bool required = false) {
    const json* v = member(j, path, name, required);
    if (!v) return;
    if (!v->is_string()) return fail(join(path, name), "expected a string");
    out = v->get<std::string>();
  }

  void boolean(const json& j, const std::string& path, const char* name, bool& out, bool required = false) {
    const json* v = member(j, path, name, required);
    if (!v) return;
    if (!v->is_boolean()) return fail(join(path, name), "expected true or false");
    out = v->get<bool>();
  }

  void number(const json& j, const std::string& path, const char* name, double& out, bool required = false) {
    const json* v = member(j, path, name, required);
    if (!v) return;
    if (!v->is_number()) return fail(join(path, name), "expected a number");
    double d = v->get<double>();
    if (!std::isfinite(d)) return fail(join(path, name), "expected a finite number");
    out = d;
  }

  template <typename T>
  void integerValue(const json& v, const std::string& path, T& out, int64_t min = 0,
                    uint64_t max = std::numeric_limits<T>::max()) {
    if (!ok()) return;
    if (!v.is_number_integer()) return fail(path, "expected an integer");
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > max) return fail(path, "integer out of range (at most " + std::to_string(max) + ")");
      out = static_cast<T>(u);
      return;
    }
    int64_t s = v.get<int64_t>();
    if (s < min) return fail(path, "integer out of range (at least " + std::to_string(min) + ")");
    if (s >= 0 && static_cast<uint64_t>(s) > max) {
      return fail(path, "integer out of range (at most " + std::to_string(max) + ")");
    }
    out = static_cast<T>(s);
  }

  template <typename T>
  void integer(const json& j, const std::string& path, const char* name, T& out, bool required = false, int64_t min = 0,
               uint64_t max = std::numeric_limits<T>::max()) {
    const json* v = member(j, path, name, required);
    if (v) integerValue(*v, join(path, name), out, min, max);
  }

  // The array member `name` (empty when absent and optional); calls `each(element, path)` per element.
  template <typename F>
  void array(const json& j, const std::string& path, const char* name, bool required, F each) {
    const json* v = member(j, path, name, required);
    if (!v) return;
    std::string p = join(path, name);
    if (!v->is_array()) return fail(p, "expected an array");
    for (size_t i = 0; i < v->size() && ok(); ++i) each((*v)[i], indexed(p, i));
  }

  void strings(const json& j, const std::string& path, const char* name, std::vector<std::string>& out) {
    array(j, path, name, false, [&](const json& e, const std::string& p) {
      if (!e.is_string()) return fail(p, "expected a string");
      out.push_back(e.get<std::string>());
    });
  }

 private:
  std::string source_;
  Status status_;
};

}  // namespace kfuse::core
