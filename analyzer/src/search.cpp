// Analysis: the search for fusion candidates (vertical chains on a stream, horizontal groups) and their patterns.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "kfuse/core/cancel.h"
#include "pattern_analysis.h"

namespace kfuse::analyzer {

std::vector<Candidate> Analysis::run(SearchStats& stats) {
  std::vector<Candidate> out;
  findVertical(out, stats);
  findHorizontal(out, stats);
  return out;
}

// Pattern identity of a group of ops: functions, launch shapes, and how buffers are shared among them. A buffer
// is the bytes a use touches: a use shares the number of the first earlier use whose bytes it overlaps, so tensors
// carved out of one allocation (an arena) are told apart as they are when each has its own.
std::string Analysis::patternKey(CandidateKind kind, const std::vector<size_t>& occ) const {
  std::string key = kind == CandidateKind::kVertical ? "V" : "H";
  // Nodes of a replayed CUDA graph form patterns of their own: they are rewritten at instantiate, not per launch.
  if (!occ.empty() && g_.ops[occ.front()].inGraph()) key.insert(0, "G");
  std::vector<std::pair<const BufferUse*, int>> seen;  // earlier uses of the occurrence, with their buffer number
  int buffers = 0;
  for (size_t op : occ) {
    const core::Launch& l = launch(op);
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, falsely) on `"literal" + std::string&&`.
    key.append("|").append(std::to_string(l.function_id)).append("@").append(dimText(l.grid));
    key.append("/").append(dimText(l.block));
    for (const BufferUse& u : g_.ops[op].uses) {
      auto shared = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first->overlaps(u); });
      const int buffer = shared == seen.end() ? buffers++ : shared->second;
      seen.emplace_back(&u, buffer);
      key.append(":").append(std::to_string(u.param_index)).append("=b").append(std::to_string(buffer));
    }
  }
  return key;
}

Candidate& Analysis::group(std::map<std::string, size_t>& index, std::vector<Candidate>& out, CandidateKind kind,
                           const std::vector<size_t>& occ) {
  const std::string key = patternKey(kind, occ);
  auto [it, inserted] = index.try_emplace(key, out.size());
  if (inserted) {
    Candidate c;
    c.kind = kind;
    for (size_t op : occ) {
      const KernelFacts* k = cat_.find(g_.ops[op].function_id);
      c.function_ids.push_back(g_.ops[op].function_id);
      c.names.push_back(k ? k->name : "function " + std::to_string(g_.ops[op].function_id));
      c.mangled_names.push_back(k ? k->mangled_name : "");
    }
    out.push_back(std::move(c));
  }
  Candidate& c = out[it->second];
  c.occurrences.push_back(occ);
  return c;
}

void Analysis::findVertical(std::vector<Candidate>& out, SearchStats& stats) {
  std::map<std::string, size_t> index;
  // Ops by stream, in issue order.
  std::map<core::Id, std::vector<size_t>> by_stream;
  for (size_t i = 0; i < g_.ops.size(); ++i) by_stream[g_.ops[i].stream_id].push_back(i);
  for (const auto& [stream, ops] : by_stream) {
    std::vector<size_t> run;
    auto flush = [&] {
      for (size_t s = 0; s + 1 < run.size(); s += opt_.max_chain_length) {
        std::vector<size_t> chunk(
            run.begin() + static_cast<std::ptrdiff_t>(s),
            run.begin() + static_cast<std::ptrdiff_t>(std::min(run.size(), s + opt_.max_chain_length)));
        if (chunk.size() >= 2) group(index, out, CandidateKind::kVertical, chunk);
      }
      run.clear();
    };
    for (size_t n = 0; n + 1 < ops.size(); ++n) {
      if (core::cancelRequested()) return;  // analyze() returns cancelled after the search
      const size_t a = ops[n], b = ops[n + 1];
      if (g_.ops[a].kind != OpKind::kKernel || g_.ops[b].kind != OpKind::kKernel) {
        if (g_.ops[a].kind == OpKind::kKernel) ++stats.pairs_copy_between;
        flush();
        continue;
      }
      ++stats.adjacent_pairs;
      const core::Launch& la = launch(a);
      const core::Launch& lb = launch(b);
      bool linked = true;
      const bool same_shape = la.grid == lb.grid && la.block == lb.block;
      // Without pointer data, the kernel families and the operators' tensors decide; they may link kernels of
      // different launch shapes (an epilogue fusion does not need equal shapes) and refuse same-shape ones.
      const Advisor::LinkVerdict fam = g_.has_pointer_data ? Advisor::LinkVerdict{} : adv_.vertical(a, b);
      // With pointer data but no PTX for one of the kernels (a library's cubin: cuBLAS, PyTorch), the families
      // still refuse what is never fused (work feeding a GEMM, two GEMMs, a collective).
      const bool families_forbid_here = g_.has_pointer_data && (!hasPtx(a) || !hasPtx(b)) &&
                                        familyPairRule(adv_.kernelClass(a).family, adv_.kernelClass(b).family).never;
      if (fam.link == Advisor::Link::kFamiliesForbid || families_forbid_here) {
        ++stats.pairs_family_never;
        linked = false;
      } else if (fam.link == Advisor::Link::kNoDataFlow) {
        ++stats.pairs_no_data_flow;
        linked = false;
      } else if (fam.link == Advisor::Link::kSyncBetween) {
        ++stats.pairs_sync_between;
        linked = false;
      } else if (fam.link == Advisor::Link::kLink && g_.ops[a].host_sync_epoch == g_.ops[b].host_sync_epoch) {
        // linked
      } else if (shapeUnknown(la) || shapeUnknown(lb)) {
        ++stats.pairs_config_unknown;
        linked = false;
      } else if (!same_shape && !g_.has_pointer_data) {
        // Without pointer data there is no element map to check: shapes must agree.
        ++stats.pairs_config_differs;
        linked = false;
      } else if (g_.ops[a].host_sync_epoch != g_.ops[b].host_sync_epoch) {
        ++stats.pairs_sync_between;
        linked = false;
      } else if (g_.has_pointer_data) {
        bool raw = false;
        for (const Edge* e : g_.edgesBetween(a, b)) raw = raw || e->kind == EdgeKind::kRaw;
        if (!raw) {
          ++stats.pairs_no_data_flow;
          linked = false;
        }
      }
      if (!linked) {
        flush();
        continue;
      }
      // A change of launch shape starts an epilogue chain: `a` produces, `b` and the kernels of its shape after
      // it consume. (Without pointer data the kernel families chain across shapes: GEMM -> add -> norm.)
      if (!same_shape && g_.has_pointer_data) flush();
      if (run.empty()) run.push_back(a);
      run.push_back(b);
    }
    flush();
  }
}

// Whether `b` may join horizontal group `group` (kernels issued before it): independent of every member, in the
// same host-sync epoch, and the group still fits in one wave.
bool Analysis::joinsGroup(const std::vector<size_t>& group, size_t b, SearchStats& stats) const {
  const core::Launch& lb = launch(b);
  // A collective communicates with other GPUs: never fused (kernel families).
  for (size_t k : {group.front(), b}) {
    if (adv_.kernelClass(k).family == KernelFamily::kCollective) {
      ++stats.pairs_family_never;
      return false;
    }
  }
  if (shapeUnknown(lb)) {
    ++stats.pairs_config_unknown;
    return false;
  }
  std::vector<cost::LaunchResources> shapes;
  for (size_t a : group) shapes.push_back(launchResources(launch(a)));
  shapes.push_back(launchResources(lb));
  if (cost::waves(shapes, gpu_) > 1.0) {
    ++stats.horizontal_not_small;
    return false;
  }
  for (size_t a : group) {
    const bool same_stream = g_.ops[a].stream_id == g_.ops[b].stream_id;
    // Without pointer data, kernels on one stream may depend on each other in ways the trace cannot show.
    if ((same_stream && !g_.has_pointer_data) || g_.ops[a].host_sync_epoch != g_.ops[b].host_sync_epoch) {
      ++stats.horizontal_dependent;
      return false;
    }
    bool dependent = false;
    for (const Edge* e : g_.edgesBetween(a, b)) dependent = dependent || e->kind != EdgeKind::kStreamOrder;
    if (g_.ops[b].inGraph()) {
      // In a graph the edges are the order: a path between two nodes orders them (no stream-order guessing).
      dependent = g_.reaches(a, b);
    } else if (!same_stream) {
      dependent = dependent || g_.reaches(a, b);
    } else {
      // On one stream every op orders the next: a copy or set between two members could carry data from one
      // to the other, so it ends the group.
      for (size_t x = a + 1; x < b && !dependent; ++x) {
        dependent = g_.ops[x].stream_id == g_.ops[a].stream_id && g_.ops[x].kind != OpKind::kKernel;
      }
    }
    if (dependent) {
      ++stats.horizontal_dependent;
      return false;
    }
  }
  return true;
}

// Groups of consecutive independent kernels that fit in one wave together (N-way, up to --max-group). Of each
// maximal group, members the analysis cannot see into are left out when two others remain, then the cost model
// picks the prefix of at least two kernels with the largest predicted saving; the rest starts the next group.
void Analysis::findHorizontal(std::vector<Candidate>& out, SearchStats& stats) {
  std::map<std::string, size_t> index;
  std::vector<size_t> kernels;
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    if (g_.ops[i].kind == OpKind::kKernel) kernels.push_back(i);
  }
  const size_t max_group = std::max<size_t>(2, opt_.max_group);
  size_t n = 0;
  while (n + 1 < kernels.size()) {
    if (core::cancelRequested()) return;
    std::vector<size_t> group{kernels[n]};
    if (shapeUnknown(launch(kernels[n]))) {
      ++n;
      continue;
    }
    ++stats.horizontal_pairs;
    for (size_t m = n + 1; m < kernels.size() && group.size() < max_group; ++m) {
      if (!joinsGroup(group, kernels[m], stats)) break;
      group.push_back(kernels[m]);
    }
    if (group.size() < 2) {
      ++n;
      continue;
    }
    // A member the analysis cannot see into (no PTX, pointers it cannot follow) would leave the group at most
    // likely; the others still make a group proven on its own, if the one left out is on a stream of its own: then
    // nothing orders it against them (joinsGroup), so running them as one kernel moves none of them across it. On a
    // kept member's stream it would sit between two of them in stream order, with accesses nobody can see.
    if (g_.has_pointer_data) {
      std::vector<size_t> visible, hidden;
      for (size_t op : group) (seesInto(op) ? visible : hidden).push_back(op);
      const bool apart = std::none_of(hidden.begin(), hidden.end(), [&](size_t h) {
        return std::any_of(visible.begin(), visible.end(),
                           [&](size_t k) { return g_.ops[k].stream_id == g_.ops[h].stream_id; });
      });
      if (visible.size() >= 2 && !hidden.empty() && apart) group = std::move(visible);
    }
    size_t best = 2;
    double best_saving = -1;
    for (size_t len = 2; len <= group.size() && group.size() > 2; ++len) {
      const std::vector<size_t> prefix(group.begin(), group.begin() + static_cast<std::ptrdiff_t>(len));
      const double saving = occurrenceCost(CandidateKind::kHorizontal, prefix, {}).saving_ns;
      if (saving > best_saving) {
        best_saving = saving;
        best = len;
      }
    }
    group.resize(best);
    // The next group starts after the last kernel taken (a member left out above goes with this group's).
    n = static_cast<size_t>(std::find(kernels.begin() + static_cast<std::ptrdiff_t>(n), kernels.end(), group.back()) -
                            kernels.begin()) +
        1;
    this->group(index, out, CandidateKind::kHorizontal, group);
  }
}

}  // namespace kfuse::analyzer
