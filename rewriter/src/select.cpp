// Maximum-weight independent set on the conflict graph: exact by branch and bound per connected component while
// components are small, greedy by saving beyond that.
#include "kfuse/rewriter/select.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

namespace kfuse::rewriter {
namespace {

// Components up to this size are solved exactly (a 64-bit mask holds one); larger ones greedily.
constexpr size_t kMaxExactComponent = 40;
// Branch-and-bound nodes per component before giving up on exactness (greedy then): a bound on the time taken.
constexpr uint64_t kMaxSearchNodes = 20'000'000;

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * share);
  return buf;
}

// Totals equal within rounding (sums of the same doubles taken in another order) count as equal.
bool better(double a, double b) {
  return a > b + 1e-9 * std::max(1.0, std::fabs(b));
}

struct Node {
  int rank = 0;
  double saving = 0;
  std::vector<size_t> neighbours;  // indices into the eligible list
};

// Branch and bound over `members` (indices into `nodes`, sorted by saving, best first). Sets `take` for the chosen
// ones; returns false when the node budget ran out (nothing set then).
bool solveExactly(const std::vector<Node>& nodes, const std::vector<size_t>& members, std::vector<bool>& take) {
  const size_t n = members.size();
  std::map<size_t, size_t> position;
  for (size_t i = 0; i < n; ++i) position[members[i]] = i;
  std::vector<uint64_t> conflicts(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t nb : nodes[members[i]].neighbours) conflicts[i] |= uint64_t{1} << position.at(nb);
  }
  std::vector<double> rest(n + 1, 0);  // sum of savings from i on: the bound
  for (size_t i = n; i-- > 0;) rest[i] = rest[i + 1] + nodes[members[i]].saving;
  uint64_t best_set = 0, visited = 0;
  double best = -1;
  bool exhausted = false;
  auto search = [&](auto&& self, size_t i, uint64_t set, double sum) -> void {
    if (exhausted) return;
    if (++visited > kMaxSearchNodes) {
      exhausted = true;
      return;
    }
    if (better(sum, best)) {
      best = sum;
      best_set = set;
    }
    if (i == n || !better(sum + rest[i], best)) return;
    if ((conflicts[i] & set) == 0) self(self, i + 1, set | (uint64_t{1} << i), sum + nodes[members[i]].saving);
    self(self, i + 1, set, sum);
  };
  search(search, 0, 0, 0);
  if (exhausted) return false;
  for (size_t i = 0; i < n; ++i) {
    if (best_set & (uint64_t{1} << i)) take[members[i]] = true;
  }
  return true;
}

void solveGreedily(const std::vector<Node>& nodes, const std::vector<size_t>& members, std::vector<bool>& take) {
  for (size_t m : members) {
    const bool clash =
        std::any_of(nodes[m].neighbours.begin(), nodes[m].neighbours.end(), [&](size_t nb) { return take[nb]; });
    if (!clash) take[m] = true;
  }
}

}  // namespace

Selection chooseConsistentSet(const std::vector<analyzer::Candidate>& candidates, double min_saving_share) {
  Selection out;
  out.method = "exact";
  std::vector<Node> nodes;
  std::map<int, size_t> by_rank;  // eligible candidates
  for (const analyzer::Candidate& c : candidates) {
    if (c.legality != analyzer::Legality::kProven) {
      std::string why = std::string("not proven (") + analyzer::legalityName(c.legality) + ")";
      if (!c.reasons.empty()) why += ": " + c.reasons.front();
      out.rejected.emplace_back(c.rank, why);
    } else if (c.total_saving_ns <= 0) {
      out.rejected.emplace_back(c.rank, "predicted to save nothing");
    } else if (c.share_of_gpu_busy < min_saving_share) {
      out.rejected.emplace_back(c.rank, "saves " + percent(c.share_of_gpu_busy) + " of GPU busy time, below the " +
                                            percent(min_saving_share) + " asked for");
    } else {
      by_rank[c.rank] = nodes.size();
      nodes.push_back(Node{c.rank, c.total_saving_ns, {}});
    }
  }
  // Conflict edges between eligible candidates, taken from either side's list.
  for (const analyzer::Candidate& c : candidates) {
    auto self = by_rank.find(c.rank);
    if (self == by_rank.end()) continue;
    for (int other : c.conflicts_with) {
      auto it = by_rank.find(other);
      if (it == by_rank.end() || it->second == self->second) continue;
      nodes[self->second].neighbours.push_back(it->second);
      nodes[it->second].neighbours.push_back(self->second);
    }
  }
  for (Node& n : nodes) {
    std::sort(n.neighbours.begin(), n.neighbours.end());
    n.neighbours.erase(std::unique(n.neighbours.begin(), n.neighbours.end()), n.neighbours.end());
  }

  // Connected components, each solved on its own. Within one, candidates in order of saving (then rank): the order
  // greedy takes them in and branch and bound tries them in, so that among equal totals the set that takes the
  // larger savings first wins.
  std::vector<bool> take(nodes.size(), false), seen(nodes.size(), false);
  for (size_t start = 0; start < nodes.size(); ++start) {
    if (seen[start]) continue;
    std::vector<size_t> members{start};
    seen[start] = true;
    for (size_t k = 0; k < members.size(); ++k) {
      for (size_t nb : nodes[members[k]].neighbours) {
        if (!seen[nb]) {
          seen[nb] = true;
          members.push_back(nb);
        }
      }
    }
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      if (nodes[a].saving != nodes[b].saving) return nodes[a].saving > nodes[b].saving;
      return nodes[a].rank < nodes[b].rank;
    });
    if (members.size() > kMaxExactComponent || !solveExactly(nodes, members, take)) {
      solveGreedily(nodes, members, take);
      out.method = "greedy";
    }
  }

  for (size_t i = 0; i < nodes.size(); ++i) {
    if (take[i]) {
      out.chosen.push_back(nodes[i].rank);
      out.total_saving_ns += nodes[i].saving;
      continue;
    }
    std::string with;
    for (size_t nb : nodes[i].neighbours) {
      if (take[nb]) with += (with.empty() ? "#" : ", #") + std::to_string(nodes[nb].rank);
    }
    out.rejected.emplace_back(nodes[i].rank,
                              "shares a launch with " + with + ", chosen instead (the larger total saving)");
  }
  std::sort(out.chosen.begin(), out.chosen.end());
  std::sort(out.rejected.begin(), out.rejected.end());
  return out;
}

}  // namespace kfuse::rewriter
