// The real ProfilerApi, over libcupti (linked into kfuse_cupti_real only).
#include "kfuse/collector/profiler_api.h"

namespace kfuse::collector {
namespace {

class RealProfilerApi final : public ProfilerApi {
 public:
  CUptiResult initialize(CUpti_Profiler_Initialize_Params* p) override { return cuptiProfilerInitialize(p); }
  CUptiResult deInitialize(CUpti_Profiler_DeInitialize_Params* p) override { return cuptiProfilerDeInitialize(p); }
  CUptiResult deviceSupported(CUpti_Profiler_DeviceSupported_Params* p) override {
    return cuptiProfilerDeviceSupported(p);
  }
  CUptiResult getDeviceId(CUcontext context, uint32_t* device) override { return cuptiGetDeviceId(context, device); }
  CUptiResult deviceGetChipName(CUpti_Device_GetChipName_Params* p) override { return cuptiDeviceGetChipName(p); }
  CUptiResult getCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params* p) override {
    return cuptiProfilerGetCounterAvailability(p);
  }
  CUptiResult rangeEnable(CUpti_RangeProfiler_Enable_Params* p) override { return cuptiRangeProfilerEnable(p); }
  CUptiResult rangeDisable(CUpti_RangeProfiler_Disable_Params* p) override { return cuptiRangeProfilerDisable(p); }
  CUptiResult rangeGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) override {
    return cuptiRangeProfilerGetCounterDataSize(p);
  }
  CUptiResult rangeCounterDataImageInitialize(CUpti_RangeProfiler_CounterDataImage_Initialize_Params* p) override {
    return cuptiRangeProfilerCounterDataImageInitialize(p);
  }
  CUptiResult rangeSetConfig(CUpti_RangeProfiler_SetConfig_Params* p) override {
    return cuptiRangeProfilerSetConfig(p);
  }
  CUptiResult rangeStart(CUpti_RangeProfiler_Start_Params* p) override { return cuptiRangeProfilerStart(p); }
  CUptiResult rangeStop(CUpti_RangeProfiler_Stop_Params* p) override { return cuptiRangeProfilerStop(p); }
  CUptiResult rangeDecodeData(CUpti_RangeProfiler_DecodeData_Params* p) override {
    return cuptiRangeProfilerDecodeData(p);
  }
  CUptiResult rangeGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) override {
    return cuptiRangeProfilerGetCounterDataInfo(p);
  }
  CUptiResult rangeGetRangeInfo(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params* p) override {
    return cuptiRangeProfilerCounterDataGetRangeInfo(p);
  }

  CUptiResult hostGetSupportedChips(CUpti_Profiler_Host_GetSupportedChips_Params* p) override {
    return cuptiProfilerHostGetSupportedChips(p);
  }
  CUptiResult hostInitialize(CUpti_Profiler_Host_Initialize_Params* p) override {
    return cuptiProfilerHostInitialize(p);
  }
  CUptiResult hostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) override {
    return cuptiProfilerHostDeinitialize(p);
  }
  CUptiResult hostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params* p) override {
    return cuptiProfilerHostGetBaseMetrics(p);
  }
  CUptiResult hostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) override {
    return cuptiProfilerHostConfigAddMetrics(p);
  }
  CUptiResult hostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) override {
    return cuptiProfilerHostGetConfigImageSize(p);
  }
  CUptiResult hostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) override {
    return cuptiProfilerHostGetConfigImage(p);
  }
  CUptiResult hostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) override {
    return cuptiProfilerHostGetNumOfPasses(p);
  }
  CUptiResult hostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) override {
    return cuptiProfilerHostEvaluateToGpuValues(p);
  }

  const char* errorString(CUptiResult result) override {
    const char* s = nullptr;
    return cuptiGetResultString(result, &s) == CUPTI_SUCCESS && s ? s : "unknown CUPTI error";
  }
};

}  // namespace

ProfilerApi& realProfilerApi() {
  static auto* api = new RealProfilerApi();  // never destroyed: used from exit handlers
  return *api;
}

}  // namespace kfuse::collector
