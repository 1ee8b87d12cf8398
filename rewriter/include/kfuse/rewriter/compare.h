// Before/after: two traces of the same program (typically `kfuse demo`'s before.sqlite, and after.sqlite recorded
// under `kfuse run --plan ...`) aligned by kernel name and by NVTX range path, with the launch counts and times
// each recorded, and the plans that replaced launches: what `kfuse compare` prints and the GUI's before/after view
// shows (gui/comparison.h loads it on a worker thread). A Comparison is a plain value, immutable once made.
//
// Nothing is recomputed that the traces record: counts are the launches and range instances they hold, times their
// recorded durations (a kernel's GPU start to end, a range's start to end). Where a trace records no GPU times (the
// CPU stand-in, a recording without GPU timing) the kernel times are absent (kNoTime), never estimated.
//
// Which launches a plan replaced: the after-trace's recorded command line names the plans (`kfuse record -- kfuse
// run --plan DIR ...`); each plan's plan.json names its fused kernel and the original kernels, in launch order, that
// one fused launch replaces. Every launch of the fused kernel in the after-trace is one replaced occurrence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::rewriter {

// One side's figures for a kernel (its launches) or a range path (its instances).
struct SideFigures {
  int64_t count = 0;                  // launches, or range instances
  int64_t timed = 0;                  // of them, those with a recorded duration
  int64_t total_ns = 0;               // sum of the recorded durations
  int64_t median_ns = core::kNoTime;  // median of the recorded durations (the lower middle one); kNoTime: none
  bool hasTime() const { return timed > 0; }
};

enum class Presence { kBoth, kOnlyBefore, kOnlyAfter };
const char* presenceName(Presence p);  // "both", "before only", "after only"

struct KernelDelta {
  std::string name;  // demangled when the trace knows it, else mangled: the key the traces are aligned by
  SideFigures before, after;
  // Launches of this kernel that the applied plans replaced: the plans' occurrences in the after-trace times the
  // kernel's launches per occurrence. With every replaced launch accounted for, before - replaced = after.
  int64_t replaced = 0;
  std::string fused_by;  // a plan's fused kernel: that plan's directory name; else empty
  Presence presence() const;
};

struct RangeDelta {
  std::string path;           // the names of the enclosing NVTX ranges on its thread, outermost first, joined by " / "
  SideFigures before, after;  // instances and their wall-clock durations
  int64_t launches_before = 0, launches_after = 0;  // kernel launches made inside the instances, on their thread
  Presence presence() const;
};

struct AppliedPlan {
  std::string dir;   // as the recorded command line names it
  std::string name;  // the directory's last component ("candidate-1")
  int candidate_rank = 0;
  std::string fusion;  // core::FusionKind's name
  std::string fused_kernel;
  std::vector<std::string> replaced_kernels;  // the pattern's kernels, launch order, named as KernelDelta::name
  int64_t occurrences = 0;                    // launches of the fused kernel in the after-trace
  int64_t replacedLaunches() const { return occurrences * static_cast<int64_t>(replaced_kernels.size()); }
};

struct Comparison {
  std::string before_path, after_path;
  std::vector<KernelDelta> kernels;  // by name
  std::vector<RangeDelta> ranges;    // by path
  std::vector<AppliedPlan> plans;    // in command-line order; plans with no occurrence included
  int64_t launches_before = 0, launches_after = 0;
  bool before_timed = false, after_timed = false;  // some kernel launch has a GPU duration
  // What the figures cannot say, in sentences: GPU times not recorded, plans that cannot be read, fused kernels
  // (launched but in no plan's pattern) whose replaced launches are therefore not counted.
  std::vector<std::string> notes;
};

// The plan directories a recorded `kfuse run` command line names (`--plan DIR`, `--plan=DIR`, before `--`), as
// collector::record writes command lines (arguments with spaces or quotes in single quotes). Empty for any other
// command line.
std::vector<std::string> planDirsOfCommandLine(const std::string& command_line);

// A plan read for the comparison: its directory as named, and the plan (or why it could not be read).
struct PlanInput {
  std::string dir;
  std::string fused_kernel;  // empty: the plan could not be read (`error` says why)
  int candidate_rank = 0;
  std::string fusion;
  std::vector<std::string> mangled_kernels;  // the pattern, in launch order
  std::string error;
};

// Reads the plans named in the after-trace's command line. A relative directory is looked up as named, then beside
// the after-trace.
std::vector<PlanInput> readRecordedPlans(const core::Trace& after, const std::string& after_path);

Comparison compareTraces(const core::Trace& before, const core::Trace& after, const std::vector<PlanInput>& plans);

}  // namespace kfuse::rewriter
