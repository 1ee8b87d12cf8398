// `kfuse run --plan DIR -- PROGRAM ARGS`: run a program with the injector (libkfuse_inject.so) replacing the
// launch sequences of the given plans by their fused kernels. docs/injector.md.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kfuse/collector/program.h"
#include "kfuse/inject/runtime_plan.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

struct RunOptions {
  std::vector<std::string> plans;
  int validate = 0;
  std::string stats;
  bool log = false;
  bool graphs = false;  // accepted for scripts written when rewriting graphs had to be asked for
  bool no_graphs = false;
  std::vector<std::string> command;
};

int runWithPlans(const RunOptions& o, const VerbContext& ctx) {
  // Plans are checked here first so that a bad one is reported once, clearly, before the program starts; the
  // program runs either way (without the plans that cannot be used).
  std::string usable;
  for (const std::string& dir : o.plans) {
    auto plan = inject::loadRuntimePlan(dir);
    if (!plan.ok()) {
      std::fprintf(stderr, "kfuse: plan left out: %s\n", plan.status().message().c_str());
      continue;
    }
    if (!ctx.quiet) std::fprintf(stderr, "kfuse: plan %s\n", plan->label.c_str());
    usable += (usable.empty() ? "" : ":") + dir;
  }
  const char* disable = std::getenv("KFUSE_DISABLE");
  const bool disabled = disable && *disable && std::string(disable) != "0";
  if (disabled) std::fprintf(stderr, "kfuse: KFUSE_DISABLE is set: the program runs without kfuse\n");
  if (usable.empty() && !disabled) std::fprintf(stderr, "kfuse: no usable plan: the program runs without kfuse\n");

  std::vector<std::pair<std::string, std::string>> env;
  if (!usable.empty() && !disabled) {
    auto lib = collector::findKfuseLibrary("libkfuse_inject.so", "KFUSE_INJECT_LIB", KFUSE_INJECT_BUILD_LIB);
    if (!lib.ok()) return reportError(lib.status());
    const char* preload = std::getenv("LD_PRELOAD");
    env = {{"LD_PRELOAD", collector::preloadList(*lib, preload ? preload : "", /*after_injector=*/false)},
           {"KFUSE_PLANS", usable}};
    if (o.validate > 0) env.emplace_back("KFUSE_VALIDATE", std::to_string(o.validate));
    if (!o.stats.empty()) env.emplace_back("KFUSE_RUN_STATS", o.stats);
    if (o.log) env.emplace_back("KFUSE_INJECT_LOG", "1");
    if (o.no_graphs) env.emplace_back("KFUSE_REWRITE_GRAPHS", "0");
    if (o.graphs) env.emplace_back("KFUSE_REWRITE_GRAPHS", "1");
    if (ctx.quiet) env.emplace_back("KFUSE_RUN_QUIET", "1");
  }
  auto run = collector::runProgram(o.command, env);
  if (!run.ok()) return reportError(run.status());
  return run->exit_code;  // the program's own exit code passes through
}

}  // namespace

void registerRunVerbs(CLI::App& app, VerbContext& ctx) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a CUDA program with the fused kernels of validated plans (`kfuse rewrite`) injected in place of the "
      "launches they replace");
  cmd->add_option("--plan", opts->plans, "Plan directory written by `kfuse rewrite` (repeat for several)")
      ->required()
      ->allow_extra_args(false);
  cmd->add_flag("--validate{1}", opts->validate,
                "--validate[=N]: check the first N occurrences of each fusion against the original launches on "
                "shadow copies; a mismatch disables the fusion and keeps the originals' results (N = 1 if omitted). "
                "On a GPU each validated occurrence is also timed (medians of 5 runs): a fusion not faster than the "
                "originals is disabled. In a rewritten CUDA graph, each fused node is checked that way before each "
                "of the first N launches of its executable graph, on the buffers as they are then (put back "
                "afterwards); a failure makes the application's own graph run");
  cmd->add_option("--stats", opts->stats, "Write launch, fusion and flush statistics there as JSON at exit")
      ->check(outputPath());
  cmd->add_flag("--log", opts->log, "One line per fused occurrence and per flush of deferred launches (stderr)");
  CLI::Option* graphs = cmd->add_flag("--graphs", opts->graphs,
                                      "Rewrite CUDA graphs at instantiate and exec update (the default; kept for "
                                      "scripts written when it had to be asked for)");
  cmd->add_flag("--no-graphs", opts->no_graphs,
                "Leave CUDA graphs as they are (by default, matching node chains of a graph run as the fused kernel's "
                "node, in a rewritten copy launched in the graph's place; docs/injector.md)")
      ->excludes(graphs);
  cmd->add_option("command", opts->command, "-- PROGRAM ARGS...")->required()->expected(-1);
  cmd->footer(
      "Environment: KFUSE_DISABLE=1 runs the program without kfuse. The program's exit code passes through.\n"
      "To see the fused launches in a trace: kfuse record -o t.sqlite -- kfuse run --plan DIR -- PROGRAM");
  cmd->callback([opts, &ctx] { ctx.exit_code = runWithPlans(*opts, ctx); });
}

}  // namespace kfuse::cli
