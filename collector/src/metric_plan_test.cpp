// The metric plan against the real libcupti Profiler Host API (no GPU needed).
#include "kfuse/collector/metric_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace kfuse::collector {
namespace {

const MetricRecipe* recipe(const MetricPlan& plan, const std::string& name) {
  for (const MetricRecipe& r : plan.recipes) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

double weightOf(const MetricRecipe& r, const std::string& metric) {
  for (const MetricTerm& t : r.terms) {
    if (t.profiler_metric == metric) return t.weight;
  }
  return 0;
}

TEST(MetricPlanTest, CuptiKnowsHopperAndBlackwellChips) {
  auto chips = supportedChips(realProfilerApi());
  ASSERT_TRUE(chips.ok()) << chips.status().message();
  for (const char* chip : {"GA100", "GH100", "GB100", "GB202"}) {
    EXPECT_NE(std::find(chips->begin(), chips->end(), chip), chips->end()) << chip;
  }
}

TEST(MetricPlanTest, HopperGivesDramBytesFlopsTensorAndTime) {
  auto plan = planMetrics(realProfilerApi(), "GH100");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::vector<std::string> names;
  for (const auto& r : plan->recipes) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"dram_bytes_read", "dram_bytes_written", "flops_fp32", "flops_fp64",
                                             "flops_fp16", "tensor_instructions", "gpu_time_ns"}));
  EXPECT_TRUE(plan->unavailable.empty());
  const MetricRecipe* read = recipe(*plan, "dram_bytes_read");
  ASSERT_NE(read, nullptr);
  ASSERT_EQ(read->terms.size(), 1u);
  EXPECT_EQ(read->terms[0].profiler_metric, "dram__bytes_read.sum");
  EXPECT_EQ(read->unit, "bytes");
  // FP32 FLOPs: fadd + fmul + 2 ffma; Hopper has no packed FP32 instructions.
  const MetricRecipe* fp32 = recipe(*plan, "flops_fp32");
  ASSERT_NE(fp32, nullptr);
  EXPECT_EQ(fp32->terms.size(), 3u);
  EXPECT_EQ(weightOf(*fp32, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"), 2);
  EXPECT_EQ(weightOf(*fp32, "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"), 1);
  // 13 profiler metrics; CUPTI 13.0 schedules them in 2 replay passes on GH100.
  EXPECT_EQ(plan->profiler_metrics.size(), 13u);
  EXPECT_GE(plan->passes, 1u);
  EXPECT_LE(plan->passes, 4u);
  EXPECT_FALSE(plan->config_image.empty());
}

TEST(MetricPlanTest, BlackwellCountsPackedFp32Instructions) {
  auto plan = planMetrics(realProfilerApi(), "GB100");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const MetricRecipe* fp32 = recipe(*plan, "flops_fp32");
  ASSERT_NE(fp32, nullptr);
  EXPECT_EQ(weightOf(*fp32, "sm__sass_thread_inst_executed_op_ffma2_pred_on.sum"), 4);
  EXPECT_EQ(weightOf(*fp32, "sm__sass_thread_inst_executed_op_fadd2_pred_on.sum"), 2);
  EXPECT_EQ(weightOf(*fp32, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"), 2);
}

TEST(MetricPlanTest, GeForceBlackwellUsesItsOwnDramNames) {
  auto plan = planMetrics(realProfilerApi(), "GB202");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const MetricRecipe* read = recipe(*plan, "dram_bytes_read");
  const MetricRecipe* written = recipe(*plan, "dram_bytes_written");
  ASSERT_NE(read, nullptr);
  ASSERT_NE(written, nullptr);
  EXPECT_NE(read->terms[0].profiler_metric, "dram__bytes_read.sum");
  EXPECT_NE(read->terms[0].profiler_metric.find("read"), std::string::npos) << read->terms[0].profiler_metric;
  EXPECT_NE(written->terms[0].profiler_metric.find("write"), std::string::npos) << written->terms[0].profiler_metric;
  EXPECT_FALSE(plan->config_image.empty());
}

TEST(MetricPlanTest, TegraChipsHaveNoDramCountersAndSaySo) {
  auto plan = planMetrics(realProfilerApi(), "GA10B");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(recipe(*plan, "dram_bytes_read"), nullptr);
  EXPECT_NE(recipe(*plan, "flops_fp32"), nullptr);
  ASSERT_FALSE(plan->unavailable.empty());
  EXPECT_EQ(plan->unavailable[0].rfind("dram_bytes_read: GA10B has no ", 0), 0u) << plan->unavailable[0];
}

TEST(MetricPlanTest, UnknownChipIsAnErrorListingTheKnownOnes) {
  auto plan = planMetrics(realProfilerApi(), "XZ999");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("XZ999"), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find("GH100"), std::string::npos) << plan.status().message();
}

TEST(MetricPlanTest, CombineWeighsTermsAndSkipsValuesThatAreNotNumbers) {
  MetricPlan plan;
  plan.recipes = {{"flops_fp32", "flop", {{"fadd", 1}, {"fmul", 1}, {"ffma", 2}}},
                  {"dram_bytes_read", "bytes", {{"rd", 1}}}};
  plan.profiler_metrics = {"fadd", "fmul", "ffma", "rd"};
  EXPECT_EQ(plan.combine({10, 20, 30, 4096}), (std::vector<double>{90, 4096}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(plan.combine({10, nan, 30, 1}), (std::vector<double>{70, 1}));
}

TEST(MetricPlanTest, EvaluatorConfiguresAHostObjectForThePlan) {
  auto plan = planMetrics(realProfilerApi(), "GA100");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto evaluator = MetricEvaluator::create(realProfilerApi(), *plan, {});
  ASSERT_TRUE(evaluator.ok()) << evaluator.status().message();
  // Without a GPU there is no counter data to evaluate: an empty image is refused, not a crash.
  std::vector<uint8_t> empty(64, 0);
  EXPECT_FALSE((*evaluator)->evaluate(empty.data(), empty.size(), 0).ok());
}

}  // namespace
}  // namespace kfuse::collector
