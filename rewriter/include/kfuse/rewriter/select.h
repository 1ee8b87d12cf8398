// Choosing a consistent set of fusions. Candidates can share launches (a vertical chain A -> B and a horizontal
// pair B + C over the same launch of B); a launch can belong to one fusion only. The analyzer marks which
// candidates conflict (Candidate::conflicts_with); this picks the non-conflicting subset with the largest
// predicted total saving. Pure; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kfuse/analyzer/analysis.h"

namespace kfuse::rewriter {

struct Selection {
  std::vector<int> chosen;  // ranks, ascending (the analyzer's order: best first)
  double total_saving_ns = 0;
  std::string method;  // "exact" (branch and bound) or "greedy" (too many conflicting candidates)
  std::vector<std::pair<int, std::string>> rejected;  // rank and why (not proven, below the minimum, conflicts)
};

// Considers proven candidates with a positive total saving whose share of GPU busy time is at least
// `min_saving_share` (0..1); the others are rejected with the reason. Two candidates conflict when either lists
// the other in conflicts_with. The chosen set maximises the sum of total_saving_ns with no two in conflict:
// each connected component of the conflict graph is solved on its own, exactly by branch and bound (candidates by
// saving, best first; bound = the current sum + the savings not yet decided) when it has at most 40 candidates,
// else greedily (by saving, each taken unless it conflicts with one taken). `method` is "greedy" when any component
// was solved greedily (also when the exact search exceeded its node budget), else "exact". Among sets with equal
// totals, the one that takes the larger savings first (then the better ranks) wins. `chosen` is by rank;
// `rejected` by rank, every candidate not chosen exactly once.
Selection chooseConsistentSet(const std::vector<analyzer::Candidate>& candidates, double min_saving_share);

}  // namespace kfuse::rewriter
