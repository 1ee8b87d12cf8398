// The `kfuse` command is a set of verbs; each verb file registers its subcommands on the root CLI::App.
//
// Contract for a verb: its callback does the work, prints results to stdout and errors to stderr as one line
// ("kfuse: FILE: what is wrong"), and stores its process exit code in `VerbContext::exit_code`
// (0 ok, 1 the check it performed failed, 2 bad input or usage, 3 nothing to analyse). Verbs never throw
// out of their callback except CLI11's own parse errors.
#pragma once

#include <CLI/CLI.hpp>

#include "kfuse/core/status.h"

namespace kfuse::cli {

struct VerbContext {
  int exit_code = 0;
  bool quiet = false;
};

// A validator for options that name a file or directory to write: a value that looks like an option ("--help",
// "-v") is refused, so a forgotten value never becomes a file of that name ("-" alone, for stdout, is allowed).
inline CLI::Validator outputPath() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.size() > 1 && value[0] == '-') {
          return "'" + value + "' looks like an option, not a path (write ./" + value + " for a file of that name)";
        }
        return {};
      },
      "PATH");
}

// Exit codes shared by all verbs.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitNothingToDo = 3;

// Prints "kfuse: <message>" to stderr and returns kExitBadInput (or `code`).
int reportError(const Status& status, int code = kExitBadInput);

void registerTraceVerbs(CLI::App& app, VerbContext& ctx);     // info, export, import
void registerGpuVerbs(CLI::App& app, VerbContext& ctx);       // gpus
void registerPtxVerbs(CLI::App& app, VerbContext& ctx);       // ptx list|extract|check|roundtrip
void registerAnalyzeVerbs(CLI::App& app, VerbContext& ctx);   // analyze, merge
void registerRecordVerbs(CLI::App& app, VerbContext& ctx);    // record
void registerMetricVerbs(CLI::App& app, VerbContext& ctx);    // metrics
void registerValidateVerbs(CLI::App& app, VerbContext& ctx);  // validate
void registerRewriteVerbs(CLI::App& app, VerbContext& ctx);   // rewrite, ptx opt (after registerPtxVerbs)
void registerRunVerbs(CLI::App& app, VerbContext& ctx);       // run
void registerDemoVerbs(CLI::App& app, VerbContext& ctx);      // demo
void registerHelpVerbs(CLI::App& app, VerbContext& ctx);      // help

}  // namespace kfuse::cli
