#include "kfuse/core/trace_review.h"

#include <chrono>
#include <map>

#include "kfuse/core/sqlite_db.h"
#include "kfuse/core/trace_store.h"
#include "trace_schema.h"

namespace kfuse::core {

using sqlite::Db;
using sqlite::Stmt;

const char* reviewVerdictName(ReviewVerdict v) {
  return v == ReviewVerdict::kAccepted ? "accepted" : "rejected";
}

std::string reviewCandidateKey(const std::string& kind, const std::vector<std::string>& mangled_names) {
  std::string key = kind + ":";
  for (size_t i = 0; i < mangled_names.size(); ++i) {
    if (i) key += ",";
    key += mangled_names[i];
  }
  return key;
}

Status storeReviewDecision(const std::string& trace_path, const ReviewDecision& decision) {
  return storeReviewDecisions(trace_path, {decision});
}

Status storeReviewDecisions(const std::string& trace_path, const std::vector<ReviewDecision>& decisions) {
  // The reader's checks first (a kfuse trace, not newer than this build), so nothing is written into a file that is
  // not ours.
  KFUSE_ASSIGN_OR_RETURN(auto reader, TraceReader::open(trace_path));
  reader.reset();
  Db db;
  KFUSE_RETURN_IF_ERROR(db.open(trace_path, SQLITE_OPEN_READWRITE));
  KFUSE_RETURN_IF_ERROR(db.exec("PRAGMA busy_timeout=5000; BEGIN IMMEDIATE"));
  // The migration from versions 1 to 3: the tables they lack, then the version.
  KFUSE_RETURN_IF_ERROR(db.exec(detail::kAnalysisTableSql));
  KFUSE_RETURN_IF_ERROR(db.exec(detail::kReviewTableSql));
  KFUSE_RETURN_IF_ERROR(db.exec(detail::graphTablesSql().c_str()));  // from version 3
  KFUSE_RETURN_IF_ERROR(db.exec(("PRAGMA user_version=" + std::to_string(kTraceSchemaVersion)).c_str()));
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const ReviewDecision& decision : decisions) {
    // An error returns before COMMIT: closing the database rolls the transaction back, so nothing is stored.
    KFUSE_ASSIGN_OR_RETURN(Stmt st, db.prepare("INSERT INTO review(candidate_key, rank, verdict, note, reviewer, "
                                               "decided_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    st.bind(1, decision.candidate_key);
    st.bind(2, static_cast<int64_t>(decision.rank));
    st.bind(3, std::string_view(reviewVerdictName(decision.verdict)));
    st.bind(4, decision.note);
    st.bind(5, decision.reviewer);
    st.bind(6, decision.decided_ns == 0 ? now : decision.decided_ns);
    KFUSE_RETURN_IF_ERROR(db.run(st));
  }
  return db.exec("COMMIT");
}

Expected<std::vector<ReviewDecision>> readReviewDecisions(const std::string& trace_path) {
  KFUSE_ASSIGN_OR_RETURN(auto reader, TraceReader::open(trace_path));
  reader.reset();
  Db db;
  KFUSE_RETURN_IF_ERROR(db.open(trace_path, SQLITE_OPEN_READONLY));
  bool has_table = false;
  KFUSE_RETURN_IF_ERROR(db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'review'",
                                 [&](Stmt&) { has_table = true; }));
  std::vector<ReviewDecision> out;
  if (!has_table) return out;
  std::map<std::string, ReviewDecision> latest;
  Status bad;
  KFUSE_RETURN_IF_ERROR(db.query(
      "SELECT candidate_key, rank, verdict, note, reviewer, decided_ns FROM review ORDER BY id", [&](Stmt& st) {
        ReviewDecision d;
        d.candidate_key = st.text(0);
        d.rank = static_cast<int>(st.i64(1));
        const std::string verdict = st.text(2);
        if (verdict == "accepted") {
          d.verdict = ReviewVerdict::kAccepted;
        } else if (verdict == "rejected") {
          d.verdict = ReviewVerdict::kRejected;
        } else {
          bad = badFormat(trace_path + ": review.verdict '" + verdict + "' is neither accepted nor rejected");
          return false;
        }
        d.note = st.text(3);
        d.reviewer = st.text(4);
        d.decided_ns = st.i64(5);
        latest[d.candidate_key] = std::move(d);
        return true;
      }));
  KFUSE_RETURN_IF_ERROR(bad);
  out.reserve(latest.size());
  for (auto& [key, d] : latest) out.push_back(std::move(d));
  return out;
}

}  // namespace kfuse::core
