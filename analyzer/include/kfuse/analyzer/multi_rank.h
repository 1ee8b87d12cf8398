// Multi-rank analysis: the traces of a distributed job's ranks, analyzed in parallel and merged by pattern.
//
// Each input is imported and analyzed on its own thread (at most `threads` at once); recommendations of the same
// pattern on several ranks — the same kind, the same members (operators with dtype and shape where known, else
// kernel names) and the same fusion kind — become one merged recommendation with its occurrences and savings per
// rank. A rank is the trace's `distributedInfo.rank` when it has one, else its position in the input list.
// docs/analyzer.md, "Multi-rank jobs".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/status.h"

namespace kfuse::analyzer {

struct RankReport {
  std::string path;
  int rank = 0;
  Report report;
};

struct RankShare {
  int rank = 0;
  size_t occurrences = 0;
  double saving_ns = 0;
};

struct MergedRecommendation {
  Candidate representative;      // from the rank with the largest saving
  std::vector<RankShare> ranks;  // by rank
  double total_saving_ns = 0;    // over all ranks
};

struct MultiRankReport {
  std::vector<RankReport> ranks;                      // by rank
  std::vector<MergedRecommendation> recommendations;  // by total saving, largest first (blocked ones last)
};

// The inputs of a multi-rank analysis: each path as given, a directory as the trace files directly inside it
// (.json, .json.gz, .sqlite), sorted by name. kNotFound / kInvalidArgument naming the path otherwise.
Expected<std::vector<std::string>> expandRankInputs(const std::vector<std::string>& paths);

// Imports and analyzes every path on up to `threads` threads (0: the hardware's), then merges. The first input that
// cannot be imported or analyzed fails the whole analysis, its message naming the file.
Expected<MultiRankReport> analyzeRanks(const std::vector<std::string>& paths, const AnalysisOptions& options,
                                       unsigned threads = 0);

std::string multiRankToText(const MultiRankReport& report, size_t top);
nlohmann::json multiRankToJson(const MultiRankReport& report);

}  // namespace kfuse::analyzer
