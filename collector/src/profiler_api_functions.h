// The CUPTI functions behind ProfilerApi's one-parameter methods, listed once: the linked implementation
// (profiler_api_real.cpp) and the one that loads libcupti at run time (profiler_api_loaded.cpp) are both
// generated from this list. X(method, cupti_function, ParamsType).
#pragma once

#define KFUSE_PROFILER_API_FUNCTIONS(X)                                                                                \
  X(initialize, cuptiProfilerInitialize, CUpti_Profiler_Initialize_Params)                                             \
  X(deInitialize, cuptiProfilerDeInitialize, CUpti_Profiler_DeInitialize_Params)                                       \
  X(deviceSupported, cuptiProfilerDeviceSupported, CUpti_Profiler_DeviceSupported_Params)                              \
  X(deviceGetChipName, cuptiDeviceGetChipName, CUpti_Device_GetChipName_Params)                                        \
  X(getCounterAvailability, cuptiProfilerGetCounterAvailability, CUpti_Profiler_GetCounterAvailability_Params)         \
  X(rangeEnable, cuptiRangeProfilerEnable, CUpti_RangeProfiler_Enable_Params)                                          \
  X(rangeDisable, cuptiRangeProfilerDisable, CUpti_RangeProfiler_Disable_Params)                                       \
  X(rangeGetCounterDataSize, cuptiRangeProfilerGetCounterDataSize, CUpti_RangeProfiler_GetCounterDataSize_Params)      \
  X(rangeCounterDataImageInitialize, cuptiRangeProfilerCounterDataImageInitialize,                                     \
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params)                                                            \
  X(rangeSetConfig, cuptiRangeProfilerSetConfig, CUpti_RangeProfiler_SetConfig_Params)                                 \
  X(rangeStart, cuptiRangeProfilerStart, CUpti_RangeProfiler_Start_Params)                                             \
  X(rangeStop, cuptiRangeProfilerStop, CUpti_RangeProfiler_Stop_Params)                                                \
  X(rangeDecodeData, cuptiRangeProfilerDecodeData, CUpti_RangeProfiler_DecodeData_Params)                              \
  X(rangeGetCounterDataInfo, cuptiRangeProfilerGetCounterDataInfo, CUpti_RangeProfiler_GetCounterDataInfo_Params)      \
  X(rangeGetRangeInfo, cuptiRangeProfilerCounterDataGetRangeInfo, CUpti_RangeProfiler_CounterData_GetRangeInfo_Params) \
  X(hostGetSupportedChips, cuptiProfilerHostGetSupportedChips, CUpti_Profiler_Host_GetSupportedChips_Params)           \
  X(hostInitialize, cuptiProfilerHostInitialize, CUpti_Profiler_Host_Initialize_Params)                                \
  X(hostDeinitialize, cuptiProfilerHostDeinitialize, CUpti_Profiler_Host_Deinitialize_Params)                          \
  X(hostGetBaseMetrics, cuptiProfilerHostGetBaseMetrics, CUpti_Profiler_Host_GetBaseMetrics_Params)                    \
  X(hostConfigAddMetrics, cuptiProfilerHostConfigAddMetrics, CUpti_Profiler_Host_ConfigAddMetrics_Params)              \
  X(hostGetConfigImageSize, cuptiProfilerHostGetConfigImageSize, CUpti_Profiler_Host_GetConfigImageSize_Params)        \
  X(hostGetConfigImage, cuptiProfilerHostGetConfigImage, CUpti_Profiler_Host_GetConfigImage_Params)                    \
  X(hostGetNumOfPasses, cuptiProfilerHostGetNumOfPasses, CUpti_Profiler_Host_GetNumOfPasses_Params)                    \
  X(hostEvaluateToGpuValues, cuptiProfilerHostEvaluateToGpuValues, CUpti_Profiler_Host_EvaluateToGpuValues_Params)
