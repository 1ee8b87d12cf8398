// libFuzzer target: one of analyze's importers (KFUSE_FUZZ_FORMAT: "kineto", "nsys", "kfuse", "kfuse-json"),
// reading the input as a file as `kfuse analyze --format F` does, then the analysis and every report writer on
// what was imported. Any crash, leak or sanitizer report is a bug; a bad-format Status is the expected answer to
// most inputs.
#include "fuzz_input_file.h"
#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/core/text.h"

#include <nlohmann/json.hpp>

#ifndef KFUSE_FUZZ_FORMAT
#error "define KFUSE_FUZZ_FORMAT"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kfuse::fuzz::InputFile file("input");
  kfuse::analyzer::ImportOptions options;
  options.format = KFUSE_FUZZ_FORMAT;
  options.max_json_bytes = 64 << 20;  // inflated text: keeps a gzip bomb within libFuzzer's RSS limit
  const std::string& path = file.write(data, size);
  auto imported = kfuse::analyzer::importTrace(path, options);
  if (!imported.ok()) return 0;
  auto report = kfuse::analyzer::analyze(*imported, path, kfuse::analyzer::AnalysisOptions{});
  if (!report.ok()) return 0;
  (void)kfuse::core::dumpJson(kfuse::analyzer::reportToJson(*report));
  (void)kfuse::analyzer::reportToText(*report, 10, /*verbose=*/true);
  (void)kfuse::analyzer::reportToMarkdown(*report);
  (void)kfuse::analyzer::reportToHtml(*report);
  return 0;
}
