#include "kfuse/collector/collector_runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "kfuse/collector/nvtx_capture.h"
#include "kfuse/hooks/driver_hooks.h"
#include "recording_status.h"

#ifndef KFUSE_VERSION_STRING
#define KFUSE_VERSION_STRING "unknown"
#endif

namespace kfuse::collector {
namespace {

std::mutex g_init_mu;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

long envNumber(const char* name, long fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end && *end == 0 && n >= 0 ? n : fallback;
}

std::string procCmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == 0) raw.pop_back();
  for (char& c : raw) {
    if (c == 0) c = ' ';
  }
  return raw;
}

void* queryLookup(const char* name, void* handle) {
  return hooks::realDlsym(handle, name);
}

void* fallbackLookup(const char* symbol) {
  void* h = hooks::driverHandle(/*load=*/true);
  if (!h) return nullptr;
  CollectorRuntime::instance().activate(/*from_injection=*/false);
  CollectorRuntime::resolveDriverQueries();
  return hooks::realDlsym(h, symbol);
}

void atExitHandler() {
  CollectorRuntime::instance().shutdown();
}

}  // namespace

CollectorConfig CollectorConfig::fromEnvironment() {
  CollectorConfig c;
  if (const char* v = env("KFUSE_OUTPUT")) c.output_pattern = v;
  if (const char* v = env("KFUSE_BACKEND")) c.backend = v;
  if (const char* v = env("KFUSE_OVERWRITE")) c.overwrite = std::string(v) == "1";
  c.queue_bytes = static_cast<size_t>(envNumber("KFUSE_QUEUE_MB", 64)) << 20;
  c.block_timeout_ms = static_cast<int>(envNumber("KFUSE_BLOCK_MS", 2000));
  c.flush_interval_ms = static_cast<int>(envNumber("KFUSE_FLUSH_MS", 200));
  if (const char* v = env("KFUSE_COMMAND_LINE")) c.command_line = v;
  if (const char* v = env("KFUSE_GPU_TIME")) c.gpu_time = std::string(v) == "1";
  if (const char* v = env("KFUSE_METRICS")) c.metrics = std::string(v) == "1";
  // Each range costs counter-data memory inside the application: keep the session between 1 and 4096 ranges.
  c.metrics_ranges = static_cast<size_t>(std::clamp(envNumber("KFUSE_METRICS_RANGES", 64), 1L, 4096L));
  return c;
}

std::string expandOutputPattern(std::string_view pattern, int64_t pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'p') {
        out += std::to_string(pid);
        ++i;
        continue;
      }
      if (pattern[i + 1] == '%') {
        out += '%';
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

CollectorRuntime& CollectorRuntime::instance() {
  static CollectorRuntime* runtime = new CollectorRuntime();  // never destroyed
  return *runtime;
}

void CollectorRuntime::resolveDriverQueries() {
  hooks::DriverTable& t = hooks::Interposer::driver();
  if (t.FuncGetName.load() || t.KernelGetName.load()) return;
  if (void* h = hooks::driverHandle(/*load=*/false)) t.resolveQueries(&queryLookup, h);
}

void CollectorRuntime::init(CuptiApi* cupti, ProfilerApi* profiler) {
  if (child_) return;  // before locking: a fork may have copied the lock held
  std::lock_guard lock(g_init_mu);
  if (initialized_ || child_) return;
  initialized_ = true;
  cupti_api_ = cupti;
  profiler_api_ = profiler;
  config_ = CollectorConfig::fromEnvironment();
  // Direct exports must reach the driver even when the library is loaded but not asked to record.
  hooks::Interposer::setFallbackLookup(&fallbackLookup);
  if (config_.output_pattern.empty()) return;  // loaded but not asked to record
  pthread_atfork(nullptr, nullptr, &CollectorRuntime::atForkChild);
}

void CollectorRuntime::activate(bool from_injection) {
  if (child_) return;  // before locking: a fork may have copied the lock held
  std::lock_guard lock(g_init_mu);
  if (child_ || !initialized_ || config_.output_pattern.empty()) return;
  if (activated_) {
    if (from_injection && recorder_ && config_.backend == "cupti" && !cupti_ && !fell_back_) startCupti(cupti_api_);
    return;
  }
  activated_ = true;
  pid_ = getpid();
  path_ = expandOutputPattern(config_.output_pattern, pid_);

  SqliteSinkOptions o;
  o.queue_bytes = config_.queue_bytes;
  o.block_timeout_ms = config_.block_timeout_ms;
  o.flush_interval_ms = config_.flush_interval_ms;
  o.overwrite = config_.overwrite;
  o.pid = pid_;
  o.metadata.producer = "kfuse-collector";
  o.metadata.producer_version = KFUSE_VERSION_STRING;
  o.metadata.command_line = config_.command_line.empty() ? procCmdline() : config_.command_line;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) o.metadata.host = host;
  o.metadata.start_time_ns = collectorNowNs();
  o.metadata.extra["backend"] = config_.backend;
  o.metadata.extra["clock"] = "CLOCK_REALTIME";
  // Kernel replay serialises kernels: a --metrics trace's GPU times are per-kernel durations without overlap.
  if (config_.metrics) o.metadata.extra["metrics"] = "range-profiler kernel-replay";
  auto sink = SqliteSink::open(path_, o);
  if (!sink.ok()) {
    std::fprintf(stderr, "kfuse: collector: pid %lld: cannot record: %s; the application runs unrecorded\n",
                 static_cast<long long>(pid_), sink.status().message().c_str());
    reportRecordingFailure("cannot record: " + sink.status().message());
    return;
  }
  sink_ = std::move(*sink);
  attachNvtxSink(sink_.get());
  recorder_ = new HookRecorder(hooks::Interposer::driver(), *sink_);
  recorder_->setQueryResolver(&CollectorRuntime::resolveDriverQueries);
  if (config_.gpu_time) recorder_->enableGpuTime();
  resolveDriverQueries();

  if (config_.backend == "cupti") {
    // Under LD_PRELOAD the hooks see the application's first driver calls too: if CUPTI turns out not to see them
    // (the driver never loaded the injection, or CUPTI cannot trace it), the watch switches to the hook backend
    // rather than leave an empty trace.
    watch_ = new CuptiWatch(hooks::Interposer::driver(), *recorder_, &CollectorRuntime::onCuptiBlind);
    hooks::Interposer::install(watch_);
    // Under CUDA_INJECTION64_PATH the driver calls InitializeInjection at cuInit: start CUPTI there (it then also
    // runs our atexit handler before cudart's teardown).
    if (from_injection || !env("CUDA_INJECTION64_PATH")) startCupti(cupti_api_);
    return;
  }
  if (config_.backend != "hook") {
    std::fprintf(stderr, "kfuse: collector: unknown backend '%s' in KFUSE_BACKEND; recording with 'hook'\n",
                 config_.backend.c_str());
  }
  hooks::Interposer::install(recorder_);
  if (!atexit_registered_) atexit_registered_ = std::atexit(&atExitHandler) == 0;
}

void CollectorRuntime::fallBackToHooks(const std::string& why) {
  fell_back_ = true;
  std::fprintf(stderr, "kfuse: collector: %s; recording with the hook backend instead\n", why.c_str());
  sink_->pushStat(core::StatId::kCuptiUnavailableUsedHooks, 1, why.c_str());
  if (config_.metrics) {
    std::fprintf(stderr, "kfuse: collector: --metrics needs the CUPTI backend; recording without hardware metrics%s\n",
                 hooks::Interposer::driver().EmuGetLaunch.load()
                     ? " (the emulator's own counters are recorded as 'emulated' metrics)"
                     : "");
  }
  hooks::Interposer::install(recorder_);
  if (!atexit_registered_) atexit_registered_ = std::atexit(&atExitHandler) == 0;
}

void CollectorRuntime::startCupti(CuptiApi* cupti) {
  if (!cupti) {
    fallBackToHooks("CUPTI is not available in this build of the collector");
    return;
  }
  auto* backend = new CuptiBackend(*cupti, *sink_, *recorder_);
  if (Status s = backend->start(); !s.ok()) {
    delete backend;
    fallBackToHooks(s.message());
    return;
  }
  if (config_.metrics) startMetrics(*backend);
  cupti_ = backend;
  if (!atexit_registered_) atexit_registered_ = std::atexit(&atExitHandler) == 0;
}

void CollectorRuntime::onCuptiBlind(const char* why) {
  CollectorRuntime& r = instance();
  if (r.child_) return;
  std::lock_guard lock(g_init_mu);
  if (!r.sink_ || r.fell_back_) return;
  if (r.cupti_) r.cupti_->detach();
  r.fallBackToHooks(why);
}

void CollectorRuntime::startMetrics(CuptiBackend& backend) {
  if (!profiler_api_) {
    std::fprintf(stderr,
                 "kfuse: collector: --metrics: the profiler API is not available in this build of the "
                 "collector; recording without hardware metrics\n");
    return;
  }
  RangeMetricsOptions options;
  options.ranges_per_session = config_.metrics_ranges;
  auto* metrics = new RangeMetrics(*profiler_api_, *sink_, options);
  if (Status s = metrics->start(); !s.ok()) {
    std::fprintf(stderr, "kfuse: collector: --metrics: %s; recording without hardware metrics\n", s.message().c_str());
    sink_->pushStat(core::StatId::kMetricsUnavailable, 1, s.message().c_str());
    delete metrics;
    return;
  }
  metrics_ = metrics;
  backend.setRangeMetrics(metrics_);
}

void CollectorRuntime::shutdown() {
  if (child_) return;  // before locking: a fork may have copied the lock held
  std::lock_guard lock(g_init_mu);
  if (child_ || !sink_ || getpid() != pid_) return;
  attachNvtxSink(nullptr);
  if (cupti_) cupti_->stop();
  if (recorder_) recorder_->flushGpuTimes();
  (void)sink_->finish();  // a failure was already reported when it happened
  if (recorder_) recorder_->setEnabled(false);
}

void CollectorRuntime::atForkChild() {
  // The child has no writer thread and no CUPTI worker: stop recording, touch nothing of the parent's. A child
  // that exec()s gets the library again and records into its own trace (use %p in KFUSE_OUTPUT).
  CollectorRuntime& r = instance();
  r.child_ = true;
  attachNvtxSink(nullptr);
  if (r.recorder_) r.recorder_->setEnabled(false);
  if (r.sink_) r.sink_->abandonAfterFork();
}

}  // namespace kfuse::collector
