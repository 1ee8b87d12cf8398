// A ProfilerApi that plays one GPU for tests of the range-profiler session logic: the host side (metric names,
// config images) is the real libcupti, the target side is simulated. Kernels "run" when the test says so; each
// running session gets one auto range per kernel, and evaluating range k of session s gives every profiler
// metric i the value value(s, k, i), so a test can compute what the trace must hold.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kfuse/collector/profiler_api.h"

namespace kfuse::collector::testing {

class FakeProfilerApi : public ProfilerApi {
 public:
  // Knobs.
  CUptiResult initialize_result = CUPTI_SUCCESS;
  CUptiResult enable_result = CUPTI_SUCCESS;
  CUpti_Profiler_Support_Level vgpu = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  const char* chip = "GH100";
  size_t dropped_per_decode = 0;
  size_t ranges_lost_per_session = 0;  // ranges the "GPU" leaves out of each session (not in numTotalRanges)
  size_t counter_data_size = 0;        // 0: 64 + 16 bytes per range and metric

  // What happened.
  int enables = 0, disables = 0, set_configs = 0, starts = 0, stops = 0, decodes = 0, deinitializes = 0;
  CUpti_RangeProfiler_SetConfig_Params last_config{};
  std::vector<std::string> evaluated_metrics;  // names passed to the last evaluation

  static double value(int session, size_t range, size_t metric) {
    return 1000.0 * session + 10.0 * static_cast<double>(range) + static_cast<double>(metric) + 1;
  }

  // A kernel ran in `context`: one more range in its running session.
  void runKernel(CUcontext context) {
    auto it = objects_.find(context);
    if (it != objects_.end() && it->second.running) ++it->second.ranges;
  }

  CUptiResult initialize(CUpti_Profiler_Initialize_Params*) override {
    ++initializes;
    const CUptiResult r = initialize_result;
    if (initialize_then != CUPTI_SUCCESS || r != CUPTI_SUCCESS) initialize_result = initialize_then;
    return r;
  }
  CUptiResult initialize_then = CUPTI_SUCCESS;  // what calls after the first return (the first: initialize_result)
  int initializes = 0;
  CUptiResult deInitialize(CUpti_Profiler_DeInitialize_Params*) override {
    ++deinitializes;
    return CUPTI_SUCCESS;
  }
  CUptiResult deviceSupported(CUpti_Profiler_DeviceSupported_Params* p) override {
    p->architecture = p->sli = p->confidentialCompute = p->cmp = p->wsl = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    p->vGpu = vgpu;
    p->isSupported = vgpu == CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? CUPTI_PROFILER_CONFIGURATION_SUPPORTED
                                                                    : CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED;
    return CUPTI_SUCCESS;
  }
  CUptiResult getDeviceId(CUcontext, uint32_t* device) override {
    *device = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult deviceGetChipName(CUpti_Device_GetChipName_Params* p) override {
    p->pChipName = chip;
    return CUPTI_SUCCESS;
  }
  CUptiResult getCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params* p) override {
    if (!p->pCounterAvailabilityImage) p->counterAvailabilityImageSize = 0;  // "everything available"
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeEnable(CUpti_RangeProfiler_Enable_Params* p) override {
    if (enable_result != CUPTI_SUCCESS) return enable_result;
    ++enables;
    auto& o = objects_[p->ctx];
    o = Object{};
    o.session = next_session_;
    p->pRangeProfilerObject = reinterpret_cast<CUpti_RangeProfiler_Object*>(p->ctx);
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeDisable(CUpti_RangeProfiler_Disable_Params* p) override {
    ++disables;
    objects_.erase(reinterpret_cast<CUcontext>(p->pRangeProfilerObject));
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) override {
    p->counterDataSize = counter_data_size ? counter_data_size : 64 + 16 * p->maxNumOfRanges * p->numMetrics;
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeCounterDataImageInitialize(CUpti_RangeProfiler_CounterDataImage_Initialize_Params*) override {
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeSetConfig(CUpti_RangeProfiler_SetConfig_Params* p) override {
    ++set_configs;
    last_config = *p;
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeStart(CUpti_RangeProfiler_Start_Params* p) override {
    ++starts;
    Object& o = object(p->pRangeProfilerObject);
    o.running = true;
    o.ranges = 0;
    o.session = next_session_++;
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeStop(CUpti_RangeProfiler_Stop_Params* p) override {
    ++stops;
    Object& o = object(p->pRangeProfilerObject);
    o.running = false;
    p->isAllPassSubmitted = 1;
    last_stopped_ = o;  // the counter data image now describes this finished session
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeDecodeData(CUpti_RangeProfiler_DecodeData_Params* p) override {
    ++decodes;
    p->numOfRangeDropped = dropped_per_decode;
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) override {
    const Object& o = last_stopped_;
    p->numTotalRanges = o.ranges > ranges_lost_per_session ? o.ranges - ranges_lost_per_session : 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult rangeGetRangeInfo(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params*) override { return CUPTI_SUCCESS; }

  CUptiResult hostGetSupportedChips(CUpti_Profiler_Host_GetSupportedChips_Params* p) override {
    return realProfilerApi().hostGetSupportedChips(p);
  }
  CUptiResult hostInitialize(CUpti_Profiler_Host_Initialize_Params* p) override {
    return realProfilerApi().hostInitialize(p);
  }
  CUptiResult hostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) override {
    return realProfilerApi().hostDeinitialize(p);
  }
  CUptiResult hostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params* p) override {
    return realProfilerApi().hostGetBaseMetrics(p);
  }
  CUptiResult hostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) override {
    return realProfilerApi().hostConfigAddMetrics(p);
  }
  CUptiResult hostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) override {
    return realProfilerApi().hostGetConfigImageSize(p);
  }
  CUptiResult hostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) override {
    return realProfilerApi().hostGetConfigImage(p);
  }
  CUptiResult hostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) override {
    return realProfilerApi().hostGetNumOfPasses(p);
  }
  // No GPU made the counter data: the values are value(session, range, metric).
  CUptiResult hostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) override {
    if (p->rangeIndex >= last_stopped_.ranges) return CUPTI_ERROR_INVALID_PARAMETER;
    evaluated_metrics.assign(p->ppMetricNames, p->ppMetricNames + p->numMetrics);
    for (size_t i = 0; i < p->numMetrics; ++i) p->pMetricValues[i] = value(last_stopped_.session, p->rangeIndex, i);
    return CUPTI_SUCCESS;
  }
  const char* errorString(CUptiResult r) override { return realProfilerApi().errorString(r); }

 private:
  struct Object {
    bool running = false;
    size_t ranges = 0;
    int session = 0;
  };
  Object& object(CUpti_RangeProfiler_Object* o) { return objects_[reinterpret_cast<CUcontext>(o)]; }

  std::map<CUcontext, Object> objects_;
  Object last_stopped_;
  int next_session_ = 0;
};

}  // namespace kfuse::collector::testing
