// `kfuse validate PLAN_DIR`: differential validation of a plan's fused kernel against the original launches, on
// the emulator or (with --backend gpu) the CUDA driver, which also times both. The verdict and the timing go into
// the plan's plan.json.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kfuse/core/text.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/ptxas.h"
#include "kfuse/rewriter/plan.h"
#include "kfuse/rewriter/validate.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

struct ValidateOptions {
  std::string plan_dir;
  uint64_t seed = 1;
  int trials = 0;
  std::string backend = "emu";
  bool json = false;
  uint64_t max_instructions = rewriter::kDefaultValidationInstructions;
};

nlohmann::json resultJson(const ValidateOptions& o, const rewriter::ValidationResult& r) {
  nlohmann::json j{{"plan_dir", o.plan_dir}, {"backend", o.backend}, {"passed", r.passed},
                   {"seed", o.seed},         {"runs", r.runs},       {"seconds", r.seconds},
                   {"trials", r.trials},     {"failure", r.failure}, {"mismatch", nullptr}};
  const rewriter::PlanTiming& t = r.timing;
  j["timing"] = {{"originals_ns", t.originals_ns},
                 {"fused_ns", t.fused_ns},
                 {"runs", t.runs},
                 {"argument_sets", t.argument_sets},
                 {"not_timed", t.not_timed}};
  if (r.mismatch) {
    const rewriter::Mismatch& m = *r.mismatch;
    j["mismatch"] = {{"argument_set", m.argument_set}, {"trial", m.trial},     {"buffer", m.buffer},
                     {"buffer_name", m.buffer_name},   {"element", m.element}, {"element_type", m.element_type},
                     {"original", m.original},         {"fused", m.fused},     {"sentence", m.sentence()}};
  }
  return j;
}

int runValidate(const ValidateOptions& o, const VerbContext& ctx) {
  auto plan = rewriter::readPlan(o.plan_dir);
  if (!plan.ok()) return reportError(plan.status());
  rewriter::ValidationOptions options;
  options.seed = o.seed;
  options.trials = o.trials;
  options.backend = o.backend == "gpu" ? rewriter::Backend::kGpu : rewriter::Backend::kEmulator;
  options.max_warp_instructions = o.max_instructions;
  if (!ctx.quiet && !o.json) {
    options.progress = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
  }
  // Validation is never only the emulator: the fused kernel must also compile for the architecture it is for.
  const std::string fused_path = o.plan_dir + "/" + plan->fused.ptx_file;
  auto fused = ptx::parseFile(fused_path);
  if (!fused.ok()) return reportError(fused.status());
  const std::string arch = plan->fused.arch.empty() ? fused->primaryTarget() : plan->fused.arch;
  auto compiled = ptx::runPtxas(ptx::printForArch(*fused, arch), arch);
  if (!compiled.ok()) return reportError(compiled.status());
  if (compiled->exit_code != 0) {
    std::fprintf(stderr, "kfuse: %s: ptxas rejects the fused kernel for %s (the file is left as it is):\n%s",
                 fused_path.c_str(), arch.c_str(), compiled->log.c_str());
    return kExitBadInput;
  }
  auto result = rewriter::validatePlan(*plan, o.plan_dir, options);
  if (!result.ok()) return reportError(result.status());
  rewriter::recordValidation(plan->validation, options, *result);
  Status written = rewriter::writePlan(o.plan_dir, *plan);
  if (!written.ok()) return reportError(written);
  // The trace the plan came from keeps the history of validations too, when it is a SQLite trace that is still
  // where the plan says (a JSON or imported trace is left alone). Failing to write there does not change the
  // verdict: it is reported and the exit code stays the validation's.
  auto recorded = rewriter::recordValidationInTrace(plan->source_trace, *plan, o.plan_dir, options.backend);
  if (!recorded.ok()) {
    std::fprintf(stderr, "kfuse: warning: %s: validation not recorded in the trace: %s\n", plan->source_trace.c_str(),
                 recorded.status().message().c_str());
  } else if (*recorded && !ctx.quiet && !o.json) {
    std::fprintf(stderr, "  recorded in %s\n", plan->source_trace.c_str());
  }

  if (o.json) {
    std::cout << core::dumpJson(resultJson(o, *result), 2) << '\n';
  } else if (result->passed) {
    std::printf("passed: %d runs bit-identical on the %s (seed %llu, %.2f s)\n", result->runs,
                o.backend == "gpu" ? "GPU" : "emulator", static_cast<unsigned long long>(o.seed), result->seconds);
    const rewriter::PlanTiming& t = result->timing;
    if (t.timed()) {
      std::printf(
          "faster: the fused kernel took %.1f us, the %zu original launches %.1f us (medians of %d runs, "
          "summed over %d argument sets)\n",
          static_cast<double>(t.fused_ns) / 1e3, plan->kernels.size(), static_cast<double>(t.originals_ns) / 1e3,
          t.runs, t.argument_sets);
    } else if (o.backend == "gpu" && !ctx.quiet) {
      std::printf("%s\n", t.not_timed.c_str());
    }
  } else if (result->mismatch) {
    std::printf("FAILED: %s\n", result->mismatch->sentence().c_str());
  } else {
    std::printf("FAILED: %s\n", result->failure.c_str());
  }
  return result->passed ? kExitOk : kExitCheckFailed;
}

}  // namespace

void registerValidateVerbs(CLI::App& app, VerbContext& ctx) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Run a plan's original kernels and its fused kernel on identical inputs and require bit-identical buffers; on "
      "a GPU (--backend gpu) also time both and refuse a fused kernel that is not faster");
  cmd->add_option("plan_dir", o->plan_dir, "Plan directory written by `kfuse rewrite`")->required();
  cmd->add_option("--seed", o->seed, "Seed of the random trials (default 1)");
  cmd->add_option("--trials", o->trials, "Data trials per argument set (default 0: every built-in kind)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--backend", o->backend,
                  "emu (the PTX emulator, default) or gpu (the CUDA driver: the fused kernel and the original "
                  "launches are also timed on each argument set, one warm-up and 5 runs each, and the medians go "
                  "into plan.json; a fused kernel that is not faster fails validation)")
      ->check(CLI::IsMember({"emu", "gpu"}));
  cmd->add_option("--max-instructions", o->max_instructions,
                  "Warp instructions one emulated launch may run before validation fails saying so (a fused kernel "
                  "that never ends; 0: no budget)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->callback([o, &ctx] { ctx.exit_code = runValidate(*o, ctx); });
}

}  // namespace kfuse::cli
