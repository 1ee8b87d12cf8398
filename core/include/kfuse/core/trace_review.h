// Review decisions on fusion candidates, kept in the trace database (the `review` table, schema version 3).
//
// A performance engineer accepts or rejects each candidate `kfuse analyze` (or the GUI) lists, with a note; the
// decision is stored in the kfuse trace the candidate came from, so it survives re-analysis and is shared with
// whoever opens the trace next. A candidate is identified by its pattern, not by its rank (ranks change when the
// cost model does): reviewCandidateKey() = kind + the kernels' mangled names in launch order. Every decision is
// appended (the table is a log); readReviewDecisions() returns the latest per candidate.
//
// Storing into a version-1 or version-2 trace upgrades it in place to the current version (the migration only
// creates tables). Not for imported traces (Kineto JSON, Nsight Systems exports): they are not kfuse databases;
// the GUI offers to save them as one first. Thread-safe on distinct files; nothing here throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kfuse/core/status.h"

namespace kfuse::core {

enum class ReviewVerdict { kAccepted, kRejected };
const char* reviewVerdictName(ReviewVerdict v);  // "accepted", "rejected"

struct ReviewDecision {
  std::string candidate_key;  // reviewCandidateKey()
  int rank = 0;               // the candidate's rank when the decision was taken (for people; not its identity)
  ReviewVerdict verdict = ReviewVerdict::kAccepted;
  std::string note;
  std::string reviewer;    // user name, may be empty
  int64_t decided_ns = 0;  // wall clock, Unix epoch ns (0: storeReviewDecision fills in now)
  friend bool operator==(const ReviewDecision&, const ReviewDecision&) = default;
};

// "vertical:_Z3addPfS_S_i,_Z5scalePfS_f": `kind` then the mangled names, comma-separated, in launch order.
std::string reviewCandidateKey(const std::string& kind, const std::vector<std::string>& mangled_names);

// Appends `decision` to the trace at `trace_path` (a kfuse trace; upgraded to the current schema on the way).
// Errors name the file: not a kfuse trace, newer schema, read-only, locked.
Status storeReviewDecision(const std::string& trace_path, const ReviewDecision& decision);
// Appends every decision of `decisions` in one transaction: all of them are stored, or none (the GUI's decision on
// several selected candidates).
Status storeReviewDecisions(const std::string& trace_path, const std::vector<ReviewDecision>& decisions);

// The latest decision per candidate key, ordered by key. Empty when the trace has no `review` table (an older
// trace nobody reviewed yet).
Expected<std::vector<ReviewDecision>> readReviewDecisions(const std::string& trace_path);

}  // namespace kfuse::core
