#include "kfuse/collector/record.h"
#include "kfuse/collector/program.h"
#include "kfuse/core/stats.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/emulator/standin.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

#include <cuda.h>

namespace kfuse::collector {
namespace fs = std::filesystem;
namespace {

std::string joinCommand(const std::vector<std::string>& cmd) {
  std::string out;
  for (const auto& a : cmd) {
    if (!out.empty()) out += ' ';
    const bool quote = a.empty() || a.find_first_of(" \t'\"\\$") != std::string::npos;
    out += quote ? "'" + a + "'" : a;
  }
  return out;
}

RecordedTrace inspect(const std::string& path) {
  RecordedTrace t;
  t.path = path;
  auto reader = core::TraceReader::open(path);
  if (!reader.ok()) {
    t.error = reader.status().message();
    return t;
  }
  auto counts = (*reader)->counts();
  if (!counts.ok()) {
    t.error = counts.status().message();
    return t;
  }
  t.counts = *counts;
  auto rest = (*reader)->readAllButLaunches();
  if (rest.ok()) {
    for (const auto& s : rest->stats) {
      if (s.name == core::statName(core::StatId::kCollectorDroppedEvents)) t.dropped_events = s.value;
      if (s.name == core::statName(core::StatId::kCuptiUnavailableUsedHooks)) t.backend_used = "hook";
    }
  }
  return t;
}

}  // namespace

Expected<std::string> findCollectorLibrary() {
#ifdef KFUSE_COLLECTOR_BUILD_LIB
  const std::string build_copy = KFUSE_COLLECTOR_BUILD_LIB;
#else
  const std::string build_copy;
#endif
  return findKfuseLibrary("libkfuse_collector.so", "KFUSE_COLLECTOR_LIB", build_copy);
}

std::string detectBackend() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return "hook";
  std::string backend = "hook";
  // The emulator's stand-in and test doubles say they are not GPUs: CUPTI cannot trace them.
  if (!dlsym(h, KFUSE_NOT_A_GPU_SYMBOL)) {
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(h, "cuInit"));
    auto count = reinterpret_cast<CUresult (*)(int*)>(dlsym(h, "cuDeviceGetCount"));
    int n = 0;
    if (init && count && init(0) == CUDA_SUCCESS && count(&n) == CUDA_SUCCESS && n > 0) backend = "cupti";
  }
  return backend;  // the handle stays open: unloading a driver is not worth the risk
}

Expected<RecordResult> recordProgram(const RecordOptions& o) {
  if (o.command.empty())
    return invalidArgument("no program to record (usage: kfuse record [options] -- PROGRAM ARGS...)");
  std::string lib = o.collector_library;
  if (lib.empty()) {
    KFUSE_ASSIGN_OR_RETURN(lib, findCollectorLibrary());
  }
  RecordResult result;
  result.backend = o.backend.empty() ? detectBackend() : o.backend;
  if (result.backend != "hook" && result.backend != "cupti") {
    return invalidArgument("unknown backend '" + result.backend + "' (expected hook or cupti)");
  }
  if (o.metrics && o.backend == "hook") {
    return invalidArgument(
        "--metrics needs the CUPTI backend (hardware counters are read by CUPTI's range "
        "profiler); leave out --backend hook");
  }
  const bool metrics = o.metrics && result.backend == "cupti";
  if (o.metrics && !metrics && o.on_note) {
    o.on_note(
        "no GPU driver here, so --metrics has no hardware counters to read (CUPTI's range profiler needs a "
        "GPU); on the emulator's stand-in driver the emulator's own counters are recorded as 'emulated' "
        "metrics");
  }
  if (o.output.empty()) return invalidArgument("empty output path");
  std::error_code ec;
  const fs::path out = fs::absolute(o.output, ec);
  const fs::path dir = out.parent_path();
  if (!fs::is_directory(dir, ec))
    return ioError(o.output + ": cannot write the trace: directory " + dir.string() + " does not exist");
  if (access(dir.c_str(), W_OK) != 0) {
    return ioError(o.output + ": cannot write the trace: directory " + dir.string() + " is not writable");
  }
  const bool per_process = out.string().find("%p") != std::string::npos;
  if (!per_process && fs::exists(out, ec)) {
    if (!o.overwrite) return invalidArgument(o.output + ": already exists; pass --force to replace it");
    KFUSE_RETURN_IF_ERROR(core::checkTraceReplaceable(o.output));  // --force replaces trace files only
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(out.string() + suffix, ec);
  }

  const char* old_preload = std::getenv("LD_PRELOAD");
  const std::string command_line = joinCommand(o.command);
  const auto started = fs::file_time_type::clock::now();
  std::vector<std::pair<std::string, std::string>> env = {
      // Under `kfuse run`, after the injector: the trace shows the launches the driver really gets.
      {"LD_PRELOAD", preloadList(lib, old_preload ? old_preload : "", /*after_injector=*/true)},
      {"KFUSE_OUTPUT", out.string()},
      {"KFUSE_BACKEND", result.backend},
      {"KFUSE_COMMAND_LINE", command_line}};
  if (o.overwrite) env.emplace_back("KFUSE_OVERWRITE", "1");
  if (metrics) env.emplace_back("KFUSE_METRICS", "1");
  if (o.gpu_time) env.emplace_back("KFUSE_GPU_TIME", "1");
  if (result.backend == "cupti") env.emplace_back("CUDA_INJECTION64_PATH", lib);
  // NVTX ranges: the collector is the NVTX tool (nvtx_capture.h), unless the user named another one.
  if (const char* nvtx = std::getenv("NVTX_INJECTION64_PATH"); !nvtx || !*nvtx) {
    env.emplace_back("NVTX_INJECTION64_PATH", lib);
  }
  // The collector reports failed writes on a socket (recording_status.h): kfuse's end is read after the program.
  int status_fds[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, status_fds) == 0) {
    env.emplace_back("KFUSE_STATUS_FD", std::to_string(status_fds[1]));
    fcntl(status_fds[0], F_SETFL, O_NONBLOCK);
  }
  auto run = runProgram(o.command, env, "", status_fds[1]);
  if (status_fds[1] >= 0) close(status_fds[1]);
  if (status_fds[0] >= 0) {
    // Non-blocking: a child the program forked may still hold the other end open.
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(status_fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    close(status_fds[0]);
    for (size_t at = 0; at < text.size();) {
      const size_t nl = std::min(text.find('\n', at), text.size());
      if (nl > at) result.failures.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
  }
  if (!run.ok()) return run.status();
  result.pid = run->pid;
  result.exit_code = run->exit_code;

  if (!per_process) {
    // A program killed while the collector created the trace leaves its not yet renamed file (TraceWriter::create).
    for (const char* suffix : {"", "-journal"}) {
      fs::remove(dir / ("." + out.filename().string() + ".kfuse-new-" + std::to_string(result.pid) + suffix), ec);
    }
    if (fs::exists(out, ec)) {
      result.traces.push_back(inspect(out.string()));
    } else if (!fs::is_directory(dir, ec)) {
      result.failures.push_back(o.output + ": the output directory " + dir.string() +
                                " was removed or renamed while recording; the trace is lost");
    }
    return result;
  }
  // One trace per process: every file matching the pattern written since the program started.
  const std::string name = out.filename().string();
  std::string re;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 2, "%p") == 0) {
      re += "[0-9]+";
      ++i;
    } else if (std::strchr(".^$|()[]{}*+?\\", name[i])) {
      re += '\\';
      re += name[i];
    } else {
      re += name[i];
    }
  }
  const std::regex pattern(re);
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string fname = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || !std::regex_match(fname, pattern)) continue;
    if (entry.last_write_time(ec) + std::chrono::seconds(1) < started) continue;
    found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  for (const auto& f : found) result.traces.push_back(inspect(f));
  return result;
}

std::string summarizeRecordedTrace(const RecordedTrace& t) {
  if (!t.error.empty()) return "unreadable: " + t.error;
  const core::TraceCounts& c = t.counts;
  return std::to_string(c.launches) + " launches of " + std::to_string(c.functions) + " kernels, " +
         std::to_string(c.modules) + " modules, " + std::to_string(c.allocations) + " allocations, " +
         std::to_string(c.memcpys) + " memcpys, " + std::to_string(c.memsets) + " memsets, " + std::to_string(c.syncs) +
         " syncs, " +
         (c.graphs || c.graph_launches ? std::to_string(c.graphs) + " graphs (" + std::to_string(c.graph_nodes) +
                                             " nodes), " + std::to_string(c.graph_launches) + " graph launches, "
                                       : std::string()) +
         std::to_string(t.dropped_events) + " dropped events";
}

}  // namespace kfuse::collector
