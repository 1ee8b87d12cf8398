// Plans as JSON (schemas/plan.schema.json): one field list per record below drives the writer, the reader (a JSON
// path in every error) and the schema; and the plan's README. The reader never lets an nlohmann exception out: it
// checks each value's type before converting it, and a last catch turns anything it missed into a bad-format
// Status.
#include "kfuse/rewriter/plan.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "kfuse/core/files.h"
#include "kfuse/core/json_fields.h"
#include "kfuse/core/json_reader.h"
#include "kfuse/core/text.h"

namespace kfuse::rewriter {

namespace {

using json = nlohmann::json;
using OJson = nlohmann::ordered_json;
using core::embed;
using core::field;
using core::group;
using core::JsonFieldOptions;
using core::JsonFieldReader;
using core::JsonReader;
using core::jsonRecord;
using core::JsonSchemaWriter;
using core::JsonStringFormat;
using core::JsonType;

// ---- string forms ----

bool isArch(std::string_view a) {
  if (a.size() < 4 || a.substr(0, 3) != "sm_") return false;
  size_t end = a.size();
  if (a.back() == 'a' || a.back() == 'f') --end;
  if (end <= 3) return false;
  return std::all_of(a.begin() + 3, a.begin() + static_cast<std::ptrdiff_t>(end),
                     [](char c) { return c >= '0' && c <= '9'; });
}
bool isArchOrEmpty(std::string_view a) {
  return a.empty() || isArch(a);
}
bool isSha256Hex(std::string_view s) {
  return s.size() == 64 && core::JsonHexBytes::valid(s);
}
// "2026-11-25T14:00:00Z" (what recordValidation writes), or empty.
bool isUtcTimeOrEmpty(std::string_view s) {
  if (s.empty()) return true;
  constexpr std::string_view kForm = "0000-00-00T00:00:00Z";
  if (s.size() != kForm.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (kForm[i] == '0' ? (s[i] < '0' || s[i] > '9') : s[i] != kForm[i]) return false;
  }
  return true;
}

constexpr const char* kArchMessage = "expected sm_<digits>, e.g. sm_90";
constexpr JsonStringFormat kArch{"^sm_[0-9]+[af]?$", 0, isArch, kArchMessage};
constexpr JsonStringFormat kArchOrEmpty{"^(sm_[0-9]+[af]?)?$", 0, isArchOrEmpty, kArchMessage};
constexpr JsonStringFormat kKernelName{nullptr, 1, nullptr, "expected a kernel name"};
constexpr JsonStringFormat kSha256{"^[0-9a-f]{64}$", 0, isSha256Hex, "expected 64 hex digits"};
constexpr JsonStringFormat kUtcTime{"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)?$", 0, isUtcTimeOrEmpty,
                                    "expected an ISO 8601 UTC time (2026-11-25T14:00:00Z)"};

constexpr uint64_t kMaxIndex = 1u << 20;  // kernels of a pattern, parameters of a kernel

// ---- field lists ----

// A launch dimension as [x, y, z], each at least 1.
struct Dim3Json {
  using value_type = core::Dim3;
  void write(const value_type& d, json& out, const JsonFieldOptions&) const { out = json::array({d.x, d.y, d.z}); }
  void read(JsonFieldReader& r, const json& j, const std::string& path, value_type& d, const JsonFieldOptions&) const {
    if (!j.is_array() || j.size() != 3) return r.fail(path, "expected an array of 3 positive integers");
    for (size_t i = 0; i < 3 && r.ok(); ++i) {
      r.integerValue(j[i], JsonReader::indexed(path, i), d[static_cast<int>(i)], 1,
                     std::numeric_limits<uint32_t>::max());
    }
  }
  OJson schema(JsonSchemaWriter& s, const JsonFieldOptions&, JsonType<value_type>) const {
    return s.def("dim3", [] {
      return OJson{{"type", "array"},
                   {"items", {{"type", "integer"}, {"minimum", 1}, {"maximum", std::numeric_limits<uint32_t>::max()}}},
                   {"minItems", 3},
                   {"maxItems", 3}};
    });
  }
};

// LaunchShape's JSON form: its own object in argument sets, its fields beside a kernel's elsewhere.
auto launchShapeFields() {
  return jsonRecord<core::LaunchShape>(field("grid", &core::LaunchShape::grid, Dim3Json{}).required(),
                                       field("block", &core::LaunchShape::block, Dim3Json{}).required(),
                                       field("dynamic_shared_bytes", &core::LaunchShape::dynamic_shared_bytes))
      .named("shape");
}

auto argRefFields() {
  return jsonRecord<ArgRef>(field("kernel", &ArgRef::kernel).required().range(0, kMaxIndex),
                            field("arg", &ArgRef::param).required().range(0, kMaxIndex))
      .named("arg_ref");
}

auto paramFields() {
  return jsonRecord<PlanParam>(
      field("index", &PlanParam::index).required().range(0, kMaxIndex),
      field("offset", &PlanParam::offset).required().doc("bytes into the argument buffer"),
      field("size", &PlanParam::size).required(), field("pointer", &PlanParam::pointer).required(),
      field("access", &PlanParam::access).noneAsEmpty().doc("pointers: how the kernel accesses it; empty: a scalar"),
      field("element_type", &PlanParam::element_type)
          .doc("PTX type of the accesses through the pointer; empty: unknown"));
}

auto kernelFields() {
  return jsonRecord<PlanKernel>(
      field("mangled_name", &PlanKernel::mangled_name).required().format(kKernelName),
      field("module_hash", &PlanKernel::module_hash)
          .required()
          .format(kSha256)
          .doc("hex SHA-256 of the module image (the kernel's identity)"),
      field("ptx_file", &PlanKernel::ptx_file).required().doc("relative to the plan directory"),
      embed(&PlanKernel::shape, launchShapeFields()), field("params", &PlanKernel::params).of(paramFields()));
}

auto proofRefFields() {
  using ProofRef = Predicate::ProofRef;
  return jsonRecord<ProofRef>(
             embed(&ProofRef::arg, argRefFields()),
             field("pointer_offset", &ProofRef::pointer_offset)
                 .doc("the byte offset of the pointer into its allocation, not its value"),
             field("allocation", &ProofRef::allocation)
                 .omitDefault()
                 .doc("which allocation the pointer points into: the position, among the proof_args with allocation "
                      "set, of the first one in the same allocation"))
      .checkedBy([](JsonFieldReader& r, const std::string& path, const ProofRef& p) {
        if (p.pointer_offset && p.allocation) r.fail(path, "pointer_offset and allocation exclude each other");
      });
}

auto predicateFields() {
  using K = Predicate::Kind;
  return jsonRecord<Predicate>(
             field("kind", &Predicate::kind).discriminator(),
             field("a", &Predicate::a).of(argRefFields()).required().onlyFor(K::kArgEqual, K::kArgValue),
             field("b", &Predicate::b).of(argRefFields()).required().onlyFor(K::kArgEqual),
             field("buffers", &Predicate::buffers)
                 .of(argRefFields())
                 .required()
                 .minItems(2, "expected at least 2 buffers")
                 .onlyFor(K::kNoOverlap),
             field("bytes", &Predicate::bytes).onlyFor(K::kNoOverlap).doc("each buffer's size, in buffers' order"),
             field("value", &Predicate::value, core::JsonHexBytes{})
                 .required()
                 .onlyFor(K::kArgValue)
                 .doc("the scalar's little-endian bytes"),
             field("proof_args", &Predicate::proof_args)
                 .of(proofRefFields())
                 .required()
                 .minItems(1, "expected at least one argument")
                 .onlyFor(K::kProvenValues),
             field("tuples", &Predicate::tuples)
                 .anyInteger()
                 .required()
                 .onlyFor(K::kProvenValues)
                 .doc("each as long as proof_args: the argument values the legality proof covers"))
      .checkedBy([](JsonFieldReader& r, const std::string& path, const Predicate& p) {
        if (!p.bytes.empty() && p.bytes.size() != p.buffers.size()) {
          return r.fail(JsonReader::join(path, "bytes"), "expected one size per buffer");
        }
        for (size_t i = 0; i < p.tuples.size(); ++i) {
          if (p.tuples[i].size() != p.proof_args.size()) {
            return r.fail(JsonReader::indexed(JsonReader::join(path, "tuples"), i),
                          "expected an array of " + std::to_string(p.proof_args.size()) + " integers");
          }
        }
      });
}

auto fusedParamFields() {
  return jsonRecord<FusedParam>(field("name", &FusedParam::name).required(),
                                field("sources", &FusedParam::sources)
                                    .of(argRefFields())
                                    .required()
                                    .minItems(1, "expected at least one source argument"));
}

auto partFields() {
  using Part = FusionResult::Part;
  return jsonRecord<Part>(field("kernel", &Part::kernel).required().range(0, kMaxIndex),
                          field("first_block", &Part::first_block), field("blocks", &Part::blocks),
                          field("first_thread", &Part::first_thread), field("threads", &Part::threads),
                          field("barrier_id", &Part::barrier_id)
                              .range(-1, 15)
                              .doc("the named barrier the kernel's bar.sync became; -1: none"));
}

auto fusedFields() {
  using Fused = Plan::Fused;
  return jsonRecord<Fused>(field("name", &Fused::name).required().format(kKernelName),
                           field("ptx_file", &Fused::ptx_file).required().doc("relative to the plan directory"),
                           field("arch", &Fused::arch)
                               .format(kArchOrEmpty)
                               .doc("the architecture the injector loads it for; empty: unknown"),
                           field("params", &Fused::params).of(fusedParamFields()).required(),
                           embed(&Fused::shape, launchShapeFields()),
                           field("parts", &Fused::parts)
                               .of(partFields())
                               .doc("horizontal fusions: where each original kernel runs inside the fused launch"));
}

auto resourceFields() {
  using K = KernelResources;
  return jsonRecord<K>(field("kernel", &K::kernel).required(), field("arch", &K::arch).required().format(kArch),
                       field("registers", &K::registers).required(), field("barriers", &K::barriers),
                       field("spill_store_bytes", &K::spill_store_bytes),
                       field("spill_load_bytes", &K::spill_load_bytes), field("stack_bytes", &K::stack_bytes),
                       field("static_shared_bytes", &K::static_shared_bytes),
                       field("threads_per_block", &K::threads_per_block),
                       field("occupancy", &K::occupancy).numberRange(0, 1).doc("active warps / maximum warps per SM"),
                       field("occupancy_limiter", &K::occupancy_limiter).noneAsEmpty());
}

auto predictionFields() {
  using P = Prediction;
  return jsonRecord<P>(field("gpu", &P::gpu).doc("spec table name"),
                       field("cost_model_version", &P::cost_model_version), field("measured_ns", &P::measured_ns),
                       field("fused_ns", &P::fused_ns), field("saving_ns", &P::saving_ns).doc("per occurrence"),
                       field("occurrences", &P::occurrences), field("total_saving_ns", &P::total_saving_ns),
                       field("note", &P::note));
}

// One argument: a pointer ({buffer, offset}) or a scalar ({bytes}).
struct ArgValueJson {
  using value_type = ArgValue;
  void write(const ArgValue& v, json& out, const JsonFieldOptions& o) const {
    if (v.pointer) {
      out = json{{"buffer", v.buffer}, {"offset", v.offset}};
    } else {
      out = json::object();
      core::JsonHexBytes{}.write(v.bytes, out["bytes"], o);
    }
  }
  void read(JsonFieldReader& r, const json& j, const std::string& path, ArgValue& v, const JsonFieldOptions& o) const {
    if (!r.object(j, path, {"buffer", "offset", "bytes"})) return;
    if (j.contains("buffer")) {
      v.pointer = true;
      r.integer(j, path, "buffer", v.buffer, true, 0, 1u << 30);
      r.integer(j, path, "offset", v.offset);
      if (r.ok() && j.contains("bytes")) r.fail(JsonReader::join(path, "bytes"), "a pointer argument has no bytes");
    } else {
      const json* bytes = r.member(j, path, "bytes", true);
      if (bytes) core::JsonHexBytes{}.read(r, *bytes, JsonReader::join(path, "bytes"), v.bytes, o);
      if (r.ok() && j.contains("offset")) r.fail(JsonReader::join(path, "offset"), "a scalar argument has no offset");
    }
  }
  OJson schema(JsonSchemaWriter& s, const JsonFieldOptions& o, JsonType<ArgValue>) const {
    const OJson bytes = core::JsonHexBytes{}.schema(s, o, {});
    return s.def("arg_value", [&] {
      return OJson{{"oneOf",
                    {{{"type", "object"},
                      {"additionalProperties", false},
                      {"required", {"buffer"}},
                      {"properties",
                       {{"buffer", {{"type", "integer"}, {"minimum", 0}, {"maximum", 1u << 30}}},
                        {"offset", {{"type", "integer"}, {"minimum", 0}, {"description", "bytes into the buffer"}}}}},
                      {"description", "a pointer into one of the set's buffers"}},
                     {{"type", "object"},
                      {"additionalProperties", false},
                      {"required", {"bytes"}},
                      {"properties", {{"bytes", bytes}}},
                      {"description", "a scalar's little-endian bytes"}}}}};
    });
  }
};

auto argumentSetFields() {
  using S = ArgumentSet;
  return jsonRecord<S>(
             field("origin", &S::origin).doc("where the values come from, for people"),
             field("buffer_bytes", &S::buffer_bytes).required(),
             field("args", &S::args).of(ArgValueJson{}).required().doc("[kernel][param]"),
             field("shapes", &S::shapes).of(launchShapeFields()).doc("[kernel]; empty: the pattern's launch shapes"),
             field("fused_shape", &S::fused_shape)
                 .of(launchShapeFields())
                 .doc("the fused launch for these shapes; absent: the fused kernel's"))
      .checkedBy([](JsonFieldReader& r, const std::string& path, const ArgumentSet& s) {
        for (size_t k = 0; k < s.args.size(); ++k) {
          for (size_t i = 0; i < s.args[k].size(); ++i) {
            const ArgValue& v = s.args[k][i];
            if (v.pointer && static_cast<size_t>(v.buffer) >= s.buffer_bytes.size()) {
              return r.fail(
                  JsonReader::join(JsonReader::indexed(JsonReader::indexed(JsonReader::join(path, "args"), k), i),
                                   "buffer"),
                  "no buffer " + std::to_string(v.buffer) + " (the set has " + std::to_string(s.buffer_bytes.size()) +
                      ")");
            }
          }
        }
      });
}

auto timingFields() {
  using T = PlanTiming;
  return jsonRecord<T>(
      field("originals_ns", &T::originals_ns)
          .doc("the original launches back to back: the sum over the argument sets of their median time"),
      field("fused_ns", &T::fused_ns).doc("the fused launch: the sum over the argument sets of its median time"),
      field("runs", &T::runs).doc("timed runs per side and argument set, after one warm-up"),
      field("argument_sets", &T::argument_sets).doc("argument sets timed"),
      field("not_timed", &T::not_timed)
          .doc("why there are no figures (the emulator, the stand-in driver, no events); empty when timed"));
}

auto validationFields() {
  using V = PlanValidation;
  return jsonRecord<V>(
      field("ptxas_ok", &V::ptxas_ok), field("ptxas_archs", &V::ptxas_archs).format(kArch),
      field("emulator", &V::emulator).doc("differential validation on kfuse's emulator"),
      field("gpu", &V::gpu).doc("differential validation on a GPU (--backend gpu)"), field("seed", &V::seed),
      field("runs", &V::runs).doc("argument sets x data trials executed"),
      field("mismatch", &V::mismatch).doc("the first mismatch or failure, as a sentence; empty when none"),
      field("validated_at", &V::validated_at).format(kUtcTime),
      field("files", &V::files)
          .optional()
          .doc("every file the validation read, as sha256sum prints them: 64 hex digits, two spaces, the path in the "
               "plan directory; kfuse run refuses a plan whose fused kernel changed since"),
      field("timing", &V::timing)
          .of(timingFields())
          .doc("the fused kernel timed against the original launches on a GPU (kfuse validate --backend gpu), or "
               "why it was not; a plan whose fused kernel is not faster fails validation"));
}

void checkReferences(JsonFieldReader& r, const std::string& path, const Plan& plan);

auto planFields() {
  using core::FusionKind;
  return jsonRecord<Plan>(
             field("source_trace", &Plan::source_trace).doc("the trace the candidate came from"),
             field("candidate_rank", &Plan::candidate_rank),
             field("fusion", &Plan::fusion)
                 .discriminator()
                 .doc("how the kernels share the fused launch (docs/analyzer.md, Fusion kinds)"),
             field("layout", &Plan::layout)
                 .required()
                 .onlyFor(FusionKind::kHorizontal)
                 .doc("horizontal fusions: how the kernels share the launch"),
             group<Plan>("pattern",
                         field("kernels", &Plan::kernels)
                             .of(kernelFields())
                             .required()
                             .minItems(1, "expected at least one kernel")
                             .doc("the launches the injector replaces, in launch order"),
                         field("predicates", &Plan::predicates)
                             .of(predicateFields())
                             .doc("what must hold of the arguments for the fused kernel to run instead"))
                 .required(),
             field("fused_kernel", &Plan::fused).of(fusedFields()).required(),
             field("targets", &Plan::targets).format(kArch).doc("architectures the fused kernel was compiled for"),
             field("resources", &Plan::resources).of(resourceFields()), field("aggressive", &Plan::aggressive),
             field("dropped_buffers", &Plan::dropped_buffers)
                 .of(argRefFields())
                 .doc("--aggressive: the intermediates whose stores were dropped"),
             field("prediction", &Plan::prediction).of(predictionFields()),
             field("argument_sets", &Plan::argument_sets).of(argumentSetFields()),
             field("validation", &Plan::validation).of(validationFields()), field("notes", &Plan::notes))
      .checkedBy(checkReferences);
}

constexpr core::JsonDocumentInfo kPlanDocument{
    "kfuse-plan", kPlanVersion, "https://kfuse.dev/schemas/plan.schema.json", "kfuse fusion plan",
    "PLAN_DIR/plan.json: what `kfuse rewrite` writes, `kfuse validate` checks and updates, and the injector reads: "
    "the launch pattern to recognise (kernel identities and launch shapes), the argument predicates that must "
    "hold, the fused kernel with its parameter and launch mapping, resources per architecture, the predicted "
    "saving, the argument sets validation runs with, and how the plan was validated. Generated from the field "
    "lists in rewriter/src/plan.cpp (kfuse_schema_gen), which the plan's reader and writer follow too; see "
    "rewriter/include/kfuse/rewriter/plan.h for the fields' meanings."};

// ---- reading ----

// Cross-references that the field-by-field reader cannot see: every ArgRef must name a kernel and a parameter
// of the pattern, and every argument set must give each kernel its arguments.
void checkReferences(JsonFieldReader& r, const std::string& /*path*/, const Plan& plan) {
  auto ref = [&](const ArgRef& a, const std::string& path) {
    if (!r.ok()) return;
    if (a.kernel < 0 || static_cast<size_t>(a.kernel) >= plan.kernels.size()) {
      return r.fail(path + ".kernel", "no kernel " + std::to_string(a.kernel) + " in the pattern (it has " +
                                          std::to_string(plan.kernels.size()) + ")");
    }
    const PlanKernel& k = plan.kernels[static_cast<size_t>(a.kernel)];
    if (!k.params.empty() && static_cast<size_t>(a.param) >= k.params.size()) {
      r.fail(path + ".arg", "kernel " + std::to_string(a.kernel) + " (" + k.mangled_name + ") has " +
                                std::to_string(k.params.size()) + " parameters");
    }
  };
  auto indexed = [](const std::string& path, size_t i) { return JsonReader::indexed(path, i); };
  for (size_t i = 0; i < plan.predicates.size(); ++i) {
    const Predicate& p = plan.predicates[i];
    std::string path = indexed("pattern.predicates", i);
    if (p.kind == Predicate::Kind::kArgEqual || p.kind == Predicate::Kind::kArgValue) ref(p.a, path + ".a");
    if (p.kind == Predicate::Kind::kArgEqual) ref(p.b, path + ".b");
    for (size_t b = 0; b < p.buffers.size(); ++b) ref(p.buffers[b], indexed(path + ".buffers", b));
    for (size_t a = 0; a < p.proof_args.size(); ++a) ref(p.proof_args[a].arg, indexed(path + ".proof_args", a));
  }
  for (size_t i = 0; i < plan.fused.params.size(); ++i) {
    for (size_t s = 0; s < plan.fused.params[i].sources.size(); ++s) {
      ref(plan.fused.params[i].sources[s], indexed(indexed("fused_kernel.params", i) + ".sources", s));
    }
  }
  for (size_t i = 0; i < plan.fused.parts.size(); ++i) {
    ArgRef a{plan.fused.parts[i].kernel, 0};
    if (r.ok() && static_cast<size_t>(a.kernel) >= plan.kernels.size()) {
      r.fail(indexed("fused_kernel.parts", i) + ".kernel", "no kernel " + std::to_string(a.kernel) + " in the pattern");
    }
  }
  // Launch shapes no GPU accepts (CUDA's limits on every architecture kfuse targets): refused here, before anything
  // allocates or launches for them.
  auto shape = [&](const core::LaunchShape& l, const std::string& path) {
    if (!r.ok()) return;
    const uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
    std::string why;
    if (l.grid.x > 0x7fffffffu || l.grid.y > 65535 || l.grid.z > 65535) {  // 0 is refused by the field rules
      why = "grid " + std::to_string(l.grid.x) + "x" + std::to_string(l.grid.y) + "x" + std::to_string(l.grid.z) +
            " is beyond what a GPU launches (x < 2^31, y and z <= 65535)";
    } else if (l.block.x > 1024 || l.block.y > 1024 || l.block.z > 64 || threads > 1024) {
      why = "block " + std::to_string(l.block.x) + "x" + std::to_string(l.block.y) + "x" + std::to_string(l.block.z) +
            " is beyond what a GPU launches (at most 1024 threads; x, y <= 1024, z <= 64)";
    } else if (l.dynamic_shared_bytes > (uint32_t{1} << 20)) {
      why = std::to_string(l.dynamic_shared_bytes) + " bytes of dynamic shared memory is beyond any GPU";
    }
    if (!why.empty()) r.fail(path, why);
  };
  for (size_t i = 0; i < plan.kernels.size(); ++i) shape(plan.kernels[i].shape, indexed("pattern.kernels", i));
  shape(plan.fused.shape, "fused_kernel");
  for (size_t i = 0; i < plan.argument_sets.size(); ++i) {
    const ArgumentSet& s = plan.argument_sets[i];
    for (size_t k = 0; k < s.shapes.size(); ++k)
      shape(s.shapes[k], indexed(indexed("argument_sets", i) + ".shapes", k));
    if (s.fused_shape) shape(*s.fused_shape, indexed("argument_sets", i) + ".fused_shape");
  }
  for (size_t i = 0; i < plan.dropped_buffers.size(); ++i) ref(plan.dropped_buffers[i], indexed("dropped_buffers", i));
  for (size_t i = 0; i < plan.argument_sets.size() && r.ok(); ++i) {
    const ArgumentSet& s = plan.argument_sets[i];
    std::string path = indexed("argument_sets", i);
    if (s.args.size() != plan.kernels.size()) {
      r.fail(path + ".args", "expected the arguments of " + std::to_string(plan.kernels.size()) + " kernels, got " +
                                 std::to_string(s.args.size()));
    }
    if (r.ok() && !s.shapes.empty() && s.shapes.size() != plan.kernels.size()) {
      r.fail(path + ".shapes", "expected " + std::to_string(plan.kernels.size()) + " launch shapes or none");
    }
    for (size_t k = 0; k < s.args.size() && r.ok(); ++k) {
      const PlanKernel& kernel = plan.kernels[k];
      if (!kernel.params.empty() && s.args[k].size() != kernel.params.size()) {
        r.fail(indexed(path + ".args", k), "kernel " + kernel.mangled_name + " takes " +
                                               std::to_string(kernel.params.size()) + " arguments, got " +
                                               std::to_string(s.args[k].size()));
      }
    }
  }
}

// A version 3 plan in version 4's form: "kind" (vertical, horizontal) and, for vertical fusions, "layout"
// (epilogue, block-level, prologue; absent: thread-local) become "fusion"; a horizontal fusion's "layout" stays.
void upgradeFromVersion3(JsonFieldReader& r, json& j) {
  if (j.contains("fusion")) return r.fail("fusion", "unknown field");
  std::string kind;
  r.str(j, "", "kind", kind, /*required=*/true);
  if (!r.ok()) return;
  if (kind != "vertical" && kind != "horizontal") return r.unknownName("kind", kind, {"vertical", "horizontal"});
  j.erase("kind");
  if (kind == "horizontal") {
    j["fusion"] = core::enumName(core::FusionKind::kHorizontal);
    return;
  }
  std::string layout;
  r.str(j, "", "layout", layout);
  if (!r.ok()) return;
  if (layout.empty()) {
    j["fusion"] = core::enumName(core::FusionKind::kThreadLocal);
  } else if (layout == "epilogue" || layout == "block-level" || layout == "prologue") {
    j["fusion"] = layout;
  } else {
    return r.unknownName("layout", layout, {"epilogue", "block-level", "prologue"});
  }
  j.erase("layout");
}

Plan readPlanJson(JsonFieldReader& r, const json& document) {
  Plan plan;
  if (!document.is_object()) {
    r.fail("(document)", "expected an object");
    return plan;
  }
  std::string format;
  r.str(document, "", "format", format, true);
  if (r.ok() && format != kPlanDocument.format) r.fail("format", "expected \"kfuse-plan\", got \"" + format + "\"");
  r.integer(document, "", "version", plan.version, true, 0, 1u << 20);
  if (r.ok() && (plan.version < kOldestPlanVersion || plan.version > kPlanVersion)) {
    r.fail("",
           "plan version " + std::to_string(plan.version) + " is not supported by this kfuse (reads versions " +
               std::to_string(kOldestPlanVersion) + " to " + std::to_string(kPlanVersion) + "); re-run kfuse rewrite",
           ErrorCode::kUnsupportedVersion);
  }
  if (!r.ok()) return plan;
  if (plan.version == 3) {
    json upgraded = document;
    upgradeFromVersion3(r, upgraded);
    core::readJsonDocument(r, upgraded, planFields(), plan);
  } else {
    core::readJsonDocument(r, document, planFields(), plan);
  }
  return plan;
}

std::string hexBytes(const std::vector<uint8_t>& bytes) {
  json j;
  core::JsonHexBytes{}.write(bytes, j, {});
  return j.get<std::string>();
}

std::string shapeText(const core::LaunchShape& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "grid (%u, %u, %u), block (%u, %u, %u), %u B dynamic shared", s.grid.x, s.grid.y,
                s.grid.z, s.block.x, s.block.y, s.block.z, s.dynamic_shared_bytes);
  return buf;
}

std::string argRefText(const Plan& plan, const ArgRef& r) {
  std::string name = r.kernel >= 0 && static_cast<size_t>(r.kernel) < plan.kernels.size()
                         ? plan.kernels[static_cast<size_t>(r.kernel)].mangled_name
                         : "kernel " + std::to_string(r.kernel);
  return "argument " + std::to_string(r.param) + " of `" + name + "`";
}

}  // namespace

nlohmann::json planToJson(const Plan& plan) {
  return core::writeJsonDocument(kPlanDocument, planFields(), plan);
}

std::string planJsonSchema() {
  return core::jsonDocumentSchema(kPlanDocument, planFields());
}

Expected<Plan> planFromJson(const nlohmann::json& j, const std::string& source) {
  JsonFieldReader r(source);
  Plan plan;
  try {
    plan = readPlanJson(r, j);
  } catch (const std::exception& e) {
    // The reader checks types before every conversion; this is the net for anything it missed.
    return badFormat(source + ": " + e.what());
  }
  if (!r.ok()) return r.status();
  return plan;
}

Expected<Plan> readPlan(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return notFound(dir + ": no such plan directory");
  std::string path = (fs::path(dir) / "plan.json").string();
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) return badFormat(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": cannot open (not a plan directory?)");
  std::stringstream text;
  text << in.rdbuf();
  auto j = core::parseJsonDocument(text.str());
  if (!j.ok()) return badFormat(path + ": " + j.status().message());
  return planFromJson(*j, path);
}

Status writePlan(const std::string& dir, const Plan& plan) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ioError(dir + ": cannot create the plan directory: " + ec.message());
  fs::path final_path = fs::path(dir) / "plan.json";
  std::string text;
  try {
    text = core::dumpJson(planToJson(plan), 1) + "\n";
  } catch (const std::exception& e) {
    return invalidArgument(final_path.string() + ": cannot write the plan: " + e.what());
  }
  return core::writeFileAtomically(final_path.string(), text);
}

std::string planReadme(const Plan& plan) {
  std::ostringstream o;
  o << "# kfuse plan: `" << plan.fused.name << "`\n\n";
  o << "A " << core::fusionDirection(plan.fusion) << " fusion";
  if (plan.layout) {
    o << " (" << horizontalLayoutName(*plan.layout) << ")";
  } else if (plan.fusion != core::FusionKind::kThreadLocal) {
    o << " (" << core::enumName(plan.fusion) << ")";
  }
  o << " of " << plan.kernels.size() << " kernels";
  if (!plan.source_trace.empty()) o << ", candidate " << plan.candidate_rank << " of `" << plan.source_trace << "`";
  o << ". `plan.json` holds the same facts for kfuse (schemas/plan.schema.json, version " << kPlanVersion << ").\n\n";

  o << "## Pattern\n\nThe injector replaces these launches, in this order:\n\n";
  o << "| # | kernel | module (SHA-256) | launch |\n|---|---|---|---|\n";
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const PlanKernel& k = plan.kernels[i];
    o << "| " << i << " | `" << k.mangled_name << "` | `" << k.module_hash.substr(0, 16) << "…` | "
      << shapeText(k.shape) << " |\n";
  }
  o << "\n## Predicates\n\n";
  if (plan.predicates.empty())
    o << "None: the pattern alone decides.\n";
  else
    o << "The fused kernel is launched only when all of these hold; otherwise the original launches run unchanged.\n\n";
  for (const Predicate& p : plan.predicates) {
    switch (p.kind) {
      case Predicate::Kind::kArgEqual:
        o << "- " << argRefText(plan, p.a) << " equals " << argRefText(plan, p.b) << "\n";
        break;
      case Predicate::Kind::kNoOverlap: {
        o << "- these buffers do not overlap:";
        for (size_t i = 0; i < p.buffers.size(); ++i) {
          o << (i ? ";" : "") << " " << argRefText(plan, p.buffers[i]);
          if (i < p.bytes.size()) o << " (" << p.bytes[i] << " bytes)";
        }
        o << "\n";
        break;
      }
      case Predicate::Kind::kSameLaunchConfig:
        o << "- every kernel is launched with the grid and block shown above\n";
        break;
      case Predicate::Kind::kArgValue:
        o << "- " << argRefText(plan, p.a) << " has the value 0x" << hexBytes(p.value) << " (little-endian bytes)\n";
        break;
      case Predicate::Kind::kProvenValues: {
        o << "- (";
        for (size_t i = 0; i < p.proof_args.size(); ++i) {
          o << (i ? ", " : "")
            << (p.proof_args[i].pointer_offset ? "the byte offset of "
                : p.proof_args[i].allocation   ? "the allocation of "
                                               : "")
            << argRefText(plan, p.proof_args[i].arg);
        }
        o << ") is one of the values the legality proof covers:";
        for (size_t t = 0; t < p.tuples.size() && t < 8; ++t) {
          o << (t ? "," : "") << " (";
          for (size_t i = 0; i < p.tuples[t].size(); ++i) o << (i ? ", " : "") << p.tuples[t][i];
          o << ")";
        }
        if (p.tuples.size() > 8) o << " and " << p.tuples.size() - 8 << " more";
        if (std::any_of(p.proof_args.begin(), p.proof_args.end(), [](const auto& a) { return a.allocation; })) {
          o << " (allocations are numbered 0, 1, ... in the order the listed pointers first point into them: equal "
               "numbers mean one allocation)";
        }
        o << "\n";
        break;
      }
    }
  }
  o << "\n## Fused kernel\n\n`" << plan.fused.name << "` in `" << plan.fused.ptx_file << "`";
  if (!plan.fused.arch.empty()) o << ", loaded for " << plan.fused.arch;
  o << "; launched with " << shapeText(plan.fused.shape) << ".\n\n";
  o << "### Parameter mapping\n\n| fused parameter | takes the value of |\n|---|---|\n";
  for (const FusedParam& p : plan.fused.params) {
    o << "| `" << p.name << "` | ";
    for (size_t i = 0; i < p.sources.size(); ++i) o << (i ? " = " : "") << argRefText(plan, p.sources[i]);
    o << " |\n";
  }
  o << "\n### Launch mapping\n\n";
  if (plan.fused.parts.empty()) {
    o << "Every thread of the fused launch runs each original kernel's body for the same thread, in order.\n";
  } else {
    o << "| kernel | blocks | threads | named barrier |\n|---|---|---|---|\n";
    for (const FusionResult::Part& p : plan.fused.parts) {
      std::string name = p.kernel >= 0 && static_cast<size_t>(p.kernel) < plan.kernels.size()
                             ? plan.kernels[static_cast<size_t>(p.kernel)].mangled_name
                             : std::to_string(p.kernel);
      o << "| `" << name << "` | [" << p.first_block << ", " << p.first_block + p.blocks << ") | [" << p.first_thread
        << ", " << p.first_thread + p.threads << ") | " << (p.barrier_id < 0 ? "-" : std::to_string(p.barrier_id))
        << " |\n";
    }
  }
  if (plan.aggressive) {
    o << "\n**Aggressive**: the stores of these intermediates were dropped (the trace shows they are overwritten "
         "before anything reads them):";
    for (const ArgRef& r : plan.dropped_buffers) o << " " << argRefText(plan, r) << ";";
    o << "\n";
  }
  o << "\n## Resources\n\n";
  if (plan.resources.empty()) {
    o << "Not measured.\n";
  } else {
    o << "| kernel | arch | registers | spills (store/load B) | stack B | static shared B | threads/block | "
         "occupancy | limited by |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const KernelResources& k : plan.resources) {
      char occ[32];
      std::snprintf(occ, sizeof occ, "%.0f%%", k.occupancy * 100);
      o << "| `" << k.kernel << "` | " << k.arch << " | " << k.registers << " | " << k.spill_store_bytes << "/"
        << k.spill_load_bytes << " | " << k.stack_bytes << " | " << k.static_shared_bytes << " | "
        << k.threads_per_block << " | " << occ << " | "
        << (k.occupancy_limiter ? core::enumName(*k.occupancy_limiter) : "") << " |\n";
    }
  }
  if (!plan.targets.empty()) {
    o << "\nCompiled for:";
    for (const std::string& t : plan.targets) o << " " << t;
    o << "\n";
  }
  const Prediction& pr = plan.prediction;
  o << "\n## Prediction\n\n";
  if (pr.gpu.empty() && pr.occurrences == 0) {
    o << "None.\n";
  } else {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "On %s (cost model v%d): %.0f ns for the originals, %.0f ns predicted fused, %.0f ns saved per "
                  "occurrence; %" PRIu64 " occurrences, %.0f ns in total.\n",
                  pr.gpu.c_str(), pr.cost_model_version, pr.measured_ns, pr.fused_ns, pr.saving_ns, pr.occurrences,
                  pr.total_saving_ns);
    o << buf;
    if (!pr.note.empty()) o << "\n" << pr.note << "\n";
  }
  const PlanValidation& v = plan.validation;
  o << "\n## Validation\n\n";
  o << "- ptxas: " << (v.ptxas_ok ? "compiled" : "not compiled");
  for (const std::string& a : v.ptxas_archs) o << " " << a;
  o << "\n- emulator: " << core::enumName(v.emulator) << "\n- gpu: " << core::enumName(v.gpu) << "\n";
  if (v.runs > 0) o << "- " << v.runs << " runs, seed " << v.seed << "\n";
  if (!v.validated_at.empty()) o << "- at " << v.validated_at << "\n";
  if (!v.mismatch.empty()) o << "- first mismatch: " << v.mismatch << "\n";
  if (v.timing && v.timing->timed()) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "- timed on a GPU: originals %.1f us, fused %.1f us (medians of %d runs, %d argument sets)\n",
                  static_cast<double>(v.timing->originals_ns) / 1e3, static_cast<double>(v.timing->fused_ns) / 1e3,
                  v.timing->runs, v.timing->argument_sets);
    o << buf;
  } else if (v.timing) {
    o << "- " << v.timing->not_timed << "\n";
  }
  o << "\n" << plan.argument_sets.size() << " argument sets:\n";
  for (const ArgumentSet& s : plan.argument_sets) o << "- " << (s.origin.empty() ? "(unnamed)" : s.origin) << "\n";
  if (!plan.notes.empty()) {
    o << "\n## Notes\n\n";
    for (const std::string& n : plan.notes) o << "- " << n << "\n";
  }
  return o.str();
}

}  // namespace kfuse::rewriter
