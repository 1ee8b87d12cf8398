// Verbs over stored traces: info, export (SQLite -> JSON, or any input -> Chrome trace JSON), import (JSON ->
// SQLite).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "kfuse/analyzer/chrome_trace.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/core/text.h"
#include "kfuse/core/trace_json.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/core/trace_summary.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

struct InfoOptions {
  std::string trace;
  bool json = false;
  size_t top = 10;
};

int runInfo(const InfoOptions& o) {
  auto reader = core::TraceReader::open(o.trace);
  if (!reader) return reportError(reader.status());
  auto summary = core::summarizeTrace(**reader, o.top);
  if (!summary) return reportError(summary.status());
  if (o.json) {
    std::cout << core::dumpJson(core::toJson(*summary), 2) << '\n';
  } else {
    std::cout << core::formatSummary(*summary);
  }
  return kExitOk;
}

struct ExportOptions {
  std::string trace;
  std::string output;
  std::string chrome;
  std::string gpu;
  bool no_candidates = false;
};

// --chrome: any input analyze reads, with the candidates of its analysis.
int runChromeExport(const ExportOptions& o, const VerbContext& ctx) {
  auto imported = analyzer::importTrace(o.trace);
  if (!imported) return reportError(imported.status());
  std::optional<analyzer::Report> report;
  if (!o.no_candidates) {
    analyzer::AnalysisOptions options;
    options.gpu = o.gpu;
    auto r = analyzer::analyze(*imported, o.trace, options);
    if (r) {
      report = std::move(*r);
    } else if (!ctx.quiet) {
      std::fprintf(stderr, "kfuse: %s: no candidates in the export: %s\n", o.trace.c_str(),
                   r.status().message().c_str());
    }
  }
  const nlohmann::json out = analyzer::toChromeTrace(imported->trace, report ? &*report : nullptr, o.trace);
  const std::string text = core::dumpJson(out) + "\n";
  if (o.chrome == "-") {
    std::cout << text;
    return kExitOk;
  }
  std::ofstream f(o.chrome, std::ios::binary | std::ios::trunc);
  if (!f || !(f << text) || !f.flush()) return reportError(ioError(o.chrome + ": cannot write"));
  if (!ctx.quiet) {
    std::fprintf(stderr, "kfuse: wrote %s (%zu events; open it in https://ui.perfetto.dev or chrome://tracing)\n",
                 o.chrome.c_str(), out["traceEvents"].size());
  }
  return kExitOk;
}

int runExport(const ExportOptions& o, const VerbContext& ctx) {
  if (!o.chrome.empty()) return runChromeExport(o, ctx);
  if (o.output.empty()) return reportError(invalidArgument("export: give -o FILE.json (kfuse JSON) or --chrome FILE"));
  auto reader = core::TraceReader::open(o.trace);
  if (!reader) return reportError(reader.status());
  auto trace = (*reader)->readAll();
  if (!trace) return reportError(trace.status());
  if (o.output == "-") {
    std::cout << core::dumpJson(core::traceToJson(*trace), 1) << '\n';
    return kExitOk;
  }
  if (Status s = core::writeTraceJsonFile(*trace, o.output); !s.ok()) return reportError(s);
  if (!ctx.quiet) {
    std::fprintf(stderr, "kfuse: wrote %s (%zu launches, %zu kernels)\n", o.output.c_str(), trace->launches.size(),
                 trace->functions.size());
  }
  return kExitOk;
}

struct ImportOptions {
  std::string input;
  std::string output;
  bool force = false;
};

int runImport(const ImportOptions& o, const VerbContext& ctx) {
  auto trace = core::readTraceJsonFile(o.input);
  if (!trace) return reportError(trace.status());
  std::error_code ec;
  if (!o.force && std::filesystem::exists(o.output, ec)) {
    return reportError(invalidArgument(o.output + ": already exists; pass --force to replace it"));
  }
  auto writer = core::TraceWriter::create(o.output, {.overwrite = o.force});
  if (!writer) return reportError(writer.status());
  Status s = (*writer)->write(*trace);
  if (s.ok()) s = (*writer)->close();
  if (!s.ok()) {
    writer->reset();
    // A half-written trace is worse than none.
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(o.output + suffix, ec);
    return reportError(s);
  }
  if (!ctx.quiet) {
    std::fprintf(stderr, "kfuse: wrote %s (%zu launches, %zu kernels)\n", o.output.c_str(), trace->launches.size(),
                 trace->functions.size());
  }
  return kExitOk;
}

}  // namespace

void registerTraceVerbs(CLI::App& app, VerbContext& ctx) {
  auto info = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Summarize a kfuse trace: devices, counts, time span, top kernels");
  cmd->add_option("trace", info->trace, "kfuse trace (.sqlite)")->required();
  cmd->add_flag("--json", info->json, "Print machine-readable JSON (schemas/info.schema.json)");
  cmd->add_option("--top", info->top, "Number of kernels to list by GPU time")->capture_default_str();
  cmd->callback([info, &ctx] { ctx.exit_code = runInfo(*info); });

  auto exp = std::make_shared<ExportOptions>();
  cmd = app.add_subcommand("export",
                           "Write a kfuse trace as JSON (schemas/trace.schema.json), or any trace analyze reads as a "
                           "Chrome trace for Perfetto UI with its fusion candidates (--chrome)");
  cmd->add_option("trace", exp->trace,
                  "kfuse trace (.sqlite); with --chrome also Kineto JSON or an Nsight Systems "
                  "SQLite export")
      ->required();
  cmd->add_option("-o,--output", exp->output, "Output JSON file, '-' for stdout")->check(outputPath());
  cmd->add_option("--chrome", exp->chrome,
                  "Write Chrome trace JSON (Trace Event Format) there instead, '-' for stdout: GPUs as processes, "
                  "streams as tracks, kernels/copies/sets, NVTX ranges, candidates as flows and annotated slices")
      ->check(outputPath());
  cmd->add_option("--gpu", exp->gpu, "With --chrome: the GPU the candidates' savings are predicted for");
  cmd->add_flag("--no-candidates", exp->no_candidates, "With --chrome: leave out the analysis");
  cmd->callback([exp, &ctx] { ctx.exit_code = runExport(*exp, ctx); });

  auto imp = std::make_shared<ImportOptions>();
  cmd = app.add_subcommand("import", "Build a kfuse trace from its JSON form");
  cmd->add_option("json", imp->input, "Trace JSON (as written by `kfuse export`)")->required();
  cmd->add_option("-o,--output", imp->output, "Output kfuse trace (.sqlite)")->required()->check(outputPath());
  cmd->add_flag("-f,--force", imp->force, "Replace the output if it exists");
  cmd->callback([imp, &ctx] { ctx.exit_code = runImport(*imp, ctx); });
}

}  // namespace kfuse::cli
