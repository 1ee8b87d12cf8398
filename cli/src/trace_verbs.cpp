// Verbs over stored traces: info, export (SQLite -> JSON, or any input -> Chrome trace JSON), import (JSON ->
// SQLite), compare (two recordings of one program, before and after `kfuse run`).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfuse/analyzer/chrome_trace.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/core/text.h"
#include "kfuse/core/trace_json.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/core/trace_summary.h"
#include "kfuse/rewriter/compare.h"
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

// Left-aligned text columns, two spaces apart.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void addRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const {
    std::vector<size_t> width;
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

struct CompareOptions {
  std::string before, after;
  bool json = false;
};

// A duration in microseconds, or "n/a" when the side has none.
std::string micros(const rewriter::SideFigures& f, int64_t ns) {
  if (!f.hasTime() || ns == core::kNoTime) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ns) / 1e3);
  return buf;
}

std::string delta(int64_t before, int64_t after) {
  const int64_t d = after - before;
  std::string s = (d > 0 ? "+" : "") + std::to_string(d);
  if (before > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%+.1f%%)", 100.0 * static_cast<double>(d) / static_cast<double>(before));
    s += buf;
  } else if (after > 0) {
    s += " (new)";
  }
  return s;
}

nlohmann::json sideJson(const rewriter::SideFigures& f) {
  nlohmann::json j{{"count", f.count}, {"timed", f.timed}};
  if (f.hasTime()) {
    j["total_ns"] = f.total_ns;
    j["median_ns"] = f.median_ns;
  }
  return j;
}

int runCompare(const CompareOptions& o) {
  auto import = [](const char* side, const std::string& path) -> Expected<analyzer::ImportResult> {
    auto r = analyzer::importTrace(path);
    if (r.ok()) return r;
    Status s = r.status();
    if (s.message().find(path) == std::string::npos) s = s.withContext(path);
    return s.withContext(std::string("the trace ") + side);
  };
  auto before = import("before", o.before);
  if (!before) return reportError(before.status());
  auto after = import("after", o.after);
  if (!after) return reportError(after.status());
  rewriter::Comparison c =
      rewriter::compareTraces(before->trace, after->trace, rewriter::readRecordedPlans(after->trace, o.after));
  c.before_path = o.before;
  c.after_path = o.after;
  if (o.json) {
    nlohmann::json j{{"before", c.before_path},
                     {"after", c.after_path},
                     {"launches_before", c.launches_before},
                     {"launches_after", c.launches_after},
                     {"kernels", nlohmann::json::array()},
                     {"ranges", nlohmann::json::array()},
                     {"plans", nlohmann::json::array()},
                     {"notes", c.notes}};
    for (const rewriter::KernelDelta& k : c.kernels) {
      j["kernels"].push_back({{"name", k.name},
                              {"in", rewriter::presenceName(k.presence())},
                              {"before", sideJson(k.before)},
                              {"after", sideJson(k.after)},
                              {"replaced", k.replaced},
                              {"fused_by", k.fused_by}});
    }
    for (const rewriter::RangeDelta& r : c.ranges) {
      j["ranges"].push_back({{"path", r.path},
                             {"in", rewriter::presenceName(r.presence())},
                             {"before", sideJson(r.before)},
                             {"after", sideJson(r.after)},
                             {"launches_before", r.launches_before},
                             {"launches_after", r.launches_after}});
    }
    for (const rewriter::AppliedPlan& p : c.plans) {
      j["plans"].push_back({{"dir", p.dir},
                            {"candidate", p.candidate_rank},
                            {"fusion", p.fusion},
                            {"fused_kernel", p.fused_kernel},
                            {"replaced_kernels", p.replaced_kernels},
                            {"occurrences", p.occurrences},
                            {"launches_replaced", p.replacedLaunches()}});
    }
    std::cout << core::dumpJson(j, 2) << '\n';
    return kExitOk;
  }
  std::cout << "before  " << c.before_path << "\nafter   " << c.after_path << "\nlaunches " << c.launches_before
            << " -> " << c.launches_after << "  " << delta(c.launches_before, c.launches_after) << "\n";
  for (const std::string& n : c.notes) std::cout << "note: " << n << "\n";
  Table kernels({"kernel", "in", "before", "after", "change", "replaced", "median us before", "median us after"});
  for (const rewriter::KernelDelta& k : c.kernels) {
    kernels.addRow({k.name, k.fused_by.empty() ? rewriter::presenceName(k.presence()) : "fused: " + k.fused_by,
                    std::to_string(k.before.count), std::to_string(k.after.count), delta(k.before.count, k.after.count),
                    k.replaced ? std::to_string(k.replaced) : "", micros(k.before, k.before.median_ns),
                    micros(k.after, k.after.median_ns)});
  }
  std::cout << "\nkernels (aligned by name)\n" << kernels.render();
  if (!c.ranges.empty()) {
    Table ranges(
        {"NVTX range", "in", "instances before", "after", "launches before", "after", "median us before", "after"});
    for (const rewriter::RangeDelta& r : c.ranges) {
      ranges.addRow({r.path, rewriter::presenceName(r.presence()), std::to_string(r.before.count),
                     std::to_string(r.after.count), std::to_string(r.launches_before), std::to_string(r.launches_after),
                     micros(r.before, r.before.median_ns), micros(r.after, r.after.median_ns)});
    }
    std::cout << "\nNVTX ranges (aligned by path)\n" << ranges.render();
  } else {
    std::cout << "\nNVTX ranges: neither trace records any\n";
  }
  if (!c.plans.empty()) {
    Table plans({"plan", "fusion", "fused kernel", "replaced kernels", "occurrences", "launches replaced"});
    for (const rewriter::AppliedPlan& p : c.plans) {
      std::string replaced;
      for (const std::string& k : p.replaced_kernels) replaced += (replaced.empty() ? "" : " -> ") + k;
      plans.addRow({p.name, p.fusion, p.fused_kernel, replaced, std::to_string(p.occurrences),
                    std::to_string(p.replacedLaunches())});
    }
    std::cout << "\nplans the after-trace ran with\n" << plans.render();
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

  auto cmp = std::make_shared<CompareOptions>();
  cmd =
      app.add_subcommand("compare",
                         "Compare two recordings of one program (e.g. `kfuse demo`'s before.sqlite and after.sqlite): "
                         "launches and times per kernel and NVTX range, and which plan replaced which launches");
  cmd->add_option("before", cmp->before, "The recording without kfuse (any trace analyze reads)")->required();
  cmd->add_option("after", cmp->after,
                  "The recording under `kfuse run --plan ...` (its recorded command line names the plans)")
      ->required();
  cmd->add_flag("--json", cmp->json, "Print machine-readable JSON");
  cmd->callback([cmp, &ctx] { ctx.exit_code = runCompare(*cmp); });
}

}  // namespace kfuse::cli
