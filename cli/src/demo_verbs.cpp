// `kfuse demo`: the whole story on one example program — record, analyze, rewrite and validate, run with the
// fused kernels injected, and a before/after table — then the top recommendations for a real recorded trace.
// Each step runs this same `kfuse` executable as a user would (the commands are printed), with its output kept in
// the demo directory; the table is read back from the traces, reports and statistics those commands wrote.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfuse/collector/program.h"
#include "kfuse/collector/record.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/core/trace_summary.h"
#include "verbs.h"

#ifndef KFUSE_SHARED_DATA_DIR
#define KFUSE_SHARED_DATA_DIR ""
#endif

namespace kfuse::cli {
namespace {
namespace fs = std::filesystem;

struct DemoOptions {
  std::string gpu;  // "" = the GPU the recorded trace names (analyze's default; h100-sxm on the stand-in)
  std::string example = "elementwise_chain";
  std::string dir;  // "" = a fresh temporary directory, removed at the end unless --keep
  bool keep = false;
  std::string real_trace;  // "" = the shared data's BERT-small H100 trace, if present
};

struct Demo {
  const DemoOptions& o;
  std::string kfuse;  // this executable
  fs::path dir;
  std::vector<std::pair<std::string, std::string>> env;  // stand-in driver on the library path, on a CPU
  int step = 0;

  static std::string quote(const std::string& a) {
    return a.find_first_of(" \t'\"$\\") == std::string::npos ? a : "'" + a + "'";
  }

  // What the costs are predicted for, in words.
  std::string costTarget() const {
    if (!o.gpu.empty()) return o.gpu;
    return gpu_ ? "the GPU the trace names (this one)" : "h100-sxm (the stand-in names no GPU of the spec table)";
  }
  // `cmd` with --gpu when one was named (else analyze and rewrite cost for the trace's own GPU).
  std::vector<std::string> withGpu(std::vector<std::string> cmd) const {
    if (!o.gpu.empty()) cmd.insert(cmd.end(), {"--gpu", o.gpu});
    return cmd;
  }

  // Runs one command, its output into DIR/<log>; prints the command first. False (and the log) on failure.
  bool run(const std::string& what, const std::vector<std::string>& cmd, const std::string& log, int* exit_code) {
    std::string line;
    for (const auto& a : cmd) line += (line.empty() ? "" : " ") + quote(a == kfuse ? "kfuse" : a);
    std::printf("\n[%d] %s\n    $ %s\n", ++step, what.c_str(), line.c_str());
    std::fflush(stdout);
    auto r = collector::runProgram(cmd, env, (dir / log).string());
    if (!r.ok()) {
      std::fprintf(stderr, "kfuse: %s\n", r.status().message().c_str());
      return false;
    }
    if (exit_code) *exit_code = r->exit_code;
    if (r->exit_code != 0 && !exit_code) {
      std::fprintf(stderr, "kfuse: the step failed (exit %d); its output (%s):\n%s", r->exit_code, (dir / log).c_str(),
                   readText(dir / log).c_str());
      return false;
    }
    return true;
  }

  static std::string readText(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Lines of `text` containing `needle`.
  static std::vector<std::string> linesWith(const std::string& text, const std::string& needle) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
      if (l.find(needle) != std::string::npos) out.push_back(l);
    }
    return out;
  }

  // Sum of a metric over the trace's launches (emulated counters on the stand-in, CUPTI's on a GPU), or -1.
  static double metricSum(const fs::path& trace, const char* name) {
    auto reader = core::TraceReader::open(trace.string());
    if (!reader.ok()) return -1;
    auto rest = (*reader)->readAll();  // the demo's traces are small
    if (!rest.ok()) return -1;
    double sum = 0;
    bool any = false;
    for (const auto& m : rest->metrics) {
      if (m.name == name) {
        sum += m.value;
        any = true;
      }
    }
    return any ? sum : -1;
  }

  static std::string bytes(double b) {
    if (b < 0) return "n/a";
    char buf[32];
    if (b >= 1e9) {
      std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
    } else if (b >= 1e6) {
      std::snprintf(buf, sizeof buf, "%.2f MB", b / 1e6);
    } else {
      std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
    }
    return buf;
  }

  int go() {
    const fs::path self = fs::read_symlink("/proc/self/exe");
    kfuse = self.string();
    const fs::path build = self.parent_path().parent_path();
    const char* examples_env = std::getenv("KFUSE_EXAMPLES_DIR");
    const fs::path examples =
        examples_env && *examples_env ? fs::path(examples_env) : build / "examples" / "driver_api";
    const fs::path program = examples / o.example;
    if (!fs::exists(program)) {
      std::fprintf(stderr,
                   "kfuse: %s: no such example program (build it: cmake --build build --target example_%s; or set "
                   "KFUSE_EXAMPLES_DIR)\n",
                   program.c_str(), o.example.c_str());
      return kExitBadInput;
    }
    gpu_ = collector::detectBackend() == "cupti";
    const bool gpu = gpu_;
    if (!gpu) {
      const fs::path standin = build / "standin";
      if (!fs::exists(standin / "libcuda.so.1")) {
        std::fprintf(stderr, "kfuse: no GPU driver here and no stand-in driver at %s (build kfuse_standin_cuda)\n",
                     standin.c_str());
        return kExitBadInput;
      }
      const char* old = std::getenv("LD_LIBRARY_PATH");
      env.emplace_back("LD_LIBRARY_PATH", standin.string() + (old && *old ? std::string(":") + old : ""));
    }
    std::printf("kfuse demo: %s on %s; costs predicted for %s. Outputs in %s\n", o.example.c_str(),
                gpu ? "this machine's GPU" : "the CPU emulator (stand-in libcuda.so.1, no GPU)", costTarget().c_str(),
                dir.c_str());

    const fs::path before = dir / "before.sqlite", after = dir / "after.sqlite", plans = dir / "plans";
    if (!run("Record the unmodified program", {kfuse, "-q", "record", "-f", "-o", before.string(), "--", program},
             "1-record.log", nullptr)) {
      return kExitCheckFailed;
    }
    if (!run(
            "Analyze it: dependency graph, fusion candidates, legality from the PTX, roofline cost for " + costTarget(),
            withGpu({kfuse, "analyze", before.string(), "--top", "5", "--json", (dir / "before.json").string(),
                     "--no-store"}),
            "2-analyze.log", nullptr)) {
      return kExitCheckFailed;
    }
    for (const auto& l : linesWith(readText(dir / "2-analyze.log"), "")) {
      if (l.rfind("rank", 0) == 0 || (l.size() > 4 && l[0] == ' ' && std::isdigit(static_cast<unsigned char>(l[3])))) {
        std::printf("    %s\n", l.c_str());
      }
    }
    int rewrite_exit = 0;
    if (!run("Rewrite the best consistent set of proven candidates into fused PTX; ptxas; validate bit for bit "
             "against the original launches on the emulator",
             withGpu({kfuse, "rewrite", before.string(), "--all", "-o", plans.string()}), "3-rewrite.log",
             &rewrite_exit)) {
      return kExitCheckFailed;
    }
    for (const auto& l : linesWith(readText(dir / "3-rewrite.log"), "validation")) std::printf("    %s\n", l.c_str());
    std::vector<std::string> plan_dirs;
    if (fs::is_directory(plans)) {
      for (const auto& e : fs::directory_iterator(plans)) {
        if (fs::exists(e.path() / "plan.json")) plan_dirs.push_back(e.path().string());
      }
    }
    std::sort(plan_dirs.begin(), plan_dirs.end());
    if (plan_dirs.empty()) {
      std::fprintf(stderr, "kfuse: nothing was rewritten (exit %d); the rewrite's output:\n%s", rewrite_exit,
                   readText(dir / "3-rewrite.log").c_str());
      return kExitCheckFailed;
    }
    std::vector<std::string> cmd = {kfuse, "-q", "record", "-f", "-o", after.string(), "--", kfuse, "run"};
    for (const auto& p : plan_dirs) {
      cmd.push_back("--plan");
      cmd.push_back(p);
    }
    for (const std::string& a :
         {std::string("--stats"), (dir / "run.json").string(), std::string("--"), program.string()}) {
      cmd.push_back(a);
    }
    if (!run("Run the unmodified program again with the fused kernels injected (recorded, to count what the "
             "driver receives)",
             cmd, "4-run.log", nullptr)) {
      return kExitCheckFailed;
    }
    int baseline_exit = 0;
    if (!run("Run it once more without kfuse, for its output", {program.string()}, "5-plain.log", &baseline_exit)) {
      return kExitCheckFailed;
    }
    if (!run("Analyze the run with the fused kernels",
             withGpu({kfuse, "analyze", after.string(), "--json", (dir / "after.json").string(), "--no-store"}),
             "6-analyze.log", nullptr)) {
      return kExitCheckFailed;
    }
    return table(before, after) == 0 ? realTrace() : kExitCheckFailed;
  }

  int table(const fs::path& before, const fs::path& after) {
    nlohmann::json rb, ra, stats;
    try {
      rb = nlohmann::json::parse(readText(dir / "before.json"));
      ra = nlohmann::json::parse(readText(dir / "after.json"));
      stats = nlohmann::json::parse(readText(dir / "run.json"));
    } catch (const nlohmann::json::exception& e) {
      std::fprintf(stderr, "kfuse: cannot read the reports the demo wrote in %s: %s\n", dir.c_str(), e.what());
      return 1;
    }
    const auto checksum = [](const std::vector<std::string>& lines) {
      for (const auto& l : lines) {
        const size_t at = l.find("checksum ");
        if (at != std::string::npos) return l.substr(at + 9);
      }
      return std::string("n/a");
    };
    const std::string sum_before = checksum(linesWith(readText(dir / "5-plain.log"), "checksum"));
    const std::string sum_after = checksum(linesWith(readText(dir / "4-run.log"), "checksum"));
    const double read_b = metricSum(before, "dram_bytes_read"), write_b = metricSum(before, "dram_bytes_written");
    const double read_a = metricSum(after, "dram_bytes_read"), write_a = metricSum(after, "dram_bytes_written");
    const bool estimated = rb["summary"].value("gpu_busy_estimated", true);
    // The GPU the costs were computed for, as analyze resolved it (the trace's own unless --gpu named one).
    const std::string costed = rb["gpu"].value("short_name", costTarget());
    const std::string time_label =
        std::string("GPU time on ") + costed + (estimated ? " (roofline estimate)" : " (measured)");
    std::printf("\n[%d] Before and after\n", ++step);
    std::printf("    %-40s %18s %18s\n", "", "without kfuse", "with kfuse run");
    std::printf("    %-40s %18" PRIu64 " %18" PRIu64 "\n", "kernel launches the driver received",
                rb["summary"].value("launches", uint64_t{0}), ra["summary"].value("launches", uint64_t{0}));
    std::printf("    %-40s %18s %18s\n", time_label.c_str(),
                core::formatDuration(rb["summary"].value("gpu_busy_ns", int64_t{0})).c_str(),
                core::formatDuration(ra["summary"].value("gpu_busy_ns", int64_t{0})).c_str());
    std::printf("    %-40s %18s %18s\n", gpu_ ? "DRAM bytes (CUPTI)" : "DRAM bytes (emulator counters)",
                bytes(read_b + write_b).c_str(), bytes(read_a + write_a).c_str());
    std::printf("    %-40s %18s %18s   %s\n", "output checksum", sum_before.c_str(), sum_after.c_str(),
                sum_before == sum_after && sum_before != "n/a" ? "equal" : "DIFFERENT");
    uint64_t fused = 0;
    for (const auto& p : stats["plans"]) fused += p.value("occurrences_fused", uint64_t{0});
    std::printf("    %" PRIu64 " occurrence(s) fused by %zu plan(s); %" PRIu64 " launches seen, %" PRIu64
                " issued (kfuse run --stats: %s)\n",
                fused, stats["plans"].size(), stats.value("launches_seen", uint64_t{0}),
                stats.value("launches_issued", uint64_t{0}), (dir / "run.json").c_str());
    if (estimated) {
      std::printf(
          "    GPU times are the cost model's estimates for %s from the kernels' PTX and counted bytes: no "
          "GPU ran them.\n",
          costed.c_str());
    }
    return sum_before == sum_after && sum_before != "n/a" ? 0 : 1;
  }

  int realTrace() {
    fs::path trace = o.real_trace;
    if (trace.empty()) trace = fs::path(KFUSE_SHARED_DATA_DIR) / "kineto" / "hta_six_streams_rank0.json.gz";
    if (!fs::exists(trace)) {
      std::printf("\n(no recorded trace at %s: the real-trace part of the demo is skipped)\n", trace.c_str());
      return kExitOk;
    }
    if (!run("A real trace someone else recorded on GPUs (PyTorch profiler, no PTX or pointer arguments in it): "
             "its top recommendations",
             {kfuse, "analyze", trace.string(), "--top", "5", "--no-store"}, "7-real.log", nullptr)) {
      return kExitCheckFailed;
    }
    const std::string text = readText(dir / "7-real.log");
    std::istringstream in(text);
    int shown = 0;
    for (std::string l; std::getline(in, l) && shown < 14;) {
      if (l.rfind("kfuse:", 0) == 0) continue;
      if (l.rfind("#", 0) == 0) break;  // the details follow the table
      // PyTorch's kernel names are templates hundreds of characters long: the report has them whole.
      std::printf("    %s\n", l.size() > 150 ? (l.substr(0, 147) + "...").c_str() : l.c_str());
      ++shown;
    }
    std::printf("\nkfuse demo: done. Everything above was written to %s (logs, traces, reports, plans).\n",
                dir.c_str());
    return kExitOk;
  }

  bool gpu_ = false;  // a real driver with a device is here (set by go())
};

int runDemo(const DemoOptions& o) {
  std::error_code ec;
  fs::path dir = o.dir;
  const bool temporary = dir.empty();
  if (temporary) {
    std::string pattern = (fs::temp_directory_path() / "kfuse-demo-XXXXXX").string();
    if (!mkdtemp(pattern.data())) return reportError(ioError("cannot create a temporary directory for the demo"));
    dir = pattern;
  } else {
    fs::create_directories(dir, ec);
    if (ec) return reportError(ioError(o.dir + ": cannot create: " + ec.message()));
  }
  Demo demo{o, "", fs::absolute(dir), {}, 0};
  const int code = demo.go();
  if (temporary && !o.keep) {
    fs::remove_all(dir, ec);
  } else if (code != kExitOk) {
    std::fprintf(stderr, "kfuse: the demo's files are in %s\n", dir.c_str());
  }
  return code;
}

}  // namespace

void registerDemoVerbs(CLI::App& app, VerbContext& ctx) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "The whole story on an example program: record, analyze, rewrite + validate, run with the fused kernels "
      "injected, before/after table; then the top recommendations for a real recorded trace");
  cmd->add_option("--gpu", opts->gpu,
                  "GPU the costs are predicted for (kfuse gpus lists them); default: the GPU the recording ran on "
                  "(h100-sxm on the CPU stand-in)");
  cmd->add_option("--example", opts->example, "Example program (examples/driver_api)")->capture_default_str();
  cmd->add_option("-o,--dir", opts->dir,
                  "Keep the traces, reports, plans and logs there (default: a temporary "
                  "directory, removed at the end)")
      ->check(outputPath());
  cmd->add_flag("--keep", opts->keep, "Keep the temporary directory");
  cmd->add_option("--trace", opts->real_trace,
                  "The recorded trace to analyze last (default: a PyTorch profiler "
                  "trace of a 16-rank A100 job from ../shared/data)");
  cmd->callback([opts, &ctx] { ctx.exit_code = runDemo(*opts); });
}

}  // namespace kfuse::cli
