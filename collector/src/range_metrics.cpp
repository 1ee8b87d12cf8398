#include "kfuse/collector/range_metrics.h"

#include <cstdio>
#include <new>

namespace kfuse::collector {

struct RangeMetrics::Session {
  CUcontext context = nullptr;
  bool disabled = false;
  bool running = false;
  uint32_t device = 0;
  std::vector<uint8_t> availability;
  std::shared_ptr<MetricPlan> plan;
  std::unique_ptr<MetricEvaluator> evaluator;
  CUpti_RangeProfiler_Object* object = nullptr;
  std::vector<uint8_t> counter_data;
  std::vector<uint64_t> pending;  // correlation ids of the running session's launches, in launch order
};

namespace {

std::string supportReasons(const CUpti_Profiler_DeviceSupported_Params& p) {
  std::string why;
  auto add = [&](CUpti_Profiler_Support_Level level, const char* unsupported, const char* disabled) {
    if (level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED && unsupported) {
      why += (why.empty() ? "" : "; ") + std::string(unsupported);
    } else if (level == CUPTI_PROFILER_CONFIGURATION_DISABLED && disabled) {
      why += (why.empty() ? "" : "; ") + std::string(disabled);
    }
  };
  add(p.architecture, "the GPU is older than compute capability 7.0", nullptr);
  add(p.sli, "SLI is enabled", nullptr);
  add(p.vGpu, "this vGPU does not support profiling", "profiling is disabled on this vGPU");
  add(p.confidentialCompute, "confidential computing is on", nullptr);
  add(p.cmp, "the device is a CMP (crypto mining) part", nullptr);
  add(p.wsl, "profiling is not supported under this WSL", nullptr);
  return why.empty() ? "the profiler says the device is not supported" : why;
}

}  // namespace

RangeMetrics::RangeMetrics(ProfilerApi& api, TraceSink& sink, RangeMetricsOptions options)
    : api_(api), sink_(sink), options_(options) {
  if (options_.ranges_per_session == 0) options_.ranges_per_session = 1;
}

RangeMetrics::~RangeMetrics() {
  finish();
}

Status RangeMetrics::start() {
  std::lock_guard lock(mu_);
  if (started_) return {};
  auto p = cuptiParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  if (CUptiResult r = api_.initialize(&p); r != CUPTI_SUCCESS) {
    // Seen on an H100 with the collector injected at start-up: CUPTI_ERROR_UNKNOWN, although ncu reads the counters
    // on the same machine. The driver may not be fully initialised yet: try again at the first launch.
    if (r == CUPTI_ERROR_UNKNOWN) {
      retry_start_ = true;
      return {};
    }
    return unsupported(std::string("cuptiProfilerInitialize failed: ") + api_.errorString(r));
  }
  started_ = true;
  return {};
}

void RangeMetrics::disable(Session& s, const std::string& why) {
  if (reasons_said_.insert(why).second) {  // one message per reason, not one per context
    std::fprintf(stderr, "kfuse: collector: --metrics: %s; recording without hardware metrics\n", why.c_str());
    sink_.pushStat(core::StatId::kMetricsUnavailable, 1, why.c_str());
  }
  if (s.object) {
    auto d = cuptiParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    d.pRangeProfilerObject = s.object;
    (void)api_.rangeDisable(&d);
    s.object = nullptr;
  }
  s.disabled = true;
  s.running = false;
  s.pending.clear();
}

RangeMetrics::Session* RangeMetrics::sessionFor(CUcontext context) {
  auto it = sessions_.find(context);
  if (it == sessions_.end()) {
    auto s = std::make_unique<Session>();
    s->context = context;
    Session* raw = s.get();
    sessions_.emplace(context, std::move(s));
    if (Status st = setUp(*raw); !st.ok()) disable(*raw, st.message());
    return raw->disabled ? nullptr : raw;
  }
  return it->second->disabled ? nullptr : it->second.get();
}

Status RangeMetrics::setUp(Session& s) {
  auto fail = [&](const char* what, CUptiResult r) {
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
      return unsupported(
          "reading GPU performance counters needs permission here (run as root, or load the driver with "
          "NVreg_RestrictProfilingToAdminUsers=0)");
    }
    return unsupported(std::string(what) + " failed: " + api_.errorString(r));
  };
  if (CUptiResult r = api_.getDeviceId(s.context, &s.device); r != CUPTI_SUCCESS) return fail("cuptiGetDeviceId", r);

  auto sup = cuptiParams<CUpti_Profiler_DeviceSupported_Params>(CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
  sup.cuDevice = static_cast<CUdevice>(s.device);
  sup.api = CUPTI_PROFILER_RANGE_PROFILING;
  if (CUptiResult r = api_.deviceSupported(&sup); r != CUPTI_SUCCESS) return fail("cuptiProfilerDeviceSupported", r);
  if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    return unsupported("device " + std::to_string(s.device) + " cannot be profiled: " + supportReasons(sup));
  }

  auto chip = cuptiParams<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip.deviceIndex = s.device;
  if (CUptiResult r = api_.deviceGetChipName(&chip); r != CUPTI_SUCCESS || !chip.pChipName) {
    return fail("cuptiDeviceGetChipName", r);
  }

  auto avail = cuptiParams<CUpti_Profiler_GetCounterAvailability_Params>(
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  avail.ctx = s.context;
  if (CUptiResult r = api_.getCounterAvailability(&avail); r != CUPTI_SUCCESS) {
    return fail("cuptiProfilerGetCounterAvailability", r);
  }
  s.availability.resize(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = s.availability.data();
  if (CUptiResult r = api_.getCounterAvailability(&avail); r != CUPTI_SUCCESS) {
    return fail("cuptiProfilerGetCounterAvailability", r);
  }

  const std::string chip_name = chip.pChipName;
  auto& plan = plans_[chip_name];
  if (!plan) {
    auto made = planMetrics(api_, chip_name, s.availability);
    if (!made.ok()) return made.status();
    plan = std::make_shared<MetricPlan>(std::move(*made));
    for (const std::string& u : plan->unavailable) {
      std::fprintf(stderr, "kfuse: collector: --metrics: not collected on %s: %s\n", chip_name.c_str(), u.c_str());
    }
  }
  s.plan = plan;
  auto evaluator = MetricEvaluator::create(api_, *plan, s.availability);
  if (!evaluator.ok()) return evaluator.status();
  s.evaluator = std::move(*evaluator);

  auto en = cuptiParams<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
  en.ctx = s.context;
  if (CUptiResult r = api_.rangeEnable(&en); r != CUPTI_SUCCESS) return fail("cuptiRangeProfilerEnable", r);
  s.object = en.pRangeProfilerObject;

  std::vector<const char*> names;
  for (const auto& m : plan->profiler_metrics) names.push_back(m.c_str());
  auto size = cuptiParams<CUpti_RangeProfiler_GetCounterDataSize_Params>(
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  size.pRangeProfilerObject = s.object;
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = options_.ranges_per_session;
  size.maxNumRangeTreeNodes = static_cast<uint32_t>(options_.ranges_per_session);
  if (CUptiResult r = api_.rangeGetCounterDataSize(&size); r != CUPTI_SUCCESS) {
    return fail("cuptiRangeProfilerGetCounterDataSize", r);
  }
  // The image lives in the application's memory: a size the host cannot give is a reason to stop, not to crash.
  constexpr size_t kMaxCounterData = size_t{1} << 30;
  if (size.counterDataSize == 0 || size.counterDataSize > kMaxCounterData) {
    return unsupported("the range profiler asked for a counter data image of " + std::to_string(size.counterDataSize) +
                       " bytes (limit 1 GiB; lower KFUSE_METRICS_RANGES)");
  }
  try {
    s.counter_data.assign(size.counterDataSize, 0);
  } catch (const std::bad_alloc&) {
    return unsupported("no memory for a counter data image of " + std::to_string(size.counterDataSize) + " bytes");
  }
  return configure(s);
}

Status RangeMetrics::configure(Session& s) {
  auto init = cuptiParams<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  init.pRangeProfilerObject = s.object;
  init.counterDataSize = s.counter_data.size();
  init.pCounterData = s.counter_data.data();
  if (CUptiResult r = api_.rangeCounterDataImageInitialize(&init); r != CUPTI_SUCCESS) {
    return unsupported(std::string("cuptiRangeProfilerCounterDataImageInitialize failed: ") + api_.errorString(r));
  }
  auto set = cuptiParams<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  set.pRangeProfilerObject = s.object;
  set.configSize = s.plan->config_image.size();
  set.pConfig = s.plan->config_image.data();
  set.counterDataImageSize = s.counter_data.size();
  set.pCounterDataImage = s.counter_data.data();
  set.range = CUPTI_AutoRange;
  set.replayMode = CUPTI_KernelReplay;
  set.maxRangesPerPass = options_.ranges_per_session;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  if (CUptiResult r = api_.rangeSetConfig(&set); r != CUPTI_SUCCESS) {
    return unsupported(std::string("cuptiRangeProfilerSetConfig failed: ") + api_.errorString(r));
  }
  auto start = cuptiParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
  start.pRangeProfilerObject = s.object;
  if (CUptiResult r = api_.rangeStart(&start); r != CUPTI_SUCCESS) {
    return unsupported(std::string("cuptiRangeProfilerStart failed: ") + api_.errorString(r));
  }
  s.running = true;
  return {};
}

void RangeMetrics::collect(Session& s, bool restart) {
  if (s.disabled || !s.running) return;
  s.running = false;
  auto stop = cuptiParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  stop.pRangeProfilerObject = s.object;
  if (CUptiResult r = api_.rangeStop(&stop); r != CUPTI_SUCCESS) {
    disable(s, std::string("cuptiRangeProfilerStop failed: ") + api_.errorString(r));
    return;
  }
  if (!stop.isAllPassSubmitted) {
    sink_.pushStat(core::StatId::kMetricPassesIncomplete, 1);
  }
  auto decode = cuptiParams<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  decode.pRangeProfilerObject = s.object;
  if (CUptiResult r = api_.rangeDecodeData(&decode); r != CUPTI_SUCCESS) {
    disable(s, std::string("cuptiRangeProfilerDecodeData failed: ") + api_.errorString(r));
    return;
  }
  if (decode.numOfRangeDropped) {
    sink_.pushStat(core::StatId::kMetricRangesDropped, static_cast<int64_t>(decode.numOfRangeDropped));
  }
  auto info = cuptiParams<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = s.counter_data.data();
  info.counterDataImageSize = s.counter_data.size();
  if (CUptiResult r = api_.rangeGetCounterDataInfo(&info); r != CUPTI_SUCCESS) {
    disable(s, std::string("cuptiRangeProfilerGetCounterDataInfo failed: ") + api_.errorString(r));
    return;
  }
  // Auto ranges are numbered in execution order within the session: range k is the k-th launch.
  const size_t matched = std::min(info.numTotalRanges, s.pending.size());
  if (info.numTotalRanges != s.pending.size()) {
    const size_t diff = info.numTotalRanges > s.pending.size() ? info.numTotalRanges - s.pending.size()
                                                               : s.pending.size() - info.numTotalRanges;
    sink_.pushStat(core::StatId::kMetricRangesUnmatched, static_cast<int64_t>(diff));
  }
  for (size_t k = 0; k < matched; ++k) {
    auto values = s.evaluator->evaluate(s.counter_data.data(), s.counter_data.size(), k);
    if (!values.ok()) {
      sink_.pushStat(core::StatId::kMetricEvaluationFailed, 1);
      continue;
    }
    const MetricPlan& plan = *s.plan;
    for (size_t i = 0; i < plan.recipes.size() && i < values->size(); ++i) {
      MetricEvent e;
      e.correlation_id = static_cast<int64_t>(s.pending[k]);
      e.value = (*values)[i];
      e.source = MetricSourceCode::kMeasured;
      std::snprintf(e.name, sizeof e.name, "%s", plan.recipes[i].name.c_str());
      std::snprintf(e.unit, sizeof e.unit, "%s", plan.recipes[i].unit.c_str());
      if (sink_.pushStruct(EventKind::kMetric, e)) ++metrics_written_;
    }
  }
  s.pending.clear();
  if (restart) {
    if (Status st = configure(s); !st.ok()) disable(s, st.message());
  }
}

void RangeMetrics::end(Session& s) {
  collect(s, /*restart=*/false);
  if (s.object) {
    auto d = cuptiParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    d.pRangeProfilerObject = s.object;
    (void)api_.rangeDisable(&d);
    s.object = nullptr;
  }
  s.evaluator.reset();
  s.disabled = true;  // a context handle reused later gets a fresh session
}

void RangeMetrics::onLaunchEnter(CUcontext context, uint64_t correlation_id) {
  std::lock_guard lock(mu_);
  if (retry_start_) {
    retry_start_ = false;
    auto p = cuptiParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    if (CUptiResult r = api_.initialize(&p); r == CUPTI_SUCCESS) {
      started_ = true;
    } else {
      const std::string why =
          std::string("cuptiProfilerInitialize failed at start-up and again at the first launch: ") +
          api_.errorString(r);
      std::fprintf(stderr, "kfuse: collector: --metrics: %s; recording without hardware metrics\n", why.c_str());
      sink_.pushStat(core::StatId::kMetricsUnavailable, 1, why.c_str());
    }
  }
  if (!started_) return;
  Session* s = sessionFor(context);
  if (!s) return;
  if (s->pending.size() >= options_.ranges_per_session) collect(*s, /*restart=*/true);
  if (!s->running) return;
  s->pending.push_back(correlation_id);
  ++launches_profiled_;
}

void RangeMetrics::onContextDestroying(CUcontext context) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(context);
  if (it == sessions_.end()) return;
  end(*it->second);
  sessions_.erase(it);
}

void RangeMetrics::finish() {
  std::lock_guard lock(mu_);
  if (!started_) return;
  for (auto& [context, session] : sessions_) end(*session);
  sessions_.clear();
  auto p = cuptiParams<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
  (void)api_.deInitialize(&p);
  started_ = false;
}

}  // namespace kfuse::collector
