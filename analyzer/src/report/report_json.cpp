// The report as JSON (schemas/report.schema.json): one field list per record below drives reportToJson, reportFromJson
// (what `kfuse rewrite` reads back; every field type-checked, the first problem named with its JSON path) and the
// schema, which kfuse_schema_gen writes from them.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/gpu_spec.h"
#include "kfuse/core/json_document.h"
#include "kfuse/core/json_fields.h"
#include "report/report_totals.h"

namespace kfuse::analyzer {
namespace {

using json = nlohmann::json;
using OJson = nlohmann::ordered_json;
using core::computed;
using core::custom;
using core::field;
using core::group;
using core::JsonFieldOptions;
using core::JsonFieldReader;
using core::JsonReader;
using core::jsonRecord;
using core::JsonSchemaWriter;
using core::JsonStringFormat;

// ---- closed sets of strings the analyzer writes ----

constexpr const char* kInputFormats[] = {"kfuse", "kfuse-json", "kineto", "nsys"};
constexpr const char* kGpuSources[] = {"trace", "option", "default"};
constexpr const char* kTensorEdgeSources[] = {"", "execution-trace", "inferred-from-shapes"};
constexpr const char* kCostSources[] = {"measured",          "emulated",       "ptx-estimate", "extent-estimate",
                                        "operator-estimate", "mixed-estimate", "estimated",    "unknown"};
constexpr const char* kFamilyFusions[] = {"", "pointwise", "epilogue", "prologue", "reduction-epilogue"};
constexpr const char* kDataFlows[] = {"pointer-arguments", "execution-trace", "inferred-from-shapes", "adjacency"};
constexpr const char* kRemedyKinds[] = {"torch-compile", "gemm-epilogue", "fused-operator",
                                        "cuda-graph",    "kfuse-rewrite", "note"};
constexpr const char* kAdviceKinds[] = {"cuda-graph", "graphed"};

bool isCandidateId(std::string_view s) {
  return s.size() == 11 && s[0] == 'k' &&
         std::all_of(s.begin() + 1, s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
constexpr JsonStringFormat kCandidateId{"^k[0-9a-f]{10}$", 0, isCandidateId, "expected k and 10 hex digits"};

// ---- special forms ----

// The GPU by its spec table name: read back as the table's entry.
struct GpuByShortName {
  void write(const Report& r, json& out) const { out = r.gpu.short_name; }
  void read(JsonFieldReader& r, const json& j, const std::string& path, Report& report) const {
    if (!j.is_string()) return r.fail(path, "expected a string");
    const std::string& name = j.get_ref<const std::string&>();
    auto spec = core::findGpuSpec(name);
    if (!spec) return r.fail(path, "'" + name + "' is not in kfuse's GPU table");
    report.gpu = *spec;
  }
  OJson schema(JsonSchemaWriter&, const JsonFieldOptions&) const { return {{"type", "string"}}; }
};

// summary.edges_by_kind: edges counted per kind, by the kind's name.
struct EdgesByKind {
  using value_type = std::map<std::string, size_t>;
  void write(const value_type& m, json& out, const JsonFieldOptions& o) const { core::JsonValue<>{}.write(m, out, o); }
  void read(JsonFieldReader& r, const json& j, const std::string& path, value_type& m,
            const JsonFieldOptions& o) const {
    core::JsonValue<>{}.read(r, j, path, m, o);
    for (const auto& [kind, n] : m) {
      if (r.ok() && !core::enumFromName<EdgeKind>(kind)) r.unknownName(JsonReader::join(path, kind), kind, {});
    }
  }
  OJson schema(JsonSchemaWriter& s, const JsonFieldOptions& o, core::JsonType<value_type> t) const {
    OJson p = core::JsonValue<>{}.schema(s, o, t);
    OJson names = OJson::array();
    for (const auto& e : core::enumNames<EdgeKind>()) names.push_back(e.name);
    p["propertyNames"] = {{"enum", names}};
    return p;
  }
};

// A candidate's kernels: their names and mangled names side by side.
struct CandidateKernels {
  void write(const Candidate& c, json& out) const {
    out = json::array();
    for (size_t i = 0; i < c.names.size(); ++i) {
      out.push_back({{"name", c.names[i]}, {"mangled_name", i < c.mangled_names.size() ? c.mangled_names[i] : ""}});
    }
  }
  void read(JsonFieldReader& r, const json& j, const std::string& path, Candidate& c) const {
    if (!j.is_array()) return r.fail(path, "expected an array");
    for (size_t i = 0; i < j.size() && r.ok(); ++i) {
      const std::string p = JsonReader::indexed(path, i);
      std::string& name = c.names.emplace_back();
      std::string& mangled = c.mangled_names.emplace_back();
      r.str(j[i], p, "name", name, /*required=*/true);
      r.str(j[i], p, "mangled_name", mangled, /*required=*/true);
    }
    if (r.ok() && c.names.size() < 2) r.fail(path, "expected at least 2 kernels");
  }
  OJson schema(JsonSchemaWriter&, const JsonFieldOptions&) const {
    return {{"type", "array"},
            {"minItems", 2},
            {"items",
             {{"type", "object"},
              {"additionalProperties", false},
              {"required", {"name", "mangled_name"}},
              {"properties", {{"name", {{"type", "string"}}}, {"mangled_name", {{"type", "string"}}}}}}}};
  }
};

// A candidate's number of occurrences: written from its occurrence launches (for a graph candidate, the replays
// that ran them: Candidate::runs), and read back as a check of them.
struct OccurrenceCount {
  void write(const Candidate& c, json& out) const { out = c.runs(); }
  void read(JsonFieldReader& r, const json& j, const std::string& path, Candidate& c) const {
    int64_t n = 0;
    r.integerValue(j, path, n, 1);
    if (r.ok() && n != c.runs()) {
      r.fail(path, c.inGraphs() ? "differs from the sum of occurrence_replays"
                                : "differs from the number of occurrence_launches");
    }
  }
  OJson schema(JsonSchemaWriter&, const JsonFieldOptions&) const { return {{"type", "integer"}, {"minimum", 1}}; }
};

// ---- field lists ----

auto optionsFields() {
  using O = AnalysisOptions;
  return jsonRecord<O>(field("gpu", &O::gpu).doc("--gpu, empty for the trace's device"),
                       field("max_chain", &O::max_chain_length).atLeast(2),
                       field("max_group", &O::max_group).atLeast(2),
                       field("all", &O::keep_no_gain).doc("--all: patterns predicted to save nothing are listed too"),
                       field("execution_trace", &O::execution_trace).doc("--et: the PyTorch Execution Trace joined"),
                       field("metrics_from", &O::metrics_from).doc("--metrics-from: the measured metrics joined"),
                       field("binary", &O::binary).doc("--binary: the application whose fatbin gave the kernels' PTX"))
      .fieldsRequired()
      .doc(
          "what the report was made with (kfuse analyze options): kfuse rewrite reads the report back and rewrites "
          "its candidates");
}

auto proofArgumentFields() {
  using A = ProofArgument;
  return jsonRecord<A>(field("kernel", &A::kernel).doc("position of the kernel in the candidate"),
                       field("param", &A::param),
                       field("kind", &A::what)
                           .doc("value: the argument's value; pointer_offset: a pointer's byte offset into its "
                                "allocation; allocation: which earlier pointer of the tuple (by position among the "
                                "allocation entries) shares its allocation"),
                       field("value", &A::value).anyInteger())
      .fieldsRequired();
}

auto legalityCheckFields() {
  using L = LegalityCheck;
  return jsonRecord<L>(field("occurrences", &L::occurrences_checked), field("argument_tuples", &L::argument_tuples),
                       field("tuples", &L::tuples).of(proofArgumentFields()))
      .fieldsRequired()
      .doc(
          "On which occurrences legality was decided: occurrences are grouped by the values the proof reads (scalar "
          "arguments in access offsets and guards, pointer offsets into allocations); each distinct tuple was "
          "checked once. `tuples` lists at most 16 of them.");
}

auto costFields() {
  using C = CostEstimate;
  return jsonRecord<C>(field("measured_ns", &C::measured_ns).nonNegative(),
                       field("fused_ns", &C::fused_ns).nonNegative(), field("gap_ns", &C::gap_ns).nonNegative(),
                       field("bytes_before", &C::bytes_before).nonNegative(),
                       field("bytes_after", &C::bytes_after).nonNegative(), field("flops", &C::flops).nonNegative(),
                       field("bytes_source", &C::bytes_source).oneOf(kCostSources),
                       field("flops_source", &C::flops_source).oneOf(kCostSources), field("note", &C::note))
      .fieldsRequired();
}

auto edgeFields() {
  using E = std::pair<EdgeKind, std::string>;
  return jsonRecord<E>(field("kind", &E::first), field("reason", &E::second)).fieldsRequired();
}

auto epilogueFields() {
  using E = EpilogueMap;
  return jsonRecord<E>(
             field("producer_param", &E::producer_param), field("consumer", &E::consumer),
             field("consumer_param", &E::consumer_param), field("consumer_offset", &E::consumer_offset).anyInteger(),
             field("element_bytes", &E::element_bytes), field("producer_lanes", &E::producer_lanes),
             field("element_grid", &E::element_grid)
                 .optional()
                 .omitDefault()
                 .doc("grid-stride element-wise kernels run as one element per thread on this many blocks "
                      "of their block size; absent: none"),
             field("producer_grid", &E::producer_grid)
                 .optional()
                 .omitDefault()
                 .doc("epilogue: the producer, a grid-stride loop, runs as one element per thread on this many "
                      "blocks of its block size, the fused launch; absent: the producer runs as recorded"))
      .fieldsRequired()
      .doc("a proven epilogue or prologue fusion's element map (docs/analyzer.md)");
}

auto memberFields() {
  using M = MemberContext;
  return jsonRecord<M>(field("label", &M::label), field("op", &M::op), field("top_op", &M::top_op),
                       field("module", &M::module), field("family", &M::family), field("library", &M::library),
                       field("annotation", &M::annotation))
      .fieldsRequired();
}

auto moduleFields() {
  using M = ModuleOccurrences;
  return jsonRecord<M>(field("module", &M::module), field("occurrences", &M::occurrences).atLeast(1)).fieldsRequired();
}

auto remedyFields() {
  using R = Remedy;
  return jsonRecord<R>(field("kind", &R::kind).oneOf(kRemedyKinds), field("text", &R::text)).fieldsRequired();
}

// What the candidate's fields cannot check alone: one function id and one launch id per kernel, proof arguments
// and element maps that name the candidate's kernels.
void checkCandidate(JsonFieldReader& r, const std::string& path, const Candidate& c) {
  if (c.names.size() != c.function_ids.size() || c.names.empty()) {
    return r.fail(JsonReader::join(path, "function_ids"), "expected one per kernel");
  }
  for (size_t i = 0; i < c.occurrence_launches.size(); ++i) {
    if (c.occurrence_launches[i].size() != c.function_ids.size()) {
      return r.fail(JsonReader::indexed(JsonReader::join(path, "occurrence_launches"), i),
                    "expected one launch id per kernel");
    }
  }
  if (c.occurrence_graphs.size() != c.occurrence_replays.size() ||
      (c.inGraphs() && c.occurrence_graphs.size() != c.occurrence_launches.size())) {
    return r.fail(JsonReader::join(path, "occurrence_graphs"),
                  "expected one graph and one replay count per occurrence, or neither");
  }
  const std::string tuples = JsonReader::join(JsonReader::join(path, "checked"), "tuples");
  for (size_t t = 0; t < c.checked.tuples.size(); ++t) {
    for (size_t i = 0; i < c.checked.tuples[t].size(); ++i) {
      if (static_cast<size_t>(c.checked.tuples[t][i].kernel) >= c.function_ids.size()) {
        return r.fail(JsonReader::indexed(JsonReader::indexed(tuples, t), i),
                      "names no argument of the candidate's kernels");
      }
    }
  }
  if (c.epilogue && static_cast<size_t>(c.epilogue->consumer) >= c.function_ids.size()) {
    r.fail(JsonReader::join(JsonReader::join(path, "epilogue"), "consumer"), "names no kernel of the candidate");
  }
}

auto candidateFields() {
  using C = Candidate;
  return jsonRecord<C>(
             field("id", &C::id)
                 .format(kCandidateId)
                 .doc("stable id: the same for the same analysis of the same trace (kfuse rewrite --candidate "
                      "takes it)"),
             field("rank", &C::rank).atLeast(1), field("kind", &C::kind),
             field("fusion", &C::fusion).doc("how the kernels share the fused launch (docs/analyzer.md, Fusion kinds)"),
             custom<C>("kernels", CandidateKernels{}),
             field("function_ids", &C::function_ids)
                 .doc("the trace's function id of each kernel, in the order of kernels"),
             field("occurrence_launches", &C::occurrence_launches)
                 .doc("the launch ids of each occurrence, one per kernel"),
             field("occurrence_graphs", &C::occurrence_graphs)
                 .optional()
                 .omitDefault()
                 .doc("for a candidate over the nodes of replayed CUDA graphs: the graph (snapshot) id of each "
                      "occurrence, whose occurrence_launches are then graph_node ids; absent for launches"),
             field("occurrence_replays", &C::occurrence_replays)
                 .optional()
                 .omitDefault()
                 .doc("with occurrence_graphs: how many cuGraphLaunch replays ran each occurrence (the predicted "
                      "total saving counts each replay)"),
             custom<C>("occurrences", OccurrenceCount{}), field("legality", &C::legality),
             field("reasons", &C::reasons), field("checked", &C::checked).of(legalityCheckFields()),
             field("confidence", &C::confidence),
             field("predicted_saving_ns_per_occurrence", &C::cost, &CostEstimate::saving_ns).nonNegative(),
             field("predicted_saving_ns_total", &C::total_saving_ns).nonNegative(),
             field("share_of_gpu_busy", &C::share_of_gpu_busy).numberRange(0, 1),
             field("on_critical_path", &C::on_critical_path),
             field("conflicts_with", &C::conflicts_with)
                 .atLeast(1)
                 .uniqueItems()
                 .doc("Ranks of the other candidates with an occurrence that shares a launch with one of this "
                      "candidate's: a launch can belong to one fusion only, so at most one of them can be applied."),
             field("cost", &C::cost).of(costFields()), field("edges", &C::edges).of(edgeFields()),
             field("epilogue", &C::epilogue).of(epilogueFields()),
             field("members", &C::members)
                 .of(memberFields())
                 .doc("Per kernel (same order as `kernels`): the CPU operator that issued it with dtype and shape, its "
                      "nn.Module path and kernel family; empty when nothing is known"),
             field("fusion_kind", &C::fusion_kind)
                 .oneOf(kFamilyFusions)
                 .doc("What the members' kernel families allow (docs/analyzer.md, Kernel families): decided from "
                      "kernel names where a trace has no PTX; `fusion` is the kind of fused kernel the analyzer and "
                      "rewriter build. Empty when the families say nothing"),
             field("module_pattern", &C::module_pattern)
                 .doc("The members' common nn.Module path with instance numbers dropped"),
             field("modules", &C::modules).of(moduleFields()).doc("Occurrences per module instance"),
             field("data_flow", &C::data_flow)
                 .oneOf(kDataFlows)
                 .optional()
                 .omitDefault()
                 .doc("where the data flow between the kernels was seen; absent: not known"),
             field("in_cuda_graph", &C::in_cuda_graph),
             field("remedies", &C::remedies)
                 .of(remedyFields())
                 .doc("What to do, best first (docs/analyzer.md, Remedies)"))
      .fieldsRequired()
      .named("candidate")
      .checkedBy(checkCandidate);
}

auto adviceFields() {
  using A = Advice;
  return jsonRecord<A>(field("kind", &A::kind).oneOf(kAdviceKinds), field("where", &A::where), field("text", &A::text),
                       field("idle_ns", &A::idle_ns).nonNegative(), field("window_ns", &A::window_ns).nonNegative(),
                       field("launches", &A::launches))
      .fieldsRequired();
}

auto rooflineFields() {
  using P = RooflinePoint;
  return jsonRecord<P>(field("name", &P::name), field("intensity", &P::intensity).nonNegative(),
                       field("flops_per_s", &P::flops_per_s).nonNegative(), field("predicted", &P::predicted))
      .fieldsRequired();
}

auto statFields() {
  using S = core::Stat;
  return jsonRecord<S>(field("name", &S::name), field("value", &S::value).anyInteger(), field("severity", &S::severity),
                       field("description", &S::description))
      .fieldsRequired();
}

size_t qualifiedCandidates(const Report& r) {
  return static_cast<size_t>(std::count_if(r.candidates.begin(), r.candidates.end(),
                                           [](const Candidate& c) { return c.legality != Legality::kBlocked; }));
}
size_t blockedCandidates(const Report& r) {
  return r.candidates.size() - qualifiedCandidates(r);
}
std::string gpuName(const Report& r) {
  return r.gpu.marketing_name;
}

auto reportFields() {
  using R = Report;
  return jsonRecord<R>(
             field("options", &R::options).of(optionsFields()),
             group<R>("input", field("path", &R::input_path), field("format", &R::input_format).oneOf(kInputFormats),
                      field("producer", &R::producer),
                      field("rank", &R::rank)
                          .optional()
                          .doc("the distributed job's rank the trace names (Kineto distributedInfo.rank); `kfuse "
                               "merge` groups rank reports by it")),
             group<R>("gpu", computed<R>("name", gpuName), custom<R>("short_name", GpuByShortName{}),
                      field("source", &R::gpu_source).oneOf(kGpuSources)),
             group<R>(
                 "summary", field("launches", &R::launches), field("kernels", &R::kernels),
                 field("kernels_with_ptx", &R::kernels_with_ptx), field("has_pointer_data", &R::has_pointer_data),
                 field("gpu_busy_ns", &R::gpu_busy_ns), field("gpu_busy_estimated", &R::gpu_busy_estimated),
                 field("critical_path_ns", &R::critical_path_ns)
                     .doc("Longest path through the dependency graph, weighted by GPU time (by roofline estimates "
                          "when gpu_busy_estimated)"),
                 field("cost_model_version", &R::cost_model_version)
                     .atLeast(1)
                     .doc("Version of the cost model's rules (docs/analyzer.md, Cost model) that produced the numbers"),
                 field("edges", &R::edges), field("edges_by_kind", &R::edges_by_kind, EdgesByKind{}),
                 computed<R>("candidates", qualifiedCandidates).doc("candidates not blocked"),
                 computed<R>("blocked", blockedCandidates),
                 computed<R>("predicted_saving_ns", disjointSaving)
                     .nonNegative()
                     .doc("what the non-overlapping candidates save together"),
                 field("why_none", &R::why_none),
                 field("proven_no_gain", &R::proven_no_gain)
                     .optional()
                     .doc("proven candidates predicted to save nothing, left out of candidates (without --all): "
                          "one line each, id, fusion kind, kernels, occurrences and why"),
                 group<R>("context", field("gpu_records", &R::gpu_records),
                          field("with_operator", &R::records_with_operator),
                          field("with_module", &R::records_with_module), field("tensor_edges", &R::tensor_edges),
                          field("tensor_edges_source", &R::tensor_edges_source).oneOf(kTensorEdgeSources))
                     .doc("Operator context of imported PyTorch traces: GPU records (kernels, copies, sets) linked to "
                          "the CPU operator that issued them and inside an nn.Module; tensor-level data-flow edges "
                          "and where they came from")),
             field("candidates", &R::candidates).of(candidateFields()),
             field("notices", &R::notices)
                 .doc("Said first in every report: a device the spec table lacks (costs are then for another GPU), "
                      "..."),
             field("advice", &R::advice)
                 .of(adviceFields())
                 .doc("Findings about the trace as a whole (docs/analyzer.md, Remedies): launch-bound regions a CUDA "
                      "graph would help (`cuda-graph`), work already in CUDA graphs (`graphed`)"),
             field("roofline", &R::roofline).of(rooflineFields()), field("stats", &R::stats).of(statFields()))
      .fieldsRequired();
}

constexpr core::JsonDocumentInfo kReportDocument{
    "kfuse-report", kReportVersion, "https://kfuse.dev/schemas/report.schema.json", "kfuse analysis report",
    "What `kfuse analyze --json` writes (and stores in a kfuse trace's `analysis` table): ranked fusion candidates "
    "with legality, confidence, predicted savings and the evidence for each. Generated from the field lists in "
    "analyzer/src/report/report_json.cpp (kfuse_schema_gen), which the report's writer and reader follow too; "
    "docs/analyzer.md explains the fields."};

// Reports read as they always were: fields this kfuse does not know are ignored, enum errors name the value only.
constexpr core::JsonReadRules kReportRules{/*reject_unknown_fields=*/false, /*list_allowed_names=*/false};

}  // namespace

nlohmann::json reportToJson(const Report& report) {
  return core::writeJsonDocument(kReportDocument, reportFields(), report);
}

std::string reportJsonSchema() {
  return core::jsonDocumentSchema(kReportDocument, reportFields());
}

Expected<Report> reportFromJson(const json& j, const std::string& what) {
  if (!j.is_object()) return badFormat(what + ": expected an object (a `kfuse analyze --json` report)");
  JsonFieldReader r(what, kReportRules);
  std::string format;
  int version = 0;
  r.str(j, "", "format", format, /*required=*/true);
  if (r.ok() && format != kReportDocument.format) {
    r.fail("format", "expected \"kfuse-report\", found \"" + format + "\"");
  }
  r.integer(j, "", "version", version, /*required=*/true);
  if (!r.ok()) return r.status();
  if (version != kReportVersion) {
    return Status(ErrorCode::kUnsupportedVersion, what + ": report version " + std::to_string(version) +
                                                      " (this kfuse reads version " + std::to_string(kReportVersion) +
                                                      "); run `kfuse analyze` again");
  }
  Report out;
  core::readJsonDocument(r, j, reportFields(), out);
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

Expected<Report> readReportFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return notFound(path + (std::filesystem::exists(path, ec) ? ": not a regular file" : ": no such file") +
                    " (expected `kfuse analyze --json` output)");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return ioError(path + ": cannot be read");
  auto j = core::parseJsonDocument(text.str());
  if (!j.ok()) return badFormat(path + ": " + j.status().message() + " (expected `kfuse analyze --json` output)");
  return reportFromJson(*j, path);
}

}  // namespace kfuse::analyzer
