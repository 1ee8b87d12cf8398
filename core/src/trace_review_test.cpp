#include "kfuse/core/trace_review.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "kfuse/core/trace_store.h"
#include "temp_dir.h"
#include "trace_builders.h"

namespace kfuse::core {
namespace {

namespace fs = std::filesystem;

std::string freshTrace(const std::string& name) {
  const fs::path dir = testing::processTempDir("kfuse_review_test_");
  const std::string path = (dir / name).string();
  fs::remove(path);
  auto w = TraceWriter::create(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE((*w)->write(testing::makeEveryKindTrace()).ok());
  EXPECT_TRUE((*w)->close().ok());
  return path;
}

void execSql(const std::string& file, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(TraceReview, KeyIsKindThenMangledNamesInOrder) {
  EXPECT_EQ(reviewCandidateKey("vertical", {"_Z1av", "_Z1bv"}), "vertical:_Z1av,_Z1bv");
  EXPECT_NE(reviewCandidateKey("vertical", {"_Z1av", "_Z1bv"}), reviewCandidateKey("vertical", {"_Z1bv", "_Z1av"}));
  EXPECT_NE(reviewCandidateKey("vertical", {"_Z1av"}), reviewCandidateKey("horizontal", {"_Z1av"}));
}

TEST(TraceReview, ANewTraceHasNoDecisions) {
  const std::string path = freshTrace("new.sqlite");
  auto d = readReviewDecisions(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->empty());
}

TEST(TraceReview, LatestDecisionPerCandidateIsReadBack) {
  const std::string path = freshTrace("latest.sqlite");
  ReviewDecision a{"vertical:_Z1av,_Z1bv", 1, ReviewVerdict::kAccepted, "saves 2 launches per step", "ann", 100};
  ReviewDecision b{"horizontal:_Z1cv,_Z1dv", 2, ReviewVerdict::kRejected, "", "", 200};
  ReviewDecision a2 = a;
  a2.verdict = ReviewVerdict::kRejected;
  a2.note = "the chain is broken by a host copy in production";
  a2.decided_ns = 300;
  ASSERT_TRUE(storeReviewDecision(path, a).ok());
  ASSERT_TRUE(storeReviewDecision(path, b).ok());
  ASSERT_TRUE(storeReviewDecision(path, a2).ok());
  auto d = readReviewDecisions(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0], b);  // ordered by key: "horizontal..." < "vertical..."
  EXPECT_EQ((*d)[1], a2);
  // The trace itself is untouched.
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->readAll().value(), testing::makeEveryKindTrace());
}

TEST(TraceReview, StoringADecisionFillsInTheTimeWhenGivenNone) {
  const std::string path = freshTrace("time.sqlite");
  ASSERT_TRUE(storeReviewDecision(path, {"vertical:_Z1av", 1, ReviewVerdict::kAccepted, "", "", 0}).ok());
  auto d = readReviewDecisions(path);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_GT((*d)[0].decided_ns, int64_t{1'600'000'000} * 1'000'000'000);  // after 2020
}

TEST(TraceReview, DecisionsOnSeveralCandidatesAreStoredTogetherOrNotAtAll) {
  const std::string path = freshTrace("batch.sqlite");
  const std::vector<ReviewDecision> both = {{"vertical:_Z1av,_Z1bv", 1, ReviewVerdict::kRejected, "later", "ann", 7},
                                            {"horizontal:_Z1cv,_Z1dv", 2, ReviewVerdict::kRejected, "later", "ann", 7}};
  ASSERT_TRUE(storeReviewDecisions(path, both).ok());
  auto d = readReviewDecisions(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0], both[1]);
  EXPECT_EQ((*d)[1], both[0]);
  // The second insert of a batch fails (a trigger refuses its key): the first is not kept either.
  execSql(path,
          "CREATE TRIGGER refuse BEFORE INSERT ON review WHEN NEW.candidate_key = 'vertical:_Z1ev' "
          "BEGIN SELECT RAISE(ABORT, 'refused'); END;");
  const std::vector<ReviewDecision> half = {{"vertical:_Z1av,_Z1bv", 1, ReviewVerdict::kAccepted, "", "", 8},
                                            {"vertical:_Z1ev", 3, ReviewVerdict::kAccepted, "", "", 8}};
  const Status s = storeReviewDecisions(path, half);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("refused"), std::string::npos) << s.message();
  d = readReviewDecisions(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[1], both[0]);  // still rejected
}

TEST(TraceReview, StoringADecisionUpgradesAVersionOneTrace) {
  const std::string path = freshTrace("v1.sqlite");
  execSql(path, "DROP TABLE analysis; DROP TABLE review; PRAGMA user_version=1;");
  {
    auto r = TraceReader::open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)->schemaVersion(), 1);
    auto none = readReviewDecisions(path);
    ASSERT_TRUE(none.ok()) << none.status().message();
    EXPECT_TRUE(none->empty());
  }
  ASSERT_TRUE(storeReviewDecision(path, {"vertical:_Z1av", 3, ReviewVerdict::kAccepted, "ok", "", 5}).ok());
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->schemaVersion(), kTraceSchemaVersion);
  EXPECT_FALSE((*r)->latestAnalysisReport()->has_value());  // the analysis table exists now, empty
  EXPECT_EQ(readReviewDecisions(path)->size(), 1u);
}

TEST(TraceReview, StoringAReportIntoAVersionTwoTraceCreatesTheReviewTable) {
  const std::string path = freshTrace("v2.sqlite");
  execSql(path, "DROP TABLE review; PRAGMA user_version=2;");
  ASSERT_TRUE(storeAnalysisReport(path, "h100-sxm", "{}").ok());
  ASSERT_TRUE(storeReviewDecision(path, {"vertical:_Z1av", 1, ReviewVerdict::kRejected, "", "", 5}).ok());
  EXPECT_EQ(readReviewDecisions(path)->size(), 1u);
}

TEST(TraceReview, ForeignFilesAreRefusedWithTheirName) {
  const fs::path dir = testing::processTempDir("kfuse_review_test_");
  const std::string other = (dir / "other.sqlite").string();
  execSql(other, "CREATE TABLE IF NOT EXISTS t(x);");
  const Status s = storeReviewDecision(other, {"vertical:_Z1av", 1, ReviewVerdict::kAccepted, "", "", 5});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(other), std::string::npos) << s.message();
  auto missing = readReviewDecisions((dir / "missing.sqlite").string());
  EXPECT_FALSE(missing.ok());
}

TEST(TraceReview, AnUnknownVerdictIsABadFormatNamingTheFile) {
  const std::string path = freshTrace("bad.sqlite");
  execSql(path, "INSERT INTO review(candidate_key, rank, verdict, decided_ns) VALUES ('k', 1, 'maybe', 1)");
  auto d = readReviewDecisions(path);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(d.status().message().find("maybe"), std::string::npos);
}

}  // namespace
}  // namespace kfuse::core
