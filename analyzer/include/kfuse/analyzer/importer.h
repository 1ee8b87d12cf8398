// Trace importers: turn a file a user already has into a core::Trace.
//
// One Importer per input format, behind a registry that sniffs the input by content (perfetto's trace reader
// registry): gzip magic, the SQLite header plus the tables present, JSON keys near the start. The built-in
// importers are
//   "kfuse"       kfuse SQLite traces (core::TraceReader),
//   "kfuse-json"  the kfuse JSON interchange form (core::readTraceJsonFile), plain or gzip,
//   "kineto"      PyTorch profiler / Kineto Chrome traces, .json or .json.gz, 2021 and current layouts,
//   "nsys"        Nsight Systems SQLite exports, schema 2.9 to 3.25+.
// docs/importers.md says what each importer maps to which model field, what it counts as missing, and its limits.
//
// Errors follow STYLE.md's tiers: bad data inside an input is counted (ImportResult::problems, also copied into
// trace.stats with a severity) and the import goes on; an input that cannot be imported at all gives a Status
// whose message starts with the path. In particular a trace without any GPU kernel gives
// ErrorCode::kNotFound with "PATH: no GPU kernels in this trace (CPU-only profile?)" (see kNoKernelsMessage), so
// `kfuse analyze` can tell it apart and exit with code 3.
//
// Thread-safety: importers and the registry are immutable after construction; import() may run concurrently on
// different files. Nothing here throws; no importer writes to its input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::analyzer {

// The tail of the message of the kNotFound Status given for a trace without GPU kernels.
inline constexpr std::string_view kNoKernelsMessage = "no GPU kernels in this trace (CPU-only profile?)";

struct ImportOptions {
  // "" sniffs the input; otherwise the name of a registered importer to use without sniffing.
  std::string format;
  // Refuse inputs whose (decompressed) JSON text is larger than this: a guard against gzip bombs and hostile
  // sizes. simdjson cannot parse single documents of 4 GiB or more whatever this says.
  uint64_t max_json_bytes = uint64_t{4} << 30;
  // Fail with kNotFound (kNoKernelsMessage) when the imported trace has no kernel launch.
  bool require_kernels = true;
  // Kineto: keep CPU operators (name, External id, shapes) in ImportResult::cpu_ops.
  bool keep_cpu_ops = true;
  // Kineto: called about once a second while a large trace is read, with the (decompressed) JSON bytes and the
  // events read so far; empty: no progress.
  std::function<void(uint64_t text_bytes, uint64_t events)> progress;
  // An application binary (executable, shared library or fatbin) whose embedded PTX is given to every module the
  // trace holds no PTX for (attachPtxFromBinary); "" none. ImportResult::ptx_modules_attached says how many.
  std::string binary;
  // A kfuse trace of the same program recorded with `kfuse record --metrics`, whose measured metrics are joined
  // onto the imported trace's launches (mergeMeasuredMetrics); "" none. ImportResult::metrics_launches_matched
  // says onto how many.
  std::string metrics_from;
};

// An immutable vector whose copies share one allocation. CPU ops repeat the same shapes thousands of times (one
// training step after another), so the importer hands out one copy per distinct value. Reads like a const
// std::vector; compares by content. Copies may be read from several threads.
template <typename T>
class SharedVector {
 public:
  SharedVector() = default;
  SharedVector(std::vector<T> values)  // NOLINT(google-explicit-constructor): a value, like the vector itself
      : data_(values.empty() ? nullptr : std::make_shared<const std::vector<T>>(std::move(values))) {}

  const std::vector<T>& get() const { return data_ ? *data_ : emptyVector(); }
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const T& operator[](size_t i) const { return get()[i]; }
  typename std::vector<T>::const_iterator begin() const { return get().begin(); }
  typename std::vector<T>::const_iterator end() const { return get().end(); }

  friend bool operator==(const SharedVector& a, const SharedVector& b) { return a.get() == b.get(); }
  friend bool operator==(const SharedVector& a, const std::vector<T>& b) { return a.get() == b; }

 private:
  static const std::vector<T>& emptyVector() {
    static const std::vector<T> kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const std::vector<T>> data_;
};

// A CPU-side operator of a PyTorch profile (Kineto `cpu_op`, 2021 `Operator`). GPU work launched under it carries
// the same External id, so analysis can find the shapes and dtypes of the enclosing op.
struct CpuOp {
  int64_t external_id = 0;          // 0 = none recorded
  int64_t record_function_id = -1;  // `Record function id`: the Execution Trace's rf_id of this op; -1 = none
  std::string name;                 // "aten::add", ...
  int64_t pid = 0;
  int64_t thread_id = 0;
  int64_t start_ns = core::kNoTime, end_ns = core::kNoTime;
  SharedVector<std::vector<int64_t>> input_dims;  // `Input Dims`: one list per input ([] for non-tensors)
  SharedVector<std::string> input_types;          // `Input type`: "float", "c10::BFloat16", "Scalar", ""
  friend bool operator==(const CpuOp&, const CpuOp&) = default;
};

struct ImportResult {
  core::Trace trace;
  std::string format;  // the name of the importer that produced it ("kineto", "nsys", ...)
  // Bad or missing input data met while importing (tier-1 errors), sorted by name; the same entries are in
  // trace.stats. A name appears only when its count is > 0.
  std::vector<core::Stat> problems;
  // Kineto only (empty otherwise): CPU operators sorted by (start, external id), and the External id of each
  // launch / memcpy / memset that had one, by record id. (Kineto's nn.Module forward calls and user annotations
  // are in trace.nvtx_ranges, domains "nn.Module" and "user_annotation".)
  std::vector<CpuOp> cpu_ops;
  std::map<core::Id, int64_t> launch_external_ids;
  std::map<core::Id, int64_t> memcpy_external_ids;
  std::map<core::Id, int64_t> memset_external_ids;
  // Kernels a CUDA / HIP graph launch ran (their launch call is cudaGraphLaunch / cuGraphLaunch / hipGraphLaunch):
  // launch record id -> the graph launch call's correlation id, the same for every node of one replay.
  std::map<core::Id, int64_t> launch_graph_ids;
  size_t ptx_modules_attached = 0;       // modules given PTX from ImportOptions::binary
  int64_t metrics_launches_matched = 0;  // launches given measured metrics from ImportOptions::metrics_from

  // The count of problem `name`, 0 when it was not met.
  int64_t problemCount(std::string_view name) const;
};

// What an importer may look at to decide whether an input is its own. Built once per input by the registry.
struct SniffInput {
  std::string path;
  bool gzip = false;                       // the file starts with the gzip magic (head is then decompressed text)
  bool sqlite = false;                     // the file starts with the SQLite header
  std::string head;                        // the first bytes of the (decompressed) content, at most 64 KiB
  std::vector<std::string> sqlite_tables;  // table names when `sqlite` and the file could be opened
};

class Importer {
 public:
  virtual ~Importer() = default;
  // A short stable name ("kineto"), used in ImportOptions::format and ImportResult::format.
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // 0: not this format; otherwise how sure (100 = certain). The highest score wins.
  virtual int sniff(const SniffInput& input) const = 0;
  // Imports `path`. Does not apply ImportOptions::require_kernels (the registry does) and need not sort or
  // merge problems into trace.stats (the registry does that too).
  virtual Expected<ImportResult> import(const std::string& path, const ImportOptions& options) const = 0;
};

class ImporterRegistry {
 public:
  ImporterRegistry() = default;
  // A registry holding the four built-in importers.
  static ImporterRegistry withBuiltins();

  void add(std::unique_ptr<Importer> importer);
  const Importer* find(std::string_view name) const;  // nullptr when no importer has that name
  std::vector<const Importer*> importers() const;

  // The importer for `path` by content. kNotFound for a missing file, kBadFormat naming the file when no
  // importer recognises it.
  Expected<const Importer*> detect(const std::string& path) const;
  // detect() (or options.format), import, then sort problems into trace.stats and check require_kernels.
  Expected<ImportResult> import(const std::string& path, const ImportOptions& options = {}) const;

 private:
  std::vector<std::unique_ptr<Importer>> importers_;
};

// importTrace(path, options) == ImporterRegistry::withBuiltins().import(path, options), with the registry built
// once.
// Gives every module of `trace` whose image was not captured (or is a cubin) the PTX of the application binary
// `binary` (an executable, shared library or fatbin) that defines the module's kernels, keeping the module's
// identity (its hash), so legality can be proven from that PTX. Returns how many modules got PTX; an error when
// the binary cannot be read or holds no PTX at all. importTrace() runs it for ImportOptions::binary.
Expected<size_t> attachPtxFromBinary(core::Trace& trace, const std::string& binary);

Expected<ImportResult> importTrace(const std::string& path, const ImportOptions& options = {});

}  // namespace kfuse::analyzer
