// PyTorch profiler (Kineto) Chrome traces: {"traceEvents": [...], "deviceProperties": [...], ...}, plain or gzip,
// current and 2021 layouts. docs/importers.md lists the mapping field by field.
//
// The text is streamed: read (and inflated, on a second thread) in chunks, scanned for the boundaries of the
// elements of traceEvents, and parsed in batches with simdjson's On-Demand API (see KinetoParse). Events are first
// collected into compact records whose strings are interned, then joined by correlation id and written into the
// model, so events may come in any order in the file.
//
// The parse is split by phase, each piece a file sharing KinetoParse (kineto_parse.h): kineto_scan.cpp finds the
// events in the text, kineto_json.cpp reads their fields, kineto_records.cpp classifies them and keeps compact
// records, kineto_model.cpp joins the records and writes the model. This file holds the importer itself: sniffing
// and the run of one import.
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "import/importers.h"
#include "import/input_file.h"
#include "import/kineto_parse.h"
#include "kfuse/core/cancel.h"

namespace kfuse::analyzer::detail {
namespace kineto {

Expected<ImportResult> KinetoParse::run() {
  KFUSE_ASSIGN_OR_RETURN(source_, TextSource::open(path_, options_.max_json_bytes));
  // Inflate on a second thread while this one parses.
  if (source_->compressed()) source_ = TextSource::pipelined(std::move(source_), kChunkBytes, /*depth=*/2);
  KFUSE_RETURN_IF_ERROR(scanAll());
  KFUSE_RETURN_IF_ERROR(parseTopLevel());
  KFUSE_RETURN_IF_CANCELLED();
  build();
  KFUSE_RETURN_IF_CANCELLED();
  result_.problems = problems_.stats();
  return std::move(result_);
}

}  // namespace kineto

namespace {

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
    kineto::KinetoParse parse(path, options);
    return parse.run();
  }
};

}  // namespace

std::unique_ptr<Importer> makeKinetoImporter() {
  return std::make_unique<KinetoImporter>();
}

}  // namespace kfuse::analyzer::detail
