// What the files of the Kineto importer share (kineto_importer.cpp says which file holds what): the records that
// phase 1 collects from events, and KinetoParse, the state of one import. Private to the analyzer.
#pragma once

#include <simdjson.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "import/import_stats.h"
#include "import/importers.h"
#include "import/input_file.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::analyzer::detail::kineto {

namespace od = simdjson::ondemand;
using core::Id;
using core::kNoId;
using core::kNoTime;

// ----- collected records ------------------------------------------------------------------------------------

enum class EventClass { kOther, kKernel, kMemcpy, kMemset, kApi, kSync, kCpuOp, kMemory, kMeta, kScope };

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
inline bool validStream(int64_t s) {
  return s >= 0 && s != 4294967295LL;
}

// ----- the importer -----------------------------------------------------------------------------------------

// One import of one file: phase 1 (kineto_scan.cpp, kineto_json.cpp, kineto_records.cpp) collects compact
// records, phase 2 (kineto_model.cpp) joins them and writes the model. Lives for one import() call; not
// thread-safe.
class KinetoParse {
 public:
  KinetoParse(const std::string& path, const ImportOptions& options)
      : path_(path), options_(options), last_progress_(std::chrono::steady_clock::now()) {}

  Expected<ImportResult> run();

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

  // kineto_scan.cpp: the scanner.
  Status jsonError(simdjson::error_code err, const char* where);
  Status structureError(const std::string& what);
  Status scanAll();
  void compact();
  bool skipString();
  void skipInsideEvent();
  Status scan();
  void startEvents(size_t begin, int depth);
  void endCapture(size_t end);
  Status flushBatch(size_t end);

  // kineto_json.cpp: events and top-level members read with simdjson.
  Status parseTopLevel();
  Status parseDeviceProperties(od::value v);
  Status parseDistributedInfo(od::value v);
  Status parseArgs(od::value v, Fields& f);
  Status parseInputDims(od::value v, Fields& f);
  Status parseInputTypes(od::value v, Fields& f);
  Status parseEvents(od::array& events);

  // kineto_records.cpp: one event -> one compact record.
  void collect(const Fields& f);
  void shareInputs(const Fields& f, CpuOp& op);
  std::string_view intern(std::string_view s);

  // ----- phase 2: join and build the model (kineto_model.cpp) -----
  void build();
  void buildEventsAndSyncs(ModelTracker& model);
  void buildAllocations(ModelTracker& model);

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

}  // namespace kfuse::analyzer::detail::kineto
