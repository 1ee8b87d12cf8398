#include "kfuse/core/trace_json.h"

#include <openssl/evp.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

#include "kfuse/core/json_document.h"
#include "kfuse/core/text.h"
#include "trace_fields.h"

namespace kfuse::core {
namespace {

using detail::ConstTimeRef;
using detail::Field;
using detail::IsVector;
using detail::TimeRef;
using nlohmann::json;

// ---- writing ----

json toJson(const auto& record);

json valueToJson(ConstTimeRef t) {
  return t.v == kNoTime ? json(nullptr) : json(t.v);
}
json valueToJson(const Dim3& d) {
  return json::array({d.x, d.y, d.z});
}
json valueToJson(const std::vector<uint8_t>& bytes) {
  return base64Encode(bytes);
}
json valueToJson(const std::map<std::string, std::string>& m) {
  return json(m);
}
template <typename T>
json valueToJson(const T& v) {
  if constexpr (std::is_enum_v<T>) {
    return std::string(toString(v));
  } else if constexpr (IsVector<T>::value) {
    json a = json::array();
    for (const auto& e : v) a.push_back(toJson(e));
    return a;
  } else {
    return json(v);
  }
}

json toJson(const auto& record) {
  json j = json::object();
  detail::forEachField(record, [&](const Field& field, const auto& member) { j[field.name] = valueToJson(member); });
  return j;
}

// ---- reading ----

class JsonReader {
 public:
  explicit JsonReader(std::string source) : source_(std::move(source)) {}
  const Status& status() const { return status_; }

  void fail(const std::string& path, const std::string& what) {
    if (status_.ok()) status_ = badFormat(source_ + ": " + path + ": " + what);
  }

  template <typename T>
  void read(const json& j, const std::string& path, T& out) {
    if (!j.is_object()) return fail(path, "expected an object");
    detail::forEachField(out, [&](const Field& field, auto&& member) {
      auto it = j.find(field.name);
      if (it == j.end()) {
        if (field.has(detail::kRequired)) fail(path, std::string("missing required field \"") + field.name + "\"");
        return;  // absent optional field: keep the default
      }
      readValue(*it, path + "." + field.name, member);
    });
  }

 private:
  void readValue(const json& j, const std::string& path, TimeRef t) {
    if (j.is_null()) {
      t.v = kNoTime;
    } else if (j.is_number_integer()) {
      t.v = j.get<int64_t>();
    } else {
      fail(path, "expected an integer time in ns or null");
    }
  }
  void readValue(const json& j, const std::string& path, Dim3& d) {
    if (!j.is_array() || j.size() != 3 || !j[0].is_number_unsigned() || !j[1].is_number_unsigned() ||
        !j[2].is_number_unsigned()) {
      return fail(path, "expected an array of 3 unsigned integers");
    }
    for (int i = 0; i < 3; ++i) {
      if (j[i].get<uint64_t>() > std::numeric_limits<uint32_t>::max()) return fail(path, "dimension out of range");
    }
    d = {j[0].get<uint32_t>(), j[1].get<uint32_t>(), j[2].get<uint32_t>()};
  }
  void readValue(const json& j, const std::string& path, std::vector<uint8_t>& bytes) {
    if (!j.is_string()) return fail(path, "expected a base64 string");
    auto decoded = base64Decode(j.get<std::string>());
    if (!decoded) return fail(path, decoded.status().message());
    bytes = std::move(decoded).value();
  }
  void readValue(const json& j, const std::string& path, std::map<std::string, std::string>& m) {
    if (!j.is_object()) return fail(path, "expected an object of strings");
    for (const auto& [k, v] : j.items()) {
      if (!v.is_string()) return fail(path + "." + k, "expected a string");
      m[k] = v.get<std::string>();
    }
  }
  void readValue(const json& j, const std::string& path, std::string& s) {
    if (!j.is_string()) return fail(path, "expected a string");
    s = j.get<std::string>();
  }
  void readValue(const json& j, const std::string& path, bool& b) {
    if (!j.is_boolean()) return fail(path, "expected true or false");
    b = j.get<bool>();
  }
  void readValue(const json& j, const std::string& path, double& d) {
    if (!j.is_number()) return fail(path, "expected a number");
    d = j.get<double>();
  }
  template <typename T>
  void readValue(const json& j, const std::string& path, T& v) {
    if constexpr (std::is_enum_v<T>) {
      std::optional<T> parsed;
      if (j.is_string()) parsed = detail::parseEnum(j.get<std::string>(), v);
      if (!parsed) return fail(path, "unknown value " + describeJsonValue(j));
      v = *parsed;
    } else if constexpr (IsVector<T>::value) {
      if (!j.is_array()) return fail(path, "expected an array");
      v.resize(j.size());
      for (size_t i = 0; i < j.size() && status_.ok(); ++i) read(j[i], path + "[" + std::to_string(i) + "]", v[i]);
    } else {
      static_assert(std::is_integral_v<T>);
      if (!j.is_number_integer()) return fail(path, "expected an integer");
      if constexpr (std::is_unsigned_v<T>) {
        if (!j.is_number_unsigned()) return fail(path, "expected a non-negative integer");
        const auto u = j.get<uint64_t>();
        if (u > std::numeric_limits<T>::max()) return fail(path, "integer out of range");
        v = static_cast<T>(u);
      } else if (j.is_number_unsigned()) {
        const auto u = j.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return fail(path, "integer out of range");
        v = static_cast<T>(u);
      } else {
        const auto s = j.get<int64_t>();
        if (s < std::numeric_limits<T>::min() || s > std::numeric_limits<T>::max()) {
          return fail(path, "integer out of range");
        }
        v = static_cast<T>(s);
      }
    }
  }

  std::string source_;
  Status status_;
};

}  // namespace

std::string base64Encode(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return {};
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Expected<std::vector<uint8_t>> base64Decode(const std::string& text) {
  if (text.empty()) return std::vector<uint8_t>{};
  if (text.size() % 4 != 0)
    return badFormat("base64 text length " + std::to_string(text.size()) + " is not a multiple of 4");
  std::vector<uint8_t> out(text.size() / 4 * 3);
  const int n =
      EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return badFormat("invalid base64 text");
  // EVP_DecodeBlock keeps the bytes that padding stands for; drop them.
  size_t pad = 0;
  if (text.back() == '=') ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

nlohmann::json traceToJson(const Trace& trace) {
  json j = json::object();
  j["format"] = kTraceJsonFormatName;
  j["version"] = kTraceJsonVersion;
  j["metadata"] = toJson(trace.metadata);
  detail::forEachTable(trace, [&](const char* name, const auto& records) { j[name] = valueToJson(records); });
  return j;
}

Expected<Trace> traceFromJson(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) return badFormat(source + ": expected a JSON object at the top level");
  auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kTraceJsonFormatName) {
    return badFormat(source + ": not a kfuse trace JSON document (\"format\" must be \"" +
                     std::string(kTraceJsonFormatName) + "\")");
  }
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer()) return badFormat(source + ": missing integer \"version\"");
  if (version->get<int64_t>() > kTraceJsonVersion) {
    return unsupportedVersion(source + ": trace JSON version " + version->dump() + " is newer than this kfuse reads (" +
                              std::to_string(kTraceJsonVersion) + "); upgrade kfuse");
  }
  Trace t;
  JsonReader reader(source);
  if (auto m = j.find("metadata"); m != j.end()) reader.read(*m, "metadata", t.metadata);
  detail::forEachTable(t, [&](const char* name, auto& records) {
    auto it = j.find(name);
    if (it == j.end() || !reader.status().ok()) return;
    if (!it->is_array()) return reader.fail(name, "expected an array");
    records.resize(it->size());
    for (size_t i = 0; i < it->size() && reader.status().ok(); ++i) {
      reader.read((*it)[i], std::string(name) + "[" + std::to_string(i) + "]", records[i]);
    }
  });
  KFUSE_RETURN_IF_ERROR(reader.status());
  return t;
}

Status writeTraceJsonFile(const Trace& trace, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return ioError(path + ": cannot open for writing");
  out << dumpJson(traceToJson(trace), 1) << '\n';
  out.flush();
  if (!out) return ioError(path + ": write failed (disk full?)");
  return {};
}

Expected<Trace> readTraceJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": cannot open for reading");
  std::stringstream text;
  text << in.rdbuf();
  auto j = parseJsonDocument(text.str());
  if (!j.ok()) return badFormat(path + ": " + j.status().message());
  return traceFromJson(*j, path);
}

}  // namespace kfuse::core
