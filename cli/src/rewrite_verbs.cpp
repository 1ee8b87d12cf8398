// `kfuse rewrite` (a candidate of a trace -> a validated plan directory) and `kfuse ptx opt` (a pass pipeline
// over PTX files): thin verbs over the rewriter library.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/core/files.h"
#include "kfuse/core/gpu_spec.h"
#include "kfuse/core/json_reader.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/core/trace_summary.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/rewriter/fusion.h"
#include "kfuse/rewriter/pass.h"
#include "kfuse/rewriter/rewrite.h"
#include "kfuse/rewriter/select.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

namespace fs = std::filesystem;

struct RewriteVerbOptions {
  std::string input;
  std::string out_dir;
  std::string gpu;
  std::string candidate;  // an id or a rank of the report
  std::string report;     // --report FILE
  bool all = false;
  bool no_gain = false;
  double min_saving_pct = 0;
  bool aggressive = false;
  std::string archs;
  std::string binary;
  std::string layout;
  bool no_validate = false;
  uint64_t seed = 1;
  std::string backend = "auto";
};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The report whose candidates `kfuse rewrite` rewrites: --report FILE, else the one `kfuse analyze` stored in the
// trace, else none (the caller analyzes). `source` says which, for the user; `notice` why a stored one was not used.
Expected<std::optional<analyzer::Report>> reportToRewrite(const RewriteVerbOptions& o, std::string& source,
                                                          std::string& notice) {
  if (!o.report.empty()) {
    KFUSE_ASSIGN_OR_RETURN(analyzer::Report r, analyzer::readReportFile(o.report));
    source = o.report;
    return std::optional<analyzer::Report>(std::move(r));
  }
  auto reader = core::TraceReader::open(o.input);
  if (!reader.ok()) return std::optional<analyzer::Report>();  // not a kfuse trace: nothing stored
  auto stored = (*reader)->latestAnalysisReport();
  if (!stored.ok() || !*stored) return std::optional<analyzer::Report>();
  const auto j = core::parseJsonDocument(**stored);
  auto r = !j.ok() ? Expected<analyzer::Report>(badFormat("the stored report: " + j.status().message()))
                   : analyzer::reportFromJson(*j, "the report stored in " + o.input);
  if (!r.ok()) {
    notice = r.status().message();
    return std::optional<analyzer::Report>();
  }
  source = "the report `kfuse analyze` stored in " + o.input;
  return std::optional<analyzer::Report>(std::move(r).value());
}

// The candidate `which` (a rank or an id) of `report`.
const analyzer::Candidate* findCandidate(const analyzer::Report& report, const std::string& which) {
  const bool rank =
      !which.empty() && std::all_of(which.begin(), which.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  for (const analyzer::Candidate& c : report.candidates) {
    if (rank ? std::to_string(c.rank) == which : c.id == which) return &c;
  }
  return nullptr;
}

int runRewrite(const RewriteVerbOptions& o, const VerbContext& ctx) {
  if (o.all == !o.candidate.empty()) {
    std::fprintf(stderr, "kfuse: rewrite: give either --candidate ID|RANK or --all\n");
    return kExitBadInput;
  }
  rewriter::RewriteOptions options;
  options.aggressive = o.aggressive;
  options.archs = splitList(o.archs);
  for (const std::string& a : options.archs) {
    if (a.rfind("sm_", 0) != 0) {
      std::fprintf(stderr, "kfuse: rewrite: --arch %s: expected architectures like sm_80,sm_90\n", a.c_str());
      return kExitBadInput;
    }
  }
  if (o.layout == "block") {
    options.layout = rewriter::HorizontalLayout::kBlockPartitioned;
  } else if (o.layout == "thread") {
    options.layout = rewriter::HorizontalLayout::kThreadPartitioned;
  } else if (!o.layout.empty()) {
    std::fprintf(stderr, "kfuse: rewrite: --layout %s: expected block or thread\n", o.layout.c_str());
    return kExitBadInput;
  }
  options.validate = !o.no_validate;
  options.validation.seed = o.seed;
  options.validation.backend = o.backend == "gpu" ? rewriter::Backend::kGpu : rewriter::Backend::kEmulator;
  // auto: the emulator, then, where a GPU is present, the GPU too, which times the fused kernel (a plan measured no
  // faster fails there and is not injected by `kfuse run`).
  bool also_gpu = false;
  if (o.backend == "auto" && options.validate) {
    const std::string why = rewriter::whyNoGpuTiming();
    also_gpu = why.empty();
    if (!ctx.quiet) {
      std::fprintf(stderr, "kfuse: %s\n",
                   also_gpu ? "a GPU is present: each plan is validated on the emulator, then on the GPU, where the "
                              "fused kernel is timed against the originals"
                            : ("validating on the emulator only; " + why).c_str());
    }
  }
  if (!ctx.quiet) {
    options.progress = [](const std::string& line) { std::fprintf(stderr, "kfuse: %s\n", line.c_str()); };
  }

  // The candidates come from one report, so that a rank or id means what `kfuse analyze` printed.
  std::string source, notice;
  auto loaded = reportToRewrite(o, source, notice);
  if (!loaded) return reportError(loaded.status());
  std::optional<analyzer::Report> report = std::move(loaded).value();
  if (!notice.empty() && !ctx.quiet) std::fprintf(stderr, "kfuse: %s; analyzing again\n", notice.c_str());

  // Without a report, or for another GPU than the report's, analyze now: with the report's options where there is
  // one (ids stay, ranks may move), else with the defaults.
  analyzer::AnalysisOptions analysis;
  analysis.gpu = o.gpu;
  analysis.keep_no_gain = o.no_gain;
  if (report && !o.gpu.empty()) {
    auto spec = core::findGpuSpec(o.gpu);
    if (!spec) return reportError(invalidArgument("unknown GPU '" + o.gpu + "'; `kfuse gpus` lists the known ones"));
    if (spec->short_name != report->gpu.short_name) {
      analysis = report->options;
      analysis.gpu = o.gpu;
      if (!ctx.quiet) {
        std::fprintf(stderr, "kfuse: %s is for %s: analyzing again for %s with the same options\n", source.c_str(),
                     report->gpu.short_name.c_str(), spec->short_name.c_str());
      }
      source = "an analysis for " + spec->short_name + " with the options of " + source;
      report.reset();
    }
  }
  analysis.top = SIZE_MAX;

  analyzer::ImportOptions import_options;
  import_options.binary = !o.binary.empty() ? o.binary : report ? report->options.binary : analysis.binary;
  if (!report) import_options.metrics_from = analysis.metrics_from;  // what the analysis joined
  analysis.binary = import_options.binary;
  options.binary = import_options.binary;
  if (!ctx.quiet) std::fprintf(stderr, "kfuse: importing %s\n", o.input.c_str());
  auto imported = analyzer::importTrace(o.input, import_options);
  if (!imported) return reportError(imported.status());
  if (!import_options.binary.empty() && !ctx.quiet) {
    std::fprintf(stderr, "kfuse: PTX from %s for %zu module(s)\n", import_options.binary.c_str(),
                 imported->ptx_modules_attached);
  }
  if (report && static_cast<size_t>(report->launches) != imported->trace.launches.size()) {
    return reportError(invalidArgument(source + " describes a trace of " + std::to_string(report->launches) +
                                       " launches, and " + o.input + " has " +
                                       std::to_string(imported->trace.launches.size()) +
                                       ": it was made from another trace (run `kfuse analyze " + o.input + "`)"));
  }
  if (!report) {
    auto fresh = analyzer::analyze(*imported, o.input, analysis);
    if (!fresh) return reportError(fresh.status());
    report = std::move(fresh).value();
    if (source.empty()) {
      source = "an analysis run now with the default options" + std::string(o.no_gain ? " and --all" : "") +
               " (no report stored in the trace: `kfuse analyze` stores one, or pass --report FILE)";
    }
  }
  if (!ctx.quiet) std::fprintf(stderr, "kfuse: candidates from %s\n", source.c_str());

  std::vector<const analyzer::Candidate*> chosen;
  if (o.all) {
    const rewriter::Selection sel = rewriter::chooseConsistentSet(report->candidates, o.min_saving_pct / 100.0);
    if (!ctx.quiet) {
      std::fprintf(stderr, "kfuse: %zu of %zu candidates chosen (%s selection, %s predicted in total)\n",
                   sel.chosen.size(), report->candidates.size(), sel.method.c_str(),
                   core::formatDuration(static_cast<int64_t>(sel.total_saving_ns)).c_str());
      for (const auto& [rank, why] : sel.rejected)
        std::fprintf(stderr, "kfuse:   #%d not rewritten: %s\n", rank, why.c_str());
    }
    for (int rank : sel.chosen) {
      for (const analyzer::Candidate& c : report->candidates) {
        if (c.rank == rank) chosen.push_back(&c);
      }
    }
    if (chosen.empty()) {
      const size_t losing = report->proven_no_gain.size();
      if (losing > 0) {
        std::fprintf(stderr,
                     "kfuse: %s: no proven candidate that pays to rewrite: %zu proven candidate%s predicted to save "
                     "nothing (`kfuse analyze --all` says why; `kfuse rewrite --no-gain --candidate ID` writes one "
                     "anyway)\n",
                     o.input.c_str(), losing, losing == 1 ? " is" : "s are");
      } else {
        std::fprintf(stderr, "kfuse: %s: no proven candidate to rewrite\n", o.input.c_str());
      }
      return kExitNothingToDo;
    }
  } else {
    const analyzer::Candidate* c = findCandidate(*report, o.candidate);
    if (!c) {
      std::fprintf(stderr, "kfuse: %s: no candidate %s in %s (it has %zu%s; `kfuse analyze` lists them)\n",
                   o.input.c_str(), o.candidate.c_str(), source.c_str(), report->candidates.size(),
                   report->options.keep_no_gain ? "" : ", without those predicted to save nothing (--all lists them)");
      return kExitBadInput;
    }
    chosen.push_back(c);
  }

  int exit_code = kExitOk;
  for (const analyzer::Candidate* c : chosen) {
    const int rank = c->rank;
    const std::string dir = o.all ? (fs::path(o.out_dir) / ("candidate-" + std::to_string(rank))).string() : o.out_dir;
    if (o.all) {
      std::error_code ec;
      fs::create_directories(o.out_dir, ec);
    }
    if (!ctx.quiet)
      std::fprintf(stderr, "kfuse: rewriting candidate %d (%s) into %s\n", rank, c->id.c_str(), dir.c_str());
    rewriter::RewriteDiagnostics diag;
    auto plan = rewriter::rewriteCandidate(*imported, *report, *c, options, dir, &diag);
    if (!plan) {
      const int code = reportError(plan.status().withContext("candidate " + std::to_string(rank)));
      if (!o.all) return code;
      exit_code = std::max(exit_code, code);
      continue;
    }
    if (also_gpu && plan->validation.emulator == rewriter::ValidationVerdict::kPassed) {
      rewriter::ValidationOptions gpu = options.validation;
      gpu.backend = rewriter::Backend::kGpu;
      gpu.progress = options.progress;
      auto result = rewriter::validatePlan(*plan, dir, gpu);
      if (!result.ok()) {
        exit_code = std::max(exit_code, reportError(result.status().withContext("candidate " + std::to_string(rank))));
        continue;
      }
      rewriter::recordValidation(plan->validation, gpu, *result);
      if (Status s = rewriter::writePlan(dir, *plan); !s.ok()) return reportError(s);
      (void)rewriter::recordValidationInTrace(plan->source_trace, *plan, dir, rewriter::Backend::kGpu);
    }
    using rewriter::ValidationVerdict;
    const bool failed =
        plan->validation.emulator == ValidationVerdict::kFailed || plan->validation.gpu == ValidationVerdict::kFailed;
    std::printf("candidate %d (%s): %s fusion -> %s/%s (%s), validation: %s%s\n", rank, c->id.c_str(),
                core::fusionDirection(plan->fusion), dir.c_str(), plan->fused.ptx_file.c_str(),
                plan->fused.name.c_str(),
                o.no_validate                    ? "skipped"
                : o.backend == "gpu" || also_gpu ? core::enumName(plan->validation.gpu)
                                                 : core::enumName(plan->validation.emulator),
                failed ? (" — " + plan->validation.mismatch).c_str() : "");
    if (failed) exit_code = std::max(exit_code, kExitCheckFailed);
  }
  return exit_code;
}

struct OptVerbOptions {
  std::vector<std::string> inputs;
  std::string passes;
  std::string out;
  bool list = false;
};

int runOpt(const OptVerbOptions& o, const VerbContext& ctx) {
  if (o.list) {
    for (const rewriter::PassInfo& p : rewriter::passRegistry()) {
      std::printf("%s\n  %s\n  options: %s\n", p.name.c_str(), p.description.c_str(), p.options_help.c_str());
    }
    return kExitOk;
  }
  if (o.inputs.empty() || o.passes.empty()) {
    std::fprintf(stderr, "kfuse: ptx opt: give PTX file(s) and --passes=PIPELINE (--list shows the passes)\n");
    return kExitBadInput;
  }
  auto pm = rewriter::PassManager::fromPipeline(o.passes);
  if (!pm) return reportError(pm.status());
  std::vector<ptx::Module> modules;
  for (const std::string& path : o.inputs) {
    auto m = ptx::parseFile(path);
    if (!m) return reportError(m.status());
    modules.push_back(std::move(m).value());
  }
  ptx::Module module;
  if (modules.size() == 1) {
    module = std::move(modules.front());
  } else {
    std::vector<rewriter::Rename> renames;
    auto merged = rewriter::mergeModules(modules, &renames);
    if (!merged) return reportError(merged.status());
    module = std::move(merged).value();
    for (const rewriter::Rename& r : renames) {
      std::fprintf(stderr, "kfuse: merge: %s of %s is now %s\n", r.from.c_str(), o.inputs[r.module].c_str(),
                   r.to.c_str());
    }
  }
  Status s = pm->run(module);
  for (const std::string& line : pm->log().lines) {
    if (!ctx.quiet) std::fprintf(stderr, "kfuse: %s\n", line.c_str());
  }
  if (!s.ok()) return reportError(s);
  const std::string text = ptx::printModule(module);
  if (o.out.empty() || o.out == "-") {
    std::cout << text;
    return kExitOk;
  }
  if (Status w = core::writeFileAtomically(o.out, text); !w.ok()) return reportError(w);
  return kExitOk;
}

}  // namespace

void registerRewriteVerbs(CLI::App& app, VerbContext& ctx) {
  auto ro = std::make_shared<RewriteVerbOptions>();
  CLI::App* rw = app.add_subcommand(
      "rewrite", "Write a fused kernel and a plan for a proven candidate, compile it with ptxas and validate it");
  rw->add_option("trace", ro->input,
                 "The kfuse trace (SQLite/JSON) the candidates come from; the PTX comes from its "
                 "module images")
      ->required();
  rw->add_option("--candidate", ro->candidate,
                 "The candidate's id (k0123456789) or rank in the report: the one `kfuse analyze` stored in the "
                 "trace, or --report");
  rw->add_option("--report", ro->report,
                 "The report to take candidates from (`kfuse analyze --json` output of this trace); default: the one "
                 "`kfuse analyze` stored in the trace, else an analysis now with the default options");
  rw->add_flag("--all", ro->all, "Rewrite the best consistent set of proven candidates (one directory each)");
  rw->add_flag("--no-gain", ro->no_gain,
               "Where no report is stored: analyze as `kfuse analyze --all` does, with the candidates predicted to "
               "save no time (traces without GPU times, such as the emulator's, often predict none)");
  rw->add_option("--min-saving", ro->min_saving_pct, "With --all: skip candidates saving less than PCT % of GPU time");
  rw->add_option("-o,--output", ro->out_dir, "Plan directory (with --all: one candidate-RANK directory under it)")
      ->required()
      ->check(outputPath());
  rw->add_flag("--aggressive", ro->aggressive,
               "Drop stores of intermediates the trace shows are overwritten before anything reads them");
  rw->add_option("--arch", ro->archs, "Also compile for these architectures, e.g. sm_80,sm_90,sm_100");
  rw->add_option("--binary", ro->binary,
                 "Take PTX from this application's fatbin when the trace has no images (default: the binary the "
                 "report's analysis used)");
  rw->add_option("--layout", ro->layout, "Horizontal layout: block or thread (default: the one predicted faster)");
  rw->add_option("--gpu", ro->gpu,
                 "GPU to cost for (`kfuse gpus`); default: the report's. Another GPU than the report's analyzes "
                 "again with the report's options");
  rw->add_flag("--no-validate", ro->no_validate, "Skip validation (run `kfuse validate` later)");
  rw->add_option("--backend", ro->backend,
                 "Validate on auto (default: the PTX emulator, then the GPU too where one is present), emu (the "
                 "emulator only) or gpu (the CUDA driver only). On a GPU the fused kernel is also timed against the "
                 "originals, as `kfuse validate --backend gpu` does, and a plan measured no faster fails")
      ->check(CLI::IsMember({"auto", "emu", "gpu"}))
      ->capture_default_str();
  rw->add_option("--seed", ro->seed, "Seed of the validation's random inputs");
  rw->callback([ro, &ctx] { ctx.exit_code = runRewrite(*ro, ctx); });

  auto oo = std::make_shared<OptVerbOptions>();
  CLI::App* ptx = app.get_subcommand("ptx");
  CLI::App* opt = ptx->add_subcommand(
      "opt", "Run a pipeline of rewriter passes on PTX files (several files are merged into one module first)");
  opt->add_option("files", oo->inputs, "PTX files");
  opt->add_option("--passes", oo->passes,
                  "Pipeline: pass{key=value,...},pass2 (e.g. fuse-vertical{kernels=a+b,name=f},cleanup)");
  opt->add_option("-o,--output", oo->out, "Output PTX file (default: stdout)")->check(outputPath());
  opt->add_flag("--list", oo->list, "List the passes and their options");
  opt->callback([oo, &ctx] { ctx.exit_code = runOpt(*oo, ctx); });
}

}  // namespace kfuse::cli
