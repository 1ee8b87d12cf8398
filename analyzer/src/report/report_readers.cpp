// reportFromJson: a report as reportToJson writes it, read back (what `kfuse rewrite` consumes). Every field is
// type-checked; the first problem is reported with its JSON path.
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/gpu_spec.h"
#include "kfuse/core/json_reader.h"

namespace kfuse::analyzer {
namespace {

using nlohmann::json;

// Names back to enums, through the writers' own name functions.
template <typename E, size_t N>
std::optional<E> byName(const std::string& s, const E (&values)[N], const char* (*name)(E)) {
  for (E v : values) {
    if (s == name(v)) return v;
  }
  return std::nullopt;
}
constexpr CandidateKind kCandidateKinds[] = {CandidateKind::kVertical, CandidateKind::kHorizontal};
constexpr FusionKind kFusionKinds[] = {FusionKind::kThreadLocal, FusionKind::kEpilogue, FusionKind::kHorizontal,
                                       FusionKind::kBlockLevel, FusionKind::kPrologue};
constexpr Legality kLegalities[] = {Legality::kProven, Legality::kLikely, Legality::kBlocked};
constexpr Confidence kConfidences[] = {Confidence::kHigh, Confidence::kMedium, Confidence::kLow};
constexpr EdgeKind kEdgeKinds[] = {EdgeKind::kStreamOrder, EdgeKind::kEventSync, EdgeKind::kHostSync,
                                   EdgeKind::kRaw,         EdgeKind::kWar,       EdgeKind::kWaw};
constexpr ProofValue kProofValues[] = {ProofValue::kScalar, ProofValue::kPointerOffset, ProofValue::kAllocation};

constexpr int64_t kAny = std::numeric_limits<int64_t>::min();

// core::JsonReader plus names of enums and the report's required-by-default fields.
class Reader : public core::JsonReader {
 public:
  using JsonReader::JsonReader;

  void text(const json& j, const std::string& path, const char* key, std::string& out) { str(j, path, key, out, true); }
  void flag(const json& j, const std::string& path, const char* key, bool& out) { boolean(j, path, key, out, true); }
  void real(const json& j, const std::string& path, const char* key, double& out) { number(j, path, key, out, true); }
  template <typename T>
  void whole(const json& j, const std::string& path, const char* key, T& out, int64_t min = 0) {
    integer(j, path, key, out, /*required=*/true, min);
  }
  template <typename Fn>
  void list(const json& j, const std::string& path, const char* key, Fn fn) {
    array(j, path, key, /*required=*/true, fn);
  }
  template <typename E, size_t N>
  void name(const json& j, const std::string& path, const char* key, E& out, const E (&values)[N],
            const char* (*fn)(E)) {
    std::string s;
    text(j, path, key, s);
    if (!ok()) return;
    if (auto v = byName(s, values, fn)) {
      out = *v;
    } else {
      fail(join(path, key), "unknown value '" + s + "'");
    }
  }
};

void readCandidate(Reader& r, const json& j, const std::string& path, Candidate& c) {
  r.text(j, path, "id", c.id);
  r.whole(j, path, "rank", c.rank);
  r.name(j, path, "kind", c.kind, kCandidateKinds, candidateKindName);
  r.name(j, path, "fusion", c.fusion, kFusionKinds, fusionKindName);
  r.list(j, path, "kernels", [&](const json& k, const std::string& p) {
    std::string name, mangled;
    r.text(k, p, "name", name);
    r.text(k, p, "mangled_name", mangled);
    c.names.push_back(std::move(name));
    c.mangled_names.push_back(std::move(mangled));
  });
  r.list(j, path, "function_ids",
         [&](const json& e, const std::string& p) { r.integerValue(e, p, c.function_ids.emplace_back()); });
  r.list(j, path, "occurrence_launches", [&](const json& occ, const std::string& p) {
    std::vector<core::Id>& ids = c.occurrence_launches.emplace_back();
    if (!occ.is_array()) return r.fail(p, "expected an array of launch ids");
    for (size_t i = 0; i < occ.size() && r.ok(); ++i)
      r.integerValue(occ[i], p + "[" + std::to_string(i) + "]", ids.emplace_back());
    if (r.ok() && ids.size() != c.function_ids.size()) r.fail(p, "expected one launch id per kernel");
  });
  size_t occurrences = 0;
  r.whole(j, path, "occurrences", occurrences);
  if (r.ok() && occurrences != c.occurrence_launches.size()) {
    r.fail(core::JsonReader::join(path, "occurrences"), "differs from the number of occurrence_launches");
  }
  if (r.ok() && (c.names.size() != c.function_ids.size() || c.names.empty())) {
    r.fail(core::JsonReader::join(path, "function_ids"), "expected one per kernel");
  }
  r.name(j, path, "legality", c.legality, kLegalities, legalityName);
  r.strings(j, path, "reasons", c.reasons);
  if (const json* checked = r.member(j, path, "checked", true)) {
    const std::string cp = core::JsonReader::join(path, "checked");
    r.whole(*checked, cp, "occurrences", c.checked.occurrences_checked);
    r.whole(*checked, cp, "argument_tuples", c.checked.argument_tuples);
    r.list(*checked, cp, "tuples", [&](const json& t, const std::string& tp) {
      std::vector<ProofArgument>& tuple = c.checked.tuples.emplace_back();
      if (!t.is_array()) return r.fail(tp, "expected an array");
      for (size_t i = 0; i < t.size() && r.ok(); ++i) {
        const std::string ap = tp + "[" + std::to_string(i) + "]";
        ProofArgument& a = tuple.emplace_back();
        r.whole(t[i], ap, "kernel", a.kernel);
        r.whole(t[i], ap, "param", a.param);
        r.name(t[i], ap, "kind", a.what, kProofValues, proofValueName);
        r.whole(t[i], ap, "value", a.value, kAny);
        if (r.ok() && (a.kernel < 0 || static_cast<size_t>(a.kernel) >= c.function_ids.size() || a.param < 0)) {
          r.fail(ap, "names no argument of the candidate's kernels");
        }
      }
    });
  }
  r.name(j, path, "confidence", c.confidence, kConfidences, confidenceName);
  r.real(j, path, "predicted_saving_ns_total", c.total_saving_ns);
  r.real(j, path, "share_of_gpu_busy", c.share_of_gpu_busy);
  r.flag(j, path, "on_critical_path", c.on_critical_path);
  r.list(j, path, "conflicts_with",
         [&](const json& e, const std::string& p) { r.integerValue(e, p, c.conflicts_with.emplace_back()); });
  if (const json* cost = r.member(j, path, "cost", true)) {
    const std::string cp = core::JsonReader::join(path, "cost");
    r.real(*cost, cp, "measured_ns", c.cost.measured_ns);
    r.real(*cost, cp, "fused_ns", c.cost.fused_ns);
    r.real(*cost, cp, "gap_ns", c.cost.gap_ns);
    r.real(*cost, cp, "bytes_before", c.cost.bytes_before);
    r.real(*cost, cp, "bytes_after", c.cost.bytes_after);
    r.real(*cost, cp, "flops", c.cost.flops);
    r.text(*cost, cp, "bytes_source", c.cost.bytes_source);
    r.text(*cost, cp, "flops_source", c.cost.flops_source);
    r.text(*cost, cp, "note", c.cost.note);
  }
  r.real(j, path, "predicted_saving_ns_per_occurrence", c.cost.saving_ns);
  r.list(j, path, "edges", [&](const json& e, const std::string& p) {
    auto& edge = c.edges.emplace_back();
    r.name(e, p, "kind", edge.first, kEdgeKinds, edgeKindName);
    r.text(e, p, "reason", edge.second);
  });
  if (j.is_object() && j.contains("epilogue")) {
    const json& e = j["epilogue"];
    const std::string ep = core::JsonReader::join(path, "epilogue");
    EpilogueMap m;
    r.whole(e, ep, "producer_param", m.producer_param);
    r.whole(e, ep, "consumer", m.consumer);
    r.whole(e, ep, "consumer_param", m.consumer_param);
    r.whole(e, ep, "consumer_offset", m.consumer_offset, kAny);
    r.whole(e, ep, "element_bytes", m.element_bytes);
    r.whole(e, ep, "producer_lanes", m.producer_lanes);
    if (r.ok() && (m.consumer < 0 || static_cast<size_t>(m.consumer) >= c.function_ids.size())) {
      r.fail(core::JsonReader::join(ep, "consumer"), "names no kernel of the candidate");
    }
    c.epilogue = m;
  }
  r.list(j, path, "members", [&](const json& e, const std::string& p) {
    MemberContext& m = c.members.emplace_back();
    r.text(e, p, "label", m.label);
    r.text(e, p, "op", m.op);
    r.text(e, p, "top_op", m.top_op);
    r.text(e, p, "module", m.module);
    r.text(e, p, "family", m.family);
    r.text(e, p, "library", m.library);
    r.text(e, p, "annotation", m.annotation);
  });
  r.text(j, path, "fusion_kind", c.fusion_kind);
  r.text(j, path, "module_pattern", c.module_pattern);
  r.list(j, path, "modules", [&](const json& e, const std::string& p) {
    ModuleOccurrences& m = c.modules.emplace_back();
    r.text(e, p, "module", m.module);
    r.whole(e, p, "occurrences", m.occurrences);
  });
  if (j.is_object() && j.contains("data_flow")) r.text(j, path, "data_flow", c.data_flow);
  r.flag(j, path, "in_cuda_graph", c.in_cuda_graph);
  r.list(j, path, "remedies", [&](const json& e, const std::string& p) {
    Remedy& m = c.remedies.emplace_back();
    r.text(e, p, "kind", m.kind);
    r.text(e, p, "text", m.text);
  });
}

}  // namespace

Expected<Report> reportFromJson(const json& j, const std::string& what) {
  Reader r(what);
  Report out;
  if (!j.is_object()) return badFormat(what + ": expected an object (a `kfuse analyze --json` report)");
  std::string format;
  int version = 0;
  r.text(j, "", "format", format);
  if (r.ok() && format != "kfuse-report") r.fail("format", "expected \"kfuse-report\", found \"" + format + "\"");
  r.whole(j, "", "version", version);
  if (!r.ok()) return r.status();
  if (version != kReportVersion) {
    return Status(ErrorCode::kUnsupportedVersion, what + ": report version " + std::to_string(version) +
                                                      " (this kfuse reads version " + std::to_string(kReportVersion) +
                                                      "); run `kfuse analyze` again");
  }
  if (const json* o = r.member(j, "", "options", true)) {
    r.text(*o, "options", "gpu", out.options.gpu);
    r.whole(*o, "options", "max_chain", out.options.max_chain_length);
    r.whole(*o, "options", "max_group", out.options.max_group);
    r.flag(*o, "options", "all", out.options.keep_no_gain);
    r.text(*o, "options", "execution_trace", out.options.execution_trace);
    r.text(*o, "options", "metrics_from", out.options.metrics_from);
    r.text(*o, "options", "binary", out.options.binary);
  }
  if (const json* in = r.member(j, "", "input", true)) {
    r.text(*in, "input", "path", out.input_path);
    r.text(*in, "input", "format", out.input_format);
    r.text(*in, "input", "producer", out.producer);
  }
  if (const json* gpu = r.member(j, "", "gpu", true)) {
    std::string short_name;
    r.text(*gpu, "gpu", "short_name", short_name);
    r.text(*gpu, "gpu", "source", out.gpu_source);
    if (r.ok()) {
      auto spec = core::findGpuSpec(short_name);
      if (!spec) return badFormat(what + ": gpu.short_name: '" + short_name + "' is not in kfuse's GPU table");
      out.gpu = *spec;
    }
  }
  if (const json* s = r.member(j, "", "summary", true)) {
    r.whole(*s, "summary", "launches", out.launches);
    r.whole(*s, "summary", "kernels", out.kernels);
    r.whole(*s, "summary", "kernels_with_ptx", out.kernels_with_ptx);
    r.flag(*s, "summary", "has_pointer_data", out.has_pointer_data);
    r.whole(*s, "summary", "gpu_busy_ns", out.gpu_busy_ns);
    r.flag(*s, "summary", "gpu_busy_estimated", out.gpu_busy_estimated);
    r.whole(*s, "summary", "critical_path_ns", out.critical_path_ns);
    r.whole(*s, "summary", "cost_model_version", out.cost_model_version);
    r.whole(*s, "summary", "edges", out.edges);
    if (const json* k = r.member(*s, "summary", "edges_by_kind", true); k && k->is_object()) {
      for (auto it = k->begin(); it != k->end() && r.ok(); ++it) {
        r.integerValue(it.value(), "summary.edges_by_kind." + it.key(), out.edges_by_kind[it.key()]);
      }
    } else if (k) {
      r.fail("summary.edges_by_kind", "expected an object");
    }
    r.strings(*s, "summary", "why_none", out.why_none);
    if (const json* c = r.member(*s, "summary", "context", true)) {
      r.whole(*c, "summary.context", "gpu_records", out.gpu_records);
      r.whole(*c, "summary.context", "with_operator", out.records_with_operator);
      r.whole(*c, "summary.context", "with_module", out.records_with_module);
      r.whole(*c, "summary.context", "tensor_edges", out.tensor_edges);
      r.text(*c, "summary.context", "tensor_edges_source", out.tensor_edges_source);
    }
  }
  r.list(j, "", "candidates",
         [&](const json& c, const std::string& p) { readCandidate(r, c, p, out.candidates.emplace_back()); });
  r.strings(j, "", "notices", out.notices);
  r.list(j, "", "advice", [&](const json& e, const std::string& p) {
    Advice& a = out.advice.emplace_back();
    r.text(e, p, "kind", a.kind);
    r.text(e, p, "where", a.where);
    r.text(e, p, "text", a.text);
    r.real(e, p, "idle_ns", a.idle_ns);
    r.real(e, p, "window_ns", a.window_ns);
    r.whole(e, p, "launches", a.launches);
  });
  r.list(j, "", "roofline", [&](const json& e, const std::string& p) {
    RooflinePoint& pt = out.roofline.emplace_back();
    r.text(e, p, "name", pt.name);
    r.real(e, p, "intensity", pt.intensity);
    r.real(e, p, "flops_per_s", pt.flops_per_s);
    r.flag(e, p, "predicted", pt.predicted);
  });
  r.list(j, "", "stats", [&](const json& e, const std::string& p) {
    core::Stat& st = out.stats.emplace_back();
    std::string severity;
    r.text(e, p, "name", st.name);
    r.whole(e, p, "value", st.value, kAny);
    r.text(e, p, "severity", severity);
    r.text(e, p, "description", st.description);
    if (!r.ok()) return;
    if (auto s = core::parseStatSeverity(severity)) {
      st.severity = *s;
    } else {
      r.fail(p + ".severity", "unknown value '" + severity + "'");
    }
  });
  if (!r.ok()) return r.status();
  // Ids and ranks name candidates: each once.
  for (size_t a = 0; a < out.candidates.size(); ++a) {
    for (size_t b = a + 1; b < out.candidates.size(); ++b) {
      if (out.candidates[a].id == out.candidates[b].id || out.candidates[a].rank == out.candidates[b].rank) {
        return badFormat(what + ": candidates[" + std::to_string(b) + "] repeats the id or rank of candidates[" +
                         std::to_string(a) + "]");
      }
    }
  }
  return out;
}

}  // namespace kfuse::analyzer
