// Every stat kfuse writes into a trace or a report (tier-1 problems of STYLE.md: bad or missing data inside an
// input, counted and shown, never fatal), with its severity and description: the one definition of each name
// (perfetto's stats.h). Writers name stats by StatId; readers that must react to one compare with statName().
// Adding a stat is one line here. Names and descriptions are part of the trace and report formats.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kfuse/core/trace.h"

// X(id, name, severity, description)
#define KFUSE_STATS(X)                                                                                                 \
  /* --- collector: the trace assembler and the sink --- */                                                            \
  X(kCollectorEvents, "collector_events", kInfo, "events the collector accepted")                                      \
  X(kCollectorDroppedEvents, "collector_dropped_events", kInfo,                                                        \
    "events dropped because the writer could not keep up (queue full) or had failed")                                  \
  X(kCollectorDroppedModuleImages, "collector_dropped_module_images", kWarning,                                        \
    "module images left out (image memory budget)")                                                                    \
  X(kCollectorBackpressureWaits, "collector_backpressure_waits", kInfo,                                                \
    "times an application thread waited for the writer")                                                               \
  X(kLaunchLayoutUnknown, "launch_layout_unknown", kWarning,                                                           \
    "launches whose parameter layout the driver did not report: arguments not split or resolved")                      \
  X(kLaunchArgsTruncated, "launch_args_truncated", kWarning, "launches whose argument buffer was cut at 32 KiB")       \
  X(kLaunchUnknownFunction, "launch_unknown_function", kWarning, "launches of a function never described")             \
  X(kLaunchWithoutGpuTime, "launch_without_gpu_time", kWarning,                                                        \
    "launches whose GPU activity record never arrived (written without GPU times)")                                    \
  X(kUnmatchedGpuRecords, "unmatched_gpu_records", kWarning,                                                           \
    "kernel activity records with no launch callback (recorded as launches from the record alone)")                    \
  X(kMemcpyWithoutGpuRecord, "memcpy_without_gpu_record", kWarning,                                                    \
    "copies seen in CUPTI callbacks whose activity record never arrived (written without GPU times)")                  \
  X(kMemsetWithoutGpuRecord, "memset_without_gpu_record", kWarning,                                                    \
    "memsets seen in CUPTI callbacks whose activity record never arrived (written without GPU times)")                 \
  X(kFreeOfUnknownAddress, "free_of_unknown_address", kInfo,                                                           \
    "frees of memory allocated before recording started (recorded as allocations of unknown origin)")                  \
  X(kAllocationReplaced, "allocation_replaced", kInfo, "allocations overlapping a live one whose free was never seen") \
  X(kPointerIntoSharedMapping, "pointer_into_shared_mapping", kWarning,                                                \
    "pointer arguments into memory mapped more than once (cuMemMap of one handle twice, or of a handle made before "   \
    "recording or imported), left unresolved: addresses cannot tell its buffers apart")                                \
  X(kMetricWithoutLaunch, "metric_without_launch", kWarning, "metrics whose launch was not found")                     \
  X(kBadEvents, "bad_events", kError, "malformed collector events (a kfuse bug)")                                      \
  /* --- collector: backends --- */                                                                                    \
  X(kGpuTimeDisabled, "gpu_time_disabled", kWarning,                                                                   \
    "an event call for --gpu-time failed; later launches have no GPU times")                                           \
  X(kGpuTimePoolFull, "gpu_time_pool_full", kWarning,                                                                  \
    "launches without GPU times: every event pair was in flight (no synchronization resolved them)")                   \
  X(kGpuTimeUnresolved, "gpu_time_unresolved", kWarning, "launches still running at exit: left without GPU times")     \
  X(kMetricsUnavailable, "metrics_unavailable", kWarning, "hardware metrics could not be collected")                   \
  X(kMetricPassesIncomplete, "metric_passes_incomplete", kWarning,                                                     \
    "profiling sessions stopped before every replay pass ran")                                                         \
  X(kMetricRangesDropped, "metric_ranges_dropped", kWarning,                                                           \
    "kernel ranges the range profiler dropped (their launches have no measured metrics)")                              \
  X(kMetricRangesUnmatched, "metric_ranges_unmatched", kWarning,                                                       \
    "profiler ranges and recorded launches differ in number within a session (extra ones have no metrics)")            \
  X(kMetricEvaluationFailed, "metric_evaluation_failed", kWarning, "ranges whose metrics could not be evaluated")      \
  X(kGraphLaunchesNotRecorded, "graph_launches_not_recorded", kWarning,                                                \
    "CUDA graph launches whose kernels are not launch rows (the hook backend records graph_launch rows and the "       \
    "graphs' nodes instead)")                                                                                          \
  X(kGraphsNotRead, "graphs_not_read", kWarning,                                                                       \
    "instantiated or updated graphs whose nodes or edges could not be read (recorded without them)")                   \
  X(kGraphNodesLeftOut, "graph_nodes_left_out", kWarning,                                                              \
    "graph nodes beyond the recorder's limits (nodes per graph, child-graph depth), left out of their graph")          \
  X(kGraphNodeRecords, "graph_node_records", kInfo,                                                                    \
    "CUPTI kernel, copy and set records of recorded graph launches (the graph's nodes stand for them; their GPU "      \
    "times are not attached to the nodes)")                                                                            \
  X(kGraphLaunchUnknownExec, "graph_launch_unknown_exec", kInfo,                                                       \
    "graph launches and exec updates of an executable graph (or node) the collector did not see instantiated")         \
  X(kWorkCapturedIntoGraphs, "work_captured_into_graphs", kInfo,                                                       \
    "launches, copies and memsets enqueued on capturing streams (graph nodes, not executed work)")                     \
  X(kCuptiActivityKindUnavailable, "cupti_activity_kind_unavailable", kWarning,                                        \
    "activity kinds CUPTI refused to enable")                                                                          \
  X(kCuptiDroppedRecords, "cupti_dropped_records", kWarning, "activity records CUPTI dropped (buffers full)")          \
  X(kCuptiUnavailableUsedHooks, "cupti_unavailable_used_hooks", kWarning,                                              \
    "the CUPTI backend could not trace this program: the hook backend recorded it")                                    \
  /* --- Kineto importer --- */                                                                                        \
  X(kKinetoBadDeviceProperties, "kineto_bad_device_properties", kWarning,                                              \
    "deviceProperties that are not an array of objects with a usable id; ignored")                                     \
  X(kKinetoEventNotObject, "kineto_event_not_object", kWarning,                                                        \
    "entries of traceEvents that are not objects; skipped")                                                            \
  X(kKinetoBadFieldValues, "kineto_bad_field_values", kWarning,                                                        \
    "fields of GPU, API, CPU-op or memory events with a wrong type or an impossible value (those fields are "          \
    "treated as missing)")                                                                                             \
  X(kKinetoGpuEventNotComplete, "kineto_gpu_event_not_complete", kInfo,                                                \
    "GPU events with ph other than \"X\"; skipped")                                                                    \
  X(kKinetoGpuEventWithoutTs, "kineto_gpu_event_without_ts", kError, "GPU events without a usable ts; skipped")        \
  X(kKinetoGpuEventWithoutDur, "kineto_gpu_event_without_dur", kWarning, "GPU events without dur: end time unknown")   \
  X(kKinetoGpuEventWithoutDevice, "kineto_gpu_event_without_device", kWarning,                                         \
    "GPU events without a device; put on device 0")                                                                    \
  X(kKinetoGpuEventWithoutStream, "kineto_gpu_event_without_stream", kWarning,                                         \
    "GPU events without a stream id; put on a stream with native id -1")                                               \
  X(kKinetoGpuEventWithoutCorrelation, "kineto_gpu_event_without_correlation", kWarning,                               \
    "GPU events without a correlation id")                                                                             \
  X(kKinetoKernelWithoutLaunchConfig, "kineto_kernel_without_launch_config", kWarning,                                 \
    "kernels without grid/block (other vendors' traces): recorded as 1x1x1")                                           \
  X(kKinetoKernelWithoutRegisters, "kineto_kernel_without_registers", kInfo, "kernels without registers per thread")   \
  X(kKinetoCopyWithoutBytes, "kineto_copy_without_bytes", kWarning, "memcpy/memset events without a byte count")       \
  X(kKinetoMemoryEventIncomplete, "kineto_memory_event_incomplete", kWarning,                                          \
    "[memory] events without Addr, Bytes or ts; skipped")                                                              \
  X(kKinetoMemoryEventNotGpu, "kineto_memory_event_not_gpu", kInfo,                                                    \
    "[memory] events of CPU (or other non-GPU) memory; skipped")                                                       \
  X(kKinetoDeviceWithoutProperties, "kineto_device_without_properties", kWarning,                                      \
    "devices used by GPU events but missing from deviceProperties (name unknown)")                                     \
  X(kKinetoDuplicateApiCorrelation, "kineto_duplicate_api_correlation", kInfo,                                         \
    "runtime/driver events sharing a correlation id with an earlier one (the first is used)")                          \
  X(kKinetoKernelWithoutApi, "kineto_kernel_without_api", kInfo,                                                       \
    "kernels whose launch call is not in the trace (API times unknown)")                                               \
  X(kKinetoMemcpyKindUnknown, "kineto_memcpy_kind_unknown", kInfo,                                                     \
    "memcpy events whose direction is not in their name")                                                              \
  X(kKinetoSyncEventRecordMissing, "kineto_sync_event_record_missing", kInfo,                                          \
    "event waits whose cudaEventRecord call is not in the trace")                                                      \
  X(kKinetoSyncKindUnknown, "kineto_sync_kind_unknown", kInfo, "cuda_sync events of a kind kfuse does not know")       \
  X(kKinetoSyncStreamUnknown, "kineto_sync_stream_unknown", kInfo,                                                     \
    "stream syncs and event waits known only from the API call (no cuda_sync event): stream not recorded")             \
  X(kKinetoMemoryAllocOverLive, "kineto_memory_alloc_over_live", kWarning,                                             \
    "[memory] allocations at an address still live (the older one is closed there)")                                   \
  X(kKinetoMemoryFreeSizeMismatch, "kineto_memory_free_size_mismatch", kWarning,                                       \
    "[memory] frees whose size differs from the allocation")                                                           \
  X(kKinetoMemoryFreeWithoutAlloc, "kineto_memory_free_without_alloc", kInfo,                                          \
    "[memory] frees of blocks allocated before the trace started (kept with unknown alloc time)")                      \
  /* --- Nsight Systems importer --- */                                                                                \
  X(kNsysMissingColumn, "nsys_missing_column", kInfo, "a column this schema version does not have (read as unknown)")  \
  X(kNsysNoRuntimeTable, "nsys_no_runtime_table", kWarning, "no CUPTI_ACTIVITY_KIND_RUNTIME table: API times unknown") \
  X(kNsysDuplicateApiCorrelation, "nsys_duplicate_api_correlation", kInfo,                                             \
    "runtime rows sharing a correlation id with an earlier one (the first is used)")                                   \
  X(kNsysKernelWithoutName, "nsys_kernel_without_name", kWarning, "kernels without any name")                          \
  X(kNsysKernelBadLaunchConfig, "nsys_kernel_bad_launch_config", kWarning,                                             \
    "kernels with grid/block values out of range")                                                                     \
  X(kNsysRowWithoutStart, "nsys_row_without_start", kWarning, "GPU activity rows without a start time")                \
  X(kNsysGpuOpWithoutStream, "nsys_gpu_op_without_stream", kWarning, "GPU activity rows without a stream id")          \
  X(kNsysDeviceWithoutInfo, "nsys_device_without_info", kWarning,                                                      \
    "devices used by GPU activity but not described in TARGET_INFO_GPU / TARGET_INFO_CUDA_DEVICE (name unknown)")      \
  X(kNsysGpuOpWithoutApi, "nsys_gpu_op_without_api", kInfo, "kernels/copies/sets whose API call is not in the export") \
  X(kNsysSyncTypeDisagreesWithApi, "nsys_sync_type_disagrees_with_api", kInfo,                                         \
    "synchronisation rows whose syncType contradicts their API call (the call wins)")                                  \
  X(kNsysSyncKindUnknown, "nsys_sync_kind_unknown", kInfo, "synchronisation rows of an unknown syncType")              \
  /* --- analysis --- */                                                                                               \
  X(kMetricsMergedLaunches, "metrics_merged_launches", kInfo, "launches given measured metrics from a metrics run")    \
  X(kMetricsUnmatchedLaunches, "metrics_unmatched_launches", kWarning,                                                 \
    "launches with no launch of the same kernel and shape at the same position in the metrics run (a different "       \
    "run?): their bytes and FLOPs stay estimated")                                                                     \
  X(kEmulatorGpuTimesIgnored, "emulator_gpu_times_ignored", kInfo,                                                     \
    "GPU times measured on kfuse's CPU emulator time the emulation, not a GPU: costs use roofline estimates")          \
  X(kMetricsRunSerialised, "metrics_run_serialised", kWarning,                                                         \
    "recorded with --metrics: kernel replay ran the kernels one at a time, so idle gaps and overlap here are not "     \
    "those of a normal run (record again without --metrics for the timeline)")                                         \
  X(kTensorCoreFlopsNotCounted, "tensor_core_flops_not_counted", kInfo,                                                \
    "launches that used tensor cores: their measured FLOPs leave tensor-core work out")                                \
  X(kGpuNotInSpecTable, "gpu_not_in_spec_table", kWarning, "the trace's GPU is not in the spec table")

namespace kfuse::core {

enum class StatId : uint16_t {
#define KFUSE_STAT_ENUM(id, name, severity, description) id,
  KFUSE_STATS(KFUSE_STAT_ENUM)
#undef KFUSE_STAT_ENUM
      kCount
};

struct StatInfo {
  const char* name;
  StatSeverity severity;
  const char* description;
};

const StatInfo& statInfo(StatId id);
inline const char* statName(StatId id) {
  return statInfo(id).name;
}

// The stat as registered, with `value`. A non-empty `detail` replaces the registered description with a more
// specific one (what failed, which file); `name_suffix` makes a family of one stat ("nsys_missing_column:T.c").
Stat makeStat(StatId id, int64_t value, std::string detail = {}, std::string_view name_suffix = {});

// The registered stat of a name as kfuse writes it (a suffixed name matches its family); nullptr for others.
const StatInfo* findStat(std::string_view name);

}  // namespace kfuse::core
