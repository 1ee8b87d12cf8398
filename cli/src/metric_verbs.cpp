// `kfuse metrics`: which hardware metrics `kfuse record --metrics` collects on a chip, from which profiler metrics,
// in how many replay passes. Runs CUPTI's Profiler Host API, which needs no GPU.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kfuse/collector/metric_plan.h"
#include "kfuse/collector/profiler_api.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

struct MetricsOptions {
  std::string chip;
  bool json = false;
};

std::string formatWeight(double w) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", w);
  return buf;
}

int runMetrics(const MetricsOptions& o) {
  auto loaded = collector::loadProfilerApi();
  if (!loaded.ok()) return reportError(loaded.status());
  collector::ProfilerApi& api = **loaded;
  if (o.chip.empty()) {
    auto chips = collector::supportedChips(api);
    if (!chips.ok()) return reportError(chips.status());
    if (o.json) {
      std::cout << nlohmann::json{{"chips", *chips}}.dump(2) << '\n';
      return kExitOk;
    }
    std::printf("chips CUPTI's range profiler knows (pass one as --chip):\n ");
    for (const auto& c : *chips) std::printf(" %s", c.c_str());
    std::printf("\n");
    return kExitOk;
  }
  auto plan = collector::planMetrics(api, o.chip);
  if (!plan.ok()) return reportError(plan.status());
  if (o.json) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& r : plan->recipes) {
      nlohmann::json terms = nlohmann::json::array();
      for (const auto& t : r.terms) terms.push_back({{"profiler_metric", t.profiler_metric}, {"weight", t.weight}});
      metrics.push_back({{"name", r.name}, {"unit", r.unit}, {"terms", terms}});
    }
    nlohmann::json doc{{"chip", plan->chip},
                       {"metrics", metrics},
                       {"profiler_metrics", plan->profiler_metrics},
                       {"unavailable", plan->unavailable},
                       {"passes", plan->passes},
                       {"config_image_bytes", plan->config_image.size()}};
    std::cout << doc.dump(2) << '\n';
    return kExitOk;
  }
  std::printf("%s: %zu trace metrics from %zu profiler metrics, %zu replay pass%s per kernel\n", plan->chip.c_str(),
              plan->recipes.size(), plan->profiler_metrics.size(), plan->passes, plan->passes == 1 ? "" : "es");
  for (const auto& r : plan->recipes) {
    std::string formula;
    for (const auto& t : r.terms) {
      formula +=
          (formula.empty() ? "" : " + ") + (t.weight == 1 ? "" : formatWeight(t.weight) + " x ") + t.profiler_metric;
    }
    std::printf("  %-20s %-6s = %s\n", r.name.c_str(), r.unit.c_str(), formula.c_str());
  }
  for (const auto& u : plan->unavailable) std::printf("  not collected: %s\n", u.c_str());
  return kExitOk;
}

}  // namespace

void registerMetricVerbs(CLI::App& app, VerbContext& ctx) {
  auto o = std::make_shared<MetricsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "metrics", "Show the hardware metrics `kfuse record --metrics` collects on a GPU chip (no GPU needed)");
  cmd->add_option("--chip", o->chip,
                  "Chip name as CUPTI reports it: GH100 (H100, H200), GA100 (A100), AD102 (L40S, RTX 4090), "
                  "GB100 (B200), GB202 (RTX 5090)...; without it, list the chips");
  cmd->add_flag("--json", o->json, "Print JSON (schemas/metrics.schema.json)");
  cmd->callback([o, &ctx] { ctx.exit_code = runMetrics(*o); });
}

}  // namespace kfuse::cli
