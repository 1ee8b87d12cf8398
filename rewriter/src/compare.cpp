#include "kfuse/rewriter/compare.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "kfuse/core/enum_names.h"
#include "kfuse/core/fusion_kind.h"
#include "kfuse/rewriter/plan.h"

namespace kfuse::rewriter {
namespace {
namespace fs = std::filesystem;

// Durations of one kernel or range path on one side, folded into SideFigures at the end.
struct Tally {
  int64_t count = 0;
  std::vector<int64_t> durations;
  SideFigures figures() {
    SideFigures f;
    f.count = count;
    f.timed = static_cast<int64_t>(durations.size());
    for (int64_t d : durations) f.total_ns += d;
    if (!durations.empty()) {
      const auto mid = durations.begin() + static_cast<std::ptrdiff_t>((durations.size() - 1) / 2);
      std::nth_element(durations.begin(), mid, durations.end());
      f.median_ns = *mid;
    }
    return f;
  }
};

std::string kernelName(const core::KernelFunction& f) {
  return f.demangled_name.empty() ? f.mangled_name : f.demangled_name;
}

// Launch tallies by kernel name.
std::map<std::string, Tally> tallyKernels(const core::Trace& trace, bool* timed) {
  std::unordered_map<core::Id, std::string> names;
  for (const core::KernelFunction& f : trace.functions) names.emplace(f.id, kernelName(f));
  std::map<std::string, Tally> out;
  for (const core::Launch& l : trace.launches) {
    auto it = names.find(l.function_id);
    Tally& t = out[it != names.end() ? it->second : "function " + std::to_string(l.function_id)];
    ++t.count;
    if (const int64_t d = l.gpuDurationNs(); d != core::kNoTime) {
      t.durations.push_back(d);
      *timed = true;
    }
  }
  return out;
}

struct RangeTally {
  Tally instances;
  int64_t launches = 0;
};

// Range tallies by name path. A range's parent is the innermost range on the same thread that contains it; its
// launches are those its thread made (API call start) between its start and end.
std::map<std::string, RangeTally> tallyRanges(const core::Trace& trace) {
  std::map<int64_t, std::vector<const core::NvtxRange*>> by_thread;
  for (const core::NvtxRange& r : trace.nvtx_ranges) {
    if (r.start_ns != core::kNoTime) by_thread[r.thread_id].push_back(&r);
  }
  std::map<int64_t, std::vector<int64_t>> launch_starts;
  for (const core::Launch& l : trace.launches) {
    if (l.api_start_ns != core::kNoTime) launch_starts[l.thread_id].push_back(l.api_start_ns);
  }
  for (auto& [thread, starts] : launch_starts) std::sort(starts.begin(), starts.end());

  std::map<std::string, RangeTally> out;
  for (auto& [thread, ranges] : by_thread) {
    const auto end = [](const core::NvtxRange* r) { return r->end_ns == core::kNoTime ? INT64_MAX : r->end_ns; };
    // Outer before inner: earlier start first, and of two starting together the longer one.
    std::sort(ranges.begin(), ranges.end(), [&](const core::NvtxRange* a, const core::NvtxRange* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : end(a) > end(b);
    });
    const std::vector<int64_t>* starts = nullptr;
    if (auto it = launch_starts.find(thread); it != launch_starts.end()) starts = &it->second;
    std::vector<std::pair<int64_t, std::string>> open;  // enclosing ranges: end, path
    for (const core::NvtxRange* r : ranges) {
      while (!open.empty() && open.back().first < end(r)) open.pop_back();
      std::string path = open.empty() ? r->name : open.back().second + " / " + r->name;
      RangeTally& t = out[path];
      ++t.instances.count;
      if (r->end_ns != core::kNoTime) t.instances.durations.push_back(core::spanNs(r->start_ns, r->end_ns));
      if (starts) {
        auto lo = std::lower_bound(starts->begin(), starts->end(), r->start_ns);
        auto hi = std::upper_bound(lo, starts->end(), end(r));
        t.launches += hi - lo;
      }
      open.emplace_back(end(r), std::move(path));
    }
  }
  return out;
}

template <typename T>
Presence presenceOf(const T& row) {
  if (row.before.count > 0 && row.after.count > 0) return Presence::kBoth;
  return row.before.count > 0 ? Presence::kOnlyBefore : Presence::kOnlyAfter;
}

// Splits a command line as collector::record joins one: words separated by spaces, a word with spaces or quotes in
// single quotes (nothing is escaped inside them).
std::vector<std::string> splitCommandLine(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false, quoted = false;
  for (char c : line) {
    if (quoted) {
      if (c == '\'') {
        quoted = false;
      } else {
        word += c;
      }
    } else if (c == '\'') {
      quoted = in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace

const char* presenceName(Presence p) {
  switch (p) {
    case Presence::kBoth: return "both";
    case Presence::kOnlyBefore: return "before only";
    case Presence::kOnlyAfter: return "after only";
  }
  return "?";
}

Presence KernelDelta::presence() const {
  return presenceOf(*this);
}
Presence RangeDelta::presence() const {
  return presenceOf(*this);
}

std::vector<std::string> planDirsOfCommandLine(const std::string& command_line) {
  const std::vector<std::string> words = splitCommandLine(command_line);
  // `kfuse [global options] run ... -- PROGRAM`: the word `run` after the executable, options up to `--`.
  auto run = std::find(words.begin(), words.end(), "run");
  if (words.empty() || run == words.end() || fs::path(words.front()).filename() != "kfuse") return {};
  std::vector<std::string> dirs;
  for (auto it = run + 1; it != words.end() && *it != "--"; ++it) {
    if (*it == "--plan" && it + 1 != words.end()) {
      dirs.push_back(*++it);
    } else if (it->rfind("--plan=", 0) == 0) {
      dirs.push_back(it->substr(7));
    }
  }
  return dirs;
}

std::vector<PlanInput> readRecordedPlans(const core::Trace& after, const std::string& after_path) {
  std::vector<PlanInput> out;
  for (const std::string& dir : planDirsOfCommandLine(after.metadata.command_line)) {
    PlanInput in;
    in.dir = dir;
    std::string where = dir;
    std::error_code ec;
    if (fs::path(dir).is_relative() && !fs::exists(fs::path(dir) / "plan.json", ec)) {
      const fs::path beside = fs::path(after_path).parent_path() / dir;
      if (fs::exists(beside / "plan.json", ec)) where = beside.string();
    }
    auto plan = rewriter::readPlan(where);
    if (!plan.ok()) {
      in.error = plan.status().message();
    } else {
      in.fused_kernel = plan->fused.name;
      in.candidate_rank = plan->candidate_rank;
      in.fusion = core::enumName(plan->fusion);
      for (const rewriter::PlanKernel& k : plan->kernels) in.mangled_kernels.push_back(k.mangled_name);
    }
    out.push_back(std::move(in));
  }
  return out;
}

Comparison compareTraces(const core::Trace& before, const core::Trace& after, const std::vector<PlanInput>& plans) {
  Comparison c;
  c.launches_before = static_cast<int64_t>(before.launches.size());
  c.launches_after = static_cast<int64_t>(after.launches.size());
  std::map<std::string, Tally> kb = tallyKernels(before, &c.before_timed);
  std::map<std::string, Tally> ka = tallyKernels(after, &c.after_timed);
  std::map<std::string, KernelDelta> kernels;
  for (auto& [name, t] : kb) {
    kernels[name].name = name;
    kernels[name].before = t.figures();
  }
  for (auto& [name, t] : ka) {
    kernels[name].name = name;
    kernels[name].after = t.figures();
  }

  // A plan's kernels are named by their mangled names: the name each has in the before-trace (else in the after's).
  std::unordered_map<std::string, std::string> shown;
  for (const core::Trace* t : {&after, &before}) {
    for (const core::KernelFunction& f : t->functions) shown[f.mangled_name] = kernelName(f);
  }
  const auto showName = [&](const std::string& mangled) {
    auto it = shown.find(mangled);
    return it != shown.end() ? it->second : mangled;
  };
  for (const PlanInput& in : plans) {
    if (!in.error.empty()) {
      c.notes.push_back("Plan " + in.dir + " (named in the after-trace's command line) cannot be read: " + in.error);
      continue;
    }
    AppliedPlan p;
    p.dir = in.dir;
    p.name = fs::path(in.dir).filename().string();
    if (p.name.empty()) p.name = fs::path(in.dir).parent_path().filename().string();
    p.candidate_rank = in.candidate_rank;
    p.fusion = in.fusion;
    p.fused_kernel = showName(in.fused_kernel);
    for (const std::string& k : in.mangled_kernels) p.replaced_kernels.push_back(showName(k));
    if (auto it = kernels.find(p.fused_kernel); it != kernels.end()) {
      p.occurrences = it->second.after.count;
      it->second.fused_by = p.name;
    }
    for (const std::string& k : p.replaced_kernels) kernels[k].replaced += p.occurrences;
    c.plans.push_back(std::move(p));
  }
  for (auto& [name, k] : kernels) {
    k.name = name;
    // A kernel only the after-trace launches, named like the rewriter's fused kernels, that no readable plan makes.
    if (k.fused_by.empty() && k.before.count == 0 && name.rfind("kfuse_", 0) == 0) {
      c.notes.push_back("`" + name + "` (" + std::to_string(k.after.count) +
                        " launches after) looks like a fused kernel, but no plan the after-trace names makes it: the "
                        "launches it replaced are not counted");
    }
    c.kernels.push_back(std::move(k));
  }

  std::map<std::string, RangeTally> rb = tallyRanges(before), ra = tallyRanges(after);
  std::map<std::string, RangeDelta> ranges;
  for (auto& [path, t] : rb) {
    RangeDelta& r = ranges[path];
    r.before = t.instances.figures();
    r.launches_before = t.launches;
  }
  for (auto& [path, t] : ra) {
    RangeDelta& r = ranges[path];
    r.after = t.instances.figures();
    r.launches_after = t.launches;
  }
  for (auto& [path, r] : ranges) {
    r.path = path;
    c.ranges.push_back(std::move(r));
  }

  if (!c.before_timed || !c.after_timed) {
    const std::string which = !c.before_timed && !c.after_timed ? "Neither trace records"
                              : !c.before_timed                 ? "The before-trace does not record"
                                                                : "The after-trace does not record";
    c.notes.push_back(which +
                      " GPU times for its kernels (a recording on the CPU stand-in, or without GPU timing): the "
                      "kernels are compared by launch count only.");
  }
  return c;
}

}  // namespace kfuse::rewriter
