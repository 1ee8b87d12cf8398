// Kineto import, phase 1b: reading values with simdjson On-Demand. Each event's fields (and its args) are read
// into Fields and handed to collect() (kineto_records.cpp); the top-level members beside traceEvents
// (deviceProperties, distributedInfo, version scalars) are read once the scan has ended. A value of the wrong type
// counts as missing (Fields::bad_values); malformed JSON is an error naming the byte.
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "import/kineto_parse.h"

namespace kfuse::analyzer::detail::kineto {
namespace {

// ----- small parsing helpers --------------------------------------------------------------------------------

// Key comparison with the literal's length known at compile time, so the comparison is inlined.
template <size_t N>
bool is(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

// Decimal (optionally 0x hex) integer inside a string: "2560", "0x7f00", "stream 7" (the last number).
bool parseIntText(std::string_view s, int64_t& out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.empty()) return false;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    uint64_t u = 0;
    auto r = std::from_chars(s.data() + 2, s.data() + s.size(), u, 16);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
    out = static_cast<int64_t>(u);
    return true;
  }
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The trailing number of a label such as "stream 7" or "GPU 0".
bool parseTrailingInt(std::string_view s, int64_t& out) {
  size_t end = s.size();
  while (end > 0 && s[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && s[begin - 1] >= '0' && s[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 18) return false;
  if (begin > 0 && s[begin - 1] == '-') --begin;
  auto r = std::from_chars(s.data() + begin, s.data() + end, out);
  return r.ec == std::errc();
}

// A JSON number of microseconds ("1695835572943613", "1419247333430.849", "3.136", "1.5e3") to nanoseconds,
// exactly for plain decimals (a double would lose nanoseconds at today's epoch microseconds).
bool parseMicrosToNs(std::string_view s, int64_t& ns) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  if (s.empty()) return false;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    i = 1;
  }
  constexpr int64_t kMaxMicros = std::numeric_limits<int64_t>::max() / 1000 - 1;
  int64_t whole = 0;
  size_t digits = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
    if (whole > (kMaxMicros - (s[i] - '0')) / 10) return false;
    whole = whole * 10 + (s[i] - '0');
  }
  int64_t frac_ns = 0;
  bool round_up = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int scale = 100;
    size_t fdigits = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++fdigits) {
      if (scale > 0) {
        frac_ns += (s[i] - '0') * scale;
        scale /= 10;
      } else if (fdigits == 3) {
        round_up = s[i] >= '5';
      }
    }
    if (fdigits == 0) return false;
    digits += fdigits;
  }
  if (digits == 0) return false;
  if (i < s.size()) {
    if (s[i] != 'e' && s[i] != 'E') return false;
    // Exponent notation: rare in traces; a double is as good as the writer's own precision then.
    double d = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), d);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(d)) return false;
    d *= 1000.0;
    if (std::fabs(d) > 9.0e18) return false;
    ns = std::llround(d);
    return true;
  }
  ns = whole * 1000 + frac_ns + (round_up ? 1 : 0);
  if (neg) ns = -ns;
  return true;
}

bool readInt(od::value v, int64_t& out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::number) {
    od::number_type nt;
    if (v.get_number_type().get(nt)) return false;
    if (nt == od::number_type::signed_integer) return !v.get_int64().get(out);
    if (nt == od::number_type::unsigned_integer) {
      uint64_t u = 0;
      if (v.get_uint64().get(u)) return false;
      out = static_cast<int64_t>(u);  // 64-bit addresses keep their bits, as the trace store does
      return true;
    }
    double d = 0;
    if (v.get_double().get(d) || !std::isfinite(d) || std::fabs(d) > 9.2e18) return false;
    out = std::llround(d);
    return true;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    return parseIntText(s, out);
  }
  return false;
}

bool readString(od::value v, std::string_view& out) {
  return !v.get_string().get(out);
}

bool readTimeNs(od::value v, int64_t& ns) {
  od::json_type t;
  if (v.type().get(t)) return false;
  std::string_view text;
  if (t == od::json_type::number) {
    text = v.raw_json_token();
  } else if (t == od::json_type::string) {
    if (v.get_string().get(text)) return false;
  } else {
    return false;
  }
  return parseMicrosToNs(text, ns);
}

// [x, y, z] (fewer entries default to 1). False for anything else or values outside 1..2^32-1.
bool readDim3(od::value v, core::Dim3& out) {
  od::array a;
  if (v.get_array().get(a)) return false;
  uint32_t vals[3] = {1, 1, 1};
  size_t n = 0;
  for (auto e : a) {
    od::value ev;
    if (std::move(e).get(ev)) return false;
    int64_t x = 0;
    if (n >= 3 || !readInt(ev, x) || x < 0 || x > std::numeric_limits<uint32_t>::max()) return false;
    vals[n++] = static_cast<uint32_t>(x);
  }
  if (n == 0) return false;
  out = core::Dim3{vals[0], vals[1], vals[2]};
  return true;
}

}  // namespace

// deviceProperties, distributedInfo and the scalars beside traceEvents.
Status KinetoParse::parseTopLevel() {
  if (other_members_ == 0) return {};
  other_json_ = "{" + other_json_ + "}";
  simdjson::padded_string text(other_json_);
  od::parser parser;
  od::document doc;
  auto err = parser.iterate(text).get(doc);
  od::object top;
  if (!err) err = doc.get_object().get(top);
  if (err) return badFormat(path_ + ": malformed JSON in the top-level members: " + simdjson::error_message(err));
  for (auto field_r : top) {
    od::field field;
    if ((err = std::move(field_r).get(field))) {
      return badFormat(path_ + ": malformed JSON in the top-level members: " + simdjson::error_message(err));
    }
    std::string_view key;
    if ((err = field.unescaped_key().get(key))) {
      return badFormat(path_ + ": malformed JSON in a top-level key: " + simdjson::error_message(err));
    }
    od::value v = field.value();
    if (key == "deviceProperties") {
      KFUSE_RETURN_IF_ERROR(parseDeviceProperties(v));
    } else if (key == "distributedInfo") {
      KFUSE_RETURN_IF_ERROR(parseDistributedInfo(v));
    } else if (key == "schemaVersion" || key == "baseTimeNanoseconds" || key == "cuda_runtime_version" ||
               key == "cuda_driver_version" || key == "cupti_version") {
      int64_t x = 0;
      if (readInt(v, x)) meta_extra_["kineto." + std::string(key)] = std::to_string(x);
    } else if (key == "traceName" || key == "trace_id") {
      std::string_view s;
      if (readString(v, s)) meta_extra_["kineto." + std::string(key)] = std::string(s);
    }
  }
  return {};
}

Status KinetoParse::parseDeviceProperties(od::value v) {
  od::array a;
  if (v.get_array().get(a)) {
    problems_.add(core::StatId::kKinetoBadDeviceProperties);
    return {};
  }
  for (auto e : a) {
    od::object o;
    if (auto err = e.get_object().get(o)) {
      if (err != simdjson::INCORRECT_TYPE) return jsonError(err, "deviceProperties");
      problems_.add(core::StatId::kKinetoBadDeviceProperties);
      continue;
    }
    DeviceProps d;
    for (auto f_r : o) {
      od::field f;
      if (auto err = std::move(f_r).get(f)) return jsonError(err, "deviceProperties");
      std::string_view key;
      if (auto err = f.unescaped_key().get(key)) return jsonError(err, "deviceProperties");
      int64_t x = 0;
      if (key == "id") {
        if (readInt(f.value(), x)) d.id = x;
      } else if (key == "name") {
        std::string_view name;
        if (readString(f.value(), name)) d.name = std::string(name);
      } else if (key == "numSms") {
        if (readInt(f.value(), x)) d.sms = x;
      } else if (key == "totalGlobalMem") {
        if (readInt(f.value(), x)) d.memory = x;
      } else if (key == "computeMajor") {
        if (readInt(f.value(), x)) d.major = x;
      } else if (key == "computeMinor") {
        if (readInt(f.value(), x)) d.minor = x;
      }
    }
    if (d.id < 0 || d.id > std::numeric_limits<int>::max()) {
      problems_.add(core::StatId::kKinetoBadDeviceProperties);
      continue;
    }
    devices_.push_back(d);
  }
  return {};
}

Status KinetoParse::parseDistributedInfo(od::value v) {
  od::object o;
  if (v.get_object().get(o)) return {};
  for (auto f_r : o) {
    od::field f;
    if (auto err = std::move(f_r).get(f)) return jsonError(err, "distributedInfo");
    std::string_view key;
    if (auto err = f.unescaped_key().get(key)) return jsonError(err, "distributedInfo");
    if (key == "rank" || key == "world_size") {
      int64_t x = 0;
      if (readInt(f.value(), x)) meta_extra_["kineto." + std::string(key)] = std::to_string(x);
    } else if (key == "backend") {
      std::string_view s;
      if (readString(f.value(), s)) meta_extra_["kineto.backend"] = std::string(s);
    }
  }
  return {};
}

Status KinetoParse::parseArgs(od::value v, Fields& f) {
  od::object o;
  if (auto err = v.get_object().get(o)) {
    if (err != simdjson::INCORRECT_TYPE) return jsonError(err, "event args");
    ++f.bad_values;
    return {};
  }
  for (auto a_r : o) {
    od::field a;
    if (auto err = std::move(a_r).get(a)) return jsonError(err, "event args");
    std::string_view key;
    if (auto err = a.unescaped_key().get(key)) return jsonError(err, "event args");
    od::value av = a.value();
    auto intField = [&](std::optional<int64_t>& dst) {
      int64_t x = 0;
      if (readInt(av, x)) {
        dst = x;
      } else {
        ++f.bad_values;
      }
    };
    if (key.empty()) continue;
    switch (key[0]) {
      case 's':
        if (is(key, "stream"))
          intField(f.stream);
        else if (is(key, "shared memory"))
          intField(f.shared_memory);
        break;
      case 'c':
        if (is(key, "correlation"))
          intField(f.correlation);
        else if (is(key, "context"))
          intField(f.context);
        else if (is(key, "cuda_sync_kind"))
          (void)readString(av, f.sync_kind);
        break;
      case 'E':
        if (is(key, "External id")) intField(f.external_id);
        break;
      case 'e':
        if (is(key, "external id")) intField(f.external_id);
        break;
      case 'd':
        if (is(key, "device")) intField(f.device);
        break;
      case 'g':
        if (is(key, "grid")) {
          core::Dim3 d;
          if (readDim3(av, d))
            f.grid = d;
          else
            ++f.bad_values;
        }
        break;
      case 'b':
        if (is(key, "block")) {
          core::Dim3 d;
          if (readDim3(av, d))
            f.block = d;
          else
            ++f.bad_values;
        } else if (is(key, "bytes")) {
          intField(f.bytes);
        }
        break;
      case 'R':
        if (is(key, "Record function id")) intField(f.record_function_id);
        break;
      case 'r':
        if (is(key, "registers per thread")) intField(f.registers);
        break;
      case 'B':
        if (is(key, "Bytes")) intField(f.mem_bytes);
        break;
      case 'A':
        if (is(key, "Addr")) intField(f.addr);
        break;
      case 'D':
        if (is(key, "Device Id"))
          intField(f.device_id);
        else if (is(key, "Device Type"))
          intField(f.device_type);
        break;
      case 'w':
        if (is(key, "wait_on_stream"))
          intField(f.wait_on_stream);
        else if (is(key, "wait_on_cuda_event_record_corr_id"))
          intField(f.wait_record_corr);
        else if (is(key, "wait_on_cuda_event_id"))
          intField(f.wait_event_id);
        break;
      case 'k':
        if (is(key, "kind")) (void)readString(av, f.copy_kind);
        break;
      case 'n':
        if (is(key, "name")) (void)readString(av, f.proc_name);  // metadata events: process_name etc.
        break;
      case 'I':
        if (options_.keep_cpu_ops && is(key, "Input Dims")) {
          KFUSE_RETURN_IF_ERROR(parseInputDims(av, f));
        } else if (options_.keep_cpu_ops && is(key, "Input type")) {
          KFUSE_RETURN_IF_ERROR(parseInputTypes(av, f));
        }
        break;
      default: break;
    }
  }
  return {};
}

Status KinetoParse::parseInputDims(od::value v, Fields& f) {
  od::array outer;
  if (v.get_array().get(outer)) return {};
  for (auto in_r : outer) {
    od::value in;
    if (auto err = std::move(in_r).get(in)) return jsonError(err, "Input Dims");
    std::vector<int64_t> dims;
    od::array inner;
    if (!in.get_array().get(inner)) {
      for (auto d_r : inner) {
        od::value d;
        if (auto err = std::move(d_r).get(d)) return jsonError(err, "Input Dims");
        int64_t x = 0;
        if (readInt(d, x)) dims.push_back(x);  // nested lists (TensorList inputs) are left out
      }
    }
    f.input_dims.push_back(std::move(dims));
  }
  return {};
}

Status KinetoParse::parseInputTypes(od::value v, Fields& f) {
  od::array a;
  if (v.get_array().get(a)) return {};
  for (auto t_r : a) {
    od::value t;
    if (auto err = std::move(t_r).get(t)) return jsonError(err, "Input type");
    std::string_view s;
    f.input_types.push_back(readString(t, s) ? s : std::string_view());
  }
  return {};
}

Status KinetoParse::parseEvents(od::array& events) {
  Fields f;
  for (auto ev_r : events) {
    ++events_read_;
    od::value ev_v;
    if (auto err = std::move(ev_r).get(ev_v)) return jsonError(err, "traceEvents");
    od::object ev;
    if (auto err = ev_v.get_object().get(ev)) {
      if (err != simdjson::INCORRECT_TYPE) return jsonError(err, "traceEvents");
      problems_.add(core::StatId::kKinetoEventNotObject);
      continue;
    }
    f.reset();
    for (auto field_r : ev) {
      od::field field;
      if (auto err = std::move(field_r).get(field)) return jsonError(err, "an event");
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) return jsonError(err, "an event key");
      od::value v = field.value();
      if (key.size() == 2) {
        if (is(key, "ph")) {
          if (!readString(v, f.ph)) ++f.bad_values;
        } else if (is(key, "ts")) {
          int64_t x = 0;
          if (readTimeNs(v, x))
            f.ts = x;
          else
            ++f.bad_values;
        }
      } else if (is(key, "cat")) {
        if (!readString(v, f.cat)) ++f.bad_values;
      } else if (is(key, "name")) {
        if (!readString(v, f.name)) ++f.bad_values;
      } else if (is(key, "dur")) {
        int64_t x = 0;
        if (readTimeNs(v, x) && x >= 0)
          f.dur = x;
        else
          ++f.bad_values;
      } else if (is(key, "pid") || is(key, "tid")) {
        od::json_type t;
        if (v.type().get(t)) return jsonError(simdjson::TAPE_ERROR, "an event");
        int64_t x = 0;
        std::string_view s;
        if (t == od::json_type::string && readString(v, s)) {
          (is(key, "pid") ? f.pid_text : f.tid_text) = s;
          if (parseTrailingInt(s, x)) (is(key, "pid") ? f.pid : f.tid) = x;
        } else if (readInt(v, x)) {
          (is(key, "pid") ? f.pid : f.tid) = x;
        }
      } else if (is(key, "args")) {
        KFUSE_RETURN_IF_ERROR(parseArgs(v, f));
      }
    }
    collect(f);
    ++order_;
  }
  return {};
}

}  // namespace kfuse::analyzer::detail::kineto
