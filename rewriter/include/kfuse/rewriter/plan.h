// A fusion plan: what `kfuse rewrite` writes into PLAN_DIR and what `kfuse validate` and the injector read.
//
//   PLAN_DIR/plan.json        this struct, per schemas/plan.schema.json (version kPlanVersion; generated from the
//                             field lists in rewriter/src/plan.cpp, like the reader and the writer)
//   PLAN_DIR/fused.ptx        the fused kernel (with the callees and variables it needs)
//   PLAN_DIR/originals/*.ptx  the original kernels' modules, so validation needs neither the trace nor the app
//   PLAN_DIR/README.md        the same facts for people
//
// All types are plain values. readPlan/writePlan are thread-safe on distinct directories.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kfuse/core/enum_names.h"
#include "kfuse/core/fusion_kind.h"
#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"
#include "kfuse/rewriter/fusion.h"

namespace kfuse::rewriter {

// 4: "fusion" (core::FusionKind) instead of "kind" (vertical/horizontal) with the kind of a vertical fusion in
// "layout"; "layout" is horizontal fusions' only. Version 3 plans are still read.
inline constexpr int kPlanVersion = 4;
inline constexpr int kOldestPlanVersion = 3;  // older plans are refused: re-run kfuse rewrite

struct PlanParam {
  int index = 0;
  uint32_t offset = 0;  // in the argument buffer
  uint32_t size = 0;
  bool pointer = false;
  std::optional<core::AccessMode> access;  // pointers: how the kernel accesses it (written "" when empty)
  std::string element_type;  // PTX type of the accesses through the pointer ("f32", "u32", ...), "" unknown
};

struct PlanKernel {
  std::string mangled_name;
  std::string module_hash;  // hex SHA-256 of the module image the kernel came from (the kernel's identity)
  std::string ptx_file;     // relative to the plan dir: "originals/<hash prefix>.ptx"
  core::LaunchShape shape;  // as recorded
  std::vector<PlanParam> params;
};

// A fact about the arguments that must hold for the injector to launch the fused kernel.
struct Predicate {
  enum class Kind {     // written as predicateKindName()
    kArgEqual,          // value of `a` == value of `b`
    kNoOverlap,         // the byte ranges [arg, arg + bytes[i]) of `buffers` are pairwise disjoint
    kSameLaunchConfig,  // every kernel is launched with the grid/block recorded in `kernels`
    kArgValue,          // `a` has exactly `value` (a scalar the legality proof read)
    kProvenValues,      // the values of `proof_args` form one of `tuples`: the argument values (scalars, byte
                        // offsets of pointers into their allocations, and which pointers share an allocation) for
                        // which the analyzer proved legality
  };
  struct ProofRef {
    ArgRef arg;
    bool pointer_offset = false;  // the byte offset of pointer `arg` into its allocation, not its value
    // Which allocation pointer `arg` points into: the position, among the proof_args with `allocation` set and in
    // their order, of the first one pointing into the same allocation (analyzer::ProofValue::kAllocation).
    bool allocation = false;
  };
  Kind kind = Kind::kArgEqual;
  ArgRef a, b;
  std::vector<ArgRef> buffers;
  std::vector<uint64_t> bytes;
  std::vector<uint8_t> value;  // little-endian bytes of a scalar argument
  std::vector<ProofRef> proof_args;
  std::vector<std::vector<int64_t>> tuples;
};
inline constexpr core::EnumName<Predicate::Kind> kPredicateKindNames[] = {
    {Predicate::Kind::kArgEqual, "arg_equal"},
    {Predicate::Kind::kNoOverlap, "no_overlap"},
    {Predicate::Kind::kSameLaunchConfig, "same_launch_config"},
    {Predicate::Kind::kArgValue, "arg_value"},
    {Predicate::Kind::kProvenValues, "proven_values"}};
constexpr std::span<const core::EnumName<Predicate::Kind>> nameTable(Predicate::Kind) {
  return kPredicateKindNames;
}
inline const char* predicateKindName(Predicate::Kind k) {
  return core::enumName(k);
}

// One argument of one launch in an argument set.
struct ArgValue {
  bool pointer = false;
  int buffer = -1;             // pointer: index into ArgumentSet::buffer_bytes
  uint64_t offset = 0;         // pointer: byte offset into that buffer
  std::vector<uint8_t> bytes;  // scalar: the raw argument bytes
};

// Argument values to validate with: one recorded occurrence, or a variant of one (sizes that are not a multiple
// of the block size). Buffers are numbered; two pointer arguments into the same allocation share a buffer.
struct ArgumentSet {
  std::string origin;  // "launch 12 of the trace", "ragged: arg 3 = 1000 -> 871"
  std::vector<uint64_t> buffer_bytes;
  std::vector<std::vector<ArgValue>> args;       // [kernel][param]
  std::vector<core::LaunchShape> shapes;         // [kernel]; empty = the plan's recorded shapes
  std::optional<core::LaunchShape> fused_shape;  // the fused launch for these shapes; empty = Plan::fused.shape
};

// The resource that limits how many blocks of a kernel an SM runs at once.
enum class OccupancyLimiter { kWarps, kBlocks, kRegisters, kSharedMemory, kBarriers };
inline constexpr core::EnumName<OccupancyLimiter> kOccupancyLimiterNames[] = {
    {OccupancyLimiter::kWarps, "warps"},
    {OccupancyLimiter::kBlocks, "blocks"},
    {OccupancyLimiter::kRegisters, "registers"},
    {OccupancyLimiter::kSharedMemory, "shared memory"},
    {OccupancyLimiter::kBarriers, "barriers"}};
constexpr std::span<const core::EnumName<OccupancyLimiter>> nameTable(OccupancyLimiter) {
  return kOccupancyLimiterNames;
}

// ptxas's report for one kernel on one architecture, with the theoretical occupancy it allows.
struct KernelResources {
  std::string kernel;  // mangled name of an original, or the fused kernel's name
  std::string arch;    // "sm_90"
  int registers = 0;
  int barriers = 0;
  uint64_t spill_store_bytes = 0, spill_load_bytes = 0;
  uint64_t stack_bytes = 0;
  uint64_t static_shared_bytes = 0;
  uint32_t threads_per_block = 0;                     // of the launch the occupancy is for
  double occupancy = 0;                               // active warps / maximum warps per SM, 0..1
  std::optional<OccupancyLimiter> occupancy_limiter;  // empty (written "") until computeOccupancy() ran
};

struct Prediction {
  std::string gpu;  // spec table name
  int cost_model_version = 0;
  double measured_ns = 0, fused_ns = 0, saving_ns = 0;  // per occurrence
  uint64_t occurrences = 0;
  double total_saving_ns = 0;
  std::string note;
};

// The outcome of differential validation on one backend.
enum class ValidationVerdict { kNotRun, kPassed, kFailed };
inline constexpr core::EnumName<ValidationVerdict> kValidationVerdictNames[] = {{ValidationVerdict::kNotRun, "not-run"},
                                                                                {ValidationVerdict::kPassed, "passed"},
                                                                                {ValidationVerdict::kFailed, "failed"}};
constexpr std::span<const core::EnumName<ValidationVerdict>> nameTable(ValidationVerdict) {
  return kValidationVerdictNames;
}

// The fused kernel timed against the original launches in sequence, on a GPU (`kfuse validate --backend gpu`):
// per argument set, one warm-up and `runs` timed runs of each side, between device events; the figures are the sums
// over the argument sets of each side's median. The same measurement as `kfuse run --validate`'s run statistics
// (`timing`), made on the plan's recorded arguments instead of the application's.
struct PlanTiming {
  uint64_t originals_ns = 0;  // the original launches, issued back to back
  uint64_t fused_ns = 0;      // the fused launch
  int runs = 0;               // timed runs per side and argument set (after one warm-up)
  int argument_sets = 0;      // argument sets timed
  std::string not_timed;      // why there are no figures ("not timed: the emulator ..."); empty when timed
  bool timed() const { return not_timed.empty() && argument_sets > 0; }
};

struct PlanValidation {
  bool ptxas_ok = false;
  std::vector<std::string> ptxas_archs;
  ValidationVerdict emulator = ValidationVerdict::kNotRun;
  ValidationVerdict gpu = ValidationVerdict::kNotRun;  // --backend gpu
  uint64_t seed = 0;
  int runs = 0;              // argument sets x data trials executed
  std::string mismatch;      // the first mismatch, as a sentence; empty when none
  std::string validated_at;  // ISO 8601 UTC
  // Every file the validation read, as `sha256sum` prints them ("<64 hex>  fused.ptx"): `kfuse run` refuses a plan
  // whose fused kernel changed since. Empty in plans written before kfuse recorded them.
  std::vector<std::string> files;
  // The last timing of the fused kernel against the originals: figures from a GPU, or why there are none. An
  // emulator validation leaves a GPU's figures in place. Absent in plans written before kfuse timed validation.
  std::optional<PlanTiming> timing;
};

struct Plan {
  int version = kPlanVersion;  // as read; planToJson writes kPlanVersion
  std::string source_trace;
  int candidate_rank = 0;
  core::FusionKind fusion = core::FusionKind::kThreadLocal;
  std::optional<HorizontalLayout> layout;  // horizontal fusions only, and always
  std::vector<PlanKernel> kernels;         // the pattern, in launch order
  std::vector<Predicate> predicates;
  struct Fused {
    std::string name;
    std::string ptx_file = "fused.ptx";
    std::string arch;  // the architecture the injector loads it for (the trace's GPU)
    std::vector<FusedParam> params;
    core::LaunchShape shape;
    std::vector<FusionResult::Part> parts;
  } fused;
  std::vector<std::string> targets;  // architectures it was compiled for
  std::vector<KernelResources> resources;
  bool aggressive = false;
  std::vector<ArgRef> dropped_buffers;
  Prediction prediction;
  std::vector<ArgumentSet> argument_sets;
  PlanValidation validation;
  std::vector<std::string> notes;
};

nlohmann::json planToJson(const Plan& plan);
// Errors name `source` (the file) and the field that is wrong: "plan/plan.json: pattern.kernels[1].module_hash:
// expected 64 hex digits". Reads plans of versions kOldestPlanVersion to kPlanVersion.
Expected<Plan> planFromJson(const nlohmann::json& j, const std::string& source);
// schemas/plan.schema.json: the JSON Schema of what planToJson writes, from the same field lists.
std::string planJsonSchema();
// Reads PLAN_DIR/plan.json.
Expected<Plan> readPlan(const std::string& dir);
// Writes PLAN_DIR/plan.json atomically (a temporary file renamed over the old one).
Status writePlan(const std::string& dir, const Plan& plan);
// PLAN_DIR/README.md text.
std::string planReadme(const Plan& plan);

}  // namespace kfuse::rewriter
