#include "kfuse/core/trace_json.h"

#include <openssl/evp.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>

namespace kfuse::core {
namespace {

using nlohmann::json;

// A nullable time: kNoTime <-> null. Wraps the member so the visitors can tell it from a plain integer.
struct TimeRef {
  int64_t& v;
};
struct ConstTimeRef {
  const int64_t& v;
};
inline TimeRef timeRef(int64_t& v) { return {v}; }
inline ConstTimeRef timeRef(const int64_t& v) { return {v}; }

// Each record type lists its fields once; the same list drives writing and reading.
// `f(name, member)`; S may be const.
template <typename S, typename F>
void fields(S& s, F&& f) {
  using T = std::remove_const_t<S>;
  if constexpr (std::is_same_v<T, TraceMetadata>) {
    f("producer", s.producer);
    f("producer_version", s.producer_version);
    f("command_line", s.command_line);
    f("host", s.host);
    f("start_time_ns", timeRef(s.start_time_ns));
    f("extra", s.extra);
  } else if constexpr (std::is_same_v<T, Process>) {
    f("id", s.id);
    f("pid", s.pid);
    f("name", s.name);
  } else if constexpr (std::is_same_v<T, Device>) {
    f("id", s.id);
    f("ordinal", s.ordinal);
    f("name", s.name);
    f("cc_major", s.cc_major);
    f("cc_minor", s.cc_minor);
    f("sm_count", s.sm_count);
    f("memory_bytes", s.memory_bytes);
    f("clock_khz", s.clock_khz);
    f("uuid", s.uuid);
  } else if constexpr (std::is_same_v<T, Context>) {
    f("id", s.id);
    f("device_id", s.device_id);
    f("process_id", s.process_id);
    f("handle", s.handle);
  } else if constexpr (std::is_same_v<T, Stream>) {
    f("id", s.id);
    f("context_id", s.context_id);
    f("handle", s.handle);
    f("native_id", s.native_id);
    f("priority", s.priority);
    f("is_default", s.is_default);
  } else if constexpr (std::is_same_v<T, Module>) {
    f("id", s.id);
    f("context_id", s.context_id);
    f("kind", s.kind);
    f("hash", s.hash);
    f("image", s.image);
    f("load_ns", timeRef(s.load_ns));
  } else if constexpr (std::is_same_v<T, KernelParam>) {
    f("index", s.index);
    f("offset", s.offset);
    f("size", s.size);
    f("type", s.type);
    f("access", s.access);
  } else if constexpr (std::is_same_v<T, KernelFunction>) {
    f("id", s.id);
    f("module_id", s.module_id);
    f("mangled_name", s.mangled_name);
    f("demangled_name", s.demangled_name);
    f("params", s.params);
  } else if constexpr (std::is_same_v<T, PointerArg>) {
    f("param_index", s.param_index);
    f("address", s.address);
    f("allocation_id", s.allocation_id);
    f("offset", s.offset);
  } else if constexpr (std::is_same_v<T, Launch>) {
    f("id", s.id);
    f("correlation_id", s.correlation_id);
    f("thread_id", s.thread_id);
    f("stream_id", s.stream_id);
    f("function_id", s.function_id);
    f("grid", s.grid);
    f("block", s.block);
    f("dynamic_shared_bytes", s.dynamic_shared_bytes);
    f("static_shared_bytes", s.static_shared_bytes);
    f("registers_per_thread", s.registers_per_thread);
    f("api_start_ns", timeRef(s.api_start_ns));
    f("api_end_ns", timeRef(s.api_end_ns));
    f("gpu_start_ns", timeRef(s.gpu_start_ns));
    f("gpu_end_ns", timeRef(s.gpu_end_ns));
    f("arg_bytes", s.arg_bytes);
    f("pointer_args", s.pointer_args);
  } else if constexpr (std::is_same_v<T, Allocation>) {
    f("id", s.id);
    f("context_id", s.context_id);
    f("address", s.address);
    f("size", s.size);
    f("kind", s.kind);
    f("alloc_ns", timeRef(s.alloc_ns));
    f("free_ns", timeRef(s.free_ns));
  } else if constexpr (std::is_same_v<T, Memcpy>) {
    f("id", s.id);
    f("correlation_id", s.correlation_id);
    f("thread_id", s.thread_id);
    f("stream_id", s.stream_id);
    f("kind", s.kind);
    f("src_address", s.src_address);
    f("dst_address", s.dst_address);
    f("src_allocation_id", s.src_allocation_id);
    f("dst_allocation_id", s.dst_allocation_id);
    f("bytes", s.bytes);
    f("async", s.async);
    f("api_start_ns", timeRef(s.api_start_ns));
    f("api_end_ns", timeRef(s.api_end_ns));
    f("gpu_start_ns", timeRef(s.gpu_start_ns));
    f("gpu_end_ns", timeRef(s.gpu_end_ns));
  } else if constexpr (std::is_same_v<T, Memset>) {
    f("id", s.id);
    f("correlation_id", s.correlation_id);
    f("thread_id", s.thread_id);
    f("stream_id", s.stream_id);
    f("dst_address", s.dst_address);
    f("dst_allocation_id", s.dst_allocation_id);
    f("bytes", s.bytes);
    f("value", s.value);
    f("element_size", s.element_size);
    f("async", s.async);
    f("api_start_ns", timeRef(s.api_start_ns));
    f("api_end_ns", timeRef(s.api_end_ns));
    f("gpu_start_ns", timeRef(s.gpu_start_ns));
    f("gpu_end_ns", timeRef(s.gpu_end_ns));
  } else if constexpr (std::is_same_v<T, Sync>) {
    f("id", s.id);
    f("correlation_id", s.correlation_id);
    f("thread_id", s.thread_id);
    f("kind", s.kind);
    f("stream_id", s.stream_id);
    f("event_id", s.event_id);
    f("start_ns", timeRef(s.start_ns));
    f("end_ns", timeRef(s.end_ns));
  } else if constexpr (std::is_same_v<T, Event>) {
    f("id", s.id);
    f("correlation_id", s.correlation_id);
    f("handle", s.handle);
    f("stream_id", s.stream_id);
    f("record_ns", timeRef(s.record_ns));
  } else if constexpr (std::is_same_v<T, NvtxRange>) {
    f("id", s.id);
    f("name", s.name);
    f("domain", s.domain);
    f("thread_id", s.thread_id);
    f("start_ns", timeRef(s.start_ns));
    f("end_ns", timeRef(s.end_ns));
  } else if constexpr (std::is_same_v<T, Metric>) {
    f("launch_id", s.launch_id);
    f("name", s.name);
    f("value", s.value);
    f("unit", s.unit);
    f("source", s.source);
  } else if constexpr (std::is_same_v<T, Stat>) {
    f("name", s.name);
    f("value", s.value);
    f("severity", s.severity);
    f("description", s.description);
  } else {
    static_assert(!sizeof(T), "no field list for this type");
  }
}

// The top-level arrays of a Trace, in document order.
template <typename TraceT, typename F>
void tables(TraceT& t, F&& f) {
  f("processes", t.processes);
  f("devices", t.devices);
  f("contexts", t.contexts);
  f("streams", t.streams);
  f("modules", t.modules);
  f("functions", t.functions);
  f("launches", t.launches);
  f("allocations", t.allocations);
  f("memcpys", t.memcpys);
  f("memsets", t.memsets);
  f("syncs", t.syncs);
  f("events", t.events);
  f("nvtx_ranges", t.nvtx_ranges);
  f("metrics", t.metrics);
  f("stats", t.stats);
}

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

// ---- writing ----

json toJson(const auto& record);

json valueToJson(ConstTimeRef t) { return t.v == kNoTime ? json(nullptr) : json(t.v); }
json valueToJson(const Dim3& d) { return json::array({d.x, d.y, d.z}); }
json valueToJson(const std::vector<uint8_t>& bytes) { return base64Encode(bytes); }
json valueToJson(const std::map<std::string, std::string>& m) { return json(m); }
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
  fields(record, [&](const char* name, const auto& member) { j[name] = valueToJson(member); });
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
    fields(out, [&](const char* name, auto&& member) {
      auto it = j.find(name);
      if (it == j.end()) {
        if (std::string_view(name) == "id") fail(path, "missing required field \"id\"");
        return;  // absent optional field: keep the default
      }
      readValue(*it, path + "." + name, member);
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
      if (j.is_string()) parsed = parseEnum(j.get<std::string>(), v);
      if (!parsed) return fail(path, "unknown value " + j.dump());
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

  static std::optional<ImageKind> parseEnum(const std::string& s, ImageKind) { return parseImageKind(s); }
  static std::optional<AccessMode> parseEnum(const std::string& s, AccessMode) { return parseAccessMode(s); }
  static std::optional<MetricSource> parseEnum(const std::string& s, MetricSource) { return parseMetricSource(s); }
  static std::optional<AllocationKind> parseEnum(const std::string& s, AllocationKind) {
    return parseAllocationKind(s);
  }
  static std::optional<MemcpyKind> parseEnum(const std::string& s, MemcpyKind) { return parseMemcpyKind(s); }
  static std::optional<SyncKind> parseEnum(const std::string& s, SyncKind) { return parseSyncKind(s); }
  static std::optional<StatSeverity> parseEnum(const std::string& s, StatSeverity) { return parseStatSeverity(s); }

  std::string source_;
  Status status_;
};

}  // namespace

std::string base64Encode(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return {};
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Expected<std::vector<uint8_t>> base64Decode(const std::string& text) {
  if (text.empty()) return std::vector<uint8_t>{};
  if (text.size() % 4 != 0) return badFormat("base64 text length " + std::to_string(text.size()) + " is not a multiple of 4");
  std::vector<uint8_t> out(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
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
  tables(trace, [&](const char* name, const auto& records) { j[name] = valueToJson(records); });
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
  tables(t, [&](const char* name, auto& records) {
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
  out << traceToJson(trace).dump(1) << '\n';
  out.flush();
  if (!out) return ioError(path + ": write failed (disk full?)");
  return {};
}

Expected<Trace> readTraceJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": cannot open for reading");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    return badFormat(path + ": invalid JSON: " + e.what());
  }
  return traceFromJson(j, path);
}

}  // namespace kfuse::core
