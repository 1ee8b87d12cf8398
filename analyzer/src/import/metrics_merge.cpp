#include "kfuse/analyzer/metrics_merge.h"
#include "kfuse/core/stats.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace kfuse::analyzer {
namespace {

// Each kernel's launches in launch order (API start time where known, else id), by mangled name.
std::map<std::string, std::vector<const core::Launch*>> launchesByKernel(const core::Trace& t) {
  std::map<core::Id, const std::string*> names;
  for (const core::KernelFunction& f : t.functions) names[f.id] = &f.mangled_name;
  std::map<std::string, std::vector<const core::Launch*>> out;
  for (const core::Launch& l : t.launches) {
    auto n = names.find(l.function_id);
    if (n != names.end()) out[*n->second].push_back(&l);
  }
  for (auto& [name, launches] : out) {
    std::stable_sort(launches.begin(), launches.end(), [](const core::Launch* a, const core::Launch* b) {
      if (a->api_start_ns != core::kNoTime && b->api_start_ns != core::kNoTime && a->api_start_ns != b->api_start_ns) {
        return a->api_start_ns < b->api_start_ns;
      }
      return a->id < b->id;
    });
  }
  return out;
}

bool sameShape(const core::Launch& a, const core::Launch& b) {
  return a.grid.x == b.grid.x && a.grid.y == b.grid.y && a.grid.z == b.grid.z && a.block.x == b.block.x &&
         a.block.y == b.block.y && a.block.z == b.block.z;
}

}  // namespace

Expected<MetricsMergeSummary> mergeMeasuredMetrics(core::Trace& target, const core::Trace& from,
                                                   const std::string& from_path) {
  std::map<core::Id, std::vector<const core::Metric*>> measured;
  for (const core::Metric& m : from.metrics) {
    if (m.source == core::MetricSource::kMeasured) measured[m.launch_id].push_back(&m);
  }
  if (measured.empty()) {
    return invalidArgument(from_path +
                           ": has no measured metrics to merge (record it with `kfuse record --metrics` on a GPU)");
  }

  const auto target_launches = launchesByKernel(target);
  const auto from_launches = launchesByKernel(from);
  // Pairs (target launch id -> metrics) first, then one pass to replace same-named metrics.
  std::map<core::Id, const std::vector<const core::Metric*>*> pairs;
  MetricsMergeSummary summary;
  for (const auto& [name, launches] : target_launches) {
    auto other = from_launches.find(name);
    for (size_t k = 0; k < launches.size(); ++k) {
      const core::Launch* mine = launches[k];
      const core::Launch* theirs =
          other != from_launches.end() && k < other->second.size() ? other->second[k] : nullptr;
      auto m = theirs && sameShape(*mine, *theirs) ? measured.find(theirs->id) : measured.end();
      if (m == measured.end()) {
        ++summary.launches_unmatched;
        continue;
      }
      pairs[mine->id] = &m->second;
      ++summary.launches_matched;
    }
  }
  std::set<std::pair<core::Id, std::string>> replaced;
  for (const auto& [launch, metrics] : pairs) {
    for (const core::Metric* m : *metrics) replaced.insert({launch, m->name});
  }
  target.metrics.erase(std::remove_if(target.metrics.begin(), target.metrics.end(),
                                      [&](const core::Metric& m) {
                                        return replaced.count({m.launch_id, m.name}) > 0;
                                      }),
                       target.metrics.end());
  for (const auto& [launch, metrics] : pairs) {
    for (const core::Metric* m : *metrics) {
      core::Metric copy = *m;
      copy.launch_id = launch;
      target.metrics.push_back(std::move(copy));
      ++summary.metrics_copied;
    }
  }
  target.stats.push_back(core::makeStat(core::StatId::kMetricsMergedLaunches, summary.launches_matched,
                                        "launches given measured metrics from " + from_path));
  if (summary.launches_unmatched > 0) {
    target.stats.push_back(core::makeStat(core::StatId::kMetricsUnmatchedLaunches, summary.launches_unmatched,
                                          "launches with no launch of the same kernel and shape at the same "
                                          "position in " +
                                              from_path + " (a different run?): their bytes and FLOPs stay estimated"));
  }
  return summary;
}

}  // namespace kfuse::analyzer
