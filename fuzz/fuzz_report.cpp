// libFuzzer target: a rank report as `kfuse merge` reads it (and `kfuse rewrite --report`: the same reader), merged
// and written back in every format the merge writes.
#include "fuzz_input_file.h"
#include "kfuse/analyzer/multi_rank.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kfuse::fuzz::InputFile file("rank.report.json");
  const std::string& path = file.write(data, size);
  auto merged = kfuse::analyzer::mergeRankReports({path});
  if (merged.ok()) {
    (void)kfuse::analyzer::multiRankToText(*merged, 10);
    (void)kfuse::analyzer::multiRankToMarkdown(*merged, 10);
    (void)kfuse::analyzer::multiRankToHtml(*merged, 10);
    (void)kfuse::analyzer::multiRankToJson(*merged).dump();
  }
  return 0;
}
