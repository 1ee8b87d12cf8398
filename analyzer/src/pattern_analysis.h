// The analysis of one imported trace behind analyze(): the candidate search (search.cpp), the judgement of each
// candidate on every distinct tuple of the values its proof reads (legality/judge.cpp) and what the cost model is
// fed (cost/candidate_cost.cpp). Private to the analyzer. Holds references to the trace, the kernel catalog, the
// graph and the advisor, which must outlive it; const members may be called from one thread at a time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "advice/advice.h"
#include "advice/kernel_families.h"
#include "cost/cost_model.h"
#include "graph/footprint.h"
#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/stats.h"
#include "legality/block_level.h"
#include "legality/epilogue.h"
#include "legality/grid_stride.h"
#include "legality/prologue.h"
#include "legality/thread_locality.h"

namespace kfuse::analyzer {

// How many later operations the liveness check looks at before calling a buffer's later use unknown.
inline constexpr size_t kLivenessWindow = 4096;

inline bool readsMode(core::AccessMode m) {
  return m == core::AccessMode::kRead || m == core::AccessMode::kReadWrite;
}
inline bool writesMode(core::AccessMode m) {
  return m == core::AccessMode::kWrite || m == core::AccessMode::kReadWrite;
}

inline std::string dimText(const core::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

// Counters of what the search looked at, for the "why nothing qualified" part of the report.
struct SearchStats {
  size_t adjacent_pairs = 0, pairs_config_unknown = 0, pairs_config_differs = 0, pairs_sync_between = 0,
         pairs_no_data_flow = 0, pairs_copy_between = 0, horizontal_pairs = 0, horizontal_not_small = 0,
         horizontal_dependent = 0, pairs_family_never = 0;
};

class Analysis {
 public:
  Analysis(const ImportResult& input, const KernelCatalog& catalog, const DependencyGraph& graph,
           const core::GpuSpec& gpu, const AnalysisOptions& options, const Advisor& advisor)
      : in_(input), t_(input.trace), cat_(catalog), g_(graph), gpu_(gpu), opt_(options), adv_(advisor) {
    for (const core::Allocation& a : t_.allocations) allocs_[a.id] = &a;
    for (const core::Metric& m : t_.metrics) metrics_[m.launch_id].push_back(&m);
    // Importers record a kernel without grid/block (other vendors' traces) as 1x1x1 and count it.
    shapes_may_be_unknown_ = in_.problemCount(core::statName(core::StatId::kKinetoKernelWithoutLaunchConfig)) > 0;
  }

  // True when this launch's grid and block are not known (recorded as 1x1x1 by an importer that said so).
  bool shapeUnknown(const core::Launch& l) const {
    return shapes_may_be_unknown_ && l.grid == core::Dim3{} && l.block == core::Dim3{};
  }

  std::vector<Candidate> run(SearchStats& stats);

  // ---- what the cost model is fed ----

  const core::Launch& launch(size_t op) const { return t_.launches[g_.ops[op].record_index]; }

  double durationNs(size_t op) const;

  static cost::Source metricSource(core::MetricSource s);

  // DRAM bytes a kernel moves: measured/emulated metrics, else an estimate; `source` says which.
  double kernelBytes(size_t op, cost::Source& source) const;

  // Bytes one buffer use reads (or writes) in one launch, and how well they are known.
  struct UseEstimate {
    double bytes = 0;
    cost::Source source = cost::Source::kUnknown;
    bool followed = true;  // not an access the PTX analysis failed to follow (whose bytes fusion must keep)
    bool exact = false;    // [offset, offset + bytes) is what it touches (PTX fully followed, or a copy or set of
                           // the whole allocation)
  };

  // PTX access widths x threads, capped by the allocation's extent, when the PTX analysis followed every access
  // through the parameter; without PTX, the extent; with PTX whose accesses were not all followed, the extent,
  // marked not followed. Copies and sets: their size.
  UseEstimate useBytes(size_t op, const BufferUse& u, bool reads) const;

  // What one parameter's accesses ask of the caches in one launch (cost::UseBytes' cache fields). Per access:
  // executions = threads x the steps of its loop (iterationEstimate; 1 outside loops); a warp request moves the
  // 32-byte sectors its lanes' bytes fall in, from the distance between adjacent lanes (the coefficient of tid.x, or
  // of tid.y when blocks are one thread wide): lanes a sector or more apart each move their own (uncoalesced).
  // `known` is false when an access was not followed or its steps or form cannot be bound for the launch.
  struct ParamTraffic {
    bool known = false;
    double l1_bytes = 0, l1_load_bytes = 0, loaded_bytes = 0, strided_load_l1_bytes = 0;
  };
  // By parameter index; empty for a copy or set and without PTX. Cached per kernel, launch shape and argument bytes.
  const std::vector<ParamTraffic>& paramTraffic(size_t op) const;
  // `b`'s cache fields for use `u` of op `op` whose DRAM bytes are `r` and `w`: paramTraffic where known, else the
  // DRAM bytes once, as coalesced requests.
  void fillTraffic(size_t op, const BufferUse& u, const UseEstimate& r, const UseEstimate& w, cost::UseBytes& b) const;
  // A kernel as the cost model estimates it from its uses, whatever the metrics say: DRAM bytes (useBytes) and L1
  // request bytes (fillTraffic), summed over the uses.
  struct KernelEstimate {
    double bytes = 0, l1_bytes = 0;
    cost::Source source = cost::Source::kUnknown;  // of `bytes`: the uses' sources combined
  };
  KernelEstimate estimateKernel(size_t op) const;
  // kernelBytes with the kernel's estimate already made (one pass over its uses for both).
  double kernelBytes(size_t op, cost::Source& source, const KernelEstimate& estimate) const;

  // The bytes a use may reach: its footprint when the analysis bounded it (loops included), else the allocation
  // from the use's offset to its end; 0 when the allocation is unknown.
  double extentFrom(const BufferUse& u) const;

  // FLOPs by precision: the flops_fp16/32/64 metrics (any other "flops*" metric counts as FP32), else the PTX
  // count per thread x threads.
  FlopCounts kernelFlops(size_t op, cost::Source& source) const;

  // A kernel's roofline time for its launch: its time when the trace has none.
  double rooflineNs(size_t op) const;

  cost::LaunchResources launchResources(const core::Launch& l) const;

  // The buffers of one occurrence of a vertical chain: every use with its bytes, numbered by (allocation, offset)
  // in order of first use (the same numbering in every occurrence of a pattern), and the region each buffer is
  // written in (empty when only read).
  struct ChainBuffers {
    std::vector<cost::UseBytes> uses;
    std::vector<std::pair<core::Id, cost::Region>> written;  // by buffer number
  };
  ChainBuffers chainBuffers(const std::vector<size_t>& occ) const;

  // Whether any byte of `written` in `alloc` is read after op `after` before being overwritten. A later use
  // touches [offset, offset + its bytes) when those are exact (a dense range from the pointer is assumed), else
  // (for a read) everything from its offset to the allocation's end. Reaching the end of the trace: not read
  // (dead); running out of the scan window first: unknown (live).
  bool liveAfter(core::Id alloc, cost::Region written, size_t after) const;

  // Per buffer number: read after some occurrence before being overwritten. The fused kernel, being one kernel
  // for every occurrence, must write such a buffer back to memory.
  std::vector<bool> liveBuffers(const Candidate& c) const;

  // Whether the rewriter runs the grid-stride loops of this occurrence of a chain as one loop (rewriter/src/
  // vertical.cpp): every kernel one counted loop taking the same steps for these arguments, pointers into one
  // allocation only when equal, and each buffer two kernels share with a write accessed at one offset form.
  bool loopsMerge(const std::vector<size_t>& occ) const;

  // `block_level`: the consumer re-reads, after the block barrier, bytes its own producer block has just written
  // (L1/L2, not DRAM): a buffer whose uses have bounded footprints counts like a followed one (read once).
  CostEstimate occurrenceCost(CandidateKind kind, const std::vector<size_t>& occ, const std::vector<bool>& live,
                              FusionKind fusion = FusionKind::kThreadLocal) const;

  // ---- legality ----

  locality::AtomValues atomValues(size_t op) const;

  struct Verdict {
    Legality legality = Legality::kProven;
    std::vector<std::string> reasons;
    // Thread-local buffers: (buffer, why) -> the kernels shown to touch it thread-locally, in chain order.
    std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> local;
    void noteLocal(const std::string& buf, const std::string& why, const std::string& a, const std::string& b) {
      auto it = std::find_if(local.begin(), local.end(), [&](const auto& e) { return e.first == std::pair{buf, why}; });
      if (it == local.end()) it = local.insert(local.end(), {{buf, why}, {}});
      for (const std::string& k : {a, b}) {
        if (std::find(it->second.begin(), it->second.end(), k) == it->second.end()) it->second.push_back(k);
      }
    }
    void lower(Legality l) {
      if (l == Legality::kBlocked || (l == Legality::kLikely && legality == Legality::kProven)) legality = l;
    }
    void weaken(Legality l, std::string why) {
      lower(l);
      if (l == Legality::kBlocked && blocked_by.empty()) blocked_by = why;
      if (l == Legality::kLikely && likely_by.empty()) likely_by = why;
      reasons.push_back(std::move(why));
    }
    // The first reason given for each weaker verdict: what a one-line report says.
    std::string blocked_by, likely_by;
    void adoptDeciders(const Verdict& other) {
      if (blocked_by.empty()) blocked_by = other.blocked_by;
      if (likely_by.empty()) likely_by = other.likely_by;
    }
    std::string decider() const {
      return legality == Legality::kBlocked ? blocked_by : legality == Legality::kLikely ? likely_by : std::string();
    }
    std::optional<EpilogueMap> epilogue;  // a proven epilogue or prologue fusion's element map
    bool block_level = false;             // proven for block-level fusion, not thread-local
    bool prologue = false;                // judged as a prologue fusion (proven, or refused for its reason)
    bool epilogue_kind = false;           // proven as an epilogue fusion although the shapes are equal
  };

  static bool validParam(const KernelFacts& k, int index);

  // What a proof about one launch of a kernel needs beyond its shared buffers: every global access attributed to
  // a pointer parameter, no device-function calls, and every pointer it accesses resolved to an allocation (an
  // access through anything else could reach another kernel's buffer unseen).
  void checkVisibility(size_t op, Verdict& v) const;
  // checkVisibility() found nothing for this launch.
  bool seesInto(size_t op) const {
    Verdict v;
    checkVisibility(op, v);
    return v.legality == Legality::kProven;
  }

  // Thread-locality of every buffer two kernels of a vertical chain share with a write, for this occurrence's
  // argument values: no two different threads may touch a common byte with one of them writing.
  void checkPair(size_t a, size_t b, Verdict& v) const;

  bool hasPtx(size_t op) const;

  bool sameShape(size_t a, size_t b) const;

  // Block-level fusion of a same-shape pair that is not thread-local (block_level.h). Only verdicts that rest on
  // thread locality are reconsidered: what checkVisibility found (no PTX, unfollowed pointers, calls) still holds.
  // `visible`: checkVisibility found nothing for either launch.
  void checkBlockLevel(const std::vector<size_t>& occ, bool visible, Verdict& v) const;

  // Prologue fusion of a same-shape pair that is neither thread-local nor block-level (prologue.h). As for
  // block-level, only verdicts that rest on thread locality are reconsidered.
  void checkSameShapePrologue(const std::vector<size_t>& occ, bool visible, Verdict& v) const;

  // Epilogue fusion of a same-shape pair with a grid-stride kernel in it (its loop is what stops thread locality):
  // the consumer's element view in the producer's launch, or the producer's element view as the producer
  // (epilogue.h, grid_stride.h). As for block-level,
  // only verdicts that rest on thread locality are reconsidered.
  void checkSameShapeEpilogue(const std::vector<size_t>& occ, bool visible, Verdict& v) const;

  // An element-wise part that is a grid-stride kernel as its element-per-thread view (grid_stride.h), `grid` its
  // blocks (0 for a part left as it is); the refusal when the view does not hold for this launch.
  static std::string elementWise(epilogue::Part& part, uint32_t& grid);
  static std::string elementWiseSentence(const epilogue::Part& part, const epilogue::Part& view);

  // Element-remapped fusion of a producer (occ[0]) with element-wise consumers (the rest): see epilogue.h. A pair
  // that is no epilogue may be a prologue (the producer recomputed at the consumer's loads): checked too when
  // `prologue_fallback`.
  void checkEpilogue(const std::vector<size_t>& occ, Verdict& v, bool prologue_fallback = true) const;

  // Which access breaks thread locality, in words: "jacobi (line 65) reads allocation 1 768 bytes after where
  // jacobi (line 75) writes for the same thread: each thread touches data of a neighbouring thread (stencil-like)".
  static std::string crossingSentence(const KernelFacts& ka, const ParamMemoryAccess& ma,
                                      const locality::LinearForm& fa, const BufferUse& ua, const KernelFacts& kb,
                                      const ParamMemoryAccess& mb, const locality::LinearForm& fb, const BufferUse& ub,
                                      const std::string& buf);

  // The values a legality verdict for this occurrence depends on, beyond the pattern's identity (functions, launch
  // shapes, which arguments share an allocation): every argument that influences the kernels' accesses
  // (KernelFacts::influence_params) by its value, and every pointer into an allocation by its offset there and by
  // which other pointers share that allocation. Occurrences with equal keys get equal verdicts, and a plan pins
  // them all. `unpinned` says why some influencing argument cannot be pinned (empty when all can).
  void proofArguments(const std::vector<size_t>& occ, std::vector<ProofArgument>& args, std::string* unpinned) const;

  // The values of a tuple that say something: scalar arguments, and pointer arguments not at their allocation's
  // start (the JSON report lists them all).
  static std::string argumentsText(const Candidate& c, const std::vector<ProofArgument>& args);

  // Legality of one occurrence (every pair of its kernels, for its argument values).
  Verdict judgeOccurrence(CandidateKind kind, const std::vector<size_t>& occ) const;

  // Judges a pattern on every distinct tuple of the values its proof reads. Occurrences whose tuples get different
  // verdicts become separate candidates (proven, likely, blocked), each saying what it was checked on.
  std::vector<Candidate> judge(Candidate c) const;

  // ---- search ----

  // Pattern identity of a group of ops: functions, launch shapes, and how buffers are shared among them.
  std::string patternKey(CandidateKind kind, const std::vector<size_t>& occ) const;

  Candidate& group(std::map<std::string, size_t>& index, std::vector<Candidate>& out, CandidateKind kind,
                   const std::vector<size_t>& occ);

  void findVertical(std::vector<Candidate>& out, SearchStats& stats);

  // Whether `b` may join horizontal group `group` (kernels issued before it): independent of every member, in the
  // same host-sync epoch, and the group still fits in one wave.
  bool joinsGroup(const std::vector<size_t>& group, size_t b, SearchStats& stats) const;

  // Groups of consecutive independent kernels that fit in one wave together (N-way, up to --max-group). Of each
  // maximal group, the cost model picks the prefix of at least two kernels with the largest predicted saving; the
  // rest starts the next group.
  void findHorizontal(std::vector<Candidate>& out, SearchStats& stats);

  void cost(Candidate& c) const;

 private:
  const ImportResult& in_;
  const core::Trace& t_;
  const KernelCatalog& cat_;
  const DependencyGraph& g_;
  const core::GpuSpec& gpu_;
  const AnalysisOptions& opt_;
  const Advisor& adv_;
  std::unordered_map<core::Id, const core::Allocation*> allocs_;
  std::unordered_map<core::Id, std::vector<const core::Metric*>> metrics_;
  mutable std::unordered_map<std::string, std::vector<ParamTraffic>> traffic_cache_;  // paramTraffic's
  // Launch threads the element maps of epilogue and prologue checks enumerated so far (elementMap in judge.cpp).
  mutable uint64_t element_map_threads_ = 0;
  mutable std::vector<const std::vector<ParamTraffic>*> traffic_of_op_;  // the same, by op (nullptr: not yet)
  bool shapes_may_be_unknown_ = false;
};

}  // namespace kfuse::analyzer
