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
  std::vector<int> chosen;  // ranks, best first
  double total_saving_ns = 0;
  std::string method;       // "exact" (branch and bound) or "greedy" (too many conflicting candidates)
  std::vector<std::pair<int, std::string>> rejected;  // rank and why (not proven, below the minimum, conflicts)
};

// Considers proven candidates whose share of GPU busy time is at least `min_saving_share` (0..1).
Selection chooseConsistentSet(const std::vector<analyzer::Candidate>& candidates, double min_saving_share);

}  // namespace kfuse::rewriter
