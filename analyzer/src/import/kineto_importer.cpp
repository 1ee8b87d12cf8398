// PyTorch profiler (Kineto) Chrome traces: {"traceEvents": [...], "deviceProperties": [...], ...}, plain or gzip,
// current and 2021 layouts. docs/importers.md lists the mapping field by field.
//
// The text is streamed: read (and inflated, on a second thread) in chunks, scanned for the boundaries of the
// elements of traceEvents, and parsed in batches with simdjson's On-Demand API (see KinetoParse). Events are first
// collected into compact records whose strings are interned, then joined by correlation id and written into the
// model, so events may come in any order in the file.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "import/api_names.h"
#include "import/import_stats.h"
#include "import/importers.h"
#include "import/input_file.h"

namespace kfuse::analyzer::detail {
namespace {

namespace od = simdjson::ondemand;
using core::Id;
using core::kNoId;
using core::kNoTime;

// ----- small parsing helpers --------------------------------------------------------------------------------

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

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

// ----- collected records ------------------------------------------------------------------------------------

enum class EventClass { kOther, kKernel, kMemcpy, kMemset, kApi, kSync, kCpuOp, kMemory, kMeta, kScope };

// PyTorch names a module's forward call "nn.Module: Linear_0" (a python_function event, with_modules=True).
constexpr std::string_view kModulePrefix = "nn.Module: ";

EventClass classify(std::string_view cat, std::string_view name) {
  if (cat.empty()) return name == "[memory]" ? EventClass::kMemory : EventClass::kOther;
  if (iequals(cat, "kernel")) return EventClass::kKernel;
  if (iequals(cat, "gpu_memcpy") || iequals(cat, "memcpy")) return EventClass::kMemcpy;
  if (iequals(cat, "gpu_memset") || iequals(cat, "memset")) return EventClass::kMemset;
  if (iequals(cat, "cuda_runtime") || iequals(cat, "cuda_driver") || iequals(cat, "runtime") ||
      iequals(cat, "driver")) {
    return EventClass::kApi;
  }
  if (iequals(cat, "cuda_sync")) return EventClass::kSync;
  if (iequals(cat, "cpu_op") || iequals(cat, "operator")) return EventClass::kCpuOp;
  if (name == "[memory]") return EventClass::kMemory;
  if (iequals(cat, "user_annotation")) return EventClass::kScope;
  if (iequals(cat, "python_function") && name.substr(0, kModulePrefix.size()) == kModulePrefix)
    return EventClass::kScope;
  return EventClass::kOther;
}

// Everything an event may carry, reset per event. Fields absent from the event stay nullopt.
struct Fields {
  std::string_view ph, cat, name;
  std::optional<int64_t> pid, tid, ts, dur;
  std::string_view tid_text, pid_text;
  // args
  std::optional<int64_t> stream, correlation, external_id, record_function_id, device, context, registers,
      shared_memory, bytes, addr, mem_bytes, device_id, device_type, wait_on_stream, wait_record_corr, wait_event_id;
  std::optional<core::Dim3> grid, block;
  std::string_view sync_kind, copy_kind, proc_name;
  std::vector<std::vector<int64_t>> input_dims;
  std::vector<std::string_view> input_types;
  int bad_values = 0;  // fields present with a type or value that makes no sense

  void reset() {
    std::vector<std::vector<int64_t>> dims = std::move(input_dims);
    std::vector<std::string_view> types = std::move(input_types);
    *this = Fields{};
    dims.clear();
    types.clear();
    input_dims = std::move(dims);
    input_types = std::move(types);
  }
};

struct GpuOp {
  EventClass cls = EventClass::kKernel;
  std::string_view name;
  int64_t device = -1, stream = -1;
  int64_t correlation = 0, external_id = 0;
  int64_t start_ns = kNoTime, end_ns = kNoTime;
  core::Dim3 grid, block;
  bool has_config = false;
  bool has_registers = false;
  uint32_t registers = 0, shared = 0;
  int64_t bytes = -1;
  std::string_view copy_kind;
  size_t order = 0;  // position in the file, the last tie-breaker
};

struct ApiCall {
  std::string_view name;
  int64_t correlation = 0, external_id = 0;
  int64_t start_ns = kNoTime, end_ns = kNoTime;
  int64_t pid = 0, tid = 0;
};

// The host side of a copy or set (Memcpy / Memset): when and on which thread it was issued, and whether it was
// an Async call.
template <typename Record>
void takeApiSpan(Record& r, const ApiCall* api) {
  if (!api) return;
  r.api_start_ns = api->start_ns;
  r.api_end_ns = api->end_ns;
  r.thread_id = api->tid;
  r.async = api->name.find("Async") != std::string_view::npos;
}

struct SyncEvent {
  std::string_view kind;
  int64_t correlation = 0;
  int64_t device = -1, stream = -1, wait_on_stream = -1, wait_record_corr = -1, wait_event_id = -1;
  int64_t start_ns = kNoTime, end_ns = kNoTime;
};

struct MemoryEvent {
  int64_t ts_ns = kNoTime;
  int64_t addr = 0, bytes = 0, device = 0;
  size_t order = 0;
};

struct DeviceProps {
  int64_t id = -1;
  std::string name;
  int64_t sms = 0, memory = 0, major = 0, minor = 0;
};

// Kineto writes -1 or 2^32-1 for "no stream".
bool validStream(int64_t s) {
  return s >= 0 && s != 4294967295LL;
}

std::optional<core::SyncKind> syncKindOfKineto(std::string_view kind) {
  if (kind == "Stream Sync") return core::SyncKind::kStream;
  if (kind == "Context Sync") return core::SyncKind::kContext;
  if (kind == "Event Sync") return core::SyncKind::kEvent;
  if (kind == "Stream Wait Event") return core::SyncKind::kStreamWaitEvent;
  if (kind == "Unknown") return core::SyncKind::kUnknown;
  return std::nullopt;
}

core::MemcpyKind memcpyKind(std::string_view name, std::string_view kind_arg) {
  for (std::string_view text : {kind_arg, name}) {
    if (text.find("HtoD") != std::string_view::npos) return core::MemcpyKind::kHostToDevice;
    if (text.find("DtoH") != std::string_view::npos) return core::MemcpyKind::kDeviceToHost;
    if (text.find("DtoD") != std::string_view::npos) return core::MemcpyKind::kDeviceToDevice;
    if (text.find("HtoH") != std::string_view::npos) return core::MemcpyKind::kHostToHost;
    if (text.find("PtoP") != std::string_view::npos || text.find("Peer") != std::string_view::npos) {
      return core::MemcpyKind::kPeer;
    }
  }
  return core::MemcpyKind::kUnknown;
}

// ----- the importer -----------------------------------------------------------------------------------------

class KinetoParse {
 public:
  KinetoParse(const std::string& path, const ImportOptions& options)
      : path_(path), options_(options), last_progress_(std::chrono::steady_clock::now()) {}

  Expected<ImportResult> run() {
    KFUSE_ASSIGN_OR_RETURN(source_, TextSource::open(path_, options_.max_json_bytes));
    // Inflate on a second thread while this one parses.
    if (source_->compressed()) source_ = TextSource::pipelined(std::move(source_), kChunkBytes, /*depth=*/2);
    KFUSE_RETURN_IF_ERROR(scanAll());
    KFUSE_RETURN_IF_ERROR(parseTopLevel());
    build();
    result_.problems = problems_.stats();
    return std::move(result_);
  }

 private:
  // ----- phase 1: parse -----
  //
  // The text is read in chunks (inflated on the fly) and scanned byte by byte outside of events: strings and
  // nesting only, to find the elements of "traceEvents". Complete elements are handed to simdjson On-Demand in
  // batches of about kBatchBytes, wrapped in [ ], so memory holds one chunk and one batch, not the file. The other
  // top-level members (deviceProperties, distributedInfo, ...) are copied aside and parsed at the end.

  static constexpr size_t kChunkBytes = 1 << 20;
  static constexpr size_t kBatchBytes = 1 << 20;
  // The most text one event, one top-level member, one string or one run of whitespace may hold. Real events are
  // well under a megabyte; a gzip bomb inflating to one 4 GiB string is refused here, after inflating this much,
  // instead of after gigabytes of buffering.
  static constexpr size_t kMaxElementBytes = size_t{64} << 20;

  enum class Top { kStart, kObject, kDone };
  enum class Expect { kKey, kColon, kValue, kCommaOrEnd };

  Status jsonError(simdjson::error_code err, const char* where) {
    std::string at;
    const char* loc = nullptr;
    if (have_doc_ && !doc_.current_location().get(loc) && loc >= batch_.data() + 1 &&
        loc <= batch_.data() + batch_size_) {
      at = " near byte " + std::to_string(batch_offset_ + static_cast<uint64_t>(loc - batch_.data() - 1));
    }
    std::string what = simdjson::error_message(err);
    if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::TAPE_ERROR ||
        err == simdjson::UNCLOSED_STRING || err == simdjson::EMPTY) {
      what += " (is the file truncated?)";
    }
    return badFormat(path_ + ": malformed JSON" + at + " while reading " + where + ": " + what);
  }

  Status structureError(const std::string& what) {
    return badFormat(path_ + ": malformed JSON at byte " + std::to_string(consumed_ + pos_) + ": " + what);
  }

  Status scanAll() {
    bool eof = false;
    while (!eof) {
      const size_t old = pending_.size();
      pending_.resize(old + kChunkBytes);
      KFUSE_ASSIGN_OR_RETURN(size_t n, source_->read(pending_.data() + old, kChunkBytes));
      pending_.resize(old + n);
      eof = n == 0;
      KFUSE_RETURN_IF_ERROR(scan());
      if (in_events_ && last_sep_ != kNone && last_sep_ - elem_start_ >= kBatchBytes) {
        KFUSE_RETURN_IF_ERROR(flushBatch(last_sep_));
      }
      compact();
      if (options_.progress) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_progress_ >= std::chrono::seconds(1)) {
          last_progress_ = now;
          options_.progress(source_->textBytes(), events_read_);
        }
      }
      if (pending_.size() > kMaxElementBytes) {
        const char* what = in_string_   ? "a string"
                           : in_events_ ? "an element of \"traceEvents\""
                                        : "a top-level member";
        return badFormat(path_ + ": " + what + " at byte " + std::to_string(consumed_) + " or later is longer than " +
                         std::to_string(kMaxElementBytes >> 20) +
                         " MiB; refusing to buffer it (a damaged or hostile file?)");
      }
    }
    if (top_ != Top::kDone) {
      if (consumed_ + pending_.size() == 0) return badFormat(path_ + ": empty file, not a Chrome/Kineto trace");
      return badFormat(path_ + ": truncated JSON: the text ends at byte " +
                       std::to_string(consumed_ + pending_.size()) + " inside the trace (is the file truncated?)");
    }
    if (!have_events_ && saw_nodes_ && saw_schema_) {
      // {"schema": ..., "nodes": [...]}: what torch.profiler.ExecutionTraceObserver writes beside a profiler trace.
      return badFormat(path_ +
                       ": a PyTorch Execution Trace (operators and tensors, no GPU kernels), not a profiler "
                       "trace: analyze the Kineto trace (torch.profiler) recorded in the same run");
    }
    if (!have_events_) return badFormat(path_ + ": not a Chrome/Kineto trace: no \"traceEvents\" array");
    return {};
  }

  // Drops text nothing refers to any more.
  void compact() {
    size_t keep = pos_;
    if (in_events_) keep = std::min(keep, elem_start_);
    if (capturing_) keep = std::min(keep, capture_start_);
    if (in_string_) keep = std::min(keep, string_start_);
    if (keep == 0) return;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(keep));
    consumed_ += keep;
    pos_ -= keep;
    if (in_events_) {
      elem_start_ -= keep;
      if (last_sep_ != kNone) last_sep_ -= keep;
    }
    if (capturing_) capture_start_ -= keep;
    if (in_string_) string_start_ -= keep;
  }

  // The string starting at string_start_ ends at the unescaped quote at or after pos_; false when not yet read.
  bool skipString() {
    const char* base = pending_.data();
    const size_t end = pending_.size();
    while (pos_ < end) {
      const void* q = std::memchr(base + pos_, '"', end - pos_);
      if (!q) {
        pos_ = end;
        return false;
      }
      size_t quote = static_cast<size_t>(static_cast<const char*>(q) - base);
      size_t backslashes = 0;
      while (quote - backslashes > string_start_ && base[quote - backslashes - 1] == '\\') ++backslashes;
      pos_ = quote + 1;
      if (backslashes % 2 == 0) return true;
    }
    return false;
  }

  static bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  // Inside one event only strings and brackets matter: a tight loop for the bulk of the text.
  void skipInsideEvent() {
    static constexpr auto kStop = [] {
      std::array<bool, 256> t{};
      for (unsigned char c : {'"', '{', '}', '[', ']'}) t[c] = true;
      return t;
    }();
    const char* p = pending_.data();
    const size_t end = pending_.size();
    while (pos_ < end) {
      const char c = p[pos_];
      if (!kStop[static_cast<unsigned char>(c)]) {
        ++pos_;
        continue;
      }
      if (c == '"') {
        string_start_ = pos_ + 1;
        pos_ = string_start_;
        in_string_ = true;
        if (!skipString()) return;
        in_string_ = false;
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') {
        ++depth_;
      } else if (--depth_ == events_depth_) {
        return;  // the event is complete
      }
    }
  }

  Status scan() {
    const size_t end = pending_.size();
    while (pos_ < end) {
      if (in_events_ && depth_ > events_depth_ && !in_string_) {
        skipInsideEvent();
        continue;
      }
      if (in_string_) {
        if (!skipString()) return {};
        in_string_ = false;
        if (top_ == Top::kObject && depth_ == 1 && expect_ == Expect::kKey) {
          key_.assign(pending_.data() + string_start_, pos_ - 1 - string_start_);
          expect_ = Expect::kColon;
        } else if (depth_ == 1 && expect_ == Expect::kValue) {
          expect_ = Expect::kCommaOrEnd;  // a string value of a top-level member
        }
        continue;
      }
      const char c = pending_[pos_];
      if (isSpace(c)) {
        ++pos_;
        continue;
      }
      if (top_ == Top::kDone) return structureError("text after the end of the JSON document");
      if (top_ == Top::kStart) {
        if (c == '\xEF' || c == '\xBB' || c == '\xBF') {  // UTF-8 byte order mark
          ++pos_;
          continue;
        }
        if (c == '{') {
          top_ = Top::kObject;
          depth_ = 1;
          expect_ = Expect::kKey;
        } else if (c == '[') {  // the bare Chrome "JSON Array Format"
          top_ = Top::kObject;
          depth_ = 1;
          startEvents(pos_ + 1, /*depth=*/1);
          bare_array_ = true;
        } else {
          return badFormat(path_ + ": not a Chrome/Kineto trace: the JSON document is not an object or array");
        }
        ++pos_;
        continue;
      }
      // Top-level member structure (depth 1 of the root object).
      if (depth_ == 1 && !bare_array_) {
        if (expect_ == Expect::kKey) {
          if (c == '"') {
            in_string_ = true;
            string_start_ = pos_ + 1;
            ++pos_;
            continue;
          }
          if (c == '}' && other_members_ == 0 && !have_events_) {  // {}
            top_ = Top::kDone;
            depth_ = 0;
            ++pos_;
            continue;
          }
          return structureError("expected a member name");
        }
        if (expect_ == Expect::kColon) {
          if (c != ':') return structureError("expected ':' after \"" + key_ + "\"");
          expect_ = Expect::kValue;
          ++pos_;
          continue;
        }
        if (expect_ == Expect::kValue) {
          if (key_ == "traceEvents") {
            if (c != '[') return badFormat(path_ + ": \"traceEvents\" is not an array");
            if (have_events_) return structureError("a second \"traceEvents\" member");
            depth_ = 2;
            startEvents(pos_ + 1, /*depth=*/2);
            ++pos_;
            continue;
          }
          saw_nodes_ = saw_nodes_ || key_ == "nodes";
          saw_schema_ = saw_schema_ || key_ == "schema";
          capturing_ = true;
          capture_start_ = pos_;
          expect_ = Expect::kCommaOrEnd;
          // Fall through: the value's first byte is scanned below.
        } else if (expect_ == Expect::kCommaOrEnd && (c == ',' || c == '}')) {
          if (capturing_) endCapture(pos_);
          if (c == ',') {
            expect_ = Expect::kKey;
          } else {
            top_ = Top::kDone;
            depth_ = 0;
          }
          ++pos_;
          continue;
        }
      }
      switch (c) {
        case '"':
          in_string_ = true;
          string_start_ = pos_ + 1;
          break;
        case '{':
        case '[': ++depth_; break;
        case '}':
        case ']':
          if (in_events_ && depth_ == events_depth_) {
            if (c != ']') return structureError("'}' closes the traceEvents array");
            KFUSE_RETURN_IF_ERROR(flushBatch(pos_));
            in_events_ = false;
            have_events_ = true;
            if (bare_array_) {
              top_ = Top::kDone;
              depth_ = 0;
              ++pos_;
              continue;
            }
            expect_ = Expect::kCommaOrEnd;
          }
          if (--depth_ < 1) return structureError("unbalanced closing bracket");
          break;
        case ',':
          if (in_events_ && depth_ == events_depth_) last_sep_ = pos_;
          break;
        default: break;
      }
      ++pos_;
    }
    return {};
  }

  void startEvents(size_t begin, int depth) {
    in_events_ = true;
    events_depth_ = depth;
    elem_start_ = begin;
    last_sep_ = kNone;
  }

  void endCapture(size_t end) {
    other_json_ += other_members_++ ? ",\"" : "\"";
    other_json_ += key_;
    other_json_ += "\":";
    other_json_.append(pending_.data() + capture_start_, end - capture_start_);
    capturing_ = false;
  }

  // Parses the elements in [elem_start_, end) as one array and moves past them.
  Status flushBatch(size_t end) {
    const size_t n = end - elem_start_;
    bool blank = true;
    for (size_t i = elem_start_; i < end && blank; ++i) blank = isSpace(pending_[i]);
    if (!blank) {
      batch_size_ = n + 2;
      if (batch_.size() < batch_size_ + simdjson::SIMDJSON_PADDING)
        batch_.resize(batch_size_ + simdjson::SIMDJSON_PADDING);
      batch_[0] = '[';
      std::memcpy(batch_.data() + 1, pending_.data() + elem_start_, n);
      batch_[n + 1] = ']';
      std::memset(batch_.data() + batch_size_, 0, simdjson::SIMDJSON_PADDING);
      batch_offset_ = consumed_ + elem_start_;
      have_doc_ = false;
      auto err = parser_.iterate(batch_.data(), batch_size_, batch_.size()).get(doc_);
      if (err) return jsonError(err, "traceEvents");
      have_doc_ = true;
      od::array events;
      if ((err = doc_.get_array().get(events))) return jsonError(err, "traceEvents");
      KFUSE_RETURN_IF_ERROR(parseEvents(events));
    }
    elem_start_ = end + 1;
    last_sep_ = kNone;
    return {};
  }

  // deviceProperties, distributedInfo and the scalars beside traceEvents.
  Status parseTopLevel() {
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

  // Training and inference loops repeat the same shapes: one shared copy per distinct description.
  void shareInputs(const Fields& f, CpuOp& op) {
    std::string& key = inputs_key_;
    key.clear();
    for (const auto& dims : f.input_dims) {
      key.push_back('[');
      for (int64_t d : dims) key.append(reinterpret_cast<const char*>(&d), sizeof d);
      key.push_back(']');
    }
    key.push_back('|');
    for (std::string_view t : f.input_types) {
      key.append(t);
      key.push_back('\0');
    }
    auto it = inputs_.find(key);
    if (it == inputs_.end()) {
      SharedInputs in{SharedVector<std::vector<int64_t>>(f.input_dims),
                      SharedVector<std::string>(std::vector<std::string>(f.input_types.begin(), f.input_types.end()))};
      it = inputs_.emplace(key, std::move(in)).first;
    }
    op.input_dims = it->second.dims;
    op.input_types = it->second.types;
  }

  // Names, categories and kinds repeat: one copy each, alive until the import ends (the parser's own string
  // buffer is overwritten by the next batch).
  std::string_view intern(std::string_view s) {
    if (s.empty()) return {};
    auto it = strings_.find(s);
    if (it == strings_.end()) it = strings_.emplace(s).first;
    return *it;
  }

  Status parseDeviceProperties(od::value v) {
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

  Status parseDistributedInfo(od::value v) {
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

  Status parseArgs(od::value v, Fields& f) {
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

  Status parseInputDims(od::value v, Fields& f) {
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

  Status parseInputTypes(od::value v, Fields& f) {
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

  Status parseEvents(od::array& events) {
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

  void collect(const Fields& f) {
    if (f.ph == "M") {
      if (f.name == "process_name" && f.pid && !f.proc_name.empty()) process_names_[*f.pid] = std::string(f.proc_name);
      return;
    }
    const EventClass cls = classify(f.cat, f.name);
    if (cls == EventClass::kOther) return;
    if (f.bad_values > 0) {
      problems_.add(core::StatId::kKinetoBadFieldValues, f.bad_values);
    }
    const bool complete = f.ph.empty() || f.ph == "X";
    switch (cls) {
      case EventClass::kKernel:
      case EventClass::kMemcpy:
      case EventClass::kMemset: {
        if (!complete) {
          problems_.add(core::StatId::kKinetoGpuEventNotComplete);
          return;
        }
        if (!f.ts) {
          problems_.add(core::StatId::kKinetoGpuEventWithoutTs);
          return;
        }
        GpuOp op;
        op.cls = cls;
        op.name = intern(f.name);
        op.order = order_;
        op.start_ns = *f.ts;
        if (f.dur) {
          op.end_ns = *f.ts + *f.dur;
        } else {
          problems_.add(core::StatId::kKinetoGpuEventWithoutDur);
        }
        if (f.device) {
          op.device = *f.device;
        } else if (f.pid) {
          op.device = *f.pid;  // GPU rows use the device ordinal as their pid
        }
        if (f.stream) {
          op.stream = *f.stream;
        } else if (f.tid) {
          op.stream = *f.tid;  // "stream 7" in 2021 traces, 7 today
        }
        if (op.device < 0 || op.device > std::numeric_limits<int>::max()) {
          problems_.add(core::StatId::kKinetoGpuEventWithoutDevice);
          op.device = 0;
        }
        if (!validStream(op.stream)) {
          problems_.add(core::StatId::kKinetoGpuEventWithoutStream);
          op.stream = -1;
        }
        op.correlation = f.correlation.value_or(0);
        if (!f.correlation) {
          problems_.add(core::StatId::kKinetoGpuEventWithoutCorrelation);
        }
        op.external_id = f.external_id.value_or(0);
        if (cls == EventClass::kKernel) {
          if (f.grid && f.block) {
            op.grid = *f.grid;
            op.block = *f.block;
            op.has_config = true;
          } else {
            problems_.add(core::StatId::kKinetoKernelWithoutLaunchConfig);
          }
          if (f.registers && *f.registers >= 0 && *f.registers <= 65536) {
            op.registers = static_cast<uint32_t>(*f.registers);
            op.has_registers = true;
          } else {
            problems_.add(core::StatId::kKinetoKernelWithoutRegisters);
          }
          if (f.shared_memory && *f.shared_memory >= 0 && *f.shared_memory <= std::numeric_limits<uint32_t>::max()) {
            op.shared = static_cast<uint32_t>(*f.shared_memory);
          }
        } else {
          if (f.bytes && *f.bytes >= 0) {
            op.bytes = *f.bytes;
          } else {
            problems_.add(core::StatId::kKinetoCopyWithoutBytes);
          }
          op.copy_kind = intern(f.copy_kind);
        }
        gpu_ops_.push_back(op);
        return;
      }
      case EventClass::kApi: {
        if (!f.correlation) return;  // nothing to join it with
        ApiCall a;
        a.name = intern(f.name);
        a.correlation = *f.correlation;
        a.external_id = f.external_id.value_or(0);
        if (f.ts) {
          a.start_ns = *f.ts;
          if (f.dur) a.end_ns = *f.ts + *f.dur;
        }
        a.pid = f.pid.value_or(0);
        a.tid = f.tid.value_or(0);
        apis_.push_back(a);
        return;
      }
      case EventClass::kSync: {
        SyncEvent s;
        s.kind = intern(f.sync_kind.empty() ? f.name : f.sync_kind);
        s.correlation = f.correlation.value_or(0);
        s.device = f.device.value_or(f.pid.value_or(0));
        if (s.device < 0 || s.device > std::numeric_limits<int>::max()) s.device = 0;
        s.stream = f.stream.value_or(-1);
        s.wait_on_stream = f.wait_on_stream.value_or(-1);
        s.wait_record_corr = f.wait_record_corr.value_or(-1);
        s.wait_event_id = f.wait_event_id.value_or(-1);
        if (f.ts) {
          s.start_ns = *f.ts;
          if (f.dur) s.end_ns = *f.ts + *f.dur;
        }
        syncs_.push_back(s);
        return;
      }
      case EventClass::kCpuOp: {
        if (!options_.keep_cpu_ops || !complete) return;
        CpuOp op;
        op.external_id = f.external_id.value_or(0);
        op.record_function_id = f.record_function_id.value_or(-1);
        op.name = std::string(f.name);
        op.pid = f.pid.value_or(0);
        op.thread_id = f.tid.value_or(0);
        if (f.ts) {
          op.start_ns = *f.ts;
          if (f.dur) op.end_ns = *f.ts + *f.dur;
        }
        if (!f.input_dims.empty() || !f.input_types.empty()) shareInputs(f, op);
        result_.cpu_ops.push_back(std::move(op));
        return;
      }
      case EventClass::kScope: {
        // nn.Module forward calls and record_function / user annotations: ranges on the thread that issued the
        // CPU ops inside them, kept as NVTX-like ranges (domain "nn.Module" or "user_annotation").
        if (!options_.keep_cpu_ops || !complete || !f.ts || !f.dur) return;
        core::NvtxRange r;
        const bool module = iequals(f.cat, "python_function");
        r.domain = module ? "nn.Module" : "user_annotation";
        r.name = std::string(module ? f.name.substr(kModulePrefix.size()) : f.name);
        r.thread_id = f.tid.value_or(0);
        r.start_ns = *f.ts;
        r.end_ns = *f.ts + *f.dur;
        scopes_.push_back(std::move(r));
        return;
      }
      case EventClass::kMemory: {
        if (!f.addr || !f.mem_bytes || !f.ts) {
          problems_.add(core::StatId::kKinetoMemoryEventIncomplete);
          return;
        }
        // c10::DeviceType: 0 CPU, 1 CUDA; ROCm builds report CUDA too. HIP (6) is accepted as well.
        const int64_t type = f.device_type.value_or(1);
        if (type != 1 && type != 6) {
          problems_.add(core::StatId::kKinetoMemoryEventNotGpu);
          return;
        }
        MemoryEvent m;
        m.ts_ns = *f.ts;
        m.addr = *f.addr;
        m.bytes = *f.mem_bytes;
        m.device = f.device_id.value_or(0);
        if (m.device < 0 || m.device > std::numeric_limits<int>::max()) m.device = 0;
        m.order = order_;
        memory_.push_back(m);
        return;
      }
      default: return;
    }
  }

  // ----- phase 2: join and build the model -----

  void build() {
    core::Trace& t = result_.trace;
    setImportMetadata(t.metadata, "kineto", path_);
    for (auto& [k, v] : meta_extra_) t.metadata.extra[k] = v;
    ModelTracker model(t);

    std::sort(devices_.begin(), devices_.end(), [](const DeviceProps& a, const DeviceProps& b) { return a.id < b.id; });
    for (const DeviceProps& d : devices_) {
      core::Device dev;
      dev.ordinal = static_cast<int>(d.id);
      dev.name = std::string(d.name);
      dev.sm_count = static_cast<int>(std::clamp<int64_t>(d.sms, 0, 1 << 20));
      dev.memory_bytes = d.memory > 0 ? static_cast<uint64_t>(d.memory) : 0;
      dev.cc_major = static_cast<int>(std::clamp<int64_t>(d.major, 0, 1000));
      dev.cc_minor = static_cast<int>(std::clamp<int64_t>(d.minor, 0, 1000));
      model.addDevice(std::move(dev));
    }

    // Processes: those that called the GPU APIs.
    std::vector<int64_t> pids;
    for (const ApiCall& a : apis_) pids.push_back(a.pid);
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    for (int64_t pid : pids) {
      auto it = process_names_.find(pid);
      model.process(pid, it == process_names_.end() ? std::string_view() : std::string_view(it->second));
    }

    // Streams in (device, native id) order, before any record refers to them.
    std::vector<std::pair<int64_t, int64_t>> stream_keys;
    for (const GpuOp& op : gpu_ops_) stream_keys.emplace_back(op.device, op.stream);
    for (const SyncEvent& s : syncs_) {
      if (validStream(s.stream)) stream_keys.emplace_back(s.device, s.stream);
      if (validStream(s.wait_on_stream)) stream_keys.emplace_back(s.device, s.wait_on_stream);
    }
    std::sort(stream_keys.begin(), stream_keys.end());
    stream_keys.erase(std::unique(stream_keys.begin(), stream_keys.end()), stream_keys.end());
    for (const auto& [dev, s] : stream_keys) {
      bool created = false;
      model.device(dev, &created);
      if (created) {
        problems_.add(core::StatId::kKinetoDeviceWithoutProperties);
      }
      model.stream(dev, s);
    }
    if (t.processes.size() == 1) model.setContextProcess(t.processes.front().id);

    // Correlation id -> API call.
    std::unordered_map<int64_t, size_t> api_by_corr;
    api_by_corr.reserve(apis_.size());
    for (size_t i = 0; i < apis_.size(); ++i) {
      if (!api_by_corr.emplace(apis_[i].correlation, i).second) {
        problems_.add(core::StatId::kKinetoDuplicateApiCorrelation);
      }
    }
    auto apiFor = [&](int64_t corr) -> const ApiCall* {
      if (corr == 0) return nullptr;
      auto it = api_by_corr.find(corr);
      return it == api_by_corr.end() ? nullptr : &apis_[it->second];
    };

    // GPU operations, each kind numbered in GPU start order (then stream, then file order).
    std::sort(gpu_ops_.begin(), gpu_ops_.end(), [](const GpuOp& a, const GpuOp& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      if (a.device != b.device) return a.device < b.device;
      if (a.stream != b.stream) return a.stream < b.stream;
      return a.order < b.order;
    });
    for (const GpuOp& op : gpu_ops_) {
      const Id stream_id = model.stream(op.device, op.stream);
      const ApiCall* api = apiFor(op.correlation);
      const int64_t external_id = op.external_id != 0 ? op.external_id : (api ? api->external_id : 0);
      if (op.cls == EventClass::kKernel) {
        core::Launch l;
        l.id = static_cast<Id>(t.launches.size()) + 1;
        l.correlation_id = op.correlation;
        l.stream_id = stream_id;
        l.function_id = model.function(/*mangled=*/"", op.name);
        l.grid = op.grid;
        l.block = op.block;
        l.static_shared_bytes = op.shared;
        l.registers_per_thread = op.registers;
        l.gpu_start_ns = op.start_ns;
        l.gpu_end_ns = op.end_ns;
        if (api) {
          l.api_start_ns = api->start_ns;
          l.api_end_ns = api->end_ns;
          l.thread_id = api->tid;
        } else {
          problems_.add(core::StatId::kKinetoKernelWithoutApi);
        }
        if (external_id != 0) result_.launch_external_ids[l.id] = external_id;
        if (api && isGraphLaunchApi(api->name)) result_.launch_graph_ids[l.id] = api->correlation;
        t.launches.push_back(std::move(l));
      } else if (op.cls == EventClass::kMemcpy) {
        core::Memcpy m;
        m.id = static_cast<Id>(t.memcpys.size()) + 1;
        m.correlation_id = op.correlation;
        m.stream_id = stream_id;
        m.kind = memcpyKind(op.name, op.copy_kind);
        if (m.kind == core::MemcpyKind::kUnknown) {
          problems_.add(core::StatId::kKinetoMemcpyKindUnknown);
        }
        m.bytes = op.bytes > 0 ? static_cast<uint64_t>(op.bytes) : 0;
        m.gpu_start_ns = op.start_ns;
        m.gpu_end_ns = op.end_ns;
        takeApiSpan(m, api);
        if (external_id != 0) result_.memcpy_external_ids[m.id] = external_id;
        t.memcpys.push_back(m);
      } else {
        core::Memset m;
        m.id = static_cast<Id>(t.memsets.size()) + 1;
        m.correlation_id = op.correlation;
        m.stream_id = stream_id;
        m.bytes = op.bytes > 0 ? static_cast<uint64_t>(op.bytes) : 0;
        m.gpu_start_ns = op.start_ns;
        m.gpu_end_ns = op.end_ns;
        takeApiSpan(m, api);
        if (external_id != 0) result_.memset_external_ids[m.id] = external_id;
        t.memsets.push_back(m);
      }
    }

    buildEventsAndSyncs(model);
    buildAllocations(model);

    std::stable_sort(result_.cpu_ops.begin(), result_.cpu_ops.end(), [](const CpuOp& a, const CpuOp& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.external_id < b.external_id;
    });
    // Module and annotation ranges by start (the outer one first when two start together), numbered.
    std::stable_sort(scopes_.begin(), scopes_.end(), [](const core::NvtxRange& a, const core::NvtxRange& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.end_ns > b.end_ns;
    });
    for (core::NvtxRange& r : scopes_) {
      r.id = static_cast<Id>(t.nvtx_ranges.size()) + 1;
      t.nvtx_ranges.push_back(std::move(r));
    }
    scopes_.clear();
  }

  void buildEventsAndSyncs(ModelTracker& model) {
    core::Trace& t = result_.trace;
    // Events: one per event-record call, in call order.
    std::vector<const ApiCall*> records;
    for (const ApiCall& a : apis_) {
      if (isEventRecordApi(a.name)) records.push_back(&a);
    }
    std::stable_sort(records.begin(), records.end(),
                     [](const ApiCall* a, const ApiCall* b) { return a->start_ns < b->start_ns; });
    std::unordered_map<int64_t, size_t> event_by_corr;
    for (const ApiCall* a : records) {
      core::Event e;
      e.id = static_cast<Id>(t.events.size()) + 1;
      e.correlation_id = a->correlation;
      e.record_ns = a->start_ns;
      event_by_corr.emplace(a->correlation, t.events.size());
      t.events.push_back(e);
    }

    // Syncs: the union of Kineto's cuda_sync events and host synchronisation calls, one per correlation id.
    struct Pending {
      const SyncEvent* gpu = nullptr;
      const ApiCall* api = nullptr;
      int64_t start = kNoTime;
      size_t order = 0;
    };
    std::vector<Pending> pending;
    std::unordered_map<int64_t, size_t> by_corr;
    for (const SyncEvent& s : syncs_) {
      Pending p;
      p.gpu = &s;
      p.order = pending.size();
      if (s.correlation != 0) by_corr.emplace(s.correlation, pending.size());
      pending.push_back(p);
    }
    for (const ApiCall& a : apis_) {
      auto it = by_corr.find(a.correlation);
      if (it != by_corr.end()) {
        if (!pending[it->second].api) pending[it->second].api = &a;
        continue;
      }
      if (!syncKindOfApi(a.name)) continue;
      Pending p;
      p.api = &a;
      p.order = pending.size();
      by_corr.emplace(a.correlation, pending.size());
      pending.push_back(p);
    }
    for (Pending& p : pending) p.start = p.api ? p.api->start_ns : p.gpu->start_ns;
    std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
      if (a.start != b.start) return a.start < b.start;
      return a.order < b.order;
    });
    for (const Pending& p : pending) {
      core::Sync s;
      s.id = static_cast<Id>(t.syncs.size()) + 1;
      std::optional<core::SyncKind> kind;
      if (p.gpu) {
        kind = syncKindOfKineto(p.gpu->kind);
        s.correlation_id = p.gpu->correlation;
        const bool on_stream = kind == core::SyncKind::kStream || kind == core::SyncKind::kStreamWaitEvent;
        if (on_stream && validStream(p.gpu->stream)) s.stream_id = model.stream(p.gpu->device, p.gpu->stream);
        if (p.gpu->wait_record_corr >= 0) {
          auto it = event_by_corr.find(p.gpu->wait_record_corr);
          if (it != event_by_corr.end()) {
            core::Event& e = t.events[it->second];
            s.event_id = e.id;
            if (validStream(p.gpu->wait_on_stream) && e.stream_id == kNoId) {
              e.stream_id = model.stream(p.gpu->device, p.gpu->wait_on_stream);
            }
          } else {
            problems_.add(core::StatId::kKinetoSyncEventRecordMissing);
          }
        }
        s.start_ns = p.gpu->start_ns;
        s.end_ns = p.gpu->end_ns;
      }
      if (!kind && p.api) kind = syncKindOfApi(p.api->name);
      if (!kind) {
        problems_.add(core::StatId::kKinetoSyncKindUnknown);
      }
      s.kind = kind.value_or(core::SyncKind::kUnknown);
      if (p.api) {
        s.correlation_id = p.api->correlation;
        s.thread_id = p.api->tid;
        s.start_ns = p.api->start_ns;
        s.end_ns = p.api->end_ns;
      }
      if (!p.gpu && (s.kind == core::SyncKind::kStream || s.kind == core::SyncKind::kStreamWaitEvent)) {
        problems_.add(core::StatId::kKinetoSyncStreamUnknown);
      }
      t.syncs.push_back(s);
    }
  }

  void buildAllocations(ModelTracker& model) {
    core::Trace& t = result_.trace;
    std::stable_sort(memory_.begin(), memory_.end(), [](const MemoryEvent& a, const MemoryEvent& b) {
      if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
      return a.order < b.order;
    });
    std::unordered_map<int64_t, size_t> live;  // address -> index in t.allocations
    for (const MemoryEvent& m : memory_) {
      if (m.bytes == 0) continue;
      if (m.bytes > 0) {
        auto it = live.find(m.addr);
        if (it != live.end()) {
          problems_.add(core::StatId::kKinetoMemoryAllocOverLive);
          t.allocations[it->second].free_ns = m.ts_ns;
          live.erase(it);
        }
        core::Allocation a;
        a.id = static_cast<Id>(t.allocations.size()) + 1;
        a.context_id = model.context(m.device);
        a.address = static_cast<uint64_t>(m.addr);
        a.size = static_cast<uint64_t>(m.bytes);
        a.kind = core::AllocationKind::kPool;
        a.alloc_ns = m.ts_ns;
        live.emplace(m.addr, t.allocations.size());
        t.allocations.push_back(a);
        continue;
      }
      auto it = live.find(m.addr);
      if (it != live.end()) {
        core::Allocation& a = t.allocations[it->second];
        a.free_ns = m.ts_ns;
        if (a.size != static_cast<uint64_t>(-m.bytes)) {
          problems_.add(core::StatId::kKinetoMemoryFreeSizeMismatch);
        }
        live.erase(it);
        continue;
      }
      problems_.add(core::StatId::kKinetoMemoryFreeWithoutAlloc);
      core::Allocation a;
      a.id = static_cast<Id>(t.allocations.size()) + 1;
      a.context_id = model.context(m.device);
      a.address = static_cast<uint64_t>(m.addr);
      a.size = m.bytes == std::numeric_limits<int64_t>::min() ? 0 : static_cast<uint64_t>(-m.bytes);
      a.kind = core::AllocationKind::kPool;
      a.free_ns = m.ts_ns;
      t.allocations.push_back(a);
    }
  }

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr size_t kNone = static_cast<size_t>(-1);

  const std::string& path_;
  const ImportOptions& options_;
  std::unique_ptr<TextSource> source_;
  std::chrono::steady_clock::time_point last_progress_;
  uint64_t events_read_ = 0;
  // Scanner state; positions index pending_, which starts at text byte consumed_.
  std::vector<char> pending_;
  uint64_t consumed_ = 0;
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_string_ = false;
  size_t string_start_ = 0;
  Top top_ = Top::kStart;
  Expect expect_ = Expect::kKey;
  std::string key_;
  bool saw_nodes_ = false, saw_schema_ = false;  // top-level members of a PyTorch Execution Trace
  bool capturing_ = false;
  size_t capture_start_ = 0;
  std::string other_json_;
  int other_members_ = 0;
  bool in_events_ = false;
  bool bare_array_ = false;
  int events_depth_ = 0;
  size_t elem_start_ = 0;
  size_t last_sep_ = kNone;
  bool have_events_ = false;
  // The batch handed to simdjson.
  std::vector<char> batch_;
  size_t batch_size_ = 0;
  uint64_t batch_offset_ = 0;
  od::parser parser_;
  od::document doc_;
  bool have_doc_ = false;
  std::unordered_set<std::string, StringHash, std::equal_to<>> strings_;
  struct SharedInputs {
    SharedVector<std::vector<int64_t>> dims;
    SharedVector<std::string> types;
  };
  std::unordered_map<std::string, SharedInputs> inputs_;
  std::string inputs_key_;

  size_t order_ = 0;
  ProblemCounter problems_;
  ImportResult result_;
  std::map<std::string, std::string> meta_extra_;
  std::unordered_map<int64_t, std::string> process_names_;
  std::vector<DeviceProps> devices_;
  std::vector<GpuOp> gpu_ops_;
  std::vector<ApiCall> apis_;
  std::vector<core::NvtxRange> scopes_;
  std::vector<SyncEvent> syncs_;
  std::vector<MemoryEvent> memory_;
};

class KinetoImporter final : public Importer {
 public:
  std::string_view name() const override { return "kineto"; }
  std::string_view description() const override { return "PyTorch profiler / Kineto Chrome trace (.json, .json.gz)"; }
  int sniff(const SniffInput& in) const override {
    if (in.sqlite) return 0;
    const std::string_view head = in.head;
    const size_t first = head.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
    if (first == std::string_view::npos || (head[first] != '{' && head[first] != '[')) return 0;
    if (head.find("\"traceEvents\"") != std::string_view::npos) return 90;
    if (head.find("\"deviceProperties\"") != std::string_view::npos) return 80;
    if (head[first] == '[' && head.find("\"ph\"") != std::string_view::npos) return 70;
    // Some keys before traceEvents (distributedInfo of a big job) can outgrow the head: a JSON object in a file
    // named like a trace is worth a try.
    const std::string_view path = in.path;
    auto ends = [&](std::string_view s) { return path.size() >= s.size() && path.substr(path.size() - s.size()) == s; };
    if (ends(".json") || ends(".json.gz")) return 10;
    return 0;
  }
  Expected<ImportResult> import(const std::string& path, const ImportOptions& options) const override {
    KinetoParse parse(path, options);
    return parse.run();
  }
};

}  // namespace

std::unique_ptr<Importer> makeKinetoImporter() {
  return std::make_unique<KinetoImporter>();
}

}  // namespace kfuse::analyzer::detail
