// Multi-rank analysis: the traces of a distributed job's ranks, analyzed and merged by pattern.
//
// Two ways to one result. In one process, `kfuse analyze rank0 rank1 ...` imports and analyzes each input on its own
// thread (at most `threads` at once) and merges. As map/reduce, each rank is analyzed anywhere (`kfuse analyze
// RANK --json rank.json`, one job of a Slurm array) and `kfuse merge` folds the rank reports, read one at a time.
// Both feed the same RankMerger, so they produce the same merged report.
//
// Recommendations of the same pattern on several ranks — the same kind, the same members (operators with dtype and
// shape where known, else kernel names) and the same fusion kind — become one merged recommendation with its
// occurrences, savings and time per occurrence per rank. A rank is the report's `input.rank` (the trace's
// `distributedInfo.rank`) when it has one, else its position in the input list. docs/analyzer.md, "Multi-rank jobs".
//
// Not thread-safe: one RankMerger is fed from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/status.h"

namespace kfuse::analyzer {

// What the merged report keeps of one rank's report (the rest is folded into the recommendations).
struct RankSummary {
  std::string path;
  int rank = 0;
  int64_t launches = 0;
  int64_t gpu_busy_ns = 0;
  bool gpu_busy_estimated = false;
  size_t candidates = 0;
  std::string gpu;  // short name of the GPU its costs are for
  std::vector<std::string> notices;
};

struct RankShare {
  int rank = 0;
  size_t occurrences = 0;
  double saving_ns = 0;
  double measured_ns = 0;  // the kernels' time per occurrence on this rank (median over its occurrences)
};

struct MergedRecommendation {
  Candidate representative;      // from the rank with the largest saving
  std::vector<RankShare> ranks;  // by rank
  double total_saving_ns = 0;    // over all ranks
  // Ranks whose time per occurrence of this pattern exceeds the median over the ranks by more than
  // kStragglerRatio: the same kernels ran slower there.
  std::vector<int> stragglers;
};

// A rank left out of a merge: its report could not be read, or it does not belong with the others.
struct LeftOutRank {
  std::string path;
  std::string why;
};

struct MultiRankReport {
  std::vector<RankSummary> ranks;                     // by rank
  std::vector<MergedRecommendation> recommendations;  // by total saving, largest first (blocked ones last)
  std::vector<LeftOutRank> left_out;                  // in input order
  // Ranks whose GPU busy time exceeds the median over the ranks by more than kStragglerRatio.
  std::vector<int> stragglers;
  std::vector<std::string> notes;  // ranks costed for different GPUs, ...
};

// A rank is a straggler when its time is above this multiple of the median over the ranks.
inline constexpr double kStragglerRatio = 1.25;

// Folds rank reports into a merged report, one at a time, keeping per rank only its RankSummary and per pattern the
// representative candidate and the shares: memory grows with the ranks and the distinct patterns, not with the
// reports' sizes.
class RankMerger {
 public:
  // Merges `report` as rank `rank` (its input.rank when it has one). A report whose cost model version differs from
  // the first report's is left out (its numbers follow other rules): returns false and records why. A report
  // costed for another GPU than the first is merged and noted.
  bool add(const std::string& path, int rank, Report report);
  // Records an input that could not be read.
  void leaveOut(const std::string& path, const std::string& why);
  // The merged report: ranks and shares sorted by rank, recommendations by total saving, stragglers found.
  MultiRankReport finish();

 private:
  MultiRankReport out_;
  std::map<std::string, size_t> index_;  // pattern key -> recommendation
  bool first_ = true;  // no report merged yet: the first one sets the version and GPU the others must match
  int cost_model_version_ = 0;
  std::string gpu_;
  bool gpus_differ_ = false;
};

// The inputs of a multi-rank analysis: each path as given, a directory as the trace files directly inside it
// (.json, .json.gz, .sqlite), sorted by name. kNotFound / kInvalidArgument naming the path otherwise.
Expected<std::vector<std::string>> expandRankInputs(const std::vector<std::string>& paths);

// Imports and analyzes every path on up to `threads` threads (0: the hardware's), then merges. The first input that
// cannot be imported or analyzed fails the whole analysis, its message naming the file.
Expected<MultiRankReport> analyzeRanks(const std::vector<std::string>& paths, const AnalysisOptions& options,
                                       unsigned threads = 0);

// The reduce step: reads `kfuse analyze --json` reports (files, or directories of .json files) one at a time and
// merges them. A file that cannot be read or is not a report is left out with why; kInvalidArgument when no report
// could be merged. `progress` (may be empty) is told after each file.
Expected<MultiRankReport> mergeRankReports(const std::vector<std::string>& paths,
                                           const std::function<void(size_t done, size_t total)>& progress = {});

std::string multiRankToText(const MultiRankReport& report, size_t top);
// The same as Markdown and as a self-contained HTML page: ranks (stragglers marked), left-out inputs, notes, and a
// table of the merged recommendations with their per-rank shares.
std::string multiRankToMarkdown(const MultiRankReport& report, size_t top);
std::string multiRankToHtml(const MultiRankReport& report, size_t top);
// "kfuse-multi-rank-report" version 2: per-rank summaries, merged recommendations with per-rank shares,
// stragglers, left-out inputs and notes.
nlohmann::json multiRankToJson(const MultiRankReport& report);

}  // namespace kfuse::analyzer
