#include "kfuse/gui/roofline_points.h"

#include <algorithm>
#include <map>
#include <set>

namespace kfuse::gui {

namespace {

// What an estimate of `source` rests on, as a legend says it.
std::string estimateBasis(const std::string& source) {
  if (source == "operator-estimate") return "operator shapes";
  if (source == "ptx-estimate") return "the PTX";
  if (source == "extent-estimate") return "buffer extents";
  if (source == "mixed-estimate") return "mixed sources";
  return "partly unknown counts";  // "unknown" or "": some launches had no count at all
}

std::string joinBases(const std::set<std::string>& bases) {
  std::string out;
  size_t i = 0;
  for (const std::string& b : bases) {
    out += (i == 0 ? "" : i + 1 == bases.size() ? " and " : ", ") + b;
    ++i;
  }
  return out;
}

// How the report names a member: its operator where known, else its short kernel name.
std::string memberTitle(const analyzer::Candidate& c, size_t i) {
  if (i < c.members.size() && !c.members[i].op.empty()) return c.members[i].label;
  return analyzer::shortKernelName(c.names[i], 40);
}

}  // namespace

bool countedSource(const std::string& source) {
  return source == "measured" || source == "emulated";
}

RooflineChart rooflineChart(const analyzer::Report& report, int candidate) {
  RooflineChart out;
  const core::GpuSpec& gpu = report.gpu;
  std::set<std::string> bases, fused_bases;
  auto note = [](const std::string& source, std::set<std::string>& into) {
    if (!countedSource(source)) into.insert(estimateBasis(source));
  };
  std::map<std::string, const analyzer::KernelRow*> rows;
  std::map<std::string, size_t> placed;  // kernel name -> its mark
  for (const analyzer::KernelRow& k : report.kernel_table) {
    rows.emplace(k.name, &k);
    if (k.bytes <= 0 || k.flops <= 0) continue;
    RooflineMark m;
    m.name = k.name;
    m.bytes_source = k.bytes_source;
    m.flops_source = k.flops_source;
    m.estimated = !countedSource(k.bytes_source) || !countedSource(k.flops_source);
    double ns = k.ns;
    if (ns <= 0) {
      // No time at all (an emulator recording): the kernel is placed on the roof, at the time the roofline allows.
      if (gpu.dram_bandwidth_bytes_per_s <= 0 || gpu.fp32_flops <= 0) continue;
      ns = std::max(k.bytes / gpu.dram_bandwidth_bytes_per_s, k.flops / gpu.fp32_flops) * 1e9;
      m.time_from_roof = true;
    }
    m.intensity = k.flops / k.bytes;
    m.flops_per_s = k.flops / (ns * 1e-9);
    if (m.estimated) {
      note(k.bytes_source, bases);
      note(k.flops_source, bases);
    }
    placed[k.name] = out.marks.size();
    out.marks.push_back(std::move(m));
  }
  const size_t kernels = out.marks.size();

  const analyzer::Candidate* c = candidate >= 0 && static_cast<size_t>(candidate) < report.candidates.size()
                                     ? &report.candidates[static_cast<size_t>(candidate)]
                                     : nullptr;
  if (!c) {
    out.note = kernels == 0 ? "No kernel of this trace has both a byte and a FLOP count, so there is nothing to place."
                            : std::to_string(kernels) +
                                  " kernels. Select a candidate to see its fused kernel's predicted point.";
  } else {
    const std::string tag = "Candidate #" + std::to_string(c->rank);
    std::vector<std::string> missing;  // members without a point, and why
    size_t members = 0;
    for (size_t i = 0; i < c->names.size(); ++i) {
      if (auto it = placed.find(c->names[i]); it != placed.end()) {
        RooflineMark m = out.marks[it->second];
        m.role = RooflineRole::kMember;
        out.marks.push_back(std::move(m));
        ++members;
        continue;
      }
      auto row = rows.find(c->names[i]);
      std::string why;
      if (row == rows.end()) {
        why = "not in the kernel table";
      } else {
        const analyzer::KernelRow& k = *row->second;
        why = k.bytes > 0 ? "bytes " + k.bytes_source : "no byte count";
        why += k.flops > 0 ? ", FLOPs " + k.flops_source : ", no FLOP count";
      }
      missing.push_back(memberTitle(*c, i) + " (" + why + ")");
    }
    bool fused = false;
    if (c->cost.bytes_after > 0 && c->cost.flops > 0 && c->cost.fused_ns > 0) {
      RooflineMark m;
      m.role = RooflineRole::kFused;
      m.name = "#" + std::to_string(c->rank) + " fused";
      m.intensity = c->cost.flops / c->cost.bytes_after;
      m.flops_per_s = c->cost.flops / (c->cost.fused_ns * 1e-9);
      m.bytes_source = c->cost.bytes_source;
      m.flops_source = c->cost.flops_source;
      m.estimated = !countedSource(m.bytes_source) || !countedSource(m.flops_source);
      if (m.estimated) {
        note(m.bytes_source, fused_bases);
        note(m.flops_source, fused_bases);
      }
      out.marks.push_back(std::move(m));
      fused = true;
    }
    std::string missing_text;
    for (size_t i = 0; i < missing.size(); ++i) missing_text += (i ? "; " : "") + missing[i];
    if (members == 0 && !fused) {
      out.note = tag + ": no point (the report has no byte and FLOP counts for its kernels: " + missing_text + ").";
    } else {
      out.note = tag + ": " +
                 (fused ? std::string("arrows lead from its kernels to the fused kernel's predicted point.")
                        : std::string("no predicted point (no FLOP or byte estimate for the fused kernel)."));
      if (!missing.empty()) out.note += " Not placed: " + missing_text + ".";
    }
  }
  if (!bases.empty()) out.estimate_legend = "estimated from " + joinBases(bases);
  if (!fused_bases.empty()) out.fused_legend = "estimated from " + joinBases(fused_bases);
  return out;
}

}  // namespace kfuse::gui
