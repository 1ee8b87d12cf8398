// `kfuse rewrite` (a candidate of a trace -> a validated plan directory) and `kfuse ptx opt` (a pass pipeline
// over PTX files): thin verbs over the rewriter library.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
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
  int candidate = 0;
  bool all = false;
  bool no_gain = false;
  double min_saving_pct = 0;
  bool aggressive = false;
  std::string archs;
  std::string binary;
  std::string layout;
  bool no_validate = false;
  uint64_t seed = 1;
};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string formatNs(double ns) {
  char buf[64];
  if (ns >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  } else if (ns >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  }
  return buf;
}

int runRewrite(const RewriteVerbOptions& o, const VerbContext& ctx) {
  if (o.all == (o.candidate > 0)) {
    std::fprintf(stderr, "kfuse: rewrite: give either --candidate RANK or --all\n");
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
  options.binary = o.binary;
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
  if (!ctx.quiet) {
    options.progress = [](const std::string& line) { std::fprintf(stderr, "kfuse: %s\n", line.c_str()); };
  }

  if (!ctx.quiet) std::fprintf(stderr, "kfuse: importing %s\n", o.input.c_str());
  auto imported = analyzer::importTrace(o.input);
  if (!imported) return reportError(imported.status());
  if (!o.binary.empty()) {
    auto attached = rewriter::attachPtxFromBinary(imported->trace, o.binary);
    if (!attached) return reportError(attached.status());
    if (!ctx.quiet) std::fprintf(stderr, "kfuse: PTX from %s for %zu module(s)\n", o.binary.c_str(), *attached);
  }
  analyzer::AnalysisOptions analysis;
  analysis.gpu = o.gpu;
  analysis.top = SIZE_MAX;
  analysis.keep_no_gain = o.no_gain;
  auto report = analyzer::analyze(*imported, o.input, analysis);
  if (!report) return reportError(report.status());

  std::vector<int> ranks;
  if (o.all) {
    const rewriter::Selection sel = rewriter::chooseConsistentSet(report->candidates, o.min_saving_pct / 100.0);
    if (!ctx.quiet) {
      std::fprintf(stderr, "kfuse: %zu of %zu candidates chosen (%s selection, %s predicted in total)\n",
                   sel.chosen.size(), report->candidates.size(), sel.method.c_str(),
                   formatNs(sel.total_saving_ns).c_str());
      for (const auto& [rank, why] : sel.rejected) std::fprintf(stderr, "kfuse:   #%d not rewritten: %s\n", rank, why.c_str());
    }
    ranks = sel.chosen;
    if (ranks.empty()) {
      std::fprintf(stderr, "kfuse: %s: no proven candidate to rewrite\n", o.input.c_str());
      return kExitNothingToDo;
    }
  } else {
    ranks = {o.candidate};
  }

  int exit_code = kExitOk;
  for (int rank : ranks) {
    const analyzer::Candidate* c = nullptr;
    for (const analyzer::Candidate& x : report->candidates) {
      if (x.rank == rank) c = &x;
    }
    if (!c) {
      std::fprintf(stderr, "kfuse: %s: no candidate %d (the report has %zu; `kfuse analyze` lists them)\n",
                   o.input.c_str(), rank, report->candidates.size());
      return kExitBadInput;
    }
    const std::string dir = o.all ? (fs::path(o.out_dir) / ("candidate-" + std::to_string(rank))).string() : o.out_dir;
    if (o.all) {
      std::error_code ec;
      fs::create_directories(o.out_dir, ec);
    }
    if (!ctx.quiet) std::fprintf(stderr, "kfuse: rewriting candidate %d into %s\n", rank, dir.c_str());
    rewriter::RewriteDiagnostics diag;
    auto plan = rewriter::rewriteCandidate(*imported, *report, *c, options, dir, &diag);
    if (!plan) {
      const int code = reportError(plan.status().withContext("candidate " + std::to_string(rank)));
      if (!o.all) return code;
      exit_code = std::max(exit_code, code);
      continue;
    }
    const bool failed = plan->validation.emulator == "failed" || plan->validation.gpu == "failed";
    std::printf("candidate %d: %s fusion -> %s/%s (%s), validation: %s%s\n", rank, plan->kind.c_str(), dir.c_str(),
                plan->fused.ptx_file.c_str(), plan->fused.name.c_str(),
                o.no_validate ? "skipped" : plan->validation.emulator.c_str(),
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
  const std::string tmp = o.out + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return reportError(ioError(o.out + ": cannot write"));
  }
  std::error_code ec;
  fs::rename(tmp, o.out, ec);
  if (ec) return reportError(ioError(o.out + ": " + ec.message()));
  return kExitOk;
}

}  // namespace

void registerRewriteVerbs(CLI::App& app, VerbContext& ctx) {
  auto ro = std::make_shared<RewriteVerbOptions>();
  CLI::App* rw = app.add_subcommand(
      "rewrite", "Write a fused kernel and a plan for a proven candidate, compile it with ptxas and validate it");
  rw->add_option("trace", ro->input, "Trace to analyze (kfuse SQLite/JSON; the PTX comes from its module images)")
      ->required();
  rw->add_option("--candidate", ro->candidate, "Rank of the candidate in `kfuse analyze`'s list");
  rw->add_flag("--all", ro->all, "Rewrite the best consistent set of proven candidates (one directory each)");
  rw->add_flag("--no-gain", ro->no_gain,
               "Rank candidates as `kfuse analyze --all` does, with those predicted to save no time (traces without "
               "GPU times, such as the emulator's, often predict none)");
  rw->add_option("--min-saving", ro->min_saving_pct, "With --all: skip candidates saving less than PCT % of GPU time");
  rw->add_option("-o,--output", ro->out_dir, "Plan directory (with --all: one candidate-RANK directory under it)")
      ->required()
      ->check(outputPath());
  rw->add_flag("--aggressive", ro->aggressive,
               "Drop stores of intermediates the trace shows are overwritten before anything reads them");
  rw->add_option("--arch", ro->archs, "Also compile for these architectures, e.g. sm_80,sm_90,sm_100");
  rw->add_option("--binary", ro->binary, "Take PTX from this application's fatbin when the trace has no images");
  rw->add_option("--layout", ro->layout, "Horizontal layout: block or thread (default: the one predicted faster)");
  rw->add_option("--gpu", ro->gpu, "GPU to cost for (`kfuse gpus`); default: the trace's");
  rw->add_flag("--no-validate", ro->no_validate, "Skip validation on the emulator (run `kfuse validate` later)");
  rw->add_option("--seed", ro->seed, "Seed of the validation's random inputs");
  rw->callback([ro, &ctx] { ctx.exit_code = runRewrite(*ro, ctx); });

  auto oo = std::make_shared<OptVerbOptions>();
  CLI::App* ptx = app.get_subcommand("ptx");
  CLI::App* opt = ptx->add_subcommand(
      "opt", "Run a pipeline of rewriter passes on PTX files (several files are merged into one module first)");
  opt->add_option("files", oo->inputs, "PTX files");
  opt->add_option("--passes", oo->passes,
                  "Pipeline: pass{key=value,...},pass2 (e.g. fuse-vertical{kernels=a+b,name=f},cleanup)");
  opt->add_option("-o,--output", oo->out, "Output PTX file (default: stdout)")
      ->check(outputPath());
  opt->add_flag("--list", oo->list, "List the passes and their options");
  opt->callback([oo, &ctx] { ctx.exit_code = runOpt(*oo, ctx); });
}

}  // namespace kfuse::cli
