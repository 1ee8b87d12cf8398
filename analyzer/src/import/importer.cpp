#include "kfuse/analyzer/importer.h"

#include <algorithm>
#include <span>

#include "kfuse/analyzer/metrics_merge.h"
#include "kfuse/ptx/fatbin.h"

#include "import/importers.h"
#include "import/input_file.h"
#include "import/sqlite_util.h"

namespace kfuse::analyzer {

int64_t ImportResult::problemCount(std::string_view name) const {
  for (const core::Stat& s : problems) {
    if (s.name == name) return s.value;
  }
  return 0;
}

ImporterRegistry ImporterRegistry::withBuiltins() {
  ImporterRegistry r;
  r.add(detail::makeKfuseTraceImporter());
  r.add(detail::makeKfuseJsonImporter());
  r.add(detail::makeKinetoImporter());
  r.add(detail::makeNsysImporter());
  return r;
}

void ImporterRegistry::add(std::unique_ptr<Importer> importer) {
  importers_.push_back(std::move(importer));
}

const Importer* ImporterRegistry::find(std::string_view name) const {
  for (const auto& i : importers_) {
    if (i->name() == name) return i.get();
  }
  return nullptr;
}

std::vector<const Importer*> ImporterRegistry::importers() const {
  std::vector<const Importer*> out;
  for (const auto& i : importers_) out.push_back(i.get());
  return out;
}

Expected<const Importer*> ImporterRegistry::detect(const std::string& path) const {
  KFUSE_ASSIGN_OR_RETURN(SniffInput in, detail::readHead(path));
  // A recording killed before its first checkpoint leaves an empty file beside a write-ahead log with the data.
  if (in.head.empty() && !in.gzip && detail::SqliteDb::walBytes(path) > 0) in.sqlite = true;
  if (in.sqlite) {
    // A damaged or truncated database says so here, rather than as "not a format kfuse knows".
    KFUSE_RETURN_IF_ERROR(core::sqlite::checkSqliteFile(path, "trace"));
    detail::SqliteDb db;
    KFUSE_RETURN_IF_ERROR(db.openForReading(path));
    KFUSE_ASSIGN_OR_RETURN(in.sqlite_tables, db.tables());
  }
  const Importer* best = nullptr;
  int best_score = 0;
  for (const auto& i : importers_) {
    const int score = i->sniff(in);
    if (score > best_score) {
      best = i.get();
      best_score = score;
    }
  }
  if (best) return best;
  std::string what = "not a trace kfuse can import";
  if (in.head.empty() && !in.gzip) {
    what = "empty file, not a trace";
  } else if (in.sqlite) {
    what =
        "a SQLite database, but neither a kfuse trace nor an Nsight Systems export (no kfuse_meta, "
        "StringIds or CUPTI_ACTIVITY_KIND_* tables)";
  }
  std::string known;
  for (const auto& i : importers_) known += (known.empty() ? "" : ", ") + std::string(i->name());
  return badFormat(path + ": " + what + " (known formats: " + known + ")");
}

Expected<ImportResult> ImporterRegistry::import(const std::string& path, const ImportOptions& options) const {
  const Importer* importer = nullptr;
  if (options.format.empty()) {
    KFUSE_ASSIGN_OR_RETURN(importer, detect(path));
  } else {
    importer = find(options.format);
    if (!importer) return invalidArgument("unknown trace format '" + options.format + "'");
  }
  KFUSE_ASSIGN_OR_RETURN(ImportResult result, importer->import(path, options));
  result.format = std::string(importer->name());
  // Kernels that ran only as nodes of replayed CUDA graphs count (the analyzer reads them from the graph tables).
  const bool graph_kernels =
      !result.trace.graph_launches.empty() &&
      std::any_of(result.trace.graph_nodes.begin(), result.trace.graph_nodes.end(),
                  [](const core::GraphNode& n) { return n.type == core::GraphNodeType::kKernel; });
  if (options.require_kernels && result.trace.launches.empty() && !graph_kernels) {
    return notFound(path + ": " + std::string(kNoKernelsMessage));
  }
  // Problems and the trace's own stats (a kfuse trace has some already) end up in both places, sorted by name
  // as the store reads them back.
  for (const core::Stat& p : result.problems) {
    auto it = std::find_if(result.trace.stats.begin(), result.trace.stats.end(),
                           [&](const core::Stat& s) { return s.name == p.name; });
    if (it == result.trace.stats.end()) {
      result.trace.stats.push_back(p);
    } else {
      *it = p;
    }
  }
  auto by_name = [](const core::Stat& a, const core::Stat& b) { return a.name < b.name; };
  std::sort(result.trace.stats.begin(), result.trace.stats.end(), by_name);
  std::sort(result.problems.begin(), result.problems.end(), by_name);
  return result;
}

Expected<ImportResult> importTrace(const std::string& path, const ImportOptions& options) {
  static const ImporterRegistry registry = ImporterRegistry::withBuiltins();
  KFUSE_ASSIGN_OR_RETURN(ImportResult result, registry.import(path, options));
  if (!options.binary.empty()) {
    KFUSE_ASSIGN_OR_RETURN(result.ptx_modules_attached, attachPtxFromBinary(result.trace, options.binary));
  }
  if (!options.metrics_from.empty()) {
    ImportOptions metrics_options;
    metrics_options.format = "kfuse";
    KFUSE_ASSIGN_OR_RETURN(ImportResult metrics_run, importTrace(options.metrics_from, metrics_options));
    KFUSE_ASSIGN_OR_RETURN(MetricsMergeSummary merged,
                           mergeMeasuredMetrics(result.trace, metrics_run.trace, options.metrics_from));
    result.metrics_launches_matched = merged.launches_matched;
  }
  return result;
}

Expected<size_t> attachPtxFromBinary(core::Trace& trace, const std::string& binary) {
  auto bytes = ptx::readBinaryFile(binary);
  if (!bytes.ok()) return bytes.status();
  const std::span<const uint8_t> span(bytes->data(), bytes->size());
  auto entries = ptx::listEntries(span);
  if (!entries.ok()) return entries.status().withContext(binary);
  if (std::none_of(entries->begin(), entries->end(), [](const auto& e) { return e.kind == ptx::EntryKind::kPtx; })) {
    return notFound(binary +
                    " holds no PTX (only cubins): rebuild it with PTX embedded (nvcc -gencode "
                    "arch=compute_XX,code=compute_XX) to let kfuse rewrite its kernels");
  }
  size_t attached = 0;
  for (core::Module& m : trace.modules) {
    if (!m.image.empty() && m.kind != core::ImageKind::kCubin) continue;
    std::vector<std::string> names;
    for (const core::KernelFunction& f : trace.functions) {
      if (f.module_id == m.id) names.push_back(f.mangled_name);
    }
    if (names.empty()) continue;
    const ptx::FatbinEntry* best = nullptr;
    for (const ptx::FatbinEntry& e : *entries) {
      if (e.kind != ptx::EntryKind::kPtx) continue;
      const bool all = std::all_of(names.begin(), names.end(), [&](const std::string& n) {
        return std::find(e.kernels.begin(), e.kernels.end(), n) != e.kernels.end();
      });
      if (all && (!best || e.arch > best->arch)) best = &e;
    }
    if (!best) continue;
    auto text = ptx::extractEntry(span, *best);
    if (!text.ok()) return text.status().withContext(binary);
    m.image.assign(text->begin(), text->end());
    m.kind = core::ImageKind::kPtx;
    ++attached;
  }
  return attached;
}

namespace detail {

core::Id ModelTracker::addDevice(core::Device device) {
  auto it = devices_.find(device.ordinal);
  if (it != devices_.end()) return it->second;
  device.id = static_cast<core::Id>(trace_.devices.size()) + 1;
  devices_[device.ordinal] = device.id;
  trace_.devices.push_back(std::move(device));
  return trace_.devices.back().id;
}

core::Id ModelTracker::device(int64_t ordinal, bool* created) {
  if (created) *created = false;
  auto it = devices_.find(ordinal);
  if (it != devices_.end()) return it->second;
  if (created) *created = true;
  core::Device d;
  d.ordinal = static_cast<int>(ordinal);
  return addDevice(std::move(d));
}

core::Id ModelTracker::context(int64_t device_ordinal) {
  auto it = contexts_.find(device_ordinal);
  if (it != contexts_.end()) return it->second;
  core::Context c;
  c.id = static_cast<core::Id>(trace_.contexts.size()) + 1;
  c.device_id = device(device_ordinal);
  contexts_[device_ordinal] = c.id;
  trace_.contexts.push_back(c);
  return c.id;
}

core::Id ModelTracker::stream(int64_t device_ordinal, int64_t native_stream) {
  const auto key = std::make_pair(device_ordinal, native_stream);
  auto it = streams_.find(key);
  if (it != streams_.end()) return it->second;
  core::Stream s;
  s.id = static_cast<core::Id>(trace_.streams.size()) + 1;
  s.context_id = context(device_ordinal);
  s.native_id = native_stream;
  streams_[key] = s.id;
  trace_.streams.push_back(s);
  return s.id;
}

core::Id ModelTracker::function(std::string_view mangled, std::string_view demangled) {
  auto key = std::make_pair(std::string(mangled), std::string(demangled));
  auto it = functions_.find(key);
  if (it != functions_.end()) return it->second;
  core::KernelFunction f;
  f.id = static_cast<core::Id>(trace_.functions.size()) + 1;
  f.mangled_name = key.first;
  f.demangled_name = key.second;
  functions_.emplace(std::move(key), f.id);
  trace_.functions.push_back(std::move(f));
  return trace_.functions.back().id;
}

core::Id ModelTracker::process(int64_t pid, std::string_view name) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) return it->second;
  core::Process p;
  p.id = static_cast<core::Id>(trace_.processes.size()) + 1;
  p.pid = pid;
  p.name = std::string(name);
  processes_[pid] = p.id;
  trace_.processes.push_back(std::move(p));
  return trace_.processes.back().id;
}

void ModelTracker::setContextProcess(core::Id process_id) {
  for (core::Context& c : trace_.contexts) c.process_id = process_id;
}

void setImportMetadata(core::TraceMetadata& metadata, std::string_view format, const std::string& path) {
  metadata.producer = "kfuse-import:" + std::string(format);
  metadata.producer_version = KFUSE_VERSION_STRING;
  metadata.extra["source_path"] = path;
  metadata.extra["source_format"] = std::string(format);
}

}  // namespace detail
}  // namespace kfuse::analyzer
