// reportFromJson: a report as reportToJson writes it, read back (what `kfuse rewrite` consumes). Every field is
// type-checked; the first problem is reported with its JSON path.
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/gpu_spec.h"

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

class Reader {
 public:
  explicit Reader(std::string what) : what_(std::move(what)) {}
  bool ok() const { return error_.empty(); }
  Status status() const { return badFormat(what_ + ": " + error_); }

  void fail(const std::string& path, const std::string& problem) {
    if (error_.empty()) error_ = (path.empty() ? "" : path + ": ") + problem;
  }

  // Member `key` of object `j` (at `path`), or null after recording why not.
  const json* member(const json& j, const std::string& path, const char* key) {
    if (!ok()) return nullptr;
    if (!j.is_object()) {
      fail(path, "expected an object");
      return nullptr;
    }
    auto it = j.find(key);
    if (it == j.end()) {
      fail(join(path, key), "missing");
      return nullptr;
    }
    return &*it;
  }
  void text(const json& j, const std::string& path, const char* key, std::string& out) {
    const json* v = member(j, path, key);
    if (!v) return;
    if (!v->is_string()) return fail(join(path, key), "expected a string");
    out = v->get<std::string>();
  }
  void boolean(const json& j, const std::string& path, const char* key, bool& out) {
    const json* v = member(j, path, key);
    if (!v) return;
    if (!v->is_boolean()) return fail(join(path, key), "expected true or false");
    out = v->get<bool>();
  }
  void real(const json& j, const std::string& path, const char* key, double& out) {
    const json* v = member(j, path, key);
    if (!v) return;
    if (!v->is_number() || !std::isfinite(v->get<double>())) return fail(join(path, key), "expected a number");
    out = v->get<double>();
  }
  template <typename T>
  void integer(const json& j, const std::string& path, const char* key, T& out) {
    const json* v = member(j, path, key);
    if (v) integerValue(*v, join(path, key), out);
  }
  template <typename T>
  void integerValue(const json& v, const std::string& path, T& out) {
    if (!ok()) return;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return fail(path, "out of range");
      out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t s = v.get<int64_t>();
      if constexpr (std::is_signed_v<T>) {
        if (s < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
            s > static_cast<int64_t>(std::numeric_limits<T>::max())) {
          return fail(path, "out of range");
        }
      } else {
        if (s < 0) return fail(path, "expected a number >= 0");
      }
      out = static_cast<T>(s);
    } else {
      fail(path, "expected an integer");
    }
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
  // Calls fn(element, element_path) for each element of array member `key`.
  template <typename Fn>
  void array(const json& j, const std::string& path, const char* key, Fn fn) {
    const json* v = member(j, path, key);
    if (!v) return;
    if (!v->is_array()) return fail(join(path, key), "expected an array");
    for (size_t i = 0; i < v->size() && ok(); ++i) fn((*v)[i], join(path, key) + "[" + std::to_string(i) + "]");
  }
  void strings(const json& j, const std::string& path, const char* key, std::vector<std::string>& out) {
    array(j, path, key, [&](const json& e, const std::string& p) {
      if (!e.is_string()) return fail(p, "expected a string");
      out.push_back(e.get<std::string>());
    });
  }

  static std::string join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }

 private:
  std::string what_;
  std::string error_;
};

void readCandidate(Reader& r, const json& j, const std::string& path, Candidate& c) {
  r.text(j, path, "id", c.id);
  r.integer(j, path, "rank", c.rank);
  r.name(j, path, "kind", c.kind, kCandidateKinds, candidateKindName);
  r.name(j, path, "fusion", c.fusion, kFusionKinds, fusionKindName);
  r.array(j, path, "kernels", [&](const json& k, const std::string& p) {
    std::string name, mangled;
    r.text(k, p, "name", name);
    r.text(k, p, "mangled_name", mangled);
    c.names.push_back(std::move(name));
    c.mangled_names.push_back(std::move(mangled));
  });
  r.array(j, path, "function_ids", [&](const json& e, const std::string& p) {
    r.integerValue(e, p, c.function_ids.emplace_back());
  });
  r.array(j, path, "occurrence_launches", [&](const json& occ, const std::string& p) {
    std::vector<core::Id>& ids = c.occurrence_launches.emplace_back();
    if (!occ.is_array()) return r.fail(p, "expected an array of launch ids");
    for (size_t i = 0; i < occ.size() && r.ok(); ++i) r.integerValue(occ[i], p + "[" + std::to_string(i) + "]", ids.emplace_back());
    if (r.ok() && ids.size() != c.function_ids.size()) r.fail(p, "expected one launch id per kernel");
  });
  size_t occurrences = 0;
  r.integer(j, path, "occurrences", occurrences);
  if (r.ok() && occurrences != c.occurrence_launches.size()) {
    r.fail(Reader::join(path, "occurrences"), "differs from the number of occurrence_launches");
  }
  if (r.ok() && (c.names.size() != c.function_ids.size() || c.names.empty())) {
    r.fail(Reader::join(path, "function_ids"), "expected one per kernel");
  }
  r.name(j, path, "legality", c.legality, kLegalities, legalityName);
  r.strings(j, path, "reasons", c.reasons);
  if (const json* checked = r.member(j, path, "checked")) {
    const std::string cp = Reader::join(path, "checked");
    r.integer(*checked, cp, "occurrences", c.checked.occurrences_checked);
    r.integer(*checked, cp, "argument_tuples", c.checked.argument_tuples);
    r.array(*checked, cp, "tuples", [&](const json& t, const std::string& tp) {
      std::vector<ProofArgument>& tuple = c.checked.tuples.emplace_back();
      if (!t.is_array()) return r.fail(tp, "expected an array");
      for (size_t i = 0; i < t.size() && r.ok(); ++i) {
        const std::string ap = tp + "[" + std::to_string(i) + "]";
        ProofArgument& a = tuple.emplace_back();
        r.integer(t[i], ap, "kernel", a.kernel);
        r.integer(t[i], ap, "param", a.param);
        r.name(t[i], ap, "kind", a.what, kProofValues, proofValueName);
        r.integer(t[i], ap, "value", a.value);
        if (r.ok() && (a.kernel < 0 || static_cast<size_t>(a.kernel) >= c.function_ids.size() || a.param < 0)) {
          r.fail(ap, "names no argument of the candidate's kernels");
        }
      }
    });
  }
  r.name(j, path, "confidence", c.confidence, kConfidences, confidenceName);
  r.real(j, path, "predicted_saving_ns_total", c.total_saving_ns);
  r.real(j, path, "share_of_gpu_busy", c.share_of_gpu_busy);
  r.boolean(j, path, "on_critical_path", c.on_critical_path);
  r.array(j, path, "conflicts_with", [&](const json& e, const std::string& p) {
    r.integerValue(e, p, c.conflicts_with.emplace_back());
  });
  if (const json* cost = r.member(j, path, "cost")) {
    const std::string cp = Reader::join(path, "cost");
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
  r.array(j, path, "edges", [&](const json& e, const std::string& p) {
    auto& edge = c.edges.emplace_back();
    r.name(e, p, "kind", edge.first, kEdgeKinds, edgeKindName);
    r.text(e, p, "reason", edge.second);
  });
  if (j.is_object() && j.contains("epilogue")) {
    const json& e = j["epilogue"];
    const std::string ep = Reader::join(path, "epilogue");
    EpilogueMap m;
    r.integer(e, ep, "producer_param", m.producer_param);
    r.integer(e, ep, "consumer", m.consumer);
    r.integer(e, ep, "consumer_param", m.consumer_param);
    r.integer(e, ep, "consumer_offset", m.consumer_offset);
    r.integer(e, ep, "element_bytes", m.element_bytes);
    r.integer(e, ep, "producer_lanes", m.producer_lanes);
    if (r.ok() && (m.consumer < 0 || static_cast<size_t>(m.consumer) >= c.function_ids.size())) {
      r.fail(Reader::join(ep, "consumer"), "names no kernel of the candidate");
    }
    c.epilogue = m;
  }
  r.array(j, path, "members", [&](const json& e, const std::string& p) {
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
  r.array(j, path, "modules", [&](const json& e, const std::string& p) {
    ModuleOccurrences& m = c.modules.emplace_back();
    r.text(e, p, "module", m.module);
    r.integer(e, p, "occurrences", m.occurrences);
  });
  if (j.is_object() && j.contains("data_flow")) r.text(j, path, "data_flow", c.data_flow);
  r.boolean(j, path, "in_cuda_graph", c.in_cuda_graph);
  r.array(j, path, "remedies", [&](const json& e, const std::string& p) {
    Remedy& m = c.remedies.emplace_back();
    r.text(e, p, "kind", m.kind);
    r.text(e, p, "text", m.text);
  });
}

}  // namespace

Expected<Report> reportFromJson(const json& j, const std::string& what) {
  Reader r(what);
  Report out;
  std::string format;
  int version = 0;
  r.text(j, "", "format", format);
  if (r.ok() && format != "kfuse-report") r.fail("format", "expected \"kfuse-report\", found \"" + format + "\"");
  r.integer(j, "", "version", version);
  if (!r.ok()) return r.status();
  if (version != kReportVersion) {
    return Status(ErrorCode::kUnsupportedVersion,
                  what + ": report version " + std::to_string(version) + " (this kfuse reads version " +
                      std::to_string(kReportVersion) + "); run `kfuse analyze` again");
  }
  if (const json* o = r.member(j, "", "options")) {
    r.text(*o, "options", "gpu", out.options.gpu);
    r.integer(*o, "options", "max_chain", out.options.max_chain_length);
    r.integer(*o, "options", "max_group", out.options.max_group);
    r.boolean(*o, "options", "all", out.options.keep_no_gain);
    r.text(*o, "options", "execution_trace", out.options.execution_trace);
    r.text(*o, "options", "metrics_from", out.options.metrics_from);
    r.text(*o, "options", "binary", out.options.binary);
  }
  if (const json* in = r.member(j, "", "input")) {
    r.text(*in, "input", "path", out.input_path);
    r.text(*in, "input", "format", out.input_format);
    r.text(*in, "input", "producer", out.producer);
  }
  if (const json* gpu = r.member(j, "", "gpu")) {
    std::string short_name;
    r.text(*gpu, "gpu", "short_name", short_name);
    r.text(*gpu, "gpu", "source", out.gpu_source);
    if (r.ok()) {
      auto spec = core::findGpuSpec(short_name);
      if (!spec) return badFormat(what + ": gpu.short_name: '" + short_name + "' is not in kfuse's GPU table");
      out.gpu = *spec;
    }
  }
  if (const json* s = r.member(j, "", "summary")) {
    r.integer(*s, "summary", "launches", out.launches);
    r.integer(*s, "summary", "kernels", out.kernels);
    r.integer(*s, "summary", "kernels_with_ptx", out.kernels_with_ptx);
    r.boolean(*s, "summary", "has_pointer_data", out.has_pointer_data);
    r.integer(*s, "summary", "gpu_busy_ns", out.gpu_busy_ns);
    r.boolean(*s, "summary", "gpu_busy_estimated", out.gpu_busy_estimated);
    r.integer(*s, "summary", "critical_path_ns", out.critical_path_ns);
    r.integer(*s, "summary", "cost_model_version", out.cost_model_version);
    r.integer(*s, "summary", "edges", out.edges);
    if (const json* k = r.member(*s, "summary", "edges_by_kind"); k && k->is_object()) {
      for (auto it = k->begin(); it != k->end() && r.ok(); ++it) {
        r.integerValue(it.value(), "summary.edges_by_kind." + it.key(), out.edges_by_kind[it.key()]);
      }
    } else if (k) {
      r.fail("summary.edges_by_kind", "expected an object");
    }
    r.strings(*s, "summary", "why_none", out.why_none);
    if (const json* c = r.member(*s, "summary", "context")) {
      r.integer(*c, "summary.context", "gpu_records", out.gpu_records);
      r.integer(*c, "summary.context", "with_operator", out.records_with_operator);
      r.integer(*c, "summary.context", "with_module", out.records_with_module);
      r.integer(*c, "summary.context", "tensor_edges", out.tensor_edges);
      r.text(*c, "summary.context", "tensor_edges_source", out.tensor_edges_source);
    }
  }
  r.array(j, "", "candidates", [&](const json& c, const std::string& p) {
    readCandidate(r, c, p, out.candidates.emplace_back());
  });
  r.strings(j, "", "notices", out.notices);
  r.array(j, "", "advice", [&](const json& e, const std::string& p) {
    Advice& a = out.advice.emplace_back();
    r.text(e, p, "kind", a.kind);
    r.text(e, p, "where", a.where);
    r.text(e, p, "text", a.text);
    r.real(e, p, "idle_ns", a.idle_ns);
    r.real(e, p, "window_ns", a.window_ns);
    r.integer(e, p, "launches", a.launches);
  });
  r.array(j, "", "roofline", [&](const json& e, const std::string& p) {
    RooflinePoint& pt = out.roofline.emplace_back();
    r.text(e, p, "name", pt.name);
    r.real(e, p, "intensity", pt.intensity);
    r.real(e, p, "flops_per_s", pt.flops_per_s);
    r.boolean(e, p, "predicted", pt.predicted);
  });
  r.array(j, "", "stats", [&](const json& e, const std::string& p) {
    core::Stat& st = out.stats.emplace_back();
    std::string severity;
    r.text(e, p, "name", st.name);
    r.integer(e, p, "value", st.value);
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
