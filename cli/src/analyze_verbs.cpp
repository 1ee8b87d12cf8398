// `kfuse analyze`: import any supported trace, find fusion candidates, print and write the report.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/analyzer/multi_rank.h"
#include "kfuse/core/files.h"
#include "kfuse/core/text.h"
#include "kfuse/core/trace_store.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> inputs;  // one trace; several (or a directory): the ranks of one job
  std::string input;
  std::string format;
  std::string gpu;
  size_t top = 10;
  size_t max_chain = 4;
  size_t max_group = 8;
  std::string json_out, md_out, html_out;
  std::string metrics_from;
  std::string execution_trace;
  std::string binary;
  bool no_store = false;
  bool all = false;
  bool verbose = false;
};

Status writeText(const std::string& path, const std::string& text) {
  return core::writeFileAtomically(path, text);
}

// A merged multi-rank report: the text on stdout, and the JSON, Markdown and HTML files asked for.
int writeMultiRank(const analyzer::MultiRankReport& report, size_t top, const std::string& json_out,
                   const std::string& md_out, const std::string& html_out, const VerbContext& ctx) {
  std::cout << analyzer::multiRankToText(report, top);
  const std::pair<const std::string&, std::function<std::string()>> outputs[] = {
      {json_out, [&] { return analyzer::multiRankToJson(report).dump(2) + "\n"; }},
      {md_out, [&] { return analyzer::multiRankToMarkdown(report, top); }},
      {html_out, [&] { return analyzer::multiRankToHtml(report, top); }}};
  for (const auto& [path, text] : outputs) {
    if (path.empty()) continue;
    if (Status s = writeText(path, text()); !s.ok()) return reportError(s);
    if (!ctx.quiet) std::fprintf(stderr, "kfuse: wrote %s\n", path.c_str());
  }
  return kExitOk;
}

// Several traces (or a directory of them): the ranks of one job, analyzed in parallel and merged by pattern.
int runMultiRank(const AnalyzeOptions& o, const VerbContext& ctx) {
  auto paths = analyzer::expandRankInputs(o.inputs);
  if (!paths) return reportError(paths.status(), kExitBadInput);
  if (!o.metrics_from.empty() || !o.execution_trace.empty()) {
    return reportError(invalidArgument("--metrics-from and --et take one trace, not several ranks"), kExitBadInput);
  }
  if (!ctx.quiet) std::fprintf(stderr, "kfuse: analyzing %zu ranks in parallel\n", paths->size());
  analyzer::AnalysisOptions options;
  options.gpu = o.gpu;
  options.top = o.top;
  options.keep_no_gain = o.all;
  options.max_chain_length = std::max<size_t>(2, o.max_chain);
  options.max_group = std::max<size_t>(2, o.max_group);
  auto report = analyzer::analyzeRanks(*paths, options);
  if (!report) return reportError(report.status(), kExitBadInput);
  return writeMultiRank(*report, o.top, o.json_out, o.md_out, o.html_out, ctx);
}

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string json_out, md_out, html_out;
  size_t top = 10;
};

// The reduce step of a multi-rank analysis: rank reports written by `kfuse analyze RANK --json`, merged by pattern.
int runMerge(const MergeOptions& o, const VerbContext& ctx) {
  std::function<void(size_t, size_t)> progress;
  if (!ctx.quiet) {
    progress = [last = std::chrono::steady_clock::now()](size_t done, size_t total) mutable {
      const auto now = std::chrono::steady_clock::now();
      if (done == total || now - last > std::chrono::seconds(3)) {
        last = now;
        std::fprintf(stderr, "kfuse: merged %zu of %zu rank reports\n", done, total);
      }
    };
  }
  auto report = analyzer::mergeRankReports(o.inputs, progress);
  if (!report) return reportError(report.status(), kExitBadInput);
  if (const int code = writeMultiRank(*report, o.top, o.json_out, o.md_out, o.html_out, ctx); code != kExitOk) {
    return code;
  }
  if (!report->left_out.empty()) {
    std::fprintf(stderr, "kfuse: %zu of %zu rank reports left out (listed above)\n", report->left_out.size(),
                 report->left_out.size() + report->ranks.size());
  }
  return kExitOk;
}

int runAnalyze(const AnalyzeOptions& o, const VerbContext& ctx) {
  if (!ctx.quiet) std::fprintf(stderr, "kfuse: importing %s\n", o.input.c_str());
  analyzer::ImportOptions import_options;
  import_options.format = o.format;
  if (!ctx.quiet) {
    // Large traces take tens of seconds to read: say how far it got, every few seconds.
    import_options.progress = [path = o.input, ticks = 0](uint64_t bytes, uint64_t events) mutable {
      if (++ticks % 3 == 0) {
        std::fprintf(stderr, "kfuse: %s: %.0f MiB of JSON read, %.1fM events\n", path.c_str(),
                     static_cast<double>(bytes) / (1 << 20), static_cast<double>(events) / 1e6);
      }
    };
  }
  import_options.binary = o.binary;
  import_options.metrics_from = o.metrics_from;
  auto imported = analyzer::importTrace(o.input, import_options);
  if (!imported) {
    const bool no_kernels = imported.status().code() == ErrorCode::kNotFound &&
                            imported.status().message().find(analyzer::kNoKernelsMessage) != std::string::npos;
    return reportError(imported.status(), no_kernels ? kExitNothingToDo : kExitBadInput);
  }
  if (!ctx.quiet) {
    if (!o.binary.empty()) {
      std::fprintf(stderr, "kfuse: PTX from %s for %zu module(s)\n", o.binary.c_str(), imported->ptx_modules_attached);
    }
    if (!o.metrics_from.empty()) {
      std::fprintf(stderr, "kfuse: measured metrics from %s for %lld of %zu launches\n", o.metrics_from.c_str(),
                   static_cast<long long>(imported->metrics_launches_matched), imported->trace.launches.size());
    }
    std::fprintf(stderr, "kfuse: %s trace: %zu launches; analyzing\n", imported->format.c_str(),
                 imported->trace.launches.size());
  }
  analyzer::AnalysisOptions options;
  options.gpu = o.gpu;
  options.top = o.top;
  options.keep_no_gain = o.all;
  options.max_chain_length = std::max<size_t>(2, o.max_chain);
  options.execution_trace = o.execution_trace;
  options.max_group = std::max<size_t>(2, o.max_group);
  options.metrics_from = o.metrics_from;
  options.binary = o.binary;
  auto report = analyzer::analyze(*imported, o.input, options);
  if (!report) return reportError(report.status());

  std::cout << analyzer::reportToText(*report, o.top, o.verbose);
  const nlohmann::json json = analyzer::reportToJson(*report);
  struct Output {
    const std::string& path;
    std::string text;
  };
  for (const Output& out : {Output{o.json_out, o.json_out.empty() ? "" : core::dumpJson(json, 2) + "\n"},
                            Output{o.md_out, o.md_out.empty() ? "" : analyzer::reportToMarkdown(*report)},
                            Output{o.html_out, o.html_out.empty() ? "" : analyzer::reportToHtml(*report)}}) {
    if (out.path.empty()) continue;
    if (Status s = writeText(out.path, out.text); !s.ok()) return reportError(s);
    if (!ctx.quiet) std::fprintf(stderr, "kfuse: wrote %s\n", out.path.c_str());
  }
  if (imported->format == "kfuse" && !o.no_store) {
    auto stored = core::storeAnalysisReport(o.input, report->gpu.short_name, core::dumpJson(json));
    if (!stored) {
      // The report was printed and written; failing to keep a copy in the trace is worth a warning only.
      std::fprintf(stderr, "kfuse: warning: report not stored in the trace: %s\n", stored.status().message().c_str());
    } else if (!ctx.quiet) {
      std::fprintf(stderr, "kfuse: report stored in %s (analysis %lld)\n", o.input.c_str(),
                   static_cast<long long>(*stored));
    }
  }
  return kExitOk;
}

}  // namespace

void registerAnalyzeVerbs(CLI::App& app, VerbContext& ctx) {
  auto o = std::make_shared<AnalyzeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "analyze",
      "Find kernels worth fusing in a trace: kfuse trace (.sqlite), PyTorch profiler / Kineto JSON (.json, .json.gz) "
      "or Nsight Systems SQLite export. Prints ranked candidates with legality, confidence and predicted saving");
  cmd->add_option("input", o->inputs,
                  "Trace to analyze; several traces or a directory: the ranks of one job, analyzed in parallel and "
                  "merged by pattern")
      ->required();
  cmd->add_option("--gpu", o->gpu, "GPU to cost for (`kfuse gpus` lists names); default: the trace's device");
  cmd->add_option("--top", o->top, "Candidates to print")->capture_default_str();
  cmd->add_option("--max-chain", o->max_chain, "Longest vertical chain to propose")->capture_default_str();
  cmd->add_option("--max-group", o->max_group,
                  "Most independent kernels in one horizontal group (the cost model picks the best prefix)")
      ->capture_default_str();
  cmd->add_option("--json", o->json_out, "Also write the report as JSON (schemas/report.schema.json)")
      ->check(outputPath());
  cmd->add_option("--md", o->md_out, "Also write the report as Markdown")->check(outputPath());
  cmd->add_option("--html", o->html_out, "Also write a self-contained HTML report with a roofline chart")
      ->check(outputPath());
  cmd->add_option("--format", o->format, "Input format instead of sniffing: kfuse, kfuse-json, kineto, nsys");
  cmd->add_option("--metrics-from", o->metrics_from,
                  "A kfuse trace of the same program recorded with `kfuse record --metrics`: its measured DRAM bytes "
                  "and FLOPs are joined onto this trace's launches (same kernel, same position, same shape)");
  cmd->add_option("--et", o->execution_trace,
                  "A PyTorch Execution Trace (ExecutionTraceObserver JSON, .json or .json.gz) of the same run as a "
                  "Kineto trace: tensor-level RAW/WAR/WAW edges per storage instead of edges inferred from shapes");
  cmd->add_option("--binary", o->binary,
                  "An application binary (executable, shared library or fatbin) whose embedded PTX stands in for "
                  "module images the trace lacks, so legality can be proven from it");
  cmd->add_flag("--no-store", o->no_store,
                "Do not store the report in the kfuse trace (`kfuse rewrite` takes its candidates from the stored "
                "report)");
  cmd->add_flag("-v,--verbose", o->verbose,
                "Every reason behind each verdict, full kernel names, and a per-kernel table (time, bytes, FLOPs, "
                "intensity, share of roof)");
  cmd->add_flag("--all", o->all,
                "List every fusable pattern with its legality, also those predicted to save no time (by default "
                "they are only counted)");
  cmd->callback([o, &ctx] {
    std::error_code ec;
    if (o->inputs.size() > 1 || std::filesystem::is_directory(o->inputs.front(), ec)) {
      ctx.exit_code = runMultiRank(*o, ctx);
      return;
    }
    o->input = o->inputs.front();
    ctx.exit_code = runAnalyze(*o, ctx);
  });

  auto m = std::make_shared<MergeOptions>();
  CLI::App* merge = app.add_subcommand(
      "merge",
      "Merge the reports of a distributed job's ranks (each written by `kfuse analyze RANK --json FILE`, anywhere: "
      "a Slurm job array, xargs -P) by pattern, as `kfuse analyze` does with several traces in one process: "
      "savings summed, per-rank shares, straggler ranks named. Reports are read one at a time; a missing or "
      "unreadable one is left out and said");
  merge->add_option("reports", m->inputs, "Rank reports (.json), or directories of them")->required();
  merge->add_option("-o,--json", m->json_out, "Write the merged report as JSON (kfuse-multi-rank-report)")
      ->check(outputPath());
  merge->add_option("--md", m->md_out, "Also write the merged report as Markdown")->check(outputPath());
  merge->add_option("--html", m->html_out, "Also write the merged report as a self-contained HTML page")
      ->check(outputPath());
  merge->add_option("--top", m->top, "Merged recommendations to print (and to write as Markdown or HTML)")
      ->capture_default_str();
  merge->callback([m, &ctx] { ctx.exit_code = runMerge(*m, ctx); });
}

}  // namespace kfuse::cli
