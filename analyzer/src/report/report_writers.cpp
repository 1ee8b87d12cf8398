// Report writers: terminal text, Markdown, and one self-contained HTML file (JSON: report_json.cpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/text.h"
#include "report/report_totals.h"
#include "report/text_format.h"

namespace kfuse::analyzer {
namespace {

std::string kernelsText(const Candidate& c, bool short_names = false) {
  std::string out;
  const char* sep = c.kind == CandidateKind::kVertical ? " -> " : " + ";
  for (size_t i = 0; i < c.names.size(); ++i)
    out += (i ? sep : "") + (short_names ? shortKernelName(c.names[i], 40) : c.names[i]);
  return out;
}

}  // namespace

std::string candidateMembersText(const Candidate& c, bool short_names) {
  const bool ops = !c.members.empty() && std::all_of(c.members.begin(), c.members.end(),
                                                     [](const MemberContext& m) { return !m.op.empty(); });
  if (!ops) return kernelsText(c, short_names);
  std::string out;
  const char* sep = c.kind == CandidateKind::kVertical ? " -> " : " + ";
  for (size_t i = 0; i < c.members.size(); ++i) out += (i ? sep : "") + c.members[i].label;
  return out;
}

// "in CUDA graph 3: node 12 -> node 13, x20 replays; graph 5: ..." (the first three graphs).
std::string graphOccurrencesText(const Candidate& c) {
  std::string out = "in CUDA graph ";
  const char* sep = c.kind == CandidateKind::kVertical ? " -> " : " + ";
  for (size_t i = 0; i < c.occurrence_graphs.size() && i < 3; ++i) {
    out += (i ? "; graph " : "") + std::to_string(c.occurrence_graphs[i]) + ": ";
    for (size_t k = 0; k < c.occurrence_launches[i].size(); ++k) {
      out += (k ? sep : "node ") + std::string(k ? "node " : "") + std::to_string(c.occurrence_launches[i][k]);
    }
    out += ", x" + std::to_string(c.occurrence_replays[i]) + (c.occurrence_replays[i] == 1 ? " replay" : " replays");
  }
  if (c.occurrence_graphs.size() > 3) out += "; ...";
  return out;
}

std::string candidateWhereText(const Candidate& c) {
  if (c.module_pattern.empty()) {
    // No module: the annotation (NVTX range, record_function) all members share.
    if (c.members.empty() || c.members.front().annotation.empty()) return {};
    for (const MemberContext& m : c.members) {
      if (m.annotation != c.members.front().annotation) return {};
    }
    return "in range `" + c.members.front().annotation + "`";
  }
  std::string out = "in `" + c.module_pattern + "`";
  if (c.modules.size() > 1) {
    out += " (" + std::to_string(c.occurrence_launches.size()) + " occurrences in " + std::to_string(c.modules.size()) +
           " module instances: ";
    for (size_t i = 0; i < c.modules.size() && i < 4; ++i) {
      const std::string& m = c.modules[i].module;
      const size_t dot = m.rfind('.');
      const size_t dot2 = dot == std::string::npos || dot == 0 ? std::string::npos : m.rfind('.', dot - 1);
      out += (i ? ", " : "") + (dot2 == std::string::npos ? m : m.substr(dot2 + 1)) + " x" +
             std::to_string(c.modules[i].occurrences);
    }
    out += c.modules.size() > 4 ? ", ...)" : ")";
  }
  return out;
}

std::string candidateVerdictText(const Candidate& c) {
  if (c.legality == Legality::kProven) {
    switch (c.fusion) {
      case FusionKind::kThreadLocal:
        return "proven: each thread reads only what the same thread wrote, on every occurrence checked";
      case FusionKind::kEpilogue:
        return "proven epilogue: the producer writes each element once and each consumer thread touches only its "
               "own element, on every occurrence checked";
      case FusionKind::kBlockLevel:
        return "proven block-level: no consumer block touches what another producer block touches, on every "
               "occurrence checked";
      case FusionKind::kPrologue:
        return "proven prologue: each producer thread writes only its own elements, and every element the consumer "
               "may load is one the producer writes, on every occurrence checked";
      case FusionKind::kHorizontal: break;
    }
    return "proven: no data flows between the kernels, and they fit one wave together";
  }
  const std::string why = !c.verdict.empty() ? c.verdict : c.reasons.empty() ? "" : c.reasons.back();
  return std::string(legalityName(c.legality)) + ": " + why;
}

std::vector<core::Id> sharedLaunches(const Candidate& a, const Candidate& b) {
  std::set<core::Id> in_a;
  for (const auto& occurrence : a.occurrence_launches) in_a.insert(occurrence.begin(), occurrence.end());
  std::set<core::Id> shared;
  for (const auto& occurrence : b.occurrence_launches) {
    for (core::Id id : occurrence) {
      if (in_a.count(id)) shared.insert(id);
    }
  }
  return {shared.begin(), shared.end()};
}

std::string candidateConflictText(const Candidate& c, const Candidate& other) {
  if (std::find(c.conflicts_with.begin(), c.conflicts_with.end(), other.rank) == c.conflicts_with.end() &&
      std::find(other.conflicts_with.begin(), other.conflicts_with.end(), c.rank) == other.conflicts_with.end()) {
    return {};
  }
  const std::vector<core::Id> shared = sharedLaunches(c, other);
  const std::string with = "#" + std::to_string(other.rank);
  if (shared.empty()) return "shares a launch with " + with + ": only one of them can be applied";
  // Which kernels: the member of `c` each shared launch is, in member order.
  std::set<size_t> members;
  for (const auto& occurrence : c.occurrence_launches) {
    for (size_t m = 0; m < occurrence.size(); ++m) {
      if (std::binary_search(shared.begin(), shared.end(), occurrence[m])) members.insert(m);
    }
  }
  std::string kernels;
  for (size_t m : members) {
    if (m < c.names.size()) kernels += (kernels.empty() ? "`" : ", `") + shortKernelName(c.names[m], 40) + "`";
  }
  constexpr size_t kListed = 4;
  std::string ids;
  for (size_t i = 0; i < shared.size() && i < kListed; ++i) ids += (i ? ", " : "") + std::to_string(shared[i]);
  if (shared.size() > kListed) ids += ", ...";
  const std::string count = shared.size() == 1 ? "a launch" : std::to_string(shared.size()) + " launches";
  return "shares " + count + (kernels.empty() ? "" : " of " + kernels) + " with " + with + " (launch id" +
         (shared.size() == 1 ? " " : "s ") + ids + "): only one of them can be applied";
}

namespace {

// "shares a launch with #2, #5: only one of them can be applied".
std::string conflictsText(const Candidate& c) {
  std::string ranks;
  for (int r : c.conflicts_with) ranks += (ranks.empty() ? "#" : ", #") + std::to_string(r);
  return "shares a launch with " + ranks + ": only one of them can be applied";
}

// Names and paths come from the input: sanitised as UTF-8 and escaped (attributes here are quoted with ').
std::string htmlEscape(const std::string& s) {
  return core::htmlEscape(s);
}

// Log-log roofline: the memory and compute roofs of the GPU, kernels as dots, predicted fused kernels as rings.
std::string rooflineSvg(const Report& r) {
  const double bw = r.gpu.dram_bandwidth_bytes_per_s, peak = r.gpu.fp32_flops;
  const double x0 = 1e-2, x1 = 1e3;
  const double y1 = peak * 2, y0 = std::max(1e6, bw * x0 / 10);
  const double W = 640, H = 400, L = 70, B = 50, T = 20, R = 20;
  auto px = [&](double x) {
    return L + (std::log10(x) - std::log10(x0)) / (std::log10(x1) - std::log10(x0)) * (W - L - R);
  };
  auto py = [&](double y) {
    return H - B - (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0)) * (H - B - T);
  };
  std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='" + fmt("%.0f", W) + "' height='" + fmt("%.0f", H) +
                  "' role='img' aria-label='roofline'>\n<rect x='0' y='0' width='100%' height='100%' fill='#fff'/>\n";
  for (double x = x0; x <= x1 * 1.01; x *= 10) {
    s += "<line x1='" + fmt("%.1f", px(x)) + "' y1='" + fmt("%.1f", T) + "' x2='" + fmt("%.1f", px(x)) + "' y2='" +
         fmt("%.1f", H - B) + "' stroke='#eee'/>\n<text x='" + fmt("%.1f", px(x)) + "' y='" + fmt("%.1f", H - B + 16) +
         "' font-size='11' text-anchor='middle'>" + fmt("%g", x) + "</text>\n";
  }
  for (double y = std::pow(10, std::ceil(std::log10(y0))); y <= y1; y *= 10) {
    s += "<line x1='" + fmt("%.1f", L) + "' y1='" + fmt("%.1f", py(y)) + "' x2='" + fmt("%.1f", W - R) + "' y2='" +
         fmt("%.1f", py(y)) + "' stroke='#eee'/>\n<text x='" + fmt("%.1f", L - 6) + "' y='" + fmt("%.1f", py(y) + 4) +
         "' font-size='11' text-anchor='end'>" + fmt("%.0e", y) + "</text>\n";
  }
  const double ridge = peak / bw;
  s += "<polyline fill='none' stroke='#c33' stroke-width='2' points='" + fmt("%.1f", px(x0)) + "," +
       fmt("%.1f", py(bw * x0)) + " " + fmt("%.1f", px(ridge)) + "," + fmt("%.1f", py(peak)) + " " +
       fmt("%.1f", px(x1)) + "," + fmt("%.1f", py(peak)) + "'/>\n";
  s += "<text x='" + fmt("%.1f", px(x1) - 4) + "' y='" + fmt("%.1f", py(peak) - 6) +
       "' font-size='11' text-anchor='end' fill='#c33'>FP32 peak " + fmt("%.1f", peak / 1e12) + " TFLOP/s, DRAM " +
       fmt("%.0f", bw / 1e9) + " GB/s</text>\n";
  // Each predicted fused point is joined by a line to its candidate's member kernels, which are ringed in orange.
  for (const RooflinePoint& fused : r.roofline) {
    if (!fused.predicted) continue;
    const int rank = std::atoi(fused.name.c_str() + 1);  // "#3 fused"
    const auto c =
        std::find_if(r.candidates.begin(), r.candidates.end(), [&](const Candidate& k) { return k.rank == rank; });
    if (c == r.candidates.end()) continue;
    const double fx = px(std::clamp(fused.intensity, x0, x1)), fy = py(std::clamp(fused.flops_per_s, y0, y1));
    for (const RooflinePoint& k : r.roofline) {
      if (k.predicted || std::find(c->names.begin(), c->names.end(), k.name) == c->names.end()) continue;
      const double kx = px(std::clamp(k.intensity, x0, x1)), ky = py(std::clamp(k.flops_per_s, y0, y1));
      s += "<line x1='" + fmt("%.1f", kx) + "' y1='" + fmt("%.1f", ky) + "' x2='" + fmt("%.1f", fx) + "' y2='" +
           fmt("%.1f", fy) + "' stroke='#e80' stroke-dasharray='4 3'/>\n<circle cx='" + fmt("%.1f", kx) + "' cy='" +
           fmt("%.1f", ky) + "' r='8' fill='none' stroke='#e80'/>\n";
    }
    s += "<text x='" + fmt("%.1f", fx + 8) + "' y='" + fmt("%.1f", fy - 6) + "' font-size='11' fill='#e80'>#" +
         std::to_string(rank) + "</text>\n";
  }
  for (const RooflinePoint& p : r.roofline) {
    const double x = std::clamp(p.intensity, x0, x1), y = std::clamp(p.flops_per_s, y0, y1);
    s += "<circle cx='" + fmt("%.1f", px(x)) + "' cy='" + fmt("%.1f", py(y)) + "' r='5' " +
         (p.predicted ? "fill='none' stroke='#27a' stroke-width='2'" : "fill='#27a'") + "><title>" +
         htmlEscape(p.name) + ": " + fmt("%.3g", p.intensity) + " FLOP/B, " + fmt("%.3g", p.flops_per_s / 1e9) +
         " GFLOP/s" + (p.predicted ? " (predicted)" : "") + "</title></circle>\n";
  }
  s += "<text x='" + fmt("%.1f", (L + W - R) / 2) + "' y='" + fmt("%.1f", H - 12) +
       "' font-size='12' text-anchor='middle'>arithmetic intensity (FLOP / DRAM byte)</text>\n";
  s += "<text x='14' y='" + fmt("%.1f", (T + H - B) / 2) +
       "' font-size='12' text-anchor='middle' transform='rotate(-90 14 " + fmt("%.1f", (T + H - B) / 2) +
       ")'>FLOP/s</text>\n</svg>\n";
  return s;
}

}  // namespace

double disjointSaving(const Report& r) {
  std::set<std::pair<bool, core::Id>> taken;  // launch ids, and graph node ids (graph candidates)
  double total = 0;
  for (const Candidate& c : r.candidates) {
    if (c.legality == Legality::kBlocked) continue;
    bool clash = false;
    for (const auto& occ : c.occurrence_launches) {
      for (core::Id id : occ) clash = clash || taken.count({c.inGraphs(), id});
    }
    if (clash) continue;
    for (const auto& occ : c.occurrence_launches) {
      for (core::Id id : occ) taken.insert({c.inGraphs(), id});
    }
    total += c.total_saving_ns;
  }
  return total;
}

std::string shortKernelName(const std::string& name, size_t max) {
  std::string s = name;
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  // Drop the parameter list: the last top-level "(...)".
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.erase(i);
        break;
      }
    }
  }
  // Drop namespace qualifiers ("at::native::"), outside and inside template arguments.
  std::string out;
  size_t word = 0;  // where the current identifier began in `out`
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (ch == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.erase(word);
      ++i;
      continue;
    }
    out += ch;
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) word = out.size();
  }
  if (out.size() > max && max > 3) out = out.substr(0, max - 3) + "...";
  return out.empty() ? name : out;
}

static std::string shortened(const std::string& s, size_t max) {
  return s.size() > max ? s.substr(0, max - 3) + "..." : s;
}

std::string reportToText(const Report& r, size_t top, bool verbose) {
  std::string out;
  for (const std::string& n : r.notices) out += "NOTE      " + n + "\n";
  out += "input     " + r.input_path + " (" + r.input_format + (r.producer.empty() ? "" : ", " + r.producer) + ")\n";
  out += "gpu       " + r.gpu.marketing_name + " [" + r.gpu.short_name + ", from " + r.gpu_source + "]\n";
  out += "launches  " + std::to_string(r.launches) + " of " + std::to_string(r.kernels) + " kernels (" +
         std::to_string(r.kernels_with_ptx) + " with PTX); GPU busy " +
         durationText(static_cast<double>(r.gpu_busy_ns)) +
         (r.gpu_busy_estimated ? " (roofline estimate: no GPU times in the trace)" : "") + ", critical path " +
         durationText(static_cast<double>(r.critical_path_ns)) + "\n";
  std::string kinds;
  for (const auto& [k, n] : r.edges_by_kind) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  out += "graph     " + std::to_string(r.edges) + " edges (" + kinds + ")" +
         (r.has_pointer_data ? "" : "; no pointer arguments: data dependencies inferred") + "\n";
  if (r.records_with_operator > 0 || r.tensor_edges > 0) {
    out += "context   " + std::to_string(r.records_with_operator) + " of " + std::to_string(r.gpu_records) +
           " kernels/copies/sets linked to their CPU operator, " + std::to_string(r.records_with_module) +
           " inside an nn.Module; " + std::to_string(r.tensor_edges) + " tensor edges" +
           (r.tensor_edges_source.empty() ? "" : " (" + r.tensor_edges_source + ")") + "\n";
  }
  for (const Advice& a : r.advice) out += "advice    [" + a.kind + "] " + a.text + "\n";
  out += "\n";
  size_t shown = 0;
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-11s  %-12s %-8s %-6s %6s %12s %12s %6s  %s\n", "rank", "id", "kind",
                "legality", "conf", "occur", "saving/occ", "total", "share", "kernels");
  out += line;
  for (const Candidate& c : r.candidates) {
    if (shown++ >= top) break;
    std::snprintf(line, sizeof line, "%4d  %-11s  %-12s %-8s %-6s %6zu %12s %12s %5.1f%%  ", c.rank, c.id.c_str(),
                  fusionKindName(c.fusion), legalityName(c.legality), confidenceName(c.confidence),
                  static_cast<size_t>(c.runs()), durationText(c.cost.saving_ns).c_str(),
                  durationText(c.total_saving_ns).c_str(), 100 * c.share_of_gpu_busy);
    out += line + (verbose ? candidateMembersText(c) : shortened(candidateMembersText(c, true), 110)) + "\n";
  }
  if (r.candidates.empty()) out += "      (no candidates)\n";
  if (!r.proven_no_gain.empty()) {
    out += "\nproven, but predicted to save nothing (kfuse analyze --all lists them):\n";
    for (const std::string& l : r.proven_no_gain) out += "  - " + l + "\n";
  }
  for (size_t i = 0; i < r.candidates.size() && i < 3; ++i) {
    const Candidate& c = r.candidates[i];
    out += "\n#" + std::to_string(c.rank) + " (" + c.id + ") " + candidateMembersText(c, !verbose) + "\n";
    if (c.inGraphs()) out += "  " + graphOccurrencesText(c) + "\n";
    if (!candidateWhereText(c).empty() || !c.fusion_kind.empty()) {
      out += "  " + (c.fusion_kind.empty() ? std::string() : c.fusion_kind + " fusion") +
             (candidateWhereText(c).empty() ? "" : (c.fusion_kind.empty() ? "" : " ") + candidateWhereText(c)) +
             (c.in_cuda_graph ? "; inside a CUDA graph" : "") + "\n";
    }
    out += "  " + candidateVerdictText(c) + "\n";
    for (const Remedy& m : c.remedies) out += "  => " + m.kind + ": " + m.text + "\n";
    if (verbose && !c.members.empty() && c.members.front().op.size() > 0) {
      for (size_t k = 0; k < c.names.size(); ++k) out += "  kernel " + std::to_string(k + 1) + ": " + c.names[k] + "\n";
    }
    if (verbose) {
      for (const std::string& reason : c.reasons) out += "  - " + reason + "\n";
    }
    if (!c.conflicts_with.empty()) out += "  - " + conflictsText(c) + "\n";
    out += "  cost: " + durationText(c.cost.measured_ns) + " measured + " + durationText(c.cost.gap_ns) + " idle -> " +
           durationText(c.cost.fused_ns) + " fused per occurrence; DRAM " + fmt("%.3g", c.cost.bytes_before) + " -> " +
           fmt("%.3g", c.cost.bytes_after) + " bytes (" + c.cost.bytes_source + ")" +
           (c.cost.note.empty() ? "" : "; " + c.cost.note) + "\n";
  }
  if (!verbose && !r.candidates.empty())
    out += "\n(kfuse analyze --verbose: every reason, full kernel names, kernels)\n";
  if (!r.why_none.empty()) {
    out += "\nno fusion candidate qualified:\n";
    for (const std::string& w : r.why_none) out += "  - " + w + "\n";
  }
  if (verbose && !r.kernel_table.empty()) {
    out += "\nkernels by GPU time" + std::string(r.gpu_busy_estimated ? " (roofline estimates)" : "") +
           "; predicted: the cost model's roofline time and DRAM bytes without the trace's measurements:\n";
    std::snprintf(line, sizeof line, "%12s %12s %8s %12s %-15s %12s %12s %10s %7s  %s\n", "time", "predicted",
                  "launches", "DRAM bytes", "(source)", "predicted", "FLOPs", "FLOP/byte", "of roof", "kernel");
    out += line;
    for (const KernelRow& k : r.kernel_table) {
      std::snprintf(line, sizeof line, "%12s %12s %8zu %12s %-15s %12s %12s %10s %6.0f%%  ", durationText(k.ns).c_str(),
                    k.predicted_ns > 0 ? durationText(k.predicted_ns).c_str() : "-", k.launches,
                    k.bytes > 0 ? fmt("%.3g", k.bytes).c_str() : "-", k.bytes_source.c_str(),
                    k.predicted_bytes > 0 ? fmt("%.3g", k.predicted_bytes).c_str() : "-",
                    k.flops > 0 ? fmt("%.3g", k.flops).c_str() : "-",
                    k.bytes > 0 && k.flops > 0 ? fmt("%.3g", k.flops / k.bytes).c_str() : "-", 100 * k.roof_share);
      out += line + shortKernelName(k.name, 80) + "\n";
    }
  }
  bool header = false;
  for (const core::Stat& s : r.stats) {
    if (!header) out += "\ninput problems (counted, not fatal):\n";
    header = true;
    out += "  " + std::string(core::toString(s.severity)) + " " + s.name + " = " + std::to_string(s.value) +
           (s.description.empty() ? "" : "  (" + s.description + ")") + "\n";
  }
  return out;
}

std::string reportToMarkdown(const Report& r) {
  std::string out = "# kfuse fusion report\n\n";
  for (const std::string& n : r.notices) out += "> **Note:** " + mdEscape(n) + "\n\n";
  out += "- Input: `" + r.input_path + "` (" + r.input_format + ")\n";
  out += "- GPU: " + r.gpu.marketing_name + " (`" + r.gpu.short_name + "`, from " + r.gpu_source + ")\n";
  out += "- " + std::to_string(r.launches) + " launches of " + std::to_string(r.kernels) + " kernels, GPU busy " +
         durationText(static_cast<double>(r.gpu_busy_ns)) + ", critical path " +
         durationText(static_cast<double>(r.critical_path_ns)) + "\n";
  out += "- Predicted saving if all non-overlapping candidates are applied: " + durationText(disjointSaving(r)) + "\n";
  for (const Advice& a : r.advice) out += "- Advice (" + a.kind + "): " + mdEscape(a.text) + "\n";
  out += "\n";
  out += "| rank | id | kind | kernels | occurrences | legality | confidence | saving / occurrence | total | share |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Candidate& c : r.candidates) {
    out += "| " + std::to_string(c.rank) + " | `" + c.id + "` | " + fusionKindName(c.fusion) + " | " +
           mdEscape(candidateMembersText(c)) + " | " + std::to_string(c.runs()) + " | " + legalityName(c.legality) +
           " | " + confidenceName(c.confidence) + " | " + durationText(c.cost.saving_ns) + " | " +
           durationText(c.total_saving_ns) + " | " + fmt("%.1f%%", 100 * c.share_of_gpu_busy) + " |\n";
  }
  for (const Candidate& c : r.candidates) {
    out += "\n## #" + std::to_string(c.rank) + " " + mdEscape(candidateMembersText(c)) + "\n\n";
    if (!c.module_pattern.empty() || !c.fusion_kind.empty()) {
      out += "- " +
             mdEscape((c.fusion_kind.empty() ? std::string() : c.fusion_kind + " fusion ") + candidateWhereText(c)) +
             (c.in_cuda_graph ? "; inside a CUDA graph" : "") + "\n";
    }
    for (const Remedy& m : c.remedies) out += "- **" + m.kind + "**: " + mdEscape(m.text) + "\n";
    for (const std::string& reason : c.reasons) out += "- " + mdEscape(reason) + "\n";
    if (!c.conflicts_with.empty()) out += "- " + conflictsText(c) + "\n";
    if (!c.cost.note.empty()) out += "- cost: " + mdEscape(c.cost.note) + "\n";
  }
  if (!r.proven_no_gain.empty()) {
    out += "\n## Proven, but predicted to save nothing\n\n";
    for (const std::string& line : r.proven_no_gain) out += "- " + mdEscape(line) + "\n";
  }
  if (!r.why_none.empty()) {
    out += "\n## Why nothing qualified\n\n";
    for (const std::string& w : r.why_none) out += "- " + mdEscape(w) + "\n";
  }
  return core::sanitizeUtf8(out);  // the input path, GPU name and producer are the input's bytes too
}

std::string reportToHtml(const Report& r) {
  std::string out =
      "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>kfuse report: " + htmlEscape(r.input_path) +
      "</title>\n<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f4f4f4}"
      ".blocked{color:#999}.proven{color:#070}.likely{color:#a60}</style></head><body>\n";
  out += "<h1>kfuse fusion report</h1>\n";
  for (const std::string& n : r.notices) out += "<p><strong>Note:</strong> " + htmlEscape(n) + "</p>\n";
  for (const Advice& a : r.advice)
    out += "<p><strong>Advice (" + htmlEscape(a.kind) + "):</strong> " + htmlEscape(a.text) + "</p>\n";
  out += "<p>Input <code>" + htmlEscape(r.input_path) + "</code> (" + htmlEscape(r.input_format) + ") on " +
         htmlEscape(r.gpu.marketing_name) + " (" + htmlEscape(r.gpu_source) + "). " + std::to_string(r.launches) +
         " launches of " + std::to_string(r.kernels) + " kernels; GPU busy " +
         durationText(static_cast<double>(r.gpu_busy_ns)) + "; predicted saving " + durationText(disjointSaving(r)) +
         ".</p>\n<h2>Roofline</h2>\n" + rooflineSvg(r) +
         "<p>Dots: kernels as measured. Rings: fused kernels as predicted, joined by dashed lines to their member "
         "kernels (ringed in orange).</p>\n<h2>Candidates</h2>\n<table>\n"
         "<tr><th>rank</th><th>id</th><th>kind</th><th>kernels</th><th>occurrences</th><th>legality</"
         "th><th>confidence</th>"
         "<th>saving / occurrence</th><th>total</th><th>share</th><th>why</th></tr>\n";
  for (const Candidate& c : r.candidates) {
    std::string why = "<li><b>" + htmlEscape(candidateVerdictText(c)) + "</b></li>";
    if (!c.module_pattern.empty() || !c.fusion_kind.empty()) {
      why += "<li>" +
             htmlEscape((c.fusion_kind.empty() ? std::string() : c.fusion_kind + " fusion ") + candidateWhereText(c)) +
             (c.in_cuda_graph ? "; inside a CUDA graph" : "") + "</li>";
    }
    for (const Remedy& m : c.remedies) why += "<li><b>" + htmlEscape(m.kind) + "</b>: " + htmlEscape(m.text) + "</li>";
    for (const std::string& reason : c.reasons) why += "<li>" + htmlEscape(reason) + "</li>";
    if (!c.conflicts_with.empty()) why += "<li>" + htmlEscape(conflictsText(c)) + "</li>";
    out += "<tr class='" + std::string(legalityName(c.legality)) + "'><td>" + std::to_string(c.rank) + "</td><td>" +
           c.id + "</td><td>" + fusionKindName(c.fusion) + "</td><td title='" + htmlEscape(kernelsText(c)) + "'>" +
           htmlEscape(candidateMembersText(c, /*short_names=*/true)) + "</td><td>" + std::to_string(c.runs()) +
           "</td><td>" + legalityName(c.legality) + "</td><td>" + confidenceName(c.confidence) + "</td><td>" +
           durationText(c.cost.saving_ns) + "</td><td>" + durationText(c.total_saving_ns) + "</td><td>" +
           fmt("%.1f%%", 100 * c.share_of_gpu_busy) + "</td><td><ul>" + why + "</ul></td></tr>\n";
  }
  out += "</table>\n";
  if (!r.proven_no_gain.empty()) {
    out += "<h2>Proven, but predicted to save nothing</h2><ul>";
    for (const std::string& line : r.proven_no_gain) out += "<li>" + htmlEscape(line) + "</li>";
    out += "</ul>\n";
  }
  if (!r.kernel_table.empty()) {
    out += std::string("<h2>Kernels</h2>\n<p>By GPU time") +
           (r.gpu_busy_estimated ? " (the trace has no GPU times: the cost model's estimates)" : "") +
           "; share of roof is achieved FLOP/s (or bytes/s) over the roof at the kernel's intensity.</p>\n<table>\n"
           "<tr><th>kernel</th><th>launches</th><th>GPU time</th><th>predicted time</th><th>DRAM bytes</th>"
           "<th>predicted bytes</th><th>FLOPs</th><th>FLOP / byte</th><th>share of roof</th></tr>\n";
    for (const KernelRow& k : r.kernel_table) {
      out += "<tr><td title='" + htmlEscape(k.name) + "'>" + htmlEscape(shortKernelName(k.name, 80)) + "</td><td>" +
             std::to_string(k.launches) + "</td><td>" + durationText(k.ns) + "</td><td>" +
             (k.predicted_ns > 0 ? durationText(k.predicted_ns) : "-") + "</td><td>" +
             (k.bytes > 0 ? fmt("%.3g", k.bytes) + " (" + htmlEscape(k.bytes_source) + ")" : "-") + "</td><td>" +
             (k.predicted_bytes > 0 ? fmt("%.3g", k.predicted_bytes) : "-") + "</td><td>" +
             (k.flops > 0 ? fmt("%.3g", k.flops) : "-") + "</td><td>" +
             (k.bytes > 0 && k.flops > 0 ? fmt("%.3g", k.flops / k.bytes) : "-") + "</td><td>" +
             fmt("%.0f%%", 100 * k.roof_share) + "</td></tr>\n";
    }
    out += "</table>\n";
  }
  if (!r.why_none.empty()) {
    out += "<h2>Why nothing qualified</h2><ul>";
    for (const std::string& w : r.why_none) out += "<li>" + htmlEscape(w) + "</li>";
    out += "</ul>\n";
  }
  out += "</body></html>\n";
  return out;
}

}  // namespace kfuse::analyzer
