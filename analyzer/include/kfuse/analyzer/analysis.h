// Fusion analysis: from an imported trace to ranked, justified fusion candidates.
//
//   ImportResult ──KernelCatalog──▶ per-kernel facts (parameter access modes, PTX memory accesses, usage)
//                ──DependencyGraph──▶ GPU operations + edges (stream order, event/host sync, RAW/WAR/WAW), each
//                                     edge with its reason
//                ──findCandidates──▶ vertical chains and horizontal groups, grouped by pattern over the whole
//                                     trace (one candidate, N occurrences), legality proven / likely / blocked
//                ──CostModel──▶ predicted saving per occurrence and in total, ranked on the critical path
//
// All types are plain values; nothing here keeps pointers into the input after a call returns. Not thread-safe
// per object; independent analyses may run concurrently. docs/analyzer.md explains the rules in full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kfuse/analyzer/importer.h"
#include "kfuse/core/fusion_kind.h"
#include "kfuse/core/gpu_spec.h"
#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"
#include "kfuse/ptx/analysis.h"

namespace kfuse::ptx {
class BlockRanges;
}  // namespace kfuse::ptx

namespace kfuse::analyzer {

// ---------------------------------------------------------------------------------------------------------------
// Per-kernel facts

// Where a parameter's access mode came from, best first.
enum class AccessSource { kPtx, kTrace, kMangledName, kAssumed };
const char* accessSourceName(AccessSource s);  // "ptx", "trace", "mangled-name", "assumed"

// One global memory access of a kernel through a pointer parameter, as the PTX analysis sees it.
struct ParamMemoryAccess {
  bool is_read = false, is_write = false;
  bool atomic = false;  // atom / red
  uint32_t bytes = 0;
  bool affine = false;
  std::string offset;  // canonical affine form of (address - param), e.g. "4*ctaid.x*ntid.x + 4*tid.x"
  std::string guard;   // "true" when unguarded
  uint32_t line = 0;
  std::optional<ptx::AffineExpr> offset_form;         // the same offset as structure (when affine)
  std::vector<ptx::GuardCondition> guard_conditions;  // the guard's conjuncts as structure, where understood
  bool guard_exact = false;                           // the guard is also sufficient (ptx::MemoryAccess::guard_exact)
  bool in_loop = false;                               // the access may run more than once per thread
  bool loop_steps = false;                            // offset_form counts a loop's steps (locality::countsLoopSteps)
  uint32_t vector = 1;  // elements of a vector access (.v2: 2, .v4: 4), each bytes / vector wide
};

struct ParamFacts {
  int index = 0;
  int offset = -1;  // byte offset in the argument buffer (-1 unknown); from the trace, else the PTX layout
  int size = 0;
  core::AccessMode mode = core::AccessMode::kUnknown;
  AccessSource source = AccessSource::kAssumed;
  std::string note;                         // why unknown, or the escape the PTX analysis found
  std::vector<ParamMemoryAccess> accesses;  // from PTX only
  int ptx_reads = 0, ptx_writes = 0;        // memory instructions through this pointer the PTX analysis counted;
                                            // more than `accesses` holds: some addresses could not be followed
};

// Floating-point operations by precision (an FMA counts 2). BF16 is kept apart from FP16: GPUs differ in its peak.
struct FlopCounts {
  double fp16 = 0, bf16 = 0, fp32 = 0, fp64 = 0;
  double total() const { return fp16 + bf16 + fp32 + fp64; }
  FlopCounts& operator+=(const FlopCounts& o) {
    fp16 += o.fp16;
    bf16 += o.bf16;
    fp32 += o.fp32;
    fp64 += o.fp64;
    return *this;
  }
  FlopCounts scaled(double k) const { return {fp16 * k, bf16 * k, fp32 * k, fp64 * k}; }
};

struct KernelFacts {
  core::Id function_id = core::kNoId;
  std::string name;  // demangled when possible
  std::string mangled_name;
  bool has_ptx = false;         // the kernel's PTX body was found in a module image of the trace
  bool module_by_name = false;  // the trace did not name the kernel's module: the one image defining it was used
  std::vector<ParamFacts> params;
  // From the PTX usage summary (false/0 when there is no PTX).
  int barriers = 0, atomics = 0, shuffles = 0;
  bool grid_sync = false, uses_shared = false, printf = false;
  FlopCounts flops_per_thread;  // floating-point operations in the body by precision, counted once (loops not
                                // unrolled)
  // Global memory accesses the PTX analysis could not attribute to a pointer parameter (a module variable, a
  // pointer loaded from memory): they may touch any buffer, so no proof may rely on the kernel's parameters.
  int unattributed_accesses = 0;
  uint32_t unattributed_line = 0;    // the first one
  std::vector<std::string> callees;  // device functions called (their accesses are not analysed), vprintf excepted
  std::string unanalysed_memory;     // memory instructions the access analysis does not follow (textures, cp.async,
                                     // tensor-core loads), named; empty when there are none
  bool indirect_calls = false;
  std::vector<int> form_params;  // scalar parameters that appear in access offsets or guards (a proof reads them)
  std::string ptx_problem;       // why PTX could not be used, when it could not
  // The bytes each thread block may touch per global access, loops included (block-level proofs); null when the
  // kernel has no PTX or cannot be analysed that way (block_ranges_problem says why).
  std::shared_ptr<const ptx::BlockRanges> block_ranges;
  std::string block_ranges_problem;
  struct BlockAccess {
    bool is_read = false, is_write = false;
    uint32_t line = 0;
    // The one pointer parameter the address derives from (the PTX analysis's base, else the only pointer parameter
    // flowing into it); -1 when none or several do.
    int via_param = -1;
    uint32_t bytes = 0;   // access width (0 unknown)
    bool atomic = false;  // atom / red
    uint32_t vector = 1;  // elements of a vector access (.v2: 2, .v4: 4), each bytes / vector wide
  };
  std::vector<BlockAccess> block_accesses;  // in block_ranges' order
  // Why threads of a block may leave the kernel while others still meet a barrier (ptx::
  // threadsExitAfterTheirLastBarrier); empty when they cannot. A block-level fusion needs it empty for its producer.
  std::string barrier_exit_problem;
  // Every parameter whose value can change where an access falls, whether it runs or how often (ptx::
  // analyzeParamInfluence: data flow through min, max, division, shifts, selects, branches and loop bounds, not only
  // affine forms), pointers included. A verdict or footprint computed for one launch holds for another only where
  // these arguments are equal (pointers: at the same offsets of allocations related in the same way).
  std::vector<int> influence_params;
  // Of those, the ones whose absolute value matters (ptx::ParamInfluence::absolute): a pointer used as a number
  // (its bits masked, its distance to another pointer) is pinned by its value, not only by where it points.
  std::vector<int> absolute_params;
  // The kernel as one counted loop (ptx::findCountedLoop: the grid-stride idiom), its start, step, guard and exit
  // test as values, with parameters written "param#<index>": kernels whose texts are equal once each parameter is
  // replaced by its argument take the same steps, and the rewriter runs their loops as one. Empty when it is not one.
  std::string loop_steps;
  // The kernel run as one element per thread, when it is a grid-stride loop (ptx::gridStrideElementView: one loop, or
  // nvcc's unrolled layout): the facts of its loop body run once with i = the thread's linear index (the view's
  // function), and the parameters whose product n the loop runs below. Element-remapped fusions judge such a kernel
  // by these facts on a launch of ceil(n / block) blocks (legality/grid_stride.h). Null when the kernel is not one
  // (element_view_problem says why, when it has a loop).
  struct ElementView {
    std::shared_ptr<const ptx::Function> function;
    std::shared_ptr<const KernelFacts> facts;
    std::vector<int> bound_params;  // n is the product of these parameters
    int unrolled = 1;               // ptx::ElementView::unrolled
    std::vector<int> small_params;  // ptx::ElementView::small_params
  };
  std::shared_ptr<const ElementView> element_view;
  std::string element_view_problem;
  bool dynamic_shared_influence = false;   // %dynamic_smem_size (or %total_smem_size) reaches an address, guard...
  bool reads_dynamic_shared_size = false;  // the kernel reads %dynamic_smem_size or %total_smem_size at all
};

// Facts for every function of a trace. PTX module images are parsed once each (PTX text, or the PTX entries
// of a fatbin); cubin-only modules give no PTX facts.
class KernelCatalog {
 public:
  static KernelCatalog build(const core::Trace& trace);
  const KernelFacts* find(core::Id function_id) const;
  const std::map<core::Id, KernelFacts>& all() const { return facts_; }
  int kernelsWithPtx() const;

 private:
  std::map<core::Id, KernelFacts> facts_;
};

// ---------------------------------------------------------------------------------------------------------------
// Dependency graph

enum class OpKind { kKernel, kMemcpy, kMemset };
enum class EdgeKind { kStreamOrder, kEventSync, kHostSync, kRaw, kWar, kWaw };
inline constexpr core::EnumName<EdgeKind> kEdgeKindNames[] = {{EdgeKind::kStreamOrder, "stream-order"},
                                                              {EdgeKind::kEventSync, "event-sync"},
                                                              {EdgeKind::kHostSync, "host-sync"},
                                                              {EdgeKind::kRaw, "RAW"},
                                                              {EdgeKind::kWar, "WAR"},
                                                              {EdgeKind::kWaw, "WAW"}};
constexpr std::span<const core::EnumName<EdgeKind>> nameTable(EdgeKind) {
  return kEdgeKindNames;
}
inline const char* edgeKindName(EdgeKind k) {
  return core::enumName(k);
}

struct GraphReplays;  // graph/graph_replays.h

struct BufferUse {
  core::Id allocation_id = core::kNoId;
  uint64_t offset = 0;
  int param_index = -1;  // -1 for memcpy/memset
  core::AccessMode mode = core::AccessMode::kReadWrite;
  // The bytes of the allocation the operation may touch through this argument, [lo, hi) from the allocation's
  // start: from the PTX's affine access forms bound to the launch's values (a sound over-approximation), a copy's
  // or set's extent, or the whole allocation when that cannot be computed. Data edges need overlapping ranges.
  uint64_t lo = 0, hi = UINT64_MAX;
  // A pointer found inside an argument passed by value as a struct (core::PointerArg::field_offset): read and
  // written for all the analysis knows, anywhere in its allocation.
  bool in_struct = false;
  bool overlaps(const BufferUse& o) const { return allocation_id == o.allocation_id && lo < o.hi && o.lo < hi; }
  bool wholeAllocation() const { return lo == 0 && hi == UINT64_MAX; }
};

struct GpuOp {
  OpKind kind = OpKind::kKernel;
  core::Id record_id = core::kNoId;  // Launch / Memcpy / Memset id
  size_t record_index = 0;           // index into the trace's vector of that kind
  core::Id stream_id = core::kNoId;
  core::Id function_id = core::kNoId;  // kernels only
  int64_t order_ns = core::kNoTime;    // issue order: API start, else GPU start
  int64_t gpu_start_ns = core::kNoTime, gpu_end_ns = core::kNoTime;
  int64_t host_sync_epoch = 0;  // host waits affecting this op's stream before it was issued
  std::vector<BufferUse> uses;
  // A node of a replayed CUDA graph (docs/analyzer.md, "CUDA graphs"): its graph snapshot and node, and how many
  // replays ran it. Such ops follow the trace's own, one block per graph in a topological order; their edges are
  // the graph's, and their streams are the graph's chains (no two ops of one chain have an op between them).
  core::Id graph_id = core::kNoId;
  core::Id graph_node_id = core::kNoId;
  int64_t replays = 1;
  // The place of one cuGraphLaunch on the launch timeline: a memset of no bytes whose uses are its graph's.
  core::Id graph_launch_id = core::kNoId;
  bool inGraph() const { return graph_id != core::kNoId; }
};

// Compact: a trace of a million launches has millions of edges. DependencyGraph::describe() gives the sentence.
struct Edge {
  size_t from = 0, to = 0;  // indices into DependencyGraph::ops, from < to in issue order
  EdgeKind kind = EdgeKind::kStreamOrder;
  bool inferred = false;                 // true when the trace had no data to prove it
  core::Id allocation_id = core::kNoId;  // data edges
  int from_param = -1, to_param = -1;    // data edges: the kernel parameters involved (-1: a copy or set)
  size_t sync_index = SIZE_MAX;          // sync edges: index into Trace::syncs
};

struct DependencyGraph {
  std::vector<GpuOp> ops;  // in issue order
  std::vector<Edge> edges;
  bool has_pointer_data = false;               // some launch had resolved pointer arguments
  std::vector<std::vector<size_t>> out_edges;  // edge indices by source op
  std::vector<std::vector<size_t>> in_edges;
  // Graph launches whose work is in the graph (the rest of `graph_launches_not_recorded` stays unseen).
  int64_t graph_launches_seen = 0;

  // `replays`: the graphs expanded into `trace` (graph/graph_replays.h), or nullptr.
  static DependencyGraph build(const core::Trace& trace, const KernelCatalog& catalog,
                               const GraphReplays* replays = nullptr);
  // Why `e` exists, as a sentence naming the operations, the allocation and the parameters.
  std::string describe(const Edge& e, const core::Trace& trace, const KernelCatalog& catalog) const;
  // Edges from `a` to `b` (direct only).
  std::vector<const Edge*> edgesBetween(size_t a, size_t b) const;
  // True when `b` can be reached from `a` (a < b) following edges; bounded search.
  bool reaches(size_t a, size_t b) const;
};

// ---------------------------------------------------------------------------------------------------------------
// Candidates and cost

enum class CandidateKind { kVertical, kHorizontal };
// How the kernels of a candidate share the fused launch (kfuse/core/fusion_kind.h; docs/analyzer.md, "Fusion
// kinds"); plans name it too.
using FusionKind = core::FusionKind;
inline const char* fusionKindName(FusionKind k) {
  return core::enumName(k);
}

// How a proven epilogue or prologue fusion maps the kernels onto the intermediate's elements: element e is at
// (argument `consumer_param` of kernel `consumer`) + consumer_offset + e * element_bytes, and the producer writes
// it through its argument `producer_param` (kernel 0). Kernel positions are within the candidate. Prologue: the
// consumer is kernel 1, and producer thread p writes elements p * producer_lanes ... + producer_lanes - 1.
struct EpilogueMap {
  int producer_param = -1;
  int consumer = -1;
  int consumer_param = -1;
  int64_t consumer_offset = 0;
  uint32_t element_bytes = 0;
  uint32_t producer_lanes = 1;  // prologue: elements per producer thread (its store a vector of that many)
  // The element-wise kernels (an epilogue's consumers, a prologue's producer) that are grid-stride loops run as one
  // element per thread (ptx::elementPerThread) on this many blocks of their block size; 0: none is one.
  uint32_t element_grid = 0;
  // Epilogue: the producer is a grid-stride loop run as one element per thread on this many blocks of its block size,
  // which is then the fused launch; 0: the producer runs as recorded.
  uint32_t producer_grid = 0;
  friend bool operator==(const EpilogueMap&, const EpilogueMap&) = default;
};
enum class Legality { kProven, kLikely, kBlocked };
enum class Confidence { kHigh, kMedium, kLow };
inline constexpr core::EnumName<CandidateKind> kCandidateKindNames[] = {{CandidateKind::kVertical, "vertical"},
                                                                        {CandidateKind::kHorizontal, "horizontal"}};
inline constexpr core::EnumName<Legality> kLegalityNames[] = {
    {Legality::kProven, "proven"}, {Legality::kLikely, "likely"}, {Legality::kBlocked, "blocked"}};
inline constexpr core::EnumName<Confidence> kConfidenceNames[] = {
    {Confidence::kHigh, "high"}, {Confidence::kMedium, "medium"}, {Confidence::kLow, "low"}};
constexpr std::span<const core::EnumName<CandidateKind>> nameTable(CandidateKind) {
  return kCandidateKindNames;
}
constexpr std::span<const core::EnumName<Legality>> nameTable(Legality) {
  return kLegalityNames;
}
constexpr std::span<const core::EnumName<Confidence>> nameTable(Confidence) {
  return kConfidenceNames;
}
inline const char* candidateKindName(CandidateKind k) {
  return core::enumName(k);
}
inline const char* legalityName(Legality l) {
  return core::enumName(l);
}
inline const char* confidenceName(Confidence c) {
  return core::enumName(c);
}

struct CostEstimate {
  double measured_ns = 0;  // sum of the kernels' GPU times, per occurrence (median over occurrences)
  double fused_ns = 0;     // predicted GPU time of the fused kernel
  double gap_ns = 0;       // idle GPU time between the kernels that fusion removes
  double saving_ns = 0;    // measured + gaps - fused, per occurrence (>= 0)
  double bytes_before = 0, bytes_after = 0, flops = 0;
  std::string bytes_source;  // of bytes_before and bytes_after alike: "measured", "emulated", "ptx-estimate",
                             // "extent-estimate", "operator-estimate", "mixed-estimate", "unknown"
  std::string flops_source;  // the same names
  std::string note;
};

// What a ProofArgument's value is.
enum class ProofValue : uint8_t {
  kScalar,         // the argument's value (a scalar, or a pointer that points into no allocation, such as null)
  kPointerOffset,  // the byte offset of a pointer argument into its allocation
  kAllocation,     // which allocation a pointer argument points into: the index, among the tuple's kAllocation
                   // arguments in order, of the first one in the same allocation (so 0, 1, 0 says the first and
                   // third pointers share an allocation that the second does not)
};
inline constexpr core::EnumName<ProofValue> kProofValueNames[] = {{ProofValue::kScalar, "value"},
                                                                  {ProofValue::kPointerOffset, "pointer_offset"},
                                                                  {ProofValue::kAllocation, "allocation"}};
constexpr std::span<const core::EnumName<ProofValue>> nameTable(ProofValue) {
  return kProofValueNames;
}
inline const char* proofValueName(ProofValue v) {
  return core::enumName(v);
}

// One value a legality proof read: a scalar argument, where a pointer argument points inside its allocation, or
// which pointers share an allocation.
struct ProofArgument {
  int kernel = 0;  // position of the kernel in the candidate
  int param = 0;
  ProofValue what = ProofValue::kScalar;
  int64_t value = 0;
  friend bool operator==(const ProofArgument&, const ProofArgument&) = default;
};

// On which occurrences legality was decided. Occurrences are grouped by the values the proof reads (launch shapes
// are part of the pattern already); each distinct tuple is checked once.
struct LegalityCheck {
  size_t occurrences_checked = 0;
  size_t argument_tuples = 0;
  std::vector<std::vector<ProofArgument>> tuples;  // the first kMaxListedTuples distinct tuples
  static constexpr size_t kMaxListedTuples = 16;
};

// One member of a candidate as a PyTorch user reads it (imported traces with operator context; docs/analyzer.md,
// "Operator context").
struct MemberContext {
  std::string label;       // "aten::add bf16[1,141,512]"; the short kernel name when no operator is known
  std::string op;          // the CPU operator that issued the kernel ("aten::add"), "" when not known
  std::string top_op;      // the outermost operator around it ("aten::linear"), "" when not known
  std::string module;      // the nn.Module path ("BertModel_0.BertEncoder_0.BertLayer_3.BertOutput_3"), "" none
  std::string family;      // kernel family (kernel_families.h): "elementwise", "gemm", ...
  std::string library;     // "pytorch", "cutlass", "cublas", ... "" when not known
  std::string annotation;  // the innermost user annotation / NVTX range around it, "" none
};

// What to do about a recommendation (docs/analyzer.md, "Remedies").
struct Remedy {
  std::string kind;  // "torch-compile", "gemm-epilogue", "fused-operator", "cuda-graph", "kfuse-rewrite"
  std::string text;  // one or two sentences naming the module, operator or library call
};

// Where the occurrences of a pattern sit: one row per module instance.
struct ModuleOccurrences {
  std::string module;  // the members' common nn.Module path, "" outside any module
  size_t occurrences = 0;
};

struct Candidate {
  // Stable across runs of the same analysis of the same trace: "k" and 10 hex digits of the SHA-256 of the pattern
  // (kernels, launch shapes, which arguments share an allocation), its fusion kind and its legality. `kfuse rewrite
  // --candidate` takes it as well as the rank.
  std::string id;
  int rank = 0;
  CandidateKind kind = CandidateKind::kVertical;
  FusionKind fusion = FusionKind::kThreadLocal;
  std::optional<EpilogueMap> epilogue;  // fusion == kEpilogue or kPrologue, and proven
  std::vector<core::Id> function_ids;
  std::vector<std::string> names;
  std::vector<std::string> mangled_names;
  std::vector<std::vector<size_t>> occurrences;            // op indices of each occurrence, in order
  std::vector<std::vector<core::Id>> occurrence_launches;  // the Launch ids of each occurrence (same order)
  // A candidate over the nodes of replayed CUDA graphs (docs/analyzer.md, "CUDA graphs"): per occurrence, the graph
  // snapshot and how many replays ran it; occurrence_launches then hold graph_node ids. Empty for launches.
  std::vector<core::Id> occurrence_graphs;
  std::vector<int64_t> occurrence_replays;
  bool inGraphs() const { return !occurrence_graphs.empty(); }
  // How often the pattern ran: the replays of its graph occurrences, else its occurrences.
  int64_t runs() const {
    if (!inGraphs()) return static_cast<int64_t>(occurrence_launches.size());
    int64_t n = 0;
    for (int64_t r : occurrence_replays) n += r;
    return n;
  }
  Legality legality = Legality::kLikely;
  Confidence confidence = Confidence::kLow;
  std::vector<std::string> reasons;  // why legal / why blocked / which heuristics
  std::string verdict;               // the one reason that decided a blocked or likely verdict (empty when proven)
  std::vector<std::pair<EdgeKind, std::string>> edges;  // the edges inside the first occurrence, described
  LegalityCheck checked;
  CostEstimate cost;
  double total_saving_ns = 0;
  double share_of_gpu_busy = 0;
  bool on_critical_path = false;
  std::vector<int> conflicts_with;  // ranks of other candidates that share a launch with this one
  // Advice (imported PyTorch traces and kernel families; empty where nothing is known):
  std::vector<MemberContext> members;      // per kernel, same order as names
  std::string fusion_kind;                 // "pointwise", "epilogue", "prologue", "reduction-epilogue", "" (same-shape)
  std::string module_pattern;              // the common module path with instance numbers dropped ("...BertOutput")
  std::vector<ModuleOccurrences> modules;  // occurrences per module instance, in order of first occurrence
  std::string data_flow;         // "execution-trace", "inferred-from-shapes", "pointer-arguments", "adjacency"
  bool in_cuda_graph = false;    // the kernels ran as nodes of a CUDA graph replay
  std::vector<Remedy> remedies;  // best first
};

// A finding about the trace as a whole rather than a pair of kernels: a launch-bound region a CUDA graph would
// help, work already in CUDA graphs (docs/analyzer.md, "Remedies").
struct Advice {
  std::string kind;   // "cuda-graph", "graphed"
  std::string where;  // the module or annotation, "" for the whole trace
  std::string text;
  double idle_ns = 0;    // GPU idle time waiting for launches in the region
  double window_ns = 0;  // from the region's first kernel start to its last kernel end
  size_t launches = 0;
};

struct RooflinePoint {
  std::string name;
  double intensity = 0;    // FLOP per DRAM byte
  double flops_per_s = 0;  // achieved (kernels) or predicted (fused candidates)
  bool predicted = false;
};

// One kernel's totals over the trace, for the reports' per-kernel table.
struct KernelRow {
  std::string name;  // as the trace names it (demangled where it can)
  size_t launches = 0;
  double ns = 0;          // GPU time: measured, or the cost model's estimate when the trace has none
  double bytes = 0;       // DRAM bytes (measured, emulated or estimated from the PTX); 0 = unknown
  double flops = 0;       // 0 = unknown
  double roof_share = 0;  // achieved FLOP/s over the roof at its intensity (FP32 peak or DRAM bandwidth), 0..1
  // What the cost model predicts without the trace's measurements, to set beside them: its roofline time (DRAM,
  // FLOPs, L1 requests; cost model rule 1) and its DRAM bytes from the PTX or the extents. 0 = no estimate.
  double predicted_ns = 0;
  double predicted_bytes = 0;
  std::string bytes_source;  // where `bytes` came from: "measured", "emulated", "ptx-estimate", ...
  std::string flops_source;  // where `flops` came from, the same names
};

struct AnalysisOptions {
  std::string gpu;  // spec table name; "" = the trace's device, else h100-sxm
  size_t max_chain_length = 4;
  size_t max_group = 8;  // most kernels in one horizontal group
  size_t top = 10;
  bool keep_no_gain = false;    // list patterns predicted to save nothing too (a legality audit), ranked last
  std::string execution_trace;  // a PyTorch Execution Trace (ExecutionTraceObserver JSON) to join, "" none
  // Applied by the caller to the input before analyze() (mergeMeasuredMetrics, attachPtxFromBinary); kept here so
  // that the report says what it was made from.
  std::string metrics_from;
  std::string binary;
};

struct Report {
  AnalysisOptions options;  // what this report was made with (top aside)
  std::string input_path;
  std::optional<int> rank;  // the distributed job's rank the trace names (Kineto distributedInfo.rank)
  std::string input_format;
  std::string producer;
  core::GpuSpec gpu;
  std::string gpu_source;  // "trace", "option", "default"
  int64_t launches = 0;
  int64_t kernels = 0;
  int64_t gpu_busy_ns = 0;
  bool gpu_busy_estimated = false;  // the trace has no GPU times: gpu_busy_ns sums roofline estimates
  int64_t critical_path_ns = 0;     // of GPU times; of roofline estimates when gpu_busy_estimated
  int cost_model_version = 0;       // the cost model's rules this report's numbers follow
  int kernels_with_ptx = 0;
  bool has_pointer_data = false;
  size_t edges = 0;
  std::map<std::string, size_t> edges_by_kind;
  std::vector<Candidate> candidates;  // ranked, best first (blocked ones last)
  std::vector<std::string> why_none;  // when no candidate qualifies: what was looked at and why
  // Proven candidates predicted to save nothing, not listed among the candidates (without options.keep_no_gain):
  // one line each, "ID FUSION KERNELS (N occurrences): why" (cost::noGainReason), so that none is hidden silently.
  std::vector<std::string> proven_no_gain;
  std::vector<std::string> notices;  // said first in every report: a device the spec table lacks, ...
  std::vector<Advice> advice;        // trace-level findings (launch-bound regions, CUDA graphs)
  // Operator context (imported PyTorch traces): GPU records linked to their CPU operator / inside an nn.Module,
  // and tensor-level data-flow edges from an Execution Trace (--et) or inferred from operator shapes.
  size_t records_with_operator = 0, records_with_module = 0, gpu_records = 0;
  size_t tensor_edges = 0;
  std::string tensor_edges_source;  // "execution-trace", "inferred-from-shapes", "" none
  std::vector<RooflinePoint> roofline;
  std::vector<KernelRow> kernel_table;  // by GPU time, longest first
  std::vector<core::Stat> stats;
};

// Runs the whole analysis on an imported trace.
Expected<Report> analyze(const ImportResult& input, const std::string& input_path, const AnalysisOptions& options);

// ---------------------------------------------------------------------------------------------------------------
// Re-prediction with the fused kernel's occupancy (for the rewriter, once ptxas has compiled the fused kernel)

// Re-predicts a per-occurrence estimate for a fused kernel of theoretical occupancy `fused_occupancy` where the
// originals ran at `originals_occupancy` (both in (0, 1]; for several originals see meanOccupancy()). The rule
// (docs/analyzer.md, "Cost model", rule 11): the achieved fraction carried over to the fused kernel scales with
// f = min(1, fused_occupancy / originals_occupancy), so the fused time becomes fused_ns / f and the saving falls by
// as much as the fused time grew. The result is not bounded like the analyzer's: fused_ns may exceed the originals'
// time and saving_ns may be negative (the fusion is predicted to lose). f = 1 (no loss of occupancy) returns the
// estimate unchanged; a higher occupancy is not credited. The note says what changed. kInvalidArgument for an
// occupancy outside (0, 1].
Expected<CostEstimate> costWithOccupancy(const CostEstimate& estimate, double fused_occupancy,
                                         double originals_occupancy);

// The same for a whole candidate: `cost` as costWithOccupancy(); total_saving_ns falls by occurrences x the growth
// of the per-occurrence fused time; share_of_gpu_busy is the new total over the same GPU busy time (0 when the
// candidate had no share to scale). Everything else is copied.
Expected<Candidate> candidateWithOccupancy(const Candidate& candidate, double fused_occupancy,
                                           double originals_occupancy);

// The occupancy several original kernels ran at, as one figure: their occupancies weighted by their GPU times
// (`times_ns`, the same length; empty or all 0: equal weights). The achieved fraction is a time-weighted mean over
// the kernels in the same way (rule 4). 0 for no kernels.
double meanOccupancy(const std::vector<double>& occupancies, const std::vector<double>& times_ns);

// Report writers. JSON follows schemas/report.schema.json.
inline constexpr int kReportVersion = 2;  // 2: candidate ids, kernels' function ids, occurrences' launch ids,
                                          // epilogue maps and the analysis options (what kfuse rewrite reads back)
// The JSON writer, reader and schema follow one field list per record (src/report/report_json.cpp).
nlohmann::json reportToJson(const Report& report);
// The report `j` (reportToJson's output, as stored in a trace or written by `kfuse analyze --json`) read back, for
// `kfuse rewrite`: every field reportToJson writes (occurrences as launch ids: Candidate::occurrences stays empty;
// the GPU's spec from the table by its short name). `what` names the source in errors ("trace.sqlite's stored
// report"). kBadFormat for a malformed report, kUnsupportedVersion for one of another version.
Expected<Report> reportFromJson(const nlohmann::json& j, const std::string& what);
// The report in the file at `path` (`kfuse analyze --json` output): read, parsed with its nesting bounded and read
// back as reportFromJson does. kNotFound for a path that is not a regular file, kIoError when it cannot be read,
// kBadFormat when it is not a report; each message names the file.
Expected<Report> readReportFile(const std::string& path);
// Text for a terminal: candidates with short kernel names and the sentence that decided each verdict; `verbose`
// adds every reason, the full kernel names and the per-kernel table.
// schemas/report.schema.json: the JSON Schema of what reportToJson writes.
std::string reportJsonSchema();
std::string reportToText(const Report& report, size_t top, bool verbose = false);
// "void at::native::foo<float, at::Bar<int>>(int, float*)" -> "foo<float, Bar<int>>": without return type,
// parameters and namespaces, at most `max` characters.
std::string shortKernelName(const std::string& name, size_t max = 60);
// The phrases every report (and the GUI) uses for a candidate, so that they read the same everywhere:
// - its members as a PyTorch user reads them ("aten::addmm bf16[141,512]x[512,2048] -> aten::gelu bf16[1,141,2048]")
//   when every member's operator is known, else its kernel names (shortKernelName(name, 40) when `short_names`);
std::string candidateMembersText(const Candidate& c, bool short_names = false);
// - where its occurrences sit: "in `BertLayer.BertOutput` (4 occurrences in 4 module instances: BertLayer_0.
//   BertOutput_0 x1, ...)", "in range `NAME`" (an annotation all members share), "" when nothing is known;
std::string candidateWhereText(const Candidate& c);
// - the one sentence that decided its legality ("proven: each thread reads only ...", "likely: ...").
std::string candidateVerdictText(const Candidate& c);
// - why `c` and `other` cannot both be applied, when they list each other in conflicts_with: "shares 3 launches
//   of `mul` with #2 (launch ids 4, 8, 12): only one of them can be applied"; "" when they do not conflict.
std::string candidateConflictText(const Candidate& c, const Candidate& other);
// The launches an occurrence of `a` shares with an occurrence of `b` (why the analyzer lists them as conflicting),
// ascending, each once. Empty when the candidates carry no launch ids (a report read back from JSON).
std::vector<core::Id> sharedLaunches(const Candidate& a, const Candidate& b);
std::string reportToMarkdown(const Report& report);
std::string reportToHtml(const Report& report);  // self-contained, with an SVG roofline chart

}  // namespace kfuse::analyzer
