#include "kfuse/collector/metric_plan.h"

#include <cmath>
#include <set>

namespace kfuse::collector {
namespace {

// A term of the catalog: the first of `names` the chip has (base metric names; the rollup is added). A recipe
// whose `core` term is missing is not collected at all (a partial FLOP count would look like a real one).
struct CatalogTerm {
  std::vector<const char*> names;
  double weight;
  bool core;
};
struct CatalogEntry {
  const char* name;
  const char* unit;
  std::vector<CatalogTerm> terms;
};

#define KFUSE_SASS(op) "sm__sass_thread_inst_executed_op_" op "_pred_on"

// FLOPs by precision from thread-level SASS instruction counts: an FMA is 2 FLOP; Blackwell's packed FP32
// instructions (FADD2/FMUL2/FFMA2) do two lanes' work. Half precision follows Nsight Compute's roofline rule
// (an HADD2/HMUL2/HFMA2 counts as one instruction, so packed half work is counted once per instruction).
const std::vector<CatalogEntry>& catalog() {
  static const auto* c = new std::vector<CatalogEntry>{
      {"dram_bytes_read", "bytes", {{{"dram__bytes_read", "dram__bytes_op_read", "fbpa__dram_read_bytes"}, 1, true}}},
      {"dram_bytes_written",
       "bytes",
       {{{"dram__bytes_write", "dram__bytes_op_write", "fbpa__dram_write_bytes"}, 1, true}}},
      {"flops_fp32",
       "flop",
       {{{KFUSE_SASS("fadd")}, 1, true},
        {{KFUSE_SASS("fmul")}, 1, true},
        {{KFUSE_SASS("ffma")}, 2, true},
        {{KFUSE_SASS("fadd2")}, 2, false},
        {{KFUSE_SASS("fmul2")}, 2, false},
        {{KFUSE_SASS("ffma2")}, 4, false}}},
      {"flops_fp64",
       "flop",
       {{{KFUSE_SASS("dadd")}, 1, true}, {{KFUSE_SASS("dmul")}, 1, true}, {{KFUSE_SASS("dfma")}, 2, true}}},
      {"flops_fp16",
       "flop",
       {{{KFUSE_SASS("hadd")}, 1, true}, {{KFUSE_SASS("hmul")}, 1, true}, {{KFUSE_SASS("hfma")}, 2, true}}},
      // Tensor-core work is not in the FLOP counts: this says whether a kernel did any.
      {"tensor_instructions", "inst", {{{"sm__inst_executed_pipe_tensor"}, 1, true}}},
      {"gpu_time_ns", "ns", {{{"gpu__time_duration"}, 1, true}}},
  };
  return *c;
}
#undef KFUSE_SASS

constexpr const char* kRollup = ".sum";

std::string cuptiError(ProfilerApi& api, const char* what, CUptiResult r) {
  return std::string(what) + " failed: " + api.errorString(r);
}

// A host object for one chip; deinitialized when it goes out of scope.
class HostObject {
 public:
  HostObject(ProfilerApi& api) : api_(api) {}
  ~HostObject() { reset(); }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;

  CUptiResult init(std::string_view chip, const std::vector<uint8_t>& availability) {
    reset();
    chip_ = std::string(chip);
    auto p = cuptiParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip_.c_str();
    p.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
    const CUptiResult r = api_.hostInitialize(&p);
    if (r == CUPTI_SUCCESS) object_ = p.pHostObject;
    return r;
  }
  void reset() {
    if (!object_) return;
    auto p = cuptiParams<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    p.pHostObject = object_;
    (void)api_.hostDeinitialize(&p);
    object_ = nullptr;
  }
  CUpti_Profiler_Host_Object* get() const { return object_; }
  CUpti_Profiler_Host_Object* release() {
    auto* o = object_;
    object_ = nullptr;
    return o;
  }

 private:
  ProfilerApi& api_;
  std::string chip_;
  CUpti_Profiler_Host_Object* object_ = nullptr;
};

CUptiResult addMetrics(ProfilerApi& api, CUpti_Profiler_Host_Object* host, const std::vector<const char*>& names) {
  auto p =
      cuptiParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  p.pHostObject = host;
  p.ppMetricNames = const_cast<const char**>(names.data());
  p.numMetrics = names.size();
  return api.hostConfigAddMetrics(&p);
}

std::vector<const char*> cStrings(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(s.c_str());
  return out;
}

}  // namespace

std::vector<double> MetricPlan::combine(const std::vector<double>& profiler_values) const {
  std::vector<double> out;
  out.reserve(recipes.size());
  for (const MetricRecipe& r : recipes) {
    double sum = 0;
    for (const MetricTerm& t : r.terms) {
      for (size_t i = 0; i < profiler_metrics.size() && i < profiler_values.size(); ++i) {
        if (profiler_metrics[i] == t.profiler_metric && std::isfinite(profiler_values[i])) {
          sum += t.weight * profiler_values[i];
        }
      }
    }
    out.push_back(sum);
  }
  return out;
}

Expected<std::vector<std::string>> supportedChips(ProfilerApi& api) {
  auto p = cuptiParams<CUpti_Profiler_Host_GetSupportedChips_Params>(
      CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE);
  if (CUptiResult r = api.hostGetSupportedChips(&p); r != CUPTI_SUCCESS) {
    return unsupported(cuptiError(api, "cuptiProfilerHostGetSupportedChips", r));
  }
  std::vector<std::string> chips;
  for (size_t i = 0; i < p.numChips; ++i) {
    if (p.ppChipNames && p.ppChipNames[i]) chips.emplace_back(p.ppChipNames[i]);
  }
  return chips;
}

Expected<MetricPlan> planMetrics(ProfilerApi& api, std::string_view chip,
                                 const std::vector<uint8_t>& counter_availability) {
  MetricPlan plan;
  plan.chip = std::string(chip);

  // 1. The chip's counter metrics. This host object only lists: CUPTI 13.0 returns an empty config image from a
  //    host object that has listed base metrics, so the config is made with a fresh one below.
  std::set<std::string> available;
  {
    HostObject lister(api);
    if (CUptiResult r = lister.init(chip, counter_availability); r != CUPTI_SUCCESS) {
      std::string known;
      if (auto chips = supportedChips(api); chips.ok()) {
        for (const auto& c : *chips) known += (known.empty() ? "" : " ") + c;
      }
      return invalidArgument("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostInitialize", r) +
                             (known.empty() ? "" : " (chips this CUPTI knows: " + known + ")"));
    }
    auto p =
        cuptiParams<CUpti_Profiler_Host_GetBaseMetrics_Params>(CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE);
    p.pHostObject = lister.get();
    p.metricType = CUPTI_METRIC_TYPE_COUNTER;
    if (CUptiResult r = api.hostGetBaseMetrics(&p); r != CUPTI_SUCCESS) {
      return unsupported("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostGetBaseMetrics", r));
    }
    for (size_t i = 0; i < p.numMetrics; ++i) {
      if (p.ppMetricNames && p.ppMetricNames[i]) available.insert(p.ppMetricNames[i]);
    }
  }

  // 2. Resolve the catalog.
  for (const CatalogEntry& entry : catalog()) {
    MetricRecipe recipe{entry.name, entry.unit, {}};
    std::string missing;
    for (const CatalogTerm& term : entry.terms) {
      const char* found = nullptr;
      for (const char* name : term.names) {
        if (available.count(name)) {
          found = name;
          break;
        }
      }
      if (found) {
        recipe.terms.push_back(MetricTerm{std::string(found) + kRollup, term.weight});
      } else if (term.core) {
        missing += (missing.empty() ? "" : ", ") + std::string(term.names.front());
      }
    }
    if (!missing.empty()) {
      plan.unavailable.push_back(std::string(entry.name) + ": " + plan.chip + " has no " + missing);
      continue;
    }
    plan.recipes.push_back(std::move(recipe));
  }

  // 3. Keep what the config accepts: a name listed for the chip may still be refused (CUPTI 13.0 lists
  //    dram__bytes_read for GB202 and refuses it in a config).
  auto accepted = [&](const std::vector<const char*>& names) {
    HostObject h(api);
    return h.init(chip, counter_availability) == CUPTI_SUCCESS && addMetrics(api, h.get(), names) == CUPTI_SUCCESS;
  };
  for (auto it = plan.recipes.begin(); it != plan.recipes.end();) {
    std::vector<std::string> names;
    for (const MetricTerm& t : it->terms) names.push_back(t.profiler_metric);
    if (!accepted(cStrings(names))) {
      plan.unavailable.push_back(it->name + ": the profiler refuses " + names.front() + " on " + plan.chip);
      it = plan.recipes.erase(it);
    } else {
      ++it;
    }
  }
  if (plan.recipes.empty()) {
    return unsupported("chip '" + plan.chip + "': none of kfuse's metrics can be collected on it");
  }
  for (const MetricRecipe& r : plan.recipes) {
    for (const MetricTerm& t : r.terms) {
      bool seen = false;
      for (const auto& m : plan.profiler_metrics) seen = seen || m == t.profiler_metric;
      if (!seen) plan.profiler_metrics.push_back(t.profiler_metric);
    }
  }

  // 4. The config image and its pass count.
  HostObject config(api);
  if (CUptiResult r = config.init(chip, counter_availability); r != CUPTI_SUCCESS) {
    return unsupported("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostInitialize", r));
  }
  if (CUptiResult r = addMetrics(api, config.get(), cStrings(plan.profiler_metrics)); r != CUPTI_SUCCESS) {
    return unsupported("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostConfigAddMetrics", r));
  }
  auto size = cuptiParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = config.get();
  if (CUptiResult r = api.hostGetConfigImageSize(&size); r != CUPTI_SUCCESS || size.configImageSize == 0) {
    return unsupported("chip '" + plan.chip + "': " +
                       (r != CUPTI_SUCCESS ? cuptiError(api, "cuptiProfilerHostGetConfigImageSize", r)
                                           : std::string("the profiler made an empty config image")));
  }
  plan.config_image.resize(size.configImageSize);
  auto image =
      cuptiParams<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  image.pHostObject = config.get();
  image.configImageSize = plan.config_image.size();
  image.pConfigImage = plan.config_image.data();
  if (CUptiResult r = api.hostGetConfigImage(&image); r != CUPTI_SUCCESS) {
    return unsupported("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostGetConfigImage", r));
  }
  auto passes =
      cuptiParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  passes.configImageSize = plan.config_image.size();
  passes.pConfigImage = plan.config_image.data();
  if (CUptiResult r = api.hostGetNumOfPasses(&passes); r != CUPTI_SUCCESS) {
    return unsupported("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostGetNumOfPasses", r));
  }
  plan.passes = passes.numOfPasses;
  return plan;
}

Expected<std::unique_ptr<MetricEvaluator>> MetricEvaluator::create(ProfilerApi& api, const MetricPlan& plan,
                                                                   const std::vector<uint8_t>& counter_availability) {
  std::unique_ptr<MetricEvaluator> e(new MetricEvaluator(api, plan));
  HostObject host(api);
  if (CUptiResult r = host.init(plan.chip, counter_availability); r != CUPTI_SUCCESS) {
    return unsupported("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostInitialize", r));
  }
  e->names_ = cStrings(e->plan_.profiler_metrics);
  if (CUptiResult r = addMetrics(api, host.get(), e->names_); r != CUPTI_SUCCESS) {
    return unsupported("chip '" + plan.chip + "': " + cuptiError(api, "cuptiProfilerHostConfigAddMetrics", r));
  }
  e->host_ = host.release();
  return e;
}

MetricEvaluator::~MetricEvaluator() {
  if (!host_) return;
  auto p = cuptiParams<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
  p.pHostObject = host_;
  (void)api_.hostDeinitialize(&p);
}

Expected<std::vector<double>> MetricEvaluator::evaluate(const uint8_t* image, size_t image_size, size_t range) {
  std::vector<double> values(names_.size(), 0.0);
  auto p = cuptiParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
      CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
  p.pHostObject = host_;
  p.pCounterDataImage = image;
  p.counterDataImageSize = image_size;
  p.rangeIndex = range;
  p.ppMetricNames = names_.data();
  p.numMetrics = names_.size();
  p.pMetricValues = values.data();
  if (CUptiResult r = api_.hostEvaluateToGpuValues(&p); r != CUPTI_SUCCESS) {
    return unsupported(cuptiError(api_, "cuptiProfilerHostEvaluateToGpuValues", r));
  }
  return plan_.combine(values);
}

}  // namespace kfuse::collector
