// The kfuse formats: the SQLite trace store and the JSON interchange form. Both are read by core; these
// importers only recognise them and hand over.
#include <algorithm>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "import/importers.h"
#include "import/input_file.h"
#include "kfuse/core/json_reader.h"
#include "kfuse/core/trace_json.h"
#include "kfuse/core/trace_store.h"

namespace kfuse::analyzer::detail {
namespace {

bool hasTable(const SniffInput& in, std::string_view name) {
  return std::find(in.sqlite_tables.begin(), in.sqlite_tables.end(), name) != in.sqlite_tables.end();
}

class KfuseTraceImporter final : public Importer {
 public:
  std::string_view name() const override { return "kfuse"; }
  std::string_view description() const override { return "kfuse SQLite trace (kfuse record)"; }
  int sniff(const SniffInput& in) const override {
    if (!in.sqlite) return 0;
    return hasTable(in, "kfuse_meta") ? 100 : 0;
  }
  Expected<ImportResult> import(const std::string& path, const ImportOptions&) const override {
    KFUSE_ASSIGN_OR_RETURN(auto reader, core::TraceReader::open(path));
    KFUSE_ASSIGN_OR_RETURN(core::Trace trace, reader->readAll());
    ImportResult r;
    r.trace = std::move(trace);
    return r;
  }
};

class KfuseJsonImporter final : public Importer {
 public:
  std::string_view name() const override { return "kfuse-json"; }
  std::string_view description() const override { return "kfuse trace JSON interchange (kfuse export)"; }
  int sniff(const SniffInput& in) const override {
    if (in.sqlite) return 0;
    const std::string_view head = in.head;
    if (head.find(core::kTraceJsonFormatName) != std::string_view::npos) return 100;
    // traceToJson writes keys in alphabetical order, so the format key may lie beyond the head when the
    // arrays before it are long; the first key still gives it away.
    const size_t open = head.find_first_not_of(" \t\r\n");
    if (open == std::string_view::npos || head[open] != '{') return 0;
    for (std::string_view key : {"\"allocations\"", "\"contexts\"", "\"devices\""}) {
      const size_t k = head.find_first_not_of(" \t\r\n", open + 1);
      if (k != std::string_view::npos && head.substr(k, key.size()) == key) return 40;
    }
    return 0;
  }
  Expected<ImportResult> import(const std::string& path, const ImportOptions& options) const override {
    ImportResult r;
    KFUSE_ASSIGN_OR_RETURN(SniffInput head, readHead(path));
    if (!head.gzip) {
      KFUSE_ASSIGN_OR_RETURN(r.trace, core::readTraceJsonFile(path));
      return r;
    }
    // One string or whitespace run of more than 256 MiB is refused while inflating: module images, the longest
    // strings of a kfuse trace, are base64 of a few megabytes.
    KFUSE_ASSIGN_OR_RETURN(
        TextBuffer text, loadText(path, options.max_json_bytes, /*padding=*/1, /*max_run_bytes=*/uint64_t{256} << 20));
    auto j = core::parseJsonDocument(text.view());
    if (!j.ok()) return badFormat(path + ": " + j.status().message());
    KFUSE_ASSIGN_OR_RETURN(r.trace, core::traceFromJson(*j, path));
    return r;
  }
};

}  // namespace

std::unique_ptr<Importer> makeKfuseTraceImporter() {
  return std::make_unique<KfuseTraceImporter>();
}
std::unique_ptr<Importer> makeKfuseJsonImporter() {
  return std::make_unique<KfuseJsonImporter>();
}

}  // namespace kfuse::analyzer::detail
