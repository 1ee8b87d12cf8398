// ProfilerApi: the seam in front of CUPTI's Profiler Host API (cupti_profiler_host.h: metric names, config images,
// evaluation) and its Range Profiler (cupti_range_profiler.h + cupti_profiler_target.h: per-context sessions with
// kernel replay), which `kfuse record --metrics` uses for DRAM bytes and FLOPs.
//
// Every method takes CUPTI's own size-versioned params struct and returns CUPTI's result, so the code above it is
// written exactly as against libcupti. realProfilerApi() calls libcupti; tests of the metric plan use it too (the
// host API needs no GPU), and tests of the range-profiler session logic pass a fake that plays a GPU.
// Thread-safety: as CUPTI's own functions.
#pragma once

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "kfuse/core/status.h"

namespace kfuse::collector {

class ProfilerApi {
 public:
  virtual ~ProfilerApi() = default;

  // Target side (needs a driver and a device).
  virtual CUptiResult initialize(CUpti_Profiler_Initialize_Params* p) = 0;
  virtual CUptiResult deInitialize(CUpti_Profiler_DeInitialize_Params* p) = 0;
  virtual CUptiResult deviceSupported(CUpti_Profiler_DeviceSupported_Params* p) = 0;
  virtual CUptiResult getDeviceId(CUcontext context, uint32_t* device) = 0;
  virtual CUptiResult deviceGetChipName(CUpti_Device_GetChipName_Params* p) = 0;
  virtual CUptiResult getCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params* p) = 0;
  virtual CUptiResult rangeEnable(CUpti_RangeProfiler_Enable_Params* p) = 0;
  virtual CUptiResult rangeDisable(CUpti_RangeProfiler_Disable_Params* p) = 0;
  virtual CUptiResult rangeGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) = 0;
  virtual CUptiResult rangeCounterDataImageInitialize(CUpti_RangeProfiler_CounterDataImage_Initialize_Params* p) = 0;
  virtual CUptiResult rangeSetConfig(CUpti_RangeProfiler_SetConfig_Params* p) = 0;
  virtual CUptiResult rangeStart(CUpti_RangeProfiler_Start_Params* p) = 0;
  virtual CUptiResult rangeStop(CUpti_RangeProfiler_Stop_Params* p) = 0;
  virtual CUptiResult rangeDecodeData(CUpti_RangeProfiler_DecodeData_Params* p) = 0;
  virtual CUptiResult rangeGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) = 0;
  virtual CUptiResult rangeGetRangeInfo(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params* p) = 0;

  // Host side (runs on any machine: metric names and config images are per chip, not per device).
  virtual CUptiResult hostGetSupportedChips(CUpti_Profiler_Host_GetSupportedChips_Params* p) = 0;
  virtual CUptiResult hostInitialize(CUpti_Profiler_Host_Initialize_Params* p) = 0;
  virtual CUptiResult hostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) = 0;
  virtual CUptiResult hostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params* p) = 0;
  virtual CUptiResult hostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) = 0;
  virtual CUptiResult hostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) = 0;
  virtual CUptiResult hostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) = 0;
  virtual CUptiResult hostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) = 0;
  virtual CUptiResult hostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) = 0;

  virtual const char* errorString(CUptiResult result) = 0;
};

// A CUPTI params struct zeroed (pPriv = NULL) with its size set, as every profiler call wants it:
//   auto p = cuptiParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
template <class Params>
Params cuptiParams(size_t struct_size) {
  Params p{};
  p.structSize = struct_size;
  return p;
}

// The implementation over libcupti (never destroyed). Lives in kfuse_cupti_real, which links libcupti.
ProfilerApi& realProfilerApi();

// The same over a libcupti.so.13 loaded on first call (the file $KFUSE_CUPTI_LIB names, else from the library
// path, else from the toolkit kfuse was built with), for programs that must start without CUPTI. Never destroyed;
// thread-safe. Fails with a message saying what to install or set when the library cannot be loaded.
Expected<ProfilerApi*> loadProfilerApi();

}  // namespace kfuse::collector
