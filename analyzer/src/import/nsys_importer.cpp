// Nsight Systems SQLite exports (`nsys export --type sqlite`), schema 2.9 to 3.25+. docs/importers.md lists the
// mapping. Tables are found by name with an optional _V<n> suffix (the highest present wins), columns are read by
// name and a missing column reads as NULL, strings are resolved through StringIds where the column holds an id.
// The file is opened read-only and immutable: it is never modified.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "import/api_names.h"
#include "import/import_stats.h"
#include "import/importers.h"
#include "import/sqlite_util.h"

namespace kfuse::analyzer::detail {
namespace {

using core::Id;
using core::kNoId;
using core::kNoTime;

// globalTid / globalPid pack (vm id, pid, tid) as documented by Nsight Systems: tid in the low 24 bits, pid in
// the next 24.
int64_t tidOf(int64_t global_tid) {
  return global_tid & 0xFFFFFF;
}
int64_t pidOf(int64_t global_id) {
  return (global_id >> 24) & 0xFFFFFF;
}

bool validStream(int64_t s) {
  return s >= 0 && s != 4294967295LL;
}

core::MemcpyKind copyKind(int64_t k) {
  switch (k) {  // CUpti_ActivityMemcpyKind (ENUM_CUDA_MEMCPY_OPER)
    case 1:
    case 3:
    case 11: return core::MemcpyKind::kHostToDevice;
    case 2:
    case 4:
    case 12: return core::MemcpyKind::kDeviceToHost;
    case 5:
    case 6:
    case 7:
    case 8:
    case 13: return core::MemcpyKind::kDeviceToDevice;
    case 9: return core::MemcpyKind::kHostToHost;
    case 10: return core::MemcpyKind::kPeer;
    default: return core::MemcpyKind::kUnknown;
  }
}

std::optional<core::SyncKind> syncKind(int64_t t) {
  switch (t) {  // CUpti_ActivitySynchronizationType (ENUM_CUPTI_SYNC_TYPE)
    case 1: return core::SyncKind::kEvent;
    case 2: return core::SyncKind::kStreamWaitEvent;
    case 3: return core::SyncKind::kStream;
    case 4: return core::SyncKind::kContext;
    default: return std::nullopt;
  }
}

class NsysParse {
 public:
  NsysParse(const std::string& path, const ImportOptions& options) : path_(path), options_(options) {}

  Expected<ImportResult> run() {
    KFUSE_RETURN_IF_ERROR(core::sqlite::checkSqliteFile(path_, "Nsight Systems export"));
    KFUSE_RETURN_IF_ERROR(db_.openForReading(path_));
    KFUSE_ASSIGN_OR_RETURN(std::vector<std::string> tables, db_.tables());
    tables_.insert(tables.begin(), tables.end());
    has_strings_ = tables_.count("StringIds") > 0;
    setImportMetadata(result_.trace.metadata, "nsys", path_);
    KFUSE_RETURN_IF_ERROR(readMetadata());
    KFUSE_RETURN_IF_ERROR(readDevices());
    KFUSE_RETURN_IF_ERROR(readRuntime());
    KFUSE_RETURN_IF_ERROR(readGpuRows());
    KFUSE_RETURN_IF_ERROR(readNvtx());
    build();
    result_.problems = problems_.stats();
    return std::move(result_);
  }

 private:
  // The table for `base`: base_V<n> with the highest n present, else base; "" when absent.
  std::string table(const std::string& base) const {
    for (int v = 9; v >= 2; --v) {
      const std::string name = base + "_V" + std::to_string(v);
      if (tables_.count(name)) return name;
    }
    return tables_.count(base) ? base : std::string();
  }

  // A SELECT list over `t` with one entry per wanted column, NULL where the column is missing. Columns marked
  // as string ids are resolved through StringIds when they hold integers.
  struct Col {
    const char* name;
    bool string_id = false;
  };
  Expected<std::string> selectList(const std::string& t, std::initializer_list<Col> cols,
                                   std::vector<std::string>* missing = nullptr) const {
    return selectList(t, std::vector<Col>(cols), missing);
  }
  Expected<std::string> selectList(const std::string& t, const std::vector<Col>& cols,
                                   std::vector<std::string>* missing = nullptr) const {
    KFUSE_ASSIGN_OR_RETURN(auto have, db_.columns(t));
    std::string sql;
    for (const Col& c : cols) {
      if (!sql.empty()) sql += ", ";
      const std::string name = c.name;
      if (!have.count(name)) {
        sql += "NULL";
        if (missing) missing->push_back(name);
      } else if (c.string_id && has_strings_) {
        sql += "CASE WHEN typeof(t.\"" + name + "\") = 'integer' THEN (SELECT value FROM StringIds WHERE id = t.\"" +
               name + "\") ELSE t.\"" + name + "\" END";
      } else {
        sql += "t.\"" + name + "\"";
      }
    }
    return sql;
  }

  void countMissing(const std::string& t, const std::vector<std::string>& missing) {
    for (const std::string& c : missing) {
      problems_.add(core::StatId::kNsysMissingColumn, 1, t + "." + c);
    }
  }

  Status readMetadata() {
    auto& extra = result_.trace.metadata.extra;
    for (const char* t : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
      if (!tables_.count(t)) continue;
      KFUSE_RETURN_IF_ERROR(db_.query(std::string("SELECT name, value FROM ") + t, [&](SqliteStmt& s) {
        const std::string name = s.text(0);
        if (name == "EXPORT_SCHEMA_VERSION") extra["nsys.schema_version"] = s.text(1);
        if (name == "EXPORT_PRODUCT_VERSION") extra["nsys.product_version"] = s.text(1);
      }));
    }
    if (tables_.count("TARGET_INFO_SESSION_START_TIME")) {
      KFUSE_ASSIGN_OR_RETURN(std::string cols, selectList("TARGET_INFO_SESSION_START_TIME", {{"utcEpochNs"}}));
      KFUSE_RETURN_IF_ERROR(
          db_.query("SELECT " + cols + " FROM TARGET_INFO_SESSION_START_TIME AS t LIMIT 1", [&](SqliteStmt& s) {
            if (!s.isNull(0)) result_.trace.metadata.start_time_ns = s.i64(0);
          }));
    }
    return {};
  }

  Status readDevices() {
    const std::string gpu = table("TARGET_INFO_GPU");
    if (!gpu.empty()) {
      KFUSE_ASSIGN_OR_RETURN(std::string cols, selectList(gpu, {{"id"},
                                                                {"cuDevice"},
                                                                {"name"},
                                                                {"totalMemory"},
                                                                {"smCount"},
                                                                {"computeMajor"},
                                                                {"computeMinor"},
                                                                {"clockRate"},
                                                                {"uuid"}}));
      KFUSE_RETURN_IF_ERROR(db_.query("SELECT " + cols + " FROM \"" + gpu + "\" AS t", [&](SqliteStmt& s) {
        core::Device d;
        // CUPTI's deviceId is the CUDA ordinal: cuDevice where the export has it.
        const int64_t ordinal = s.i64Or(1, s.i64Or(0, 0));
        d.ordinal = static_cast<int>(ordinal);
        d.name = s.text(2);
        d.memory_bytes = static_cast<uint64_t>(std::max<int64_t>(0, s.i64Or(3, 0)));
        d.sm_count = static_cast<int>(std::clamp<int64_t>(s.i64Or(4, 0), 0, 1 << 20));
        d.cc_major = static_cast<int>(std::clamp<int64_t>(s.i64Or(5, 0), 0, 1000));
        d.cc_minor = static_cast<int>(std::clamp<int64_t>(s.i64Or(6, 0), 0, 1000));
        d.clock_khz = std::max<int64_t>(0, s.i64Or(7, 0)) / 1000;  // clockRate is in Hz
        d.uuid = s.text(8);
        gpu_by_id_[s.i64Or(0, ordinal)] = ordinal;
        devices_.push_back(std::move(d));
      }));
    }
    const std::string cuda = table("TARGET_INFO_CUDA_DEVICE");
    if (!cuda.empty()) {
      KFUSE_ASSIGN_OR_RETURN(std::string cols,
                             selectList(cuda, {{"cudaId"}, {"gpuId"}, {"numMultiprocessors"}, {"name"}, {"uuid"}}));
      KFUSE_RETURN_IF_ERROR(db_.query("SELECT " + cols + " FROM \"" + cuda + "\" AS t", [&](SqliteStmt& s) {
        if (s.isNull(0)) return;
        const int64_t ordinal = s.i64(0);
        auto it =
            std::find_if(devices_.begin(), devices_.end(), [&](const core::Device& d) { return d.ordinal == ordinal; });
        if (it == devices_.end()) {
          core::Device d;
          d.ordinal = static_cast<int>(ordinal);
          devices_.push_back(d);
          it = devices_.end() - 1;
        }
        if (it->sm_count == 0) it->sm_count = static_cast<int>(std::clamp<int64_t>(s.i64Or(2, 0), 0, 1 << 20));
        if (it->name.empty()) it->name = s.text(3);
        if (it->uuid.empty()) it->uuid = s.text(4);
      }));
    }
    return {};
  }

  Status readRuntime() {
    const std::string rt = table("CUPTI_ACTIVITY_KIND_RUNTIME");
    if (rt.empty()) {
      problems_.add(core::StatId::kNsysNoRuntimeTable);
      return {};
    }
    std::vector<std::string> missing;
    KFUSE_ASSIGN_OR_RETURN(
        std::string cols,
        selectList(rt, {{"correlationId"}, {"start"}, {"end"}, {"globalTid"}, {"nameId", true}}, &missing));
    countMissing(rt, missing);
    std::unordered_map<std::string, uint32_t> name_index;
    return db_.query("SELECT " + cols + " FROM \"" + rt + "\" AS t", [&](SqliteStmt& s) {
      if (s.isNull(0)) return;
      Api a;
      a.start = s.i64Or(1, kNoTime);
      a.end = s.i64Or(2, kNoTime);
      a.tid = s.isNull(3) ? 0 : tidOf(s.i64(3));
      std::string name = s.text(4);
      auto [it, inserted] = name_index.emplace(name, static_cast<uint32_t>(api_names_.size()));
      if (inserted) api_names_.push_back(std::move(name));
      a.name = it->second;
      if (!api_by_corr_.emplace(s.i64(0), a).second) {
        problems_.add(core::StatId::kNsysDuplicateApiCorrelation);
      }
    });
  }

  // NVTX push/pop and start/end ranges (NVTX_EVENTS eventType 59 and 60) with both ends, as trace.nvtx_ranges:
  // the operator and module context of PyTorch jobs that annotate with NVTX (emit_nvtx, record_function).
  Status readNvtx() {
    if (!tables_.count("NVTX_EVENTS")) return {};
    std::vector<std::string> missing;
    KFUSE_ASSIGN_OR_RETURN(
        std::string cols,
        selectList("NVTX_EVENTS",
                   {{"start"}, {"end"}, {"eventType"}, {"text"}, {"textId", true}, {"globalTid"}, {"domainId"}},
                   &missing));
    core::Trace& t = result_.trace;
    KFUSE_RETURN_IF_ERROR(db_.query("SELECT " + cols + " FROM \"NVTX_EVENTS\" AS t", [&](SqliteStmt& s) {
      if (s.isNull(0) || s.isNull(1) || s.isNull(2)) return;
      const int64_t type = s.i64(2);
      if (type != 59 && type != 60) return;
      core::NvtxRange r;
      r.name = s.isNull(3) ? s.text(4) : s.text(3);
      r.start_ns = s.i64(0);
      r.end_ns = s.i64(1);
      if (r.end_ns < r.start_ns) return;
      r.thread_id = s.isNull(5) ? 0 : tidOf(s.i64(5));
      r.domain = s.isNull(6) || s.i64(6) == 0 ? std::string() : "domain " + std::to_string(s.i64(6));
      t.nvtx_ranges.push_back(std::move(r));
    }));
    std::stable_sort(t.nvtx_ranges.begin(), t.nvtx_ranges.end(),
                     [](const core::NvtxRange& a, const core::NvtxRange& b) {
                       if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
                       return a.end_ns > b.end_ns;
                     });
    for (size_t i = 0; i < t.nvtx_ranges.size(); ++i) t.nvtx_ranges[i].id = static_cast<Id>(i) + 1;
    return {};
  }

  struct Row {
    int kind = 0;  // 0 kernel, 1 memcpy, 2 memset, 3 sync, 4 event record
    int64_t start = kNoTime, end = kNoTime;
    int64_t device = 0, stream = -1, correlation = 0, global_pid = 0;
    std::string mangled, demangled;
    core::Dim3 grid, block;
    int64_t registers = 0, static_shared = 0, dynamic_shared = 0;
    int64_t bytes = 0, copy_kind = 0, value = 0, sync_type = 0, event_id = -1;
  };

  int64_t deviceOrdinal(int64_t device_id) const {
    auto it = gpu_by_id_.find(device_id);
    return it == gpu_by_id_.end() ? device_id : it->second;
  }

  uint32_t dim(const SqliteStmt& s, int c, bool& bad) {
    const int64_t v = s.i64Or(c, 1);
    if (v < 1 || v > 0xFFFFFFFFLL) {
      bad = true;
      return 1;
    }
    return static_cast<uint32_t>(v);
  }

  // Reads one CUPTI activity table if the export has it: the six columns every activity row has (read by
  // readCommon), then `extra`, whose values `fill` reads from column 6 on. Missing columns read as NULL and are
  // counted when `count_missing`.
  template <typename Fill>
  Status readActivity(const std::string& activity, int kind, std::initializer_list<Col> extra, bool count_missing,
                      Fill&& fill) {
    const std::string t = table(activity);
    if (t.empty()) return {};
    std::vector<Col> cols = {{"start"}, {"end"}, {"deviceId"}, {"streamId"}, {"correlationId"}, {"globalPid"}};
    cols.insert(cols.end(), extra.begin(), extra.end());
    std::vector<std::string> missing;
    KFUSE_ASSIGN_OR_RETURN(std::string list, selectList(t, cols, &missing));
    if (count_missing) countMissing(t, missing);
    return db_.query("SELECT " + list + " FROM \"" + t + "\" AS t", [&](SqliteStmt& s) {
      Row r;
      r.kind = kind;
      readCommon(s, r);
      fill(s, r);
      rows_.push_back(std::move(r));
    });
  }

  Status readGpuRows() {
    KFUSE_RETURN_IF_ERROR(readActivity("CUPTI_ACTIVITY_KIND_KERNEL", 0,
                                       {{"mangledName", true},
                                        {"demangledName", true},
                                        {"shortName", true},
                                        {"gridX"},
                                        {"gridY"},
                                        {"gridZ"},
                                        {"blockX"},
                                        {"blockY"},
                                        {"blockZ"},
                                        {"registersPerThread"},
                                        {"staticSharedMemory"},
                                        {"dynamicSharedMemory"}},
                                       /*count_missing=*/true, [&](const SqliteStmt& s, Row& r) {
                                         r.mangled = s.text(6);
                                         r.demangled = s.text(7);
                                         if (r.demangled.empty()) r.demangled = s.text(8);
                                         if (r.mangled.empty() && r.demangled.empty()) {
                                           problems_.add(core::StatId::kNsysKernelWithoutName);
                                         }
                                         bool bad = false;
                                         r.grid = core::Dim3{dim(s, 9, bad), dim(s, 10, bad), dim(s, 11, bad)};
                                         r.block = core::Dim3{dim(s, 12, bad), dim(s, 13, bad), dim(s, 14, bad)};
                                         if (bad) problems_.add(core::StatId::kNsysKernelBadLaunchConfig);
                                         r.registers = std::clamp<int64_t>(s.i64Or(15, 0), 0, 65536);
                                         r.static_shared = std::clamp<int64_t>(s.i64Or(16, 0), 0, 0xFFFFFFFFLL);
                                         r.dynamic_shared = std::clamp<int64_t>(s.i64Or(17, 0), 0, 0xFFFFFFFFLL);
                                       }));
    KFUSE_RETURN_IF_ERROR(readActivity("CUPTI_ACTIVITY_KIND_MEMCPY", 1, {{"bytes"}, {"copyKind"}},
                                       /*count_missing=*/true, [](const SqliteStmt& s, Row& r) {
                                         r.bytes = std::max<int64_t>(0, s.i64Or(6, 0));
                                         r.copy_kind = s.i64Or(7, 0);
                                       }));
    KFUSE_RETURN_IF_ERROR(readActivity("CUPTI_ACTIVITY_KIND_MEMSET", 2, {{"bytes"}, {"value"}},
                                       /*count_missing=*/true, [](const SqliteStmt& s, Row& r) {
                                         r.bytes = std::max<int64_t>(0, s.i64Or(6, 0));
                                         r.value = s.i64Or(7, 0);
                                       }));
    KFUSE_RETURN_IF_ERROR(readActivity("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", 3, {{"syncType"}, {"eventId"}},
                                       /*count_missing=*/true, [](const SqliteStmt& s, Row& r) {
                                         r.sync_type = s.i64Or(6, 0);
                                         r.event_id = s.i64Or(7, -1);
                                       }));
    return readActivity("CUPTI_ACTIVITY_KIND_CUDA_EVENT", 4, {{"eventId"}}, /*count_missing=*/false,
                        [](const SqliteStmt& s, Row& r) { r.event_id = s.i64Or(6, -1); });
  }

  void readCommon(const SqliteStmt& s, Row& r) {
    r.start = s.i64Or(0, kNoTime);
    r.end = s.i64Or(1, kNoTime);
    r.device = deviceOrdinal(s.i64Or(2, 0));
    r.stream = s.i64Or(3, -1);
    r.correlation = s.i64Or(4, 0);
    r.global_pid = s.i64Or(5, 0);
    if (r.start == kNoTime && r.kind != 4) {
      problems_.add(core::StatId::kNsysRowWithoutStart);
    }
    if (!validStream(r.stream) && r.kind <= 2) {
      problems_.add(core::StatId::kNsysGpuOpWithoutStream);
      r.stream = -1;
    }
  }

  void build() {
    core::Trace& t = result_.trace;
    ModelTracker model(t);
    std::sort(devices_.begin(), devices_.end(),
              [](const core::Device& a, const core::Device& b) { return a.ordinal < b.ordinal; });
    for (const core::Device& d : devices_) model.addDevice(d);

    // Processes: those whose GPU work is in the export.
    std::set<int64_t> global_pids;
    for (const Row& r : rows_) {
      if (r.kind <= 2 && r.global_pid != 0) global_pids.insert(r.global_pid);
    }
    std::map<int64_t, std::string> process_names;
    if (!global_pids.empty() && tables_.count("PROCESSES")) {
      (void)db_.query("SELECT globalPid, name FROM PROCESSES", [&](SqliteStmt& s) {
        if (global_pids.count(s.i64(0))) process_names[s.i64(0)] = s.text(1);
      });
    }
    for (int64_t g : global_pids) model.process(pidOf(g), process_names[g]);
    std::vector<std::pair<int64_t, int64_t>> keys;
    for (const Row& r : rows_) {
      if (r.kind <= 2 || validStream(r.stream)) keys.emplace_back(r.device, validStream(r.stream) ? r.stream : -1);
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const auto& [dev, s] : keys) {
      bool created = false;
      model.device(dev, &created);
      if (created) problems_.add(core::StatId::kNsysDeviceWithoutInfo);
      model.stream(dev, s);
    }
    if (t.processes.size() == 1) model.setContextProcess(t.processes.front().id);

    std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.device != b.device) return a.device < b.device;
      if (a.stream != b.stream) return a.stream < b.stream;
      return a.correlation < b.correlation;
    });

    std::multimap<int64_t, size_t> events_by_cupti_id;  // CUPTI event id -> index in t.events
    for (const Row& r : rows_) {
      const Api* api = nullptr;
      if (r.correlation != 0) {
        auto it = api_by_corr_.find(r.correlation);
        if (it != api_by_corr_.end()) api = &it->second;
      }
      const Id stream_id = validStream(r.stream) || r.kind <= 2 ? model.stream(r.device, r.stream) : kNoId;
      if (r.kind <= 2 && !api) {
        problems_.add(core::StatId::kNsysGpuOpWithoutApi);
      }
      switch (r.kind) {
        case 0: {
          core::Launch l;
          l.id = static_cast<Id>(t.launches.size()) + 1;
          l.correlation_id = r.correlation;
          l.stream_id = stream_id;
          l.function_id = model.function(r.mangled, r.demangled);
          l.grid = r.grid;
          l.block = r.block;
          l.registers_per_thread = static_cast<uint32_t>(r.registers);
          l.static_shared_bytes = static_cast<uint32_t>(r.static_shared);
          l.dynamic_shared_bytes = static_cast<uint32_t>(r.dynamic_shared);
          l.gpu_start_ns = r.start;
          l.gpu_end_ns = r.end;
          if (api) {
            l.api_start_ns = api->start;
            l.api_end_ns = api->end;
            l.thread_id = api->tid;
          }
          t.launches.push_back(std::move(l));
          break;
        }
        case 1: {
          core::Memcpy m;
          m.id = static_cast<Id>(t.memcpys.size()) + 1;
          m.correlation_id = r.correlation;
          m.stream_id = stream_id;
          m.kind = copyKind(r.copy_kind);
          m.bytes = static_cast<uint64_t>(r.bytes);
          m.gpu_start_ns = r.start;
          m.gpu_end_ns = r.end;
          takeApiSpan(m, api);
          t.memcpys.push_back(m);
          break;
        }
        case 2: {
          core::Memset m;
          m.id = static_cast<Id>(t.memsets.size()) + 1;
          m.correlation_id = r.correlation;
          m.stream_id = stream_id;
          m.bytes = static_cast<uint64_t>(r.bytes);
          m.value = static_cast<uint32_t>(r.value);
          m.gpu_start_ns = r.start;
          m.gpu_end_ns = r.end;
          takeApiSpan(m, api);
          t.memsets.push_back(m);
          break;
        }
        case 3: {
          core::Sync s;
          s.id = static_cast<Id>(t.syncs.size()) + 1;
          s.correlation_id = r.correlation;
          auto kind = syncKind(r.sync_type);
          // The API call names the kind unambiguously; some exports disagree with it in syncType.
          if (const auto by_api = api ? syncKindOfApi(api_names_[api->name]) : std::nullopt) {
            if (kind && *kind != *by_api) {
              problems_.add(core::StatId::kNsysSyncTypeDisagreesWithApi);
            }
            kind = by_api;
          }
          if (!kind) problems_.add(core::StatId::kNsysSyncKindUnknown);
          s.kind = kind.value_or(core::SyncKind::kUnknown);
          if (s.kind == core::SyncKind::kStream || s.kind == core::SyncKind::kStreamWaitEvent) s.stream_id = stream_id;
          if (r.event_id >= 0 && r.event_id != 4294967295LL) {
            // The latest record of that CUDA event before this wait.
            auto [lo, hi] = events_by_cupti_id.equal_range(r.event_id);
            for (auto it = lo; it != hi; ++it) s.event_id = t.events[it->second].id;
          }
          s.start_ns = api ? api->start : r.start;
          s.end_ns = api ? api->end : r.end;
          if (api) s.thread_id = api->tid;
          t.syncs.push_back(s);
          break;
        }
        case 4: {
          core::Event e;
          e.id = static_cast<Id>(t.events.size()) + 1;
          e.correlation_id = r.correlation;
          e.stream_id = validStream(r.stream) ? stream_id : kNoId;
          e.record_ns = r.start != kNoTime ? r.start : (api ? api->start : kNoTime);
          events_by_cupti_id.emplace(r.event_id, t.events.size());
          t.events.push_back(e);
          break;
        }
        default: break;
      }
    }
  }

  struct Api {
    int64_t start = kNoTime, end = kNoTime, tid = 0;
    uint32_t name = 0;
  };

  // The host side of a copy or set (Memcpy / Memset): when and on which thread it was issued, and whether it was
  // an Async call.
  template <typename Record>
  void takeApiSpan(Record& r, const Api* api) const {
    if (!api) return;
    r.api_start_ns = api->start;
    r.api_end_ns = api->end;
    r.thread_id = api->tid;
    r.async = api_names_[api->name].find("Async") != std::string::npos;
  }

  const std::string& path_;
  [[maybe_unused]] const ImportOptions& options_;
  SqliteDb db_;
  std::unordered_set<std::string> tables_;
  bool has_strings_ = false;
  ProblemCounter problems_;
  ImportResult result_;
  std::vector<core::Device> devices_;
  std::map<int64_t, int64_t> gpu_by_id_;  // TARGET_INFO_GPU.id -> CUDA ordinal
  std::unordered_map<int64_t, Api> api_by_corr_;
  std::vector<std::string> api_names_;
  std::vector<Row> rows_;
};

class NsysImporter final : public Importer {
 public:
  std::string_view name() const override { return "nsys"; }
  std::string_view description() const override { return "Nsight Systems SQLite export (nsys export -t sqlite)"; }
  int sniff(const SniffInput& in) const override {
    if (!in.sqlite) return 0;
    int score = 0;
    for (const std::string& t : in.sqlite_tables) {
      if (t == "kfuse_meta") return 0;
      if (t == "StringIds" || t == "EXPORT_META_DATA" || t == "META_DATA_EXPORT") score = std::max(score, 90);
      if (t.rfind("CUPTI_ACTIVITY_KIND_", 0) == 0 || t.rfind("TARGET_INFO_", 0) == 0) score = std::max(score, 80);
    }
    return score;
  }
  Expected<ImportResult> import(const std::string& path, const ImportOptions& options) const override {
    NsysParse parse(path, options);
    return parse.run();
  }
};

}  // namespace

std::unique_ptr<Importer> makeNsysImporter() {
  return std::make_unique<NsysImporter>();
}

}  // namespace kfuse::analyzer::detail
