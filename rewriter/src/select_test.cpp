#include "kfuse/rewriter/select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kfuse::rewriter {
namespace {

using analyzer::Candidate;
using analyzer::Legality;

Candidate candidate(int rank, double saving_ns, std::vector<int> conflicts = {}, Legality legality = Legality::kProven,
                    double share = 0.1) {
  Candidate c;
  c.rank = rank;
  c.legality = legality;
  c.total_saving_ns = saving_ns;
  c.share_of_gpu_busy = share;
  c.conflicts_with = std::move(conflicts);
  return c;
}

const std::string* reasonFor(const Selection& s, int rank) {
  for (const auto& [r, why] : s.rejected) {
    if (r == rank) return &why;
  }
  return nullptr;
}

TEST(ChooseConsistentSet, BeatsGreedyWhenTwoSmallerFusionsOutweighOneLarger) {
  // A (10) shares a launch with B (6) and with C (6); B and C are disjoint. Greedy takes A = 10; B + C = 12.
  const std::vector<Candidate> cs = {candidate(1, 10, {2, 3}), candidate(2, 6, {1}), candidate(3, 6, {1})};
  const Selection s = chooseConsistentSet(cs, 0);
  EXPECT_EQ(s.method, "exact");
  EXPECT_EQ(s.chosen, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(s.total_saving_ns, 12);
  ASSERT_EQ(s.rejected.size(), 1u);
  EXPECT_EQ(s.rejected[0].first, 1);
  EXPECT_NE(s.rejected[0].second.find("#2, #3"), std::string::npos) << s.rejected[0].second;
}

TEST(ChooseConsistentSet, AConflictListedOnOneSideOnlyStillCounts) {
  const std::vector<Candidate> cs = {candidate(1, 10, {2}), candidate(2, 8)};
  const Selection s = chooseConsistentSet(cs, 0);
  EXPECT_EQ(s.chosen, (std::vector<int>{1}));
  EXPECT_DOUBLE_EQ(s.total_saving_ns, 10);
}

TEST(ChooseConsistentSet, OnEqualTotalsTakesTheLargerSavingFirst) {
  // A (10) against B (5) + C (5): both sets save 10; the one with A (fewer fusions, the larger saving) wins.
  const std::vector<Candidate> ties = {candidate(1, 5, {3}), candidate(2, 5, {3}), candidate(3, 10, {1, 2})};
  Selection s = chooseConsistentSet(ties, 0);
  EXPECT_EQ(s.chosen, (std::vector<int>{3}));
  EXPECT_DOUBLE_EQ(s.total_saving_ns, 10);
  // Two conflicting candidates of equal saving: the better rank.
  s = chooseConsistentSet({candidate(2, 7, {1}), candidate(1, 7, {2})}, 0);
  EXPECT_EQ(s.chosen, (std::vector<int>{1}));
  EXPECT_EQ(s.rejected.size(), 1u);
}

TEST(ChooseConsistentSet, RejectsCandidatesThatAreNotProvenWithTheAnalyzersReason) {
  Candidate likely = candidate(1, 100, {}, Legality::kLikely);
  likely.reasons = {"no pointer arguments in the trace"};
  Candidate blocked = candidate(2, 0, {3}, Legality::kBlocked);
  blocked.reasons = {"consumer thread reads a neighbour's element"};
  const Selection s = chooseConsistentSet({likely, blocked, candidate(3, 5, {2})}, 0);
  EXPECT_EQ(s.chosen, (std::vector<int>{3}));  // the blocked one's conflict does not count
  ASSERT_NE(reasonFor(s, 1), nullptr);
  EXPECT_NE(reasonFor(s, 1)->find("not proven (likely): no pointer arguments"), std::string::npos) << *reasonFor(s, 1);
  ASSERT_NE(reasonFor(s, 2), nullptr);
  EXPECT_NE(reasonFor(s, 2)->find("not proven (blocked)"), std::string::npos);
}

TEST(ChooseConsistentSet, RejectsCandidatesBelowTheMinimumShare) {
  // The larger saving is below the minimum share: its conflicting neighbour is chosen instead.
  const std::vector<Candidate> cs = {candidate(1, 10, {2}, Legality::kProven, 0.004),
                                     candidate(2, 6, {1}, Legality::kProven, 0.02),
                                     candidate(3, 0, {}, Legality::kProven, 0)};
  const Selection s = chooseConsistentSet(cs, 0.01);
  EXPECT_EQ(s.chosen, (std::vector<int>{2}));
  ASSERT_NE(reasonFor(s, 1), nullptr);
  EXPECT_NE(reasonFor(s, 1)->find("0.40% of GPU busy time, below the 1.00%"), std::string::npos) << *reasonFor(s, 1);
  ASSERT_NE(reasonFor(s, 3), nullptr);
  EXPECT_NE(reasonFor(s, 3)->find("save nothing"), std::string::npos);
}

TEST(ChooseConsistentSet, EmptyInputChoosesNothing) {
  const Selection s = chooseConsistentSet({}, 0);
  EXPECT_TRUE(s.chosen.empty());
  EXPECT_TRUE(s.rejected.empty());
  EXPECT_EQ(s.total_saving_ns, 0);
  EXPECT_EQ(s.method, "exact");
}

// Random conflict graphs: the exact answer equals the best of every subset.
TEST(ChooseConsistentSet, MatchesBruteForceOnRandomInstances) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 14);
    const double density = (rng() % 100) / 100.0;
    std::vector<Candidate> cs;
    for (int i = 1; i <= n; ++i) cs.push_back(candidate(i, 1 + static_cast<double>(rng() % 20)));
    std::vector<std::vector<bool>> conflict(n + 1, std::vector<bool>(n + 1, false));
    for (int a = 1; a <= n; ++a) {
      for (int b = a + 1; b <= n; ++b) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < density) {
          conflict[a][b] = conflict[b][a] = true;
          cs[a - 1].conflicts_with.push_back(b);
          cs[b - 1].conflicts_with.push_back(a);
        }
      }
    }
    double best = 0;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      double sum = 0;
      bool ok = true;
      for (int a = 1; a <= n && ok; ++a) {
        if (!(mask >> (a - 1) & 1)) continue;
        sum += cs[a - 1].total_saving_ns;
        for (int b = a + 1; b <= n; ++b) ok = ok && !((mask >> (b - 1) & 1) && conflict[a][b]);
      }
      if (ok) best = std::max(best, sum);
    }
    const Selection s = chooseConsistentSet(cs, 0);
    SCOPED_TRACE("trial " + std::to_string(trial));
    EXPECT_EQ(s.method, "exact");
    EXPECT_DOUBLE_EQ(s.total_saving_ns, best);
    EXPECT_EQ(s.chosen.size() + s.rejected.size(), static_cast<size_t>(n));
    for (int a : s.chosen) {
      for (int b : s.chosen) EXPECT_FALSE(conflict[a][b]) << a << " and " << b;
    }
  }
}

TEST(ChooseConsistentSet, SolvesSmallComponentsExactlyAndLargeOnesGreedily) {
  // Two components of 30 (paths 1-2-...-30 and 31-...-60): 60 candidates, each component exact.
  auto path = [](int first, int count, std::vector<Candidate>& cs) {
    for (int i = 0; i < count; ++i) {
      std::vector<int> conflicts;
      if (i > 0) conflicts.push_back(first + i - 1);
      if (i + 1 < count) conflicts.push_back(first + i + 1);
      // Savings 10, 11, 10, 11, ...: the best takes every other one, starting with the 11s.
      cs.push_back(candidate(first + i, 10 + (i % 2), conflicts));
    }
  };
  std::vector<Candidate> two;
  path(1, 30, two);
  path(31, 30, two);
  Selection s = chooseConsistentSet(two, 0);
  EXPECT_EQ(s.method, "exact");
  EXPECT_DOUBLE_EQ(s.total_saving_ns, 2 * 15 * 11);
  // One component of 50: greedy, still consistent.
  std::vector<Candidate> big;
  path(1, 50, big);
  s = chooseConsistentSet(big, 0);
  EXPECT_EQ(s.method, "greedy");
  EXPECT_DOUBLE_EQ(s.total_saving_ns, 25 * 11);
  for (size_t i = 1; i < s.chosen.size(); ++i) EXPECT_GT(s.chosen[i] - s.chosen[i - 1], 1);
}

}  // namespace
}  // namespace kfuse::rewriter
