// The collector as it runs inside an application (libkfuse_collector.so): configuration from the environment,
// the process-wide sink/recorder/CUPTI backend, exit and fork handling.
//
// Environment (set by `kfuse record`; docs/collector.md):
//   KFUSE_OUTPUT         trace path; "%p" is replaced by the process id. Unset: the library does nothing.
//   KFUSE_BACKEND        "hook" (default) or "cupti"
//   KFUSE_OVERWRITE      "1": replace an existing trace file
//   KFUSE_QUEUE_MB       ring buffer size (default 64)
//   KFUSE_BLOCK_MS       how long a full queue may hold an application thread before dropping (default 2000)
//   KFUSE_FLUSH_MS       commit interval (default 200)
//   KFUSE_COMMAND_LINE   the command line to store in the trace's metadata
//   KFUSE_GPU_TIME       "1": hook backend times launches with CUDA events
//   KFUSE_METRICS        "1": CUPTI backend collects hardware metrics with the range profiler (kernel replay)
//   KFUSE_METRICS_RANGES launches profiled per range-profiler session before a decode (default 64, 1..4096)
// The collector never changes what the application computes: when it cannot record it says so once on stderr
// and forwards every call unchanged.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kfuse/collector/cupti_backend.h"
#include "kfuse/collector/hook_recorder.h"
#include "kfuse/collector/trace_sink.h"

namespace kfuse::collector {

struct CollectorConfig {
  std::string output_pattern;
  std::string backend = "hook";
  bool overwrite = false;
  size_t queue_bytes = 64u << 20;
  int block_timeout_ms = 2000;
  int flush_interval_ms = 200;
  std::string command_line;
  bool gpu_time = false;  // KFUSE_GPU_TIME=1: hook backend times launches with CUDA events
  bool metrics = false;   // KFUSE_METRICS=1: CUPTI backend collects DRAM bytes and FLOPs per launch
  size_t metrics_ranges = 64;

  static CollectorConfig fromEnvironment();
};

// Replaces every "%p" with `pid` (and "%%" with "%").
std::string expandOutputPattern(std::string_view pattern, int64_t pid);

class CollectorRuntime {
 public:
  // The process-wide instance (never destroyed: hooks may run during exit).
  static CollectorRuntime& instance();

  // Reads the configuration (idempotent, cheap: nothing is created). `cupti`, `profiler`: the real CUPTI (activity
  // and callback API; profiler APIs for --metrics), or nullptr.
  void init(CuptiApi* cupti, ProfilerApi* profiler = nullptr);
  // Starts recording the first time the process touches the driver (dlsym of cuGetProcAddress, a direct call,
  // InitializeInjection), so processes that never use CUDA (shells, launchers) leave no trace file.
  // `from_injection`: called from InitializeInjection (the driver is initialising; CUPTI may subscribe now).
  void activate(bool from_injection);
  // Flushes and closes the trace (atexit); a no-op in a forked child.
  void shutdown();
  // Resolves the driver's query functions (cuFuncGetParamInfo...) into Interposer::driver().
  static void resolveDriverQueries();

  bool recording() const { return sink_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  CollectorRuntime() = default;
  void startCupti(CuptiApi* cupti);
  void startMetrics(CuptiBackend& backend);
  static void onCuptiBlind(const char* why);
  void fallBackToHooks(const std::string& why);
  static void atForkChild();

  bool initialized_ = false;
  bool activated_ = false;
  CuptiApi* cupti_api_ = nullptr;
  ProfilerApi* profiler_api_ = nullptr;
  std::atomic<bool> child_{false};  // set in a forked child (by the atfork handler, single-threaded there)
  bool atexit_registered_ = false;
  bool fell_back_ = false;  // recording with the hook backend because CUPTI could not be used
  int64_t pid_ = 0;
  CollectorConfig config_;
  std::string path_;
  std::unique_ptr<SqliteSink> sink_;
  HookRecorder* recorder_ = nullptr;  // leaked on purpose: application threads may call it during exit
  CuptiBackend* cupti_ = nullptr;
  RangeMetrics* metrics_ = nullptr;  // leaked on purpose, like recorder_
  CuptiWatch* watch_ = nullptr;      // leaked on purpose: hooked calls may still be inside it
};

}  // namespace kfuse::collector
