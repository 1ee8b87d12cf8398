// `kfuse record`: run a CUDA program with the collector injected and report the trace(s) it left.
#include <cstdio>
#include <memory>

#include "kfuse/collector/record.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

int runRecord(collector::RecordOptions o, const VerbContext& ctx) {
  o.on_note = [](const std::string& note) { std::fprintf(stderr, "kfuse: note: %s\n", note.c_str()); };
  auto result = collector::recordProgram(o);
  if (!result.ok()) return reportError(result.status());
  bool incomplete = !result->failures.empty();
  for (const std::string& f : result->failures) std::fprintf(stderr, "kfuse: recording incomplete: %s\n", f.c_str());
  for (const auto& t : result->traces) incomplete = incomplete || !t.error.empty();
  if (!ctx.quiet) {
    if (result->traces.empty() && result->failures.empty()) {
      if (result->exit_code > 128) {
        std::fprintf(stderr,
                     "kfuse: no trace was written: the program ended by signal %d before the collector "
                     "created its trace\n",
                     result->exit_code - 128);
      } else {
        std::fprintf(stderr,
                     "kfuse: no trace was written: no CUDA driver call reached the collector (a program that uses "
                     "no GPU, or one that does not load shared libraries through the dynamic linker)\n");
      }
    }
    for (const auto& t : result->traces) {
      if (!t.backend_used.empty() && t.backend_used != result->backend) {
        std::fprintf(stderr, "kfuse: %s written to %s (%s backend: CUPTI stepped aside, see above)\n",
                     incomplete ? "incomplete trace" : "trace", t.path.c_str(), t.backend_used.c_str());
      } else {
        std::fprintf(stderr, "kfuse: %s written to %s (%s backend)\n", incomplete ? "incomplete trace" : "trace",
                     t.path.c_str(), result->backend.c_str());
      }
      std::fprintf(stderr, "kfuse: %s\n", collector::summarizeRecordedTrace(t).c_str());
    }
  }
  // The program's own exit code passes through; a program that succeeded while its recording did not exits 2.
  if (incomplete && result->exit_code == 0) return kExitBadInput;
  return result->exit_code;
}

}  // namespace

void registerRecordVerbs(CLI::App& app, VerbContext& ctx) {
  auto opts = std::make_shared<collector::RecordOptions>();
  CLI::App* cmd = app.add_subcommand(
      "record", "Run a CUDA program and record its launches, arguments, allocations and copies into a trace");
  cmd->add_option("-o,--output", opts->output, "Trace file; %p is replaced by the process id (one trace per process)")
      ->capture_default_str()
      ->check(outputPath());
  cmd->add_option("--backend", opts->backend, "hook or cupti (default: cupti with a GPU driver, else hook)")
      ->check(CLI::IsMember({"hook", "cupti"}));
  cmd->add_flag("--metrics", opts->metrics,
                "CUPTI backend: DRAM bytes, FLOPs by precision and tensor use of every launch from the range "
                "profiler (replays each kernel; `kfuse metrics` shows what a chip gives)");
  cmd->add_flag("--gpu-time", opts->gpu_time,
                "Hook backend: GPU start/end of every launch from CUDA events recorded around it (CUPTI has them)");
  cmd->add_flag("-f,--force", opts->overwrite, "Replace an existing trace file");
  cmd->add_option("command", opts->command, "-- PROGRAM ARGS...")->required()->expected(-1);
  cmd->callback([opts, &ctx] { ctx.exit_code = runRecord(*opts, ctx); });
}

}  // namespace kfuse::cli
