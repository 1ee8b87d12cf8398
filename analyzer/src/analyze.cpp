// Candidate search, legality, cost model and ranking: the body of `kfuse analyze`.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/stats.h"
#include "advice/advice.h"
#include "cost/cost_model.h"
#include "legality/block_level.h"
#include "legality/epilogue.h"
#include "legality/prologue.h"
#include "graph/footprint.h"
#include "advice/kernel_families.h"
#include "legality/thread_locality.h"

namespace kfuse::analyzer {

const char* candidateKindName(CandidateKind k) { return k == CandidateKind::kVertical ? "vertical" : "horizontal"; }
const char* fusionKindName(FusionKind k) {
  switch (k) {
    case FusionKind::kThreadLocal: return "thread-local";
    case FusionKind::kEpilogue: return "epilogue";
    case FusionKind::kHorizontal: return "horizontal";
    case FusionKind::kBlockLevel: return "block-level";
    case FusionKind::kPrologue: return "prologue";
  }
  return "?";
}
const char* legalityName(Legality l) {
  switch (l) {
    case Legality::kProven: return "proven";
    case Legality::kLikely: return "likely";
    case Legality::kBlocked: return "blocked";
  }
  return "likely";
}
const char* proofValueName(ProofValue v) {
  switch (v) {
    case ProofValue::kScalar: return "value";
    case ProofValue::kPointerOffset: return "pointer_offset";
    case ProofValue::kAllocation: return "allocation";
  }
  return "value";
}
const char* confidenceName(Confidence c) {
  switch (c) {
    case Confidence::kHigh: return "high";
    case Confidence::kMedium: return "medium";
    case Confidence::kLow: return "low";
  }
  return "low";
}

namespace {

// How many later operations the liveness check looks at before calling a buffer's later use unknown.
constexpr size_t kLivenessWindow = 4096;

bool readsMode(core::AccessMode m) { return m == core::AccessMode::kRead || m == core::AccessMode::kReadWrite; }
bool writesMode(core::AccessMode m) { return m == core::AccessMode::kWrite || m == core::AccessMode::kReadWrite; }

std::string dimText(const core::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

// Counters of what the search looked at, for the "why nothing qualified" part of the report.
struct SearchStats {
  size_t adjacent_pairs = 0, pairs_config_unknown = 0, pairs_config_differs = 0, pairs_sync_between = 0, pairs_no_data_flow = 0,
         pairs_copy_between = 0, horizontal_pairs = 0, horizontal_not_small = 0, horizontal_dependent = 0,
         pairs_family_never = 0;
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

  std::vector<Candidate> run(SearchStats& stats) {
    std::vector<Candidate> out;
    findVertical(out, stats);
    findHorizontal(out, stats);
    return out;
  }

  // ---- what the cost model is fed ----

  const core::Launch& launch(size_t op) const { return t_.launches[g_.ops[op].record_index]; }

  double durationNs(size_t op) const {
    const GpuOp& o = g_.ops[op];
    return o.gpu_start_ns == core::kNoTime || o.gpu_end_ns == core::kNoTime
               ? 0.0
               : static_cast<double>(o.gpu_end_ns - o.gpu_start_ns);
  }

  static cost::Source metricSource(core::MetricSource s) {
    switch (s) {
      case core::MetricSource::kMeasured: return cost::Source::kMeasured;
      case core::MetricSource::kEmulated: return cost::Source::kEmulated;
      case core::MetricSource::kEstimated: return cost::Source::kEstimated;
    }
    return cost::Source::kEstimated;
  }

  // DRAM bytes a kernel moves: measured/emulated metrics, else an estimate; `source` says which.
  double kernelBytes(size_t op, cost::Source& source) const {
    const core::Launch& l = launch(op);
    if (auto it = metrics_.find(l.id); it != metrics_.end()) {
      double bytes = 0;
      bool found = false;
      for (const core::Metric* m : it->second) {
        if (m->name.find("dram_bytes") != std::string::npos) {
          bytes += m->value;
          source = found ? cost::combine(source, metricSource(m->source)) : metricSource(m->source);
          found = true;
        }
      }
      if (found) return bytes;
    }
    double bytes = 0;
    bool any = false;
    for (const BufferUse& u : g_.ops[op].uses) {
      for (bool reads : {true, false}) {
        const UseEstimate e = useBytes(op, u, reads);
        if (e.bytes <= 0) continue;
        source = any ? cost::combine(source, e.source) : e.source;
        any = true;
        bytes += e.bytes;
      }
    }
    if (bytes > 0) return bytes;
    // Imported PyTorch traces: the issuing CPU operator's tensors, shared among the kernels it launched.
    if (const std::optional<double> b = adv_.operatorBytes(op)) {
      source = cost::Source::kOperatorEstimate;
      return *b;
    }
    source = cost::Source::kUnknown;
    return 0;
  }

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
  UseEstimate useBytes(size_t op, const BufferUse& u, bool reads) const {
    if (reads ? !readsMode(u.mode) : !writesMode(u.mode)) return {0, cost::Source::kUnknown, true, true};
    const GpuOp& o = g_.ops[op];
    const double extent = extentFrom(u);
    if (o.kind != OpKind::kKernel) {
      // A copy's or set's offset into the allocation is not recorded (its use says 0): its bytes are exact only
      // when they span the whole allocation.
      const double bytes = static_cast<double>(o.kind == OpKind::kMemcpy ? t_.memcpys[o.record_index].bytes
                                                                         : t_.memsets[o.record_index].bytes);
      return {bytes, cost::Source::kMeasured, true, extent > 0 && bytes >= extent};
    }
    const cost::Source extent_source = extent > 0 ? cost::Source::kExtentEstimate : cost::Source::kUnknown;
    const UseEstimate by_extent{extent, extent_source, /*followed=*/true, /*exact=*/false};
    const KernelFacts* k = cat_.find(o.function_id);
    if (u.in_struct) return {by_extent.bytes, by_extent.source, /*followed=*/false, /*exact=*/false};
    if (!k || !k->has_ptx || u.param_index < 0 || static_cast<size_t>(u.param_index) >= k->params.size()) {
      return by_extent;
    }
    const ParamFacts& p = k->params[static_cast<size_t>(u.param_index)];
    if (!fullyFollowed(p)) return {by_extent.bytes, by_extent.source, /*followed=*/false, /*exact=*/false};
    const core::Launch& l = launch(op);
    const double threads = static_cast<double>(l.grid.count() * l.block.count());
    double per_thread = 0;
    for (const ParamMemoryAccess& a : p.accesses) {
      if (reads ? a.is_read : a.is_write) per_thread += a.bytes;
    }
    const double b = per_thread * threads;
    return {extent > 0 ? std::min(b, extent) : b, cost::Source::kPtxEstimate, true, true};
  }

  // The bytes a use may reach: its footprint when the analysis bounded it (loops included), else the allocation
  // from the use's offset to its end; 0 when the allocation is unknown.
  double extentFrom(const BufferUse& u) const {
    if (!u.wholeAllocation() && u.hi >= u.lo && u.hi != UINT64_MAX) return static_cast<double>(u.hi - u.lo);
    if (auto a = allocs_.find(u.allocation_id); a != allocs_.end() && a->second->size > u.offset) {
      return static_cast<double>(a->second->size - u.offset);
    }
    return 0;
  }

  // FLOPs by precision: the flops_fp16/32/64 metrics (any other "flops*" metric counts as FP32), else the PTX
  // count per thread x threads.
  FlopCounts kernelFlops(size_t op, cost::Source& source) const {
    const core::Launch& l = launch(op);
    if (auto it = metrics_.find(l.id); it != metrics_.end()) {
      FlopCounts flops;
      bool found = false;
      for (const core::Metric* m : it->second) {
        if (m->name.rfind("flops", 0) != 0) continue;
        if (m->name == "flops_fp16") {
          flops.fp16 += m->value;
        } else if (m->name == "flops_fp64") {
          flops.fp64 += m->value;
        } else {
          flops.fp32 += m->value;
        }
        source = found ? cost::combine(source, metricSource(m->source)) : metricSource(m->source);
        found = true;
      }
      if (found) return flops;
    }
    const KernelFacts* k = cat_.find(l.function_id);
    if (k && k->has_ptx) {
      source = cost::Source::kPtxEstimate;
      return k->flops_per_thread.scaled(static_cast<double>(l.grid.count() * l.block.count()));
    }
    if (const std::optional<FlopCounts> f = adv_.operatorFlops(op)) {
      source = cost::Source::kOperatorEstimate;
      return *f;
    }
    source = cost::Source::kUnknown;
    return {};
  }

  // A kernel's roofline time for its launch: its time when the trace has none.
  double rooflineNs(size_t op) const {
    cost::Source bs, fs;
    return cost::launchRooflineNs(kernelBytes(op, bs), kernelFlops(op, fs), shape(launch(op)), gpu_);
  }

  cost::LaunchShape shape(const core::Launch& l) const {
    return {shapeUnknown(l) ? 0 : l.grid.count(), l.block.count(), static_cast<int>(l.registers_per_thread),
            static_cast<double>(l.static_shared_bytes) + l.dynamic_shared_bytes};
  }

  // The buffers of one occurrence of a vertical chain: every use with its bytes, numbered by (allocation, offset)
  // in order of first use (the same numbering in every occurrence of a pattern), and the region each buffer is
  // written in (empty when only read).
  struct ChainBuffers {
    std::vector<cost::UseBytes> uses;
    std::vector<std::pair<core::Id, cost::Region>> written;  // by buffer number
  };
  ChainBuffers chainBuffers(const std::vector<size_t>& occ) const {
    ChainBuffers out;
    std::map<std::pair<core::Id, uint64_t>, int> numbers;
    for (size_t i = 0; i < occ.size(); ++i) {
      for (const BufferUse& u : g_.ops[occ[i]].uses) {
        const bool reads = readsMode(u.mode), writes = writesMode(u.mode);
        if (!reads && !writes) continue;
        auto [it, inserted] = numbers.try_emplace({u.allocation_id, u.offset}, static_cast<int>(numbers.size()));
        if (inserted) {
          const double at = static_cast<double>(u.offset);
          out.written.push_back({u.allocation_id, cost::Region{at, at}});
        }
        const UseEstimate r = useBytes(occ[i], u, /*reads=*/true);
        const UseEstimate w = useBytes(occ[i], u, /*reads=*/false);
        cost::UseBytes b;
        b.kernel = static_cast<int>(i);
        b.buffer = it->second;
        b.read_bytes = r.bytes;
        b.write_bytes = w.bytes;
        b.followed = r.followed && w.followed;
        b.source = reads && writes ? cost::combine(r.source, w.source) : (reads ? r.source : w.source);
        out.uses.push_back(b);
        cost::Region& region = out.written[static_cast<size_t>(it->second)].second;
        region.end = std::max(region.end, region.begin + w.bytes);
      }
    }
    return out;
  }

  // Whether any byte of `written` in `alloc` is read after op `after` before being overwritten. A later use
  // touches [offset, offset + its bytes) when those are exact (a dense range from the pointer is assumed), else
  // (for a read) everything from its offset to the allocation's end. Reaching the end of the trace: not read
  // (dead); running out of the scan window first: unknown (live).
  bool liveAfter(core::Id alloc, cost::Region written, size_t after) const {
    if (written.end <= written.begin) return false;
    cost::LivenessScan scan(written);
    size_t i = after + 1;
    for (; i < g_.ops.size() && i < after + kLivenessWindow; ++i) {
      for (const BufferUse& u : g_.ops[i].uses) {
        if (u.allocation_id != alloc) continue;
        const double at = static_cast<double>(u.offset);
        const UseEstimate r = useBytes(i, u, /*reads=*/true);
        const UseEstimate w = useBytes(i, u, /*reads=*/false);
        const bool reads = readsMode(u.mode), writes = writesMode(u.mode);
        const double extent = extentFrom(u);
        double begin = at;
        double read_end = r.exact ? at + r.bytes : (extent > 0 ? at + extent : HUGE_VAL);
        if (!r.exact && !u.wholeAllocation()) {
          // The footprint (loop accesses included) bounds the read: not beyond it to the allocation's end.
          begin = std::min(at, static_cast<double>(u.lo));
          read_end = static_cast<double>(u.hi);
        }
        const double end = reads ? std::max(read_end, at + w.bytes) : at + w.bytes;
        if (scan.see(cost::Region{begin, end}, reads, writes, w.exact)) return scan.live(/*end_of_trace=*/false);
      }
    }
    return scan.live(/*end_of_trace=*/i >= g_.ops.size());
  }

  // Per buffer number: read after some occurrence before being overwritten. The fused kernel, being one kernel
  // for every occurrence, must write such a buffer back to memory.
  std::vector<bool> liveBuffers(const Candidate& c) const {
    std::vector<bool> live;
    for (const auto& occ : c.occurrences) {
      const ChainBuffers bufs = chainBuffers(occ);
      live.resize(std::max(live.size(), bufs.written.size()), false);
      for (size_t b = 0; b < bufs.written.size(); ++b) {
        if (!live[b] && liveAfter(bufs.written[b].first, bufs.written[b].second, occ.back())) live[b] = true;
      }
    }
    return live;
  }

  // `block_level`: the consumer re-reads, after the block barrier, bytes its own producer block has just written
  // (L1/L2, not DRAM): a buffer whose uses have bounded footprints counts like a followed one (read once).
  CostEstimate occurrenceCost(CandidateKind kind, const std::vector<size_t>& occ, const std::vector<bool>& live,
                              FusionKind fusion = FusionKind::kThreadLocal) const {
    cost::OccurrenceInput in;
    in.kind = kind;
    for (size_t op : occ) {
      const GpuOp& o = g_.ops[op];
      cost::KernelCost k;
      k.bytes = kernelBytes(op, k.bytes_source);
      k.flops = kernelFlops(op, k.flops_source);
      k.times = {launch(op).api_start_ns, o.gpu_start_ns, o.gpu_end_ns};
      k.shape = shape(launch(op));
      in.kernels.push_back(k);
    }
    if (kind == CandidateKind::kVertical && g_.has_pointer_data) {
      in.uses = chainBuffers(occ).uses;
      in.live = live;
      if (fusion == FusionKind::kPrologue && occ.size() == 2) {
        // The fused kernel runs in the consumer's launch and redoes the producer's work at each load of its output.
        in.anchor = 1;
        in.recompute = 0;
        // Its bytes: the consumer's other traffic, the producer's inputs once per recomputation, and the producer's
        // own traffic again where the intermediate is read later (its threads still write it).
        double written = 0, read = 0, inputs = 0, other = 0;
        bool live_out = false;
        std::set<int> outputs;
        for (const cost::UseBytes& u : in.uses) {
          if (u.kernel != 0) continue;
          inputs += u.read_bytes;
          if (u.write_bytes <= 0) continue;
          written += u.write_bytes;
          outputs.insert(u.buffer);
          live_out = live_out || (u.buffer >= 0 && static_cast<size_t>(u.buffer) < live.size() &&
                                  live[static_cast<size_t>(u.buffer)]);
        }
        for (const cost::UseBytes& u : in.uses) {
          if (u.kernel != 1) continue;
          if (outputs.count(u.buffer)) {
            read += u.read_bytes;
          } else {
            other += u.read_bytes + u.write_bytes;
          }
        }
        in.recompute_times = written > 0 ? std::max(1.0, read / written) : 1.0;
        in.fused_bytes = other + in.recompute_times * inputs + (live_out ? inputs + written : 0);
      }
      if (fusion == FusionKind::kBlockLevel) {
        size_t i = 0;
        for (size_t k = 0; k < occ.size(); ++k) {
          for (const BufferUse& u : g_.ops[occ[k]].uses) {
            if (!readsMode(u.mode) && !writesMode(u.mode)) continue;
            if (i < in.uses.size() && !u.wholeAllocation() && !u.in_struct) in.uses[i].followed = true;
            ++i;
          }
        }
      }
    } else if (kind == CandidateKind::kVertical && !adv_.chainUses(occ, in.uses, in.live)) {
      in.uses.clear();  // operator tensors not known: only idle gaps are counted
    } else if (kind == CandidateKind::kVertical) {
      in.anchor = adv_.epilogueAnchor(occ);
    }
    return cost::occurrenceCost(in, gpu_);
  }

  // ---- legality ----

  locality::AtomValues atomValues(size_t op) const {
    const core::Launch& l = launch(op);
    const KernelFacts* k = cat_.find(l.function_id);
    return k ? launchValues(*k, l) : locality::AtomValues{};
  }

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
    bool block_level = false;              // proven for block-level fusion, not thread-local
    bool prologue = false;                 // judged as a prologue fusion (proven, or refused for its reason)
  };

  static bool validParam(const KernelFacts& k, int index) {
    return index >= 0 && static_cast<size_t>(index) < k.params.size();
  }

  // What a proof about one launch of a kernel needs beyond its shared buffers: every global access attributed to
  // a pointer parameter, no device-function calls, and every pointer it accesses resolved to an allocation (an
  // access through anything else could reach another kernel's buffer unseen).
  void checkVisibility(size_t op, Verdict& v) const {
    const KernelFacts* k = cat_.find(g_.ops[op].function_id);
    if (!k || !k->has_ptx) {
      v.weaken(Legality::kLikely, "no PTX for " + (k ? k->name : std::string("a kernel")) +
                                      (k && !k->ptx_problem.empty() ? " (" + k->ptx_problem + ")" : std::string()) +
                                      ": what it accesses beyond its pointer arguments cannot be ruled out");
      return;
    }
    for (const BufferUse& u : g_.ops[op].uses) {
      if (!u.in_struct) continue;
      v.weaken(Legality::kLikely, k->name + " receives pointers inside argument " + std::to_string(u.param_index) +
                                      ", a struct passed by value: its accesses through them are not analysed");
      break;
    }
    if (!k->unanalysed_memory.empty()) {
      v.weaken(Legality::kLikely, k->name + " has " + k->unanalysed_memory +
                                      ", whose memory accesses the analysis does not follow");
    }
    if (k->unattributed_accesses > 0) {
      v.weaken(Legality::kLikely, k->name + " accesses global memory at line " + std::to_string(k->unattributed_line) +
                                      " through an address that is not based on one of its pointer parameters (a "
                                      "module variable or a loaded pointer): its data flow cannot be proven");
    }
    if (!k->callees.empty() || k->indirect_calls) {
      v.weaken(Legality::kLikely, k->name + " calls " + (k->callees.empty() ? "a function indirectly" : k->callees.front()) +
                                      ": accesses inside device functions are not analysed");
    }
    std::set<int> resolved;
    for (const BufferUse& u : g_.ops[op].uses) resolved.insert(u.param_index);
    for (const core::PointerArg& p : launch(op).pointer_args) {
      if (p.allocation_id != core::kNoId) resolved.insert(p.param_index);
    }
    for (const ParamFacts& p : k->params) {
      if (p.source != AccessSource::kPtx || p.mode == core::AccessMode::kNone || resolved.count(p.index)) continue;
      // An optional pointer (null here) whose every access its guards rule out for these arguments (`if (bias)`):
      // nothing is accessed through it. The plan pins its value, since the guard reads it.
      if (const RelativeRange none = footprint(k, launch(op), p.index, launchValues(*k, launch(op)));
          none.bounded && none.lo == none.hi) {
        continue;
      }
      v.weaken(Legality::kLikely, k->name + " accesses memory through argument " + std::to_string(p.index) +
                                      ", which does not point into any allocation the trace recorded");
    }
  }

  // Thread-locality of every buffer two kernels of a vertical chain share with a write, for this occurrence's
  // argument values: no two different threads may touch a common byte with one of them writing.
  void checkPair(size_t a, size_t b, Verdict& v) const {
    const KernelFacts* ka = cat_.find(g_.ops[a].function_id);
    const KernelFacts* kb = cat_.find(g_.ops[b].function_id);
    const core::Launch& la = launch(a);
    const core::Launch& lb = launch(b);
    const locality::Shape shape{la.grid, la.block};
    std::optional<locality::AtomValues> va, vb;
    for (const BufferUse& ua : g_.ops[a].uses) {
      for (const BufferUse& ub : g_.ops[b].uses) {
        if (!ua.overlaps(ub)) continue;  // other tensors, or other bytes of one allocation
        if (!writesMode(ua.mode) && !writesMode(ub.mode)) continue;
        if (ua.in_struct || ub.in_struct) continue;  // checkVisibility said so
        const std::string buf = "allocation " + std::to_string(ua.allocation_id);
        // A kernel without PTX: checkVisibility, run on every kernel of the occurrence, already said so.
        if (!ka || !kb || !ka->has_ptx || !kb->has_ptx) continue;
        if (!(la.grid == lb.grid) || !(la.block == lb.block)) {
          v.weaken(Legality::kLikely, "the kernels sharing " + buf + " have different launch shapes");
          continue;
        }
        if ((ka->atomics > 0 && writesMode(ua.mode)) || (kb->atomics > 0 && writesMode(ub.mode))) {
          v.weaken(Legality::kBlocked, "atomics in " + (ka->atomics > 0 ? ka->name : kb->name) + " update " + buf +
                                           ": every producer thread must finish before any consumer reads");
          continue;
        }
        // A damaged trace can name a parameter the kernel does not have: nothing is known of that access.
        if (!validParam(*ka, ua.param_index) || !validParam(*kb, ub.param_index)) {
          const bool a_bad = !validParam(*ka, ua.param_index);
          v.weaken(Legality::kLikely, (a_bad ? ka->name : kb->name) + " uses " + buf + " through argument " +
                                          std::to_string(a_bad ? ua.param_index : ub.param_index) +
                                          ", which the kernel does not have (a damaged trace?): not proven");
          continue;
        }
        // Every access through the two parameters must have been followed to an address; one that was not could
        // touch any element of the buffer.
        const ParamFacts& pa = ka->params[static_cast<size_t>(ua.param_index)];
        const ParamFacts& pb = kb->params[static_cast<size_t>(ub.param_index)];
        if (!fullyFollowed(pa) || !fullyFollowed(pb)) {
          const KernelFacts* k = fullyFollowed(pa) ? kb : ka;
          // Typically an index that changes in a loop (a row or grid-stride loop): such a thread touches many
          // elements, so calling the pair likely thread-local would be a guess against the evidence.
          v.weaken(Legality::kBlocked, k->name + " accesses " + buf + " at an address the PTX analysis could not "
                                                 "follow (inside a loop, or not derived from its thread index): it "
                                                 "may touch elements other threads write, so thread locality cannot "
                                                 "be shown");
          continue;
        }
        bool affine = true, atomic = false;
        for (const auto* list : {&pa.accesses, &pb.accesses}) {
          for (const ParamMemoryAccess& m : *list) {
            affine = affine && m.offset_form.has_value();
            atomic = atomic || m.atomic;
          }
        }
        if (atomic) {
          v.weaken(Legality::kBlocked, "atomics on " + buf + ": every producer thread must finish before any consumer reads");
          continue;
        }
        if (!affine) {
          v.weaken(Legality::kLikely, "an address into " + buf + " is not affine in thread/block indices: not proven");
          continue;
        }
        if (!va) va = atomValues(a);
        if (!vb) vb = atomValues(b);
        // Each pair of accesses with a write among them, bound to this occurrence's values. One reason per
        // buffer: the first pair that crosses threads, else the first that could not be decided.
        std::string local_why, cross_why, cross_sentence, unknown_why;
        int crossing = 0, unknown = 0;
        for (const ParamMemoryAccess& ma : pa.accesses) {
          for (const ParamMemoryAccess& mb : pb.accesses) {
            if (!ma.is_write && !mb.is_write) continue;
            std::string why_a, why_b;
            const auto fa = locality::bind(*ma.offset_form, shape, *va, &why_a);
            const auto fb = locality::bind(*mb.offset_form, shape, *vb, &why_b);
            const std::string where = " (" + ka->name + " line " + std::to_string(ma.line) + ", " + kb->name +
                                      " line " + std::to_string(mb.line) + ")";
            if (!fa || !fb) {
              if (unknown++ == 0) unknown_why = "an offset into " + buf + where + " cannot be evaluated: " + (fa ? why_b : why_a);
              continue;
            }
            const locality::Access xa{*fa, static_cast<int64_t>(ua.offset), ma.bytes,
                                      locality::bindGuard(ma.guard_conditions, shape, *va)};
            const locality::Access xb{*fb, static_cast<int64_t>(ub.offset), mb.bytes,
                                      locality::bindGuard(mb.guard_conditions, shape, *vb)};
            const locality::PairVerdict pv = locality::checkPair(xa, xb, shape);
            if (pv.verdict == locality::Verdict::kThreadLocal) {
              if (local_why.empty()) local_why = pv.why;
            } else if (pv.verdict == locality::Verdict::kCrossThread) {
              if (crossing++ == 0) {
                cross_why = buf + " is accessed" + where + " " + pv.why;
                cross_sentence = crossingSentence(*ka, ma, *fa, ua, *kb, mb, *fb, ub, buf);
              }
            } else if (unknown++ == 0) {
              unknown_why = buf + " is accessed" + where + " " + pv.why;
            }
          }
        }
        auto more = [](int n) { return n > 1 ? " (and " + std::to_string(n - 1) + " more access pairs)" : std::string(); };
        if (crossing > 0) {
          // One readable sentence decides the verdict; the affine forms behind it are a reason for --verbose.
          v.weaken(Legality::kBlocked, cross_sentence);
          v.reasons.push_back(cross_why + more(crossing) + ": threads read neighbours' data (stencil-like)");
        } else if (unknown > 0) {
          v.weaken(Legality::kLikely, unknown_why + more(unknown) + ": thread locality not proven");
        } else {
          v.noteLocal(buf, local_why, ka->name, kb->name);
        }
      }
    }
    for (const KernelFacts* k : {ka, kb}) {
      if (k && k->grid_sync) v.weaken(Legality::kBlocked, k->name + " synchronizes the whole grid");
    }
  }

  bool hasPtx(size_t op) const {
    const KernelFacts* k = cat_.find(g_.ops[op].function_id);
    return k && k->has_ptx;
  }

  bool sameShape(size_t a, size_t b) const {
    const core::Launch& la = launch(a);
    const core::Launch& lb = launch(b);
    return la.grid == lb.grid && la.block == lb.block;
  }

  // Block-level fusion of a same-shape pair that is not thread-local (block_level.h). Only verdicts that rest on
  // thread locality are reconsidered: what checkVisibility found (no PTX, unfollowed pointers, calls) still holds.
  // `visible`: checkVisibility found nothing for either launch.
  void checkBlockLevel(const std::vector<size_t>& occ, bool visible, Verdict& v) const {
    const KernelFacts* kp = cat_.find(g_.ops[occ[0]].function_id);
    const KernelFacts* kc = cat_.find(g_.ops[occ[1]].function_id);
    if (!visible || !kp || !kc) return;
    for (const KernelFacts* k : {kp, kc}) {
      if (k->grid_sync) return;  // checkPair's verdict stands
    }
    const block_level::Result r = block_level::check(*kp, launch(occ[0]), *kc, launch(occ[1]));
    if (r.legality != Legality::kProven) {
      v.reasons.push_back(r.why);
      return;
    }
    Verdict proven;
    proven.block_level = true;
    proven.reasons.push_back(r.why);
    for (std::string& why : v.reasons) proven.reasons.push_back("thread-local fusion does not apply: " + why);
    v = std::move(proven);
  }

  // Prologue fusion of a same-shape pair that is neither thread-local nor block-level (prologue.h). As for
  // block-level, only verdicts that rest on thread locality are reconsidered.
  void checkSameShapePrologue(const std::vector<size_t>& occ, bool visible, Verdict& v) const {
    if (!visible) return;
    std::vector<epilogue::Part> parts;
    for (size_t op : occ) {
      const KernelFacts* k = cat_.find(g_.ops[op].function_id);
      if (!k) return;
      const core::Launch& l = launch(op);
      parts.push_back(epilogue::Part{k, locality::Shape{l.grid, l.block}, atomValues(op), g_.ops[op].uses});
    }
    const prologue::Result r = prologue::check(parts[0], parts[1]);
    if (r.legality != Legality::kProven) {
      v.reasons.push_back("prologue fusion does not apply: " + r.why);
      return;
    }
    Verdict proven;
    proven.prologue = true;
    proven.epilogue = EpilogueMap{r.producer_param, 1, r.consumer_param, r.consumer_offset, r.element_bytes, r.producer_lanes};
    proven.reasons.push_back(r.why);
    for (std::string& why : v.reasons) proven.reasons.push_back("thread-local fusion does not apply: " + why);
    v = std::move(proven);
  }

  // Element-remapped fusion of a producer (occ[0]) with element-wise consumers (the rest): see epilogue.h.
  void checkEpilogue(const std::vector<size_t>& occ, Verdict& v) const {
    std::vector<epilogue::Part> parts;
    for (size_t op : occ) {
      const KernelFacts* k = cat_.find(g_.ops[op].function_id);
      if (!k || !k->has_ptx) return;  // checkVisibility said so
      const core::Launch& l = launch(op);
      parts.push_back(epilogue::Part{k, locality::Shape{l.grid, l.block}, atomValues(op), g_.ops[op].uses});
    }
    const epilogue::Part producer = parts.front();
    parts.erase(parts.begin());
    const epilogue::Result r = epilogue::check(producer, parts);
    if (r.legality == Legality::kProven) {
      v.reasons.push_back(r.why);
      v.epilogue = EpilogueMap{r.producer_param, r.consumer + 1, r.consumer_param, r.consumer_offset, r.element_bytes};
      return;
    }
    // Not an epilogue: a pair may still fuse the other way round, the producer recomputed at the consumer's loads.
    if (parts.size() == 1) {
      const prologue::Result pr = prologue::check(producer, parts.front());
      if (pr.legality == Legality::kProven) {
        v.reasons.push_back(pr.why);
        v.reasons.push_back("epilogue fusion does not apply: " + r.why);
        v.epilogue = EpilogueMap{pr.producer_param, 1, pr.consumer_param, pr.consumer_offset, pr.element_bytes, pr.producer_lanes};
        v.prologue = true;
        return;
      }
      // The refusal that says more: the better verdict, and among equals the prologue's when the consumer is not
      // 1-D (no epilogue could take it).
      const locality::Shape& cs = parts.front().shape;
      const bool consumer_1d = cs.grid.y == 1 && cs.grid.z == 1 && cs.block.y == 1 && cs.block.z == 1;
      const bool prologue_first = static_cast<int>(pr.legality) < static_cast<int>(r.legality) ||
                                  (pr.legality == r.legality && !consumer_1d);
      v.weaken(prologue_first ? pr.legality : r.legality, prologue_first ? pr.why : r.why);
      v.prologue = prologue_first;  // the kind the deciding reason is about
      v.reasons.push_back((prologue_first ? "epilogue fusion does not apply: " + r.why
                                          : "prologue fusion does not apply: " + pr.why));
      return;
    }
    v.weaken(r.legality, r.why);
  }

  // Which access breaks thread locality, in words: "jacobi (line 65) reads allocation 1 768 bytes after where
  // jacobi (line 75) writes for the same thread: each thread touches data of a neighbouring thread (stencil-like)".
  static std::string crossingSentence(const KernelFacts& ka, const ParamMemoryAccess& ma, const locality::LinearForm& fa,
                                      const BufferUse& ua, const KernelFacts& kb, const ParamMemoryAccess& mb,
                                      const locality::LinearForm& fb, const BufferUse& ub, const std::string& buf) {
    auto verb = [](const ParamMemoryAccess& m) { return m.is_write ? (m.is_read ? "updates" : "writes") : "reads"; };
    const std::string a = ka.name + " (line " + std::to_string(ma.line) + ")";
    const std::string b = kb.name + " (line " + std::to_string(mb.line) + ")";
    if (fa.sameLinearPart(fb)) {
      const int64_t d = (static_cast<int64_t>(ub.offset) + fb.constant) - (static_cast<int64_t>(ua.offset) + fa.constant);
      if (d != 0) {
        const uint64_t mag = d < 0 ? 0 - static_cast<uint64_t>(d) : static_cast<uint64_t>(d);
        const std::string elements = mb.bytes > 0 && mag % mb.bytes == 0 && mag / mb.bytes > 1
                                         ? " (" + std::to_string(mag / mb.bytes) + " elements)"
                                         : mb.bytes > 0 && mag == mb.bytes ? " (one element)" : "";
        return b + " " + verb(mb) + " " + buf + " " + std::to_string(mag) + " bytes" + elements + " " +
               (d > 0 ? "after" : "before") +
               " where " + a + " " + verb(ma) + " for the same thread: each thread touches data of a neighbouring "
               "thread (stencil-like)";
      }
      return b + " " + verb(mb) + " the bytes of " + buf + " that " + a + " " + verb(ma) +
             " for the same thread, but wider than a thread's own: neighbouring threads share bytes";
    }
    return b + " " + verb(mb) + " " + buf + " at another function of the thread index than " + a + " " + verb(ma) +
           " (a transpose or a gather): some thread touches another thread's data";
  }

  // The values a legality verdict for this occurrence depends on, beyond the pattern's identity (functions, launch
  // shapes, which arguments share an allocation): every argument that influences the kernels' accesses
  // (KernelFacts::influence_params) by its value, and every pointer into an allocation by its offset there and by
  // which other pointers share that allocation. Occurrences with equal keys get equal verdicts, and a plan pins
  // them all. `unpinned` says why some influencing argument cannot be pinned (empty when all can).
  void proofArguments(const std::vector<size_t>& occ, std::vector<ProofArgument>& args, std::string* unpinned) const {
    args.clear();
    std::vector<core::Id> allocations;  // first-seen order over the tuple's pointers
    for (size_t i = 0; i < occ.size(); ++i) {
      const KernelFacts* k = cat_.find(g_.ops[occ[i]].function_id);
      const core::Launch& l = launch(occ[i]);
      auto resolved = [&](int p) -> const core::PointerArg* {
        for (const core::PointerArg& a : l.pointer_args) {
          if (a.param_index == p && a.field_offset < 0 && a.allocation_id != core::kNoId) return &a;
        }
        return nullptr;
      };
      std::vector<const core::PointerArg*> pointers;  // this kernel's, pinned after its scalars
      auto pin = [&](const core::PointerArg& a) {
        if (std::find(pointers.begin(), pointers.end(), &a) == pointers.end()) pointers.push_back(&a);
      };
      for (size_t n = 0; k && n < k->influence_params.size(); ++n) {
        const int p = k->influence_params[n];
        const bool absolute = std::binary_search(k->absolute_params.begin(), k->absolute_params.end(), p);
        if (const core::PointerArg* a = resolved(p)) {
          pin(*a);
          if (!absolute) continue;
          // Its value too, below: the kernel computes with the address itself. The proof then holds only at the
          // recorded addresses, which validation (fresh buffers) cannot reproduce: not a proof kfuse can act on.
          if (unpinned && unpinned->empty()) {
            *unpinned = k->name + " computes with the address in its argument " + std::to_string(p) +
                        " itself (its bits, or its distance to another pointer): the verdict holds only at the "
                        "recorded addresses, which a plan cannot validate elsewhere";
          }
        }
        std::optional<int64_t> v;
        if (static_cast<size_t>(p) < k->params.size()) v = pinnedValue(l, k->params[static_cast<size_t>(p)]);
        if (!v && unpinned && unpinned->empty()) {
          const int size = static_cast<size_t>(p) < k->params.size() ? k->params[static_cast<size_t>(p)].size : -1;
          *unpinned = k->name + " argument " + std::to_string(p) + " (" +
                      (size > 0 ? std::to_string(size) + " bytes" : std::string("of unknown size")) +
                      ") decides where its accesses fall, and kfuse pins only arguments of 1, 2, 4 or 8 bytes";
        }
        args.push_back(ProofArgument{static_cast<int>(i), p, ProofValue::kScalar, v.value_or(INT64_MIN)});
      }
      for (const BufferUse& u : g_.ops[occ[i]].uses) {
        if (u.in_struct) continue;  // not a parameter of its own: checkVisibility refuses proofs through it
        if (const core::PointerArg* a = resolved(u.param_index)) pin(*a);
      }
      std::sort(pointers.begin(), pointers.end(),
                [](const core::PointerArg* a, const core::PointerArg* b) { return a->param_index < b->param_index; });
      for (const core::PointerArg* a : pointers) {
        const auto at = std::find(allocations.begin(), allocations.end(), a->allocation_id);
        const int64_t cls = at - allocations.begin();
        if (at == allocations.end()) allocations.push_back(a->allocation_id);
        args.push_back(ProofArgument{static_cast<int>(i), a->param_index, ProofValue::kPointerOffset,
                                     static_cast<int64_t>(a->offset)});
        args.push_back(ProofArgument{static_cast<int>(i), a->param_index, ProofValue::kAllocation, cls});
      }
    }
  }

  // The value a plan pins for a scalar argument: its 1, 2, 4 or 8 bytes, sign-extended (the injector reads them
  // the same way); nullopt for other sizes and bytes the launch does not have.
  static std::optional<int64_t> pinnedValue(const core::Launch& l, const ParamFacts& p) {
    if (p.offset < 0 || (p.size != 1 && p.size != 2 && p.size != 4 && p.size != 8) ||
        static_cast<size_t>(p.offset) + static_cast<size_t>(p.size) > l.arg_bytes.size()) {
      return std::nullopt;
    }
    const uint8_t* b = l.arg_bytes.data() + p.offset;
    switch (p.size) {
      case 1: return static_cast<int8_t>(b[0]);
      case 2: {
        int16_t v;
        std::memcpy(&v, b, 2);
        return v;
      }
      case 4: {
        int32_t v;
        std::memcpy(&v, b, 4);
        return v;
      }
      default: {
        int64_t v;
        std::memcpy(&v, b, 8);
        return v;
      }
    }
  }

  // The values of a tuple that say something: scalar arguments, and pointer arguments not at their allocation's
  // start (the JSON report lists them all).
  static std::string argumentsText(const Candidate& c, const std::vector<ProofArgument>& args) {
    std::string s;
    for (const ProofArgument& a : args) {
      if (a.what == ProofValue::kAllocation || (a.what == ProofValue::kPointerOffset && a.value == 0)) continue;
      const bool offset = a.what == ProofValue::kPointerOffset;
      if (!s.empty()) s += ", ";
      s += c.names[static_cast<size_t>(a.kernel)] + (offset ? " arg " : " param") + std::to_string(a.param) +
           (offset ? " at +" + std::to_string(a.value) + " bytes" : "=" + std::to_string(a.value));
    }
    return s.empty() ? "pointers at their allocations' starts" : s;
  }

  // Legality of one occurrence (every pair of its kernels, for its argument values).
  Verdict judgeOccurrence(CandidateKind kind, const std::vector<size_t>& occ) const {
    Verdict v;
    if (!g_.has_pointer_data) return v;
    for (size_t op : occ) checkVisibility(op, v);
    const bool visible = v.legality == Legality::kProven;  // what the kinds tried after thread locality need
    if (kind == CandidateKind::kVertical) {
      // A producer whose launch shape differs from its consumers' can only be an epilogue fusion (or, for a pair,
      // a prologue); the consumers, which share one shape, must still be thread-local among themselves.
      const bool remapped = !sameShape(occ[0], occ[1]);
      for (size_t i = remapped ? 1 : 0; i < occ.size(); ++i) {
        for (size_t j = i + 1; j < occ.size(); ++j) checkPair(occ[i], occ[j], v);
      }
      if (remapped) checkEpilogue(occ, v);
      // Not thread-local: a producer and consumer of one launch shape may still fuse per block, with a barrier,
      // or with the producer recomputed at the consumer's loads (a stencil after an element-wise kernel).
      if (!remapped && occ.size() == 2 && v.legality != Legality::kProven) checkBlockLevel(occ, visible, v);
      if (!remapped && occ.size() == 2 && v.legality != Legality::kProven) checkSameShapePrologue(occ, visible, v);
    }
    for (const auto& [key, kernels] : v.local) {
      std::string names;
      for (size_t i = 0; i < kernels.size(); ++i) {
        names += (i == 0 ? "" : i + 1 == kernels.size() ? " and " : ", ") + kernels[i];
      }
      v.reasons.push_back(key.first + ": every access of " + names + " with a write among them is thread-local for "
                          "these arguments (" + key.second + "): each thread reads only what the same thread wrote");
    }
    return v;
  }

  // Judges a pattern on every distinct tuple of the values its proof reads. Occurrences whose tuples get different
  // verdicts become separate candidates (proven, likely, blocked), each saying what it was checked on.
  std::vector<Candidate> judge(Candidate c) const {
    static constexpr size_t kMaxTuples = 1024;
    const std::vector<size_t>& first = c.occurrences.front();
    Verdict common;
    if (c.kind == CandidateKind::kVertical) {
      const core::Launch& l = launch(first.front());
      if (sameShape(first[0], first[1])) {
        c.fusion = FusionKind::kThreadLocal;
        common.reasons.push_back("same launch configuration (grid " + dimText(l.grid) + ", block " + dimText(l.block) +
                                 ")");
      } else if (!g_.has_pointer_data) {
        c.fusion = FusionKind::kEpilogue;
        common.reasons.push_back("launch shapes differ (grid " + dimText(l.grid) + " then " +
                                 dimText(launch(first[1]).grid) + "): their kernel families allow a fusion that does "
                                 "not need equal shapes");
      } else {
        c.fusion = FusionKind::kEpilogue;
        const core::Launch& lc = launch(first[1]);
        common.reasons.push_back("the producer runs on grid " + dimText(l.grid) + ", block " + dimText(l.block) +
                                 ", its consumers on grid " + dimText(lc.grid) + ", block " + dimText(lc.block) +
                                 ": only an element-remapped fusion applies (an epilogue, consumers per element in "
                                 "the producer's launch" + std::string(first.size() == 2 ? "; or a prologue, the "
                                 "producer recomputed at the consumer's loads)" : ")"));
      }
      common.reasons.push_back("adjacent on stream " + std::to_string(g_.ops[first.front()].stream_id) +
                               " with no host synchronization between them");
      if (!g_.has_pointer_data) {
        const std::string flow = adv_.tensorEdgesSource() == "execution-trace" ? "data flow from the Execution Trace"
                                 : adv_.tensorEdgesSource().empty()            ? "data flow inferred from stream order"
                                                                               : "data flow inferred from operator shapes";
        common.weaken(Legality::kLikely, "no pointer arguments or PTX in this trace: " + flow +
                                             ", legality from the kernel families, thread locality not checked");
      }
      for (size_t i = 0; i + 1 < first.size(); ++i) {
        for (const Edge* e : g_.edgesBetween(first[i], first[i + 1])) {
          if (e->kind != EdgeKind::kStreamOrder) c.edges.push_back({e->kind, g_.describe(*e, t_, cat_)});
        }
      }
      for (auto& e : adv_.describeEdges(first)) c.edges.push_back(std::move(e));
    } else {
      c.fusion = FusionKind::kHorizontal;
      std::set<core::Id> streams;
      for (size_t op : first) streams.insert(g_.ops[op].stream_id);
      const std::string what = first.size() == 2 ? "" : std::to_string(first.size()) + " kernels ";
      common.reasons.push_back(streams.size() == 1 ? what + "adjacent on one stream with no data dependence between them"
                               : streams.size() == first.size()
                                   ? what + "on different streams with no event or synchronization ordering them"
                                   : what + "on " + std::to_string(streams.size()) + " streams, with no data "
                                            "dependence, event or synchronization ordering any two of them");
      common.reasons.push_back("together they fit in one wave on " + gpu_.short_name);
      if (!g_.has_pointer_data) {
        common.weaken(Legality::kLikely, "no pointer arguments in this trace: independence assumes the program has "
                                         "no unsynchronized cross-stream data race");
      }
    }
    // Work the trace cannot show may sit between these kernels: graph launches the hook backend could only count.
    for (const core::Stat& st : t_.stats) {
      if (st.name == core::statName(core::StatId::kGraphLaunchesNotRecorded) && st.value > 0) {
        common.weaken(Legality::kLikely, "the trace has " + std::to_string(st.value) +
                                             " CUDA graph launches whose kernels were not recorded (hook backend): one "
                                             "may run between these kernels (record with --backend cupti to see them)");
      }
    }

    // Without pointer arguments nothing here depends on argument values: the common verdict is the whole story.
    if (!g_.has_pointer_data) {
      c.legality = common.legality;
      c.verdict = common.decider();
      if (c.verdict.empty() && c.legality == Legality::kLikely) {
        c.verdict = "the trace has no pointer arguments: which buffers the kernels share is not known";
      }
      c.reasons = std::move(common.reasons);
      // Medium: the Execution Trace shows the data flowing between every consecutive pair, and the kernel families
      // allow the fusion; otherwise low.
      c.confidence = c.kind == CandidateKind::kVertical && adv_.confirmedByExecutionTrace(first)
                         ? Confidence::kMedium
                         : Confidence::kLow;
      return {std::move(c)};
    }

    // Distinct argument tuples, in order of first occurrence.
    struct Tuple {
      std::vector<ProofArgument> args;
      std::vector<size_t> occurrences;  // indices into c.occurrences
    };
    std::vector<Tuple> tuples;
    std::map<std::vector<int64_t>, size_t> index;
    std::vector<size_t> unchecked;
    std::vector<ProofArgument> args;
    std::vector<int64_t> key;
    std::string unpinned;
    for (size_t i = 0; i < c.occurrences.size(); ++i) {
      proofArguments(c.occurrences[i], args, &unpinned);
      key.clear();
      for (const ProofArgument& a : args) {
        key.insert(key.end(), {a.kernel * 4 + static_cast<int64_t>(a.what), a.param, a.value});
      }
      // The size of dynamic shared memory, for kernels whose accesses depend on it (the plan pins launch shapes).
      for (size_t op : c.occurrences[i]) {
        const KernelFacts* k = cat_.find(g_.ops[op].function_id);
        if (k && k->reads_dynamic_shared_size) key.insert(key.end(), {-1, -1, launch(op).dynamic_shared_bytes});
      }
      auto it = index.find(key);
      if (it == index.end()) {
        if (tuples.size() == kMaxTuples) {
          unchecked.push_back(i);
          continue;
        }
        it = index.emplace(key, tuples.size()).first;
        tuples.push_back(Tuple{args, {}});
      }
      tuples[it->second].occurrences.push_back(i);
    }

    // One part per legality, in the order proven, likely, blocked.
    struct Part {
      Verdict verdict;
      std::vector<size_t> occurrences;
      std::set<std::string> seen;
      LegalityCheck checked;
    };
    std::map<std::tuple<Legality, bool, bool>, Part> parts;
    std::optional<EpilogueMap> map;
    bool map_prologue = false;
    for (const Tuple& tuple : tuples) {
      Verdict v = judgeOccurrence(c.kind, c.occurrences[tuple.occurrences.front()]);
      if (!unpinned.empty()) v.weaken(Legality::kLikely, unpinned);
      if (v.legality == Legality::kProven && v.epilogue) {
        if (!map) {
          map = v.epilogue;
          map_prologue = v.prologue;
        }
        if (!(*map == *v.epilogue) || map_prologue != v.prologue) {
          v.weaken(Legality::kLikely, "these arguments put the consumers' elements elsewhere than the first proven "
                                      "occurrence's: one fused kernel cannot serve both");
        }
      }
      // Proven occurrences split by kind: a block-level proof yields another fused kernel than a thread-local one.
      Part& part = parts[{v.legality, v.block_level, v.prologue}];
      part.verdict.legality = v.legality;
      part.verdict.block_level = v.block_level;
      part.verdict.prologue = v.prologue;
      part.verdict.adoptDeciders(v);
      for (std::string& r : v.reasons) {
        if (part.seen.insert(r).second) part.verdict.reasons.push_back(std::move(r));
      }
      part.occurrences.insert(part.occurrences.end(), tuple.occurrences.begin(), tuple.occurrences.end());
      part.checked.occurrences_checked += tuple.occurrences.size();
      part.checked.argument_tuples++;
      if (part.checked.tuples.size() < LegalityCheck::kMaxListedTuples) part.checked.tuples.push_back(tuple.args);
    }
    if (!unchecked.empty()) {
      Part& part = parts[{Legality::kLikely, false, false}];
      part.verdict.weaken(Legality::kLikely, std::to_string(unchecked.size()) + " occurrences were not checked: their "
                                             "arguments form more than " + std::to_string(kMaxTuples) +
                                             " distinct tuples");
      part.occurrences.insert(part.occurrences.end(), unchecked.begin(), unchecked.end());
    }

    std::vector<Candidate> out;
    const size_t total = c.occurrences.size();
    std::vector<std::vector<size_t>> occurrences = std::move(c.occurrences);
    c.occurrences.clear();
    for (auto& [part_key, part] : parts) {
      Candidate p = c;
      if (part.verdict.block_level) p.fusion = FusionKind::kBlockLevel;
      if (part.verdict.prologue) p.fusion = FusionKind::kPrologue;
      std::sort(part.occurrences.begin(), part.occurrences.end());
      p.occurrences.reserve(part.occurrences.size());
      for (size_t i : part.occurrences) p.occurrences.push_back(std::move(occurrences[i]));
      Verdict v = common;
      v.lower(part.verdict.legality);
      v.adoptDeciders(part.verdict);
      for (std::string& r : part.verdict.reasons) v.reasons.push_back(std::move(r));
      const std::string which =
          part.checked.argument_tuples == 1 ? "one set" : std::to_string(part.checked.argument_tuples) + " sets";
      const size_t n = part.checked.occurrences_checked;
      const bool all = parts.size() == 1 && unchecked.empty();
      std::string checked = "legality checked on " +
                            (all && n == 1 ? std::string("its only occurrence")
                                           : (all ? "every one of its " : "") + std::to_string(n) + " occurrence" +
                                                 (n == 1 ? "" : "s")) +
                            " (" + which + " of the argument values the proof reads: " +
                            argumentsText(p, part.checked.tuples.empty() ? std::vector<ProofArgument>{}
                                                                         : part.checked.tuples.front()) +
                            (part.checked.argument_tuples > 1 ? "; ..." : "") + ")";
      if (parts.size() > 1 || !unchecked.empty()) {
        checked += "; the pattern's other " + std::to_string(total - p.occurrences.size()) +
                   " occurrences, with other argument values, are listed separately";
      }
      if (part.checked.argument_tuples > 0) v.reasons.push_back(std::move(checked));
      p.legality = v.legality;
      p.verdict = v.decider();
      p.reasons = std::move(v.reasons);
      if (p.legality == Legality::kProven && (p.fusion == FusionKind::kEpilogue || p.fusion == FusionKind::kPrologue)) {
        p.epilogue = map;
      }
      p.checked = std::move(part.checked);
      const bool have_ptx = std::all_of(p.function_ids.begin(), p.function_ids.end(), [&](core::Id f) {
        const KernelFacts* k = cat_.find(f);
        return k && k->has_ptx;
      });
      if (p.legality == Legality::kProven) {
        p.confidence = Confidence::kHigh;
      } else if (g_.has_pointer_data && have_ptx) {
        p.confidence = Confidence::kMedium;
      } else {
        p.confidence = Confidence::kLow;
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  // ---- search ----

  // Pattern identity of a group of ops: functions, launch shapes, and how buffers are shared among them.
  std::string patternKey(CandidateKind kind, const std::vector<size_t>& occ) const {
    std::string key = kind == CandidateKind::kVertical ? "V" : "H";
    std::map<core::Id, int> local;  // allocation -> first-seen index within the occurrence
    for (size_t op : occ) {
      const core::Launch& l = launch(op);
      // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, falsely) on `"literal" + std::string&&`.
      key.append("|").append(std::to_string(l.function_id)).append("@").append(dimText(l.grid));
      key.append("/").append(dimText(l.block));
      for (const BufferUse& u : g_.ops[op].uses) {
        auto [it, inserted] = local.try_emplace(u.allocation_id, static_cast<int>(local.size()));
        key.append(":").append(std::to_string(u.param_index)).append("=b").append(std::to_string(it->second));
      }
    }
    return key;
  }

  Candidate& group(std::map<std::string, size_t>& index, std::vector<Candidate>& out, CandidateKind kind,
                   const std::vector<size_t>& occ) {
    const std::string key = patternKey(kind, occ);
    auto [it, inserted] = index.try_emplace(key, out.size());
    if (inserted) {
      Candidate c;
      c.kind = kind;
      for (size_t op : occ) {
        const KernelFacts* k = cat_.find(g_.ops[op].function_id);
        c.function_ids.push_back(g_.ops[op].function_id);
        c.names.push_back(k ? k->name : "function " + std::to_string(g_.ops[op].function_id));
        c.mangled_names.push_back(k ? k->mangled_name : "");
      }
      out.push_back(std::move(c));
    }
    Candidate& c = out[it->second];
    c.occurrences.push_back(occ);
    return c;
  }

  void findVertical(std::vector<Candidate>& out, SearchStats& stats) {
    std::map<std::string, size_t> index;
    // Ops by stream, in issue order.
    std::map<core::Id, std::vector<size_t>> by_stream;
    for (size_t i = 0; i < g_.ops.size(); ++i) by_stream[g_.ops[i].stream_id].push_back(i);
    for (const auto& [stream, ops] : by_stream) {
      std::vector<size_t> run;
      auto flush = [&] {
        for (size_t s = 0; s + 1 < run.size(); s += opt_.max_chain_length) {
          std::vector<size_t> chunk(run.begin() + static_cast<std::ptrdiff_t>(s),
                                    run.begin() + static_cast<std::ptrdiff_t>(std::min(run.size(), s + opt_.max_chain_length)));
          if (chunk.size() >= 2) group(index, out, CandidateKind::kVertical, chunk);
        }
        run.clear();
      };
      for (size_t n = 0; n + 1 < ops.size(); ++n) {
        const size_t a = ops[n], b = ops[n + 1];
        if (g_.ops[a].kind != OpKind::kKernel || g_.ops[b].kind != OpKind::kKernel) {
          if (g_.ops[a].kind == OpKind::kKernel) ++stats.pairs_copy_between;
          flush();
          continue;
        }
        ++stats.adjacent_pairs;
        const core::Launch& la = launch(a);
        const core::Launch& lb = launch(b);
        bool linked = true;
        const bool same_shape = la.grid == lb.grid && la.block == lb.block;
        // Without pointer data, the kernel families and the operators' tensors decide; they may link kernels of
        // different launch shapes (an epilogue fusion does not need equal shapes) and refuse same-shape ones.
        const Advisor::LinkVerdict fam = g_.has_pointer_data ? Advisor::LinkVerdict{} : adv_.vertical(a, b);
        // With pointer data but no PTX for one of the kernels (a library's cubin: cuBLAS, PyTorch), the families
        // still refuse what is never fused (work feeding a GEMM, two GEMMs, a collective).
        const bool families_forbid_here =
            g_.has_pointer_data && (!hasPtx(a) || !hasPtx(b)) &&
            familyPairRule(adv_.kernelClass(a).family, adv_.kernelClass(b).family).never;
        if (fam.link == Advisor::Link::kFamiliesForbid || families_forbid_here) {
          ++stats.pairs_family_never;
          linked = false;
        } else if (fam.link == Advisor::Link::kNoDataFlow) {
          ++stats.pairs_no_data_flow;
          linked = false;
        } else if (fam.link == Advisor::Link::kSyncBetween) {
          ++stats.pairs_sync_between;
          linked = false;
        } else if (fam.link == Advisor::Link::kLink && g_.ops[a].host_sync_epoch == g_.ops[b].host_sync_epoch) {
          // linked
        } else if (shapeUnknown(la) || shapeUnknown(lb)) {
          ++stats.pairs_config_unknown;
          linked = false;
        } else if (!same_shape && !g_.has_pointer_data) {
          // Without pointer data there is no element map to check: shapes must agree.
          ++stats.pairs_config_differs;
          linked = false;
        } else if (g_.ops[a].host_sync_epoch != g_.ops[b].host_sync_epoch) {
          ++stats.pairs_sync_between;
          linked = false;
        } else if (g_.has_pointer_data) {
          bool raw = false;
          for (const Edge* e : g_.edgesBetween(a, b)) raw = raw || e->kind == EdgeKind::kRaw;
          if (!raw) {
            ++stats.pairs_no_data_flow;
            linked = false;
          }
        }
        if (!linked) {
          flush();
          continue;
        }
        // A change of launch shape starts an epilogue chain: `a` produces, `b` and the kernels of its shape after
        // it consume. (Without pointer data the kernel families chain across shapes: GEMM -> add -> norm.)
        if (!same_shape && g_.has_pointer_data) flush();
        if (run.empty()) run.push_back(a);
        run.push_back(b);
      }
      flush();
    }
  }

  // Whether `b` may join horizontal group `group` (kernels issued before it): independent of every member, in the
  // same host-sync epoch, and the group still fits in one wave.
  bool joinsGroup(const std::vector<size_t>& group, size_t b, SearchStats& stats) const {
    const core::Launch& lb = launch(b);
    // A collective communicates with other GPUs: never fused (kernel families).
    for (size_t k : {group.front(), b}) {
      if (adv_.kernelClass(k).family == KernelFamily::kCollective) {
        ++stats.pairs_family_never;
        return false;
      }
    }
    if (shapeUnknown(lb)) {
      ++stats.pairs_config_unknown;
      return false;
    }
    std::vector<cost::LaunchShape> shapes;
    for (size_t a : group) shapes.push_back(shape(launch(a)));
    shapes.push_back(shape(lb));
    if (cost::waves(shapes, gpu_) > 1.0) {
      ++stats.horizontal_not_small;
      return false;
    }
    for (size_t a : group) {
      const bool same_stream = g_.ops[a].stream_id == g_.ops[b].stream_id;
      // Without pointer data, kernels on one stream may depend on each other in ways the trace cannot show.
      if ((same_stream && !g_.has_pointer_data) || g_.ops[a].host_sync_epoch != g_.ops[b].host_sync_epoch) {
        ++stats.horizontal_dependent;
        return false;
      }
      bool dependent = false;
      for (const Edge* e : g_.edgesBetween(a, b)) dependent = dependent || e->kind != EdgeKind::kStreamOrder;
      if (!same_stream) {
        dependent = dependent || g_.reaches(a, b);
      } else {
        // On one stream every op orders the next: a copy or set between two members could carry data from one
        // to the other, so it ends the group.
        for (size_t x = a + 1; x < b && !dependent; ++x) {
          dependent = g_.ops[x].stream_id == g_.ops[a].stream_id && g_.ops[x].kind != OpKind::kKernel;
        }
      }
      if (dependent) {
        ++stats.horizontal_dependent;
        return false;
      }
    }
    return true;
  }

  // Groups of consecutive independent kernels that fit in one wave together (N-way, up to --max-group). Of each
  // maximal group, the cost model picks the prefix of at least two kernels with the largest predicted saving; the
  // rest starts the next group.
  void findHorizontal(std::vector<Candidate>& out, SearchStats& stats) {
    std::map<std::string, size_t> index;
    std::vector<size_t> kernels;
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      if (g_.ops[i].kind == OpKind::kKernel) kernels.push_back(i);
    }
    const size_t max_group = std::max<size_t>(2, opt_.max_group);
    size_t n = 0;
    while (n + 1 < kernels.size()) {
      std::vector<size_t> group{kernels[n]};
      if (shapeUnknown(launch(kernels[n]))) {
        ++n;
        continue;
      }
      ++stats.horizontal_pairs;
      for (size_t m = n + 1; m < kernels.size() && group.size() < max_group; ++m) {
        if (!joinsGroup(group, kernels[m], stats)) break;
        group.push_back(kernels[m]);
      }
      if (group.size() < 2) {
        ++n;
        continue;
      }
      size_t best = 2;
      double best_saving = -1;
      for (size_t len = 2; len <= group.size() && group.size() > 2; ++len) {
        const std::vector<size_t> prefix(group.begin(), group.begin() + static_cast<std::ptrdiff_t>(len));
        const double saving = occurrenceCost(CandidateKind::kHorizontal, prefix, {}).saving_ns;
        if (saving > best_saving) {
          best_saving = saving;
          best = len;
        }
      }
      group.resize(best);
      this->group(index, out, CandidateKind::kHorizontal, group);
      n += best;
    }
  }

  void cost(Candidate& c) const {
    std::vector<CostEstimate> per_occurrence;
    const std::vector<bool> live = c.kind == CandidateKind::kVertical ? liveBuffers(c) : std::vector<bool>{};
    for (const auto& occ : c.occurrences) {
      per_occurrence.push_back(occurrenceCost(c.kind, occ, live, c.fusion));
    }
    const cost::CandidateCost summary = cost::summarize(per_occurrence, c.legality == Legality::kBlocked);
    c.cost = summary.per_occurrence;
    c.total_saving_ns = summary.total_saving_ns;
  }

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
  bool shapes_may_be_unknown_ = false;
};

// Longest path through the graph, each op weighted by `weight_ns`: the ops whose time decides the end-to-end GPU
// time.
std::vector<char> criticalPath(const DependencyGraph& g, const std::vector<double>& weight_ns, int64_t& length_ns) {
  const size_t n = g.ops.size();
  std::vector<double> dist(n, 0);
  std::vector<long> pred(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const double w = weight_ns[i];
    double best = 0;
    for (size_t e : g.in_edges[i]) {
      if (dist[g.edges[e].from] > best) {
        best = dist[g.edges[e].from];
        pred[i] = static_cast<long>(g.edges[e].from);
      }
    }
    dist[i] = best + w;
  }
  std::vector<char> on(n, 0);
  length_ns = 0;
  if (n == 0) return on;
  long cur = static_cast<long>(std::max_element(dist.begin(), dist.end()) - dist.begin());
  length_ns = static_cast<int64_t>(dist[static_cast<size_t>(cur)]);
  while (cur >= 0) {
    on[static_cast<size_t>(cur)] = 1;
    cur = pred[static_cast<size_t>(cur)];
  }
  return on;
}

}  // namespace

namespace {

bool recordedOnEmulator(const core::Trace& t) { return !t.devices.empty() && core::isEmulatorDevice(t.devices.front()); }

// GPU times measured on kfuse's CPU emulator (`kfuse record --gpu-time` on the stand-in driver) time the
// emulation, not a GPU: a copy of the input without them, so costs fall back to roofline estimates.
std::optional<ImportResult> withoutEmulatorTimes(const ImportResult& input, int64_t& cleared) {
  cleared = 0;
  if (!recordedOnEmulator(input.trace)) return std::nullopt;
  ImportResult copy = input;
  auto clear = [&cleared](auto& records) {
    for (auto& r : records) {
      if (r.gpu_start_ns != core::kNoTime || r.gpu_end_ns != core::kNoTime) ++cleared;
      r.gpu_start_ns = r.gpu_end_ns = core::kNoTime;
    }
  };
  clear(copy.trace.launches);
  clear(copy.trace.memcpys);
  clear(copy.trace.memsets);
  if (cleared == 0) return std::nullopt;
  return copy;
}

// A launch can belong to one fusion only: two candidates conflict when an occurrence of one shares a launch with
// an occurrence of the other (a chain A -> B and a pair B + C over the same launch of B). Ranks, ascending.
void markConflicts(std::vector<Candidate>& candidates) {
  std::unordered_map<size_t, std::vector<size_t>> by_op;  // op index -> candidates using it, each once
  for (size_t i = 0; i < candidates.size(); ++i) {
    for (const auto& occurrence : candidates[i].occurrences) {
      for (size_t op : occurrence) {
        std::vector<size_t>& users = by_op[op];
        if (users.empty() || users.back() != i) users.push_back(i);
      }
    }
  }
  std::vector<std::set<int>> conflicts(candidates.size());
  for (const auto& [op, users] : by_op) {
    for (size_t a : users) {
      for (size_t b : users) {
        if (a != b) conflicts[a].insert(candidates[b].rank);
      }
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    candidates[i].conflicts_with.assign(conflicts[i].begin(), conflicts[i].end());
  }
}

// ---- the steps of analyze() ----

// Input problems that shape how far the numbers can be trusted: emulator times ignored, a metrics run's
// serialised timeline, tensor-core FLOPs the counters miss.
void noteInputProblems(const core::Trace& t, int64_t emulator_times, Report& r) {
  if (emulator_times > 0) {
    r.stats.push_back(core::makeStat(core::StatId::kEmulatorGpuTimesIgnored, emulator_times));
  }
  // A `kfuse record --metrics` run replays every kernel alone: its timeline is not that of a normal run.
  if (auto m = t.metadata.extra.find("metrics");
      m != t.metadata.extra.end() && m->second.find("replay") != std::string::npos) {
    r.stats.push_back(core::makeStat(core::StatId::kMetricsRunSerialised, 1));
  }
  int64_t tensor_launches = 0;
  for (const core::Metric& m : t.metrics) {
    tensor_launches += m.name == "tensor_instructions" && m.value > 0 ? 1 : 0;
  }
  if (tensor_launches > 0) {
    r.stats.push_back(core::makeStat(core::StatId::kTensorCoreFlopsNotCounted, tensor_launches));
  }
}

// The report's summary of the trace and its graph.
void summarizeTrace(const core::Trace& t, const KernelCatalog& catalog, const DependencyGraph& graph, Report& r) {
  r.cost_model_version = cost::kCostModelVersion;
  r.launches = static_cast<int64_t>(t.launches.size());
  r.kernels = static_cast<int64_t>(t.functions.size());
  r.kernels_with_ptx = catalog.kernelsWithPtx();
  r.has_pointer_data = graph.has_pointer_data;
  r.edges = graph.edges.size();
  for (const Edge& e : graph.edges) r.edges_by_kind[edgeKindName(e.kind)]++;
  for (const core::Launch& l : t.launches) {
    if (const int64_t d = l.gpuDurationNs(); d != core::kNoTime && d > 0) r.gpu_busy_ns += d;
  }
}

// The GPU to cost for: --gpu, else the trace's first device, else H100 SXM (said so, in stats and notices).
Status chooseGpu(const core::Trace& t, const AnalysisOptions& options, Report& r) {
  if (!options.gpu.empty()) {
    auto spec = core::findGpuSpec(options.gpu);
    if (!spec) return invalidArgument("unknown GPU '" + options.gpu + "'; `kfuse gpus` lists the known ones");
    r.gpu = *spec;
    r.gpu_source = "option";
  } else {
    std::optional<core::GpuSpec> spec;
    if (!t.devices.empty()) {
      const core::Device& d = t.devices.front();
      spec = core::findGpuSpec(d.name, core::ObservedDevice{d.sm_count, d.cc_major, d.cc_minor});
    }
    if (spec) {
      r.gpu = *spec;
      r.gpu_source = "trace";
      const core::Device& d = t.devices.front();
      if (core::gpuNameKey(d.name) == core::gpuNameKey(core::kAmdGenericDeviceName)) {
        r.notices.push_back("the trace names its GPU '" + d.name + "' (what ROCm reports for a GPU missing from its "
                            "name table); identified by its " + std::to_string(d.sm_count) + " compute units and GFX "
                            "IP " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + " as " +
                            spec->marketing_name + " (pass --gpu NAME if that is wrong)");
      }
    } else {
      r.gpu = *core::findGpuSpec("h100-sxm");
      r.gpu_source = "default";
      // A trace recorded on kfuse's own emulator has no GPU to cost for: expected, so only noted.
      const bool emulator = recordedOnEmulator(t);
      core::Stat s = core::makeStat(
          core::StatId::kGpuNotInSpecTable, 1,
          (t.devices.empty() ? std::string("the trace names no device")
           : emulator        ? std::string("recorded on kfuse's CPU emulator")
                             : "device '" + t.devices.front().name + "' is not in the spec table") +
              "; costs use h100-sxm (pass --gpu NAME)");
      if (emulator) s.severity = core::StatSeverity::kInfo;
      r.stats.push_back(std::move(s));
      if (!emulator && !t.devices.empty()) {
        r.notices.push_back("the trace's GPU '" + t.devices.front().name + "' is not in kfuse's spec table: the costs "
                            "below are for " + r.gpu.marketing_name + ", not for that GPU (pass --gpu NAME; `kfuse "
                            "gpus` lists the table)");
      }
    }
  }
  return {};
}

// Which ops lie on the critical path of the graph, weighted by GPU times, or in a trace without any (recorded on
// the emulator, or without GPU timestamps) by roofline estimates: kernels by their bytes and FLOPs, copies and sets
// by their bytes. Sets r.critical_path_ns, and r.gpu_busy_ns from the estimates when the trace has no times.
std::vector<char> markCriticalPath(const core::Trace& t, const DependencyGraph& graph, const Analysis& analysis,
                                   Report& r) {
  const bool no_gpu_times = r.gpu_busy_ns == 0;
  std::vector<double> weights(graph.ops.size(), 0);
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const GpuOp& o = graph.ops[i];
    if (!no_gpu_times) {
      weights[i] = analysis.durationNs(i);
    } else if (o.kind == OpKind::kKernel) {
      weights[i] = analysis.rooflineNs(i);
    } else {
      const double bytes = o.kind == OpKind::kMemcpy ? static_cast<double>(t.memcpys[o.record_index].bytes)
                                                     : static_cast<double>(t.memsets[o.record_index].bytes);
      weights[i] = cost::memoryNs(bytes, r.gpu);
    }
  }
  const std::vector<char> on_path = criticalPath(graph, weights, r.critical_path_ns);
  if (no_gpu_times) {
    // Shares are taken of the kernels' roofline estimates, and the report says so.
    double estimated = 0;
    for (size_t i = 0; i < graph.ops.size(); ++i) {
      if (graph.ops[i].kind == OpKind::kKernel) estimated += weights[i];
    }
    r.gpu_busy_ns = static_cast<int64_t>(estimated);
    r.gpu_busy_estimated = r.gpu_busy_ns > 0;
  }
  return on_path;
}

// Every pattern the search finds, judged (split by legality where argument tuples disagree), each with its id.
std::vector<Candidate> findCandidates(Analysis& analysis, SearchStats& stats) {
  std::vector<Candidate> candidates;
  for (Candidate& found : analysis.run(stats)) {
    const std::string key = analysis.patternKey(found.kind, found.occurrences.front());
    for (Candidate& part : analysis.judge(std::move(found))) {
      const std::string what = key + "|" + fusionKindName(part.fusion) + "|" + legalityName(part.legality);
      part.id = "k" + core::sha256Hex(reinterpret_cast<const uint8_t*>(what.data()), what.size()).substr(0, 10);
      candidates.push_back(std::move(part));
    }
  }
  return candidates;
}

// Costs each candidate, drops those predicted to save nothing (unless options.keep_no_gain; returns how many),
// ranks the rest, marks conflicts and adds the advice of each.
size_t costAndRank(std::vector<Candidate>& candidates, Analysis& analysis, const DependencyGraph& graph,
                   const KernelCatalog& catalog, Advisor& advisor, const std::vector<char>& on_path,
                   const AnalysisOptions& options, const Report& r) {
  for (Candidate& c : candidates) {
    analysis.cost(c);
    for (const auto& occ : c.occurrences) {
      std::vector<core::Id>& ids = c.occurrence_launches.emplace_back();
      for (size_t op : occ) ids.push_back(graph.ops[op].record_id);
    }
    size_t on = 0;
    for (const auto& occ : c.occurrences) {
      on += std::all_of(occ.begin(), occ.end(), [&](size_t op) { return on_path[op] != 0; }) ? 1 : 0;
    }
    c.on_critical_path = on * 2 >= c.occurrences.size();
    c.share_of_gpu_busy = r.gpu_busy_ns > 0 ? std::min(1.0, c.total_saving_ns / static_cast<double>(r.gpu_busy_ns)) : 0;
  }
  // A pattern predicted to save nothing is no recommendation: it is counted, not listed (blocked ones stay, with
  // their reasons, so the user sees why an obvious-looking fusion is not proposed).
  size_t no_gain = 0;
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                  [&](const Candidate& c) {
                                    const bool drop = !options.keep_no_gain && c.legality != Legality::kBlocked &&
                                                      c.total_saving_ns <= 0;
                                    no_gain += drop ? 1 : 0;
                                    return drop;
                                  }),
                   candidates.end());
  // Blocked last; then savings on the critical path; then total savings; then more occurrences.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    const bool ba = a.legality == Legality::kBlocked, bb = b.legality == Legality::kBlocked;
    if (ba != bb) return bb;
    if (a.on_critical_path != b.on_critical_path) return a.on_critical_path;
    if (a.total_saving_ns != b.total_saving_ns) return a.total_saving_ns > b.total_saving_ns;
    return a.occurrences.size() > b.occurrences.size();
  });
  for (size_t i = 0; i < candidates.size(); ++i) candidates[i].rank = static_cast<int>(i + 1);
  markConflicts(candidates);
  for (Candidate& c : candidates) {
    const bool have_ptx = std::all_of(c.function_ids.begin(), c.function_ids.end(), [&](core::Id f) {
      const KernelFacts* k = catalog.find(f);
      return k && k->has_ptx;
    });
    advisor.describe(c, graph.has_pointer_data, have_ptx);
  }
  return no_gain;
}

// The per-kernel table and the roofline points (kernels as measured, the top fused candidates as predicted).
void summarizeKernels(const DependencyGraph& graph, const KernelCatalog& catalog, const Analysis& analysis, Report& r) {
  // Roofline points: each kernel's achieved FLOP/s against its arithmetic intensity, where both are known.
  struct Acc {
    double bytes = 0, flops = 0, ns = 0;
    size_t launches = 0;
  };
  std::map<core::Id, Acc> per_function;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].kind != OpKind::kKernel) continue;
    cost::Source bs, fs;
    Acc& a = per_function[graph.ops[i].function_id];
    a.bytes += analysis.kernelBytes(i, bs);
    a.flops += analysis.kernelFlops(i, fs).total();
    a.ns += analysis.durationNs(i);
    a.launches++;
  }
  for (const auto& [fid, a] : per_function) {
    const KernelFacts* k = catalog.find(fid);
    KernelRow row{k ? k->name : "function " + std::to_string(fid), a.launches, a.ns, a.bytes, a.flops, 0};
    if (a.bytes > 0 && a.flops > 0 && a.ns > 0 && r.gpu.fp32_flops > 0) {
      const double roof = std::min(r.gpu.fp32_flops, a.flops / a.bytes * r.gpu.dram_bandwidth_bytes_per_s);
      row.roof_share = std::min(1.0, a.flops / (a.ns * 1e-9) / roof);
    } else if (a.bytes > 0 && a.ns > 0 && r.gpu.dram_bandwidth_bytes_per_s > 0) {
      row.roof_share = std::min(1.0, a.bytes / (a.ns * 1e-9) / r.gpu.dram_bandwidth_bytes_per_s);
    }
    r.kernel_table.push_back(std::move(row));
  }
  std::stable_sort(r.kernel_table.begin(), r.kernel_table.end(),
                   [](const KernelRow& x, const KernelRow& y) { return x.ns > y.ns; });
  for (const auto& [fid, a] : per_function) {
    if (a.bytes <= 0 || a.flops <= 0 || a.ns <= 0) continue;
    const KernelFacts* k = catalog.find(fid);
    r.roofline.push_back(RooflinePoint{k ? k->name : "function " + std::to_string(fid), a.flops / a.bytes,
                                       a.flops / (a.ns * 1e-9), false});
  }
  for (const Candidate& c : r.candidates) {
    if (c.legality == Legality::kBlocked || c.cost.bytes_after <= 0 || c.cost.flops <= 0 || c.cost.fused_ns <= 0) continue;
    if (c.rank > 5) break;
    r.roofline.push_back(RooflinePoint{"#" + std::to_string(c.rank) + " fused", c.cost.flops / c.cost.bytes_after,
                                       c.cost.flops / (c.cost.fused_ns * 1e-9), true});
  }
}

// When no candidate qualifies: what was looked at and why each kind of pair fell out.
void explainNone(const SearchStats& stats, size_t no_gain, Report& r) {
  r.why_none.push_back("looked at " + std::to_string(r.launches) + " launches of " + std::to_string(r.kernels) +
                       " kernels, " + std::to_string(stats.adjacent_pairs) + " adjacent kernel pairs on a stream and " +
                       std::to_string(stats.horizontal_pairs) + " consecutive kernel pairs across streams");
  if (stats.pairs_config_unknown) {
    r.why_none.push_back(std::to_string(stats.pairs_config_unknown) +
                         " kernel pairs have no recorded grid or block shape (the trace does not say)");
  }
  if (stats.pairs_config_differs) {
    r.why_none.push_back(std::to_string(stats.pairs_config_differs) +
                         " adjacent pairs differ in grid or block shape (vertical fusion needs the same shape)");
  }
  if (stats.pairs_no_data_flow) {
    r.why_none.push_back(std::to_string(stats.pairs_no_data_flow) +
                         " adjacent pairs share no data (the second does not read what the first wrote)");
  }
  if (stats.pairs_sync_between) {
    r.why_none.push_back(std::to_string(stats.pairs_sync_between) + " adjacent pairs have a host synchronization (or the second an event wait) between them");
  }
  if (stats.pairs_copy_between) {
    r.why_none.push_back(std::to_string(stats.pairs_copy_between) + " kernels are followed by a copy or memset on their stream");
  }
  if (stats.horizontal_not_small) {
    r.why_none.push_back(std::to_string(stats.horizontal_not_small) +
                         " consecutive pairs together need more than one wave on " + r.gpu.short_name +
                         " (horizontal fusion only pays for small kernels)");
  }
  if (stats.pairs_family_never) {
    r.why_none.push_back(std::to_string(stats.pairs_family_never) +
                         " pairs are of kernel families that are not fused (a collective, two GEMMs, work "
                         "before a GEMM, an attention kernel; docs/analyzer.md, \"Kernel families\")");
  }
  if (stats.horizontal_dependent) {
    r.why_none.push_back(std::to_string(stats.horizontal_dependent) +
                         " consecutive pairs are (or may be) dependent on each other");
  }
  if (no_gain) {
    r.why_none.push_back(std::to_string(no_gain) + " fusable patterns are predicted to save no time (no memory "
                         "traffic to save that the trace shows, and no launch latency between the kernels)");
  }
  size_t blocked = r.candidates.size();
  if (blocked) r.why_none.push_back(std::to_string(blocked) + " candidate patterns were found but are blocked (listed with reasons)");
}

}  // namespace

// The steps, in order: input problems, the GPU, the kernel catalog and the graph, operator context, the critical
// path, the search with its legality proofs, costs and ranks, the kernel table and roofline, and why nothing
// qualified when nothing did.
Expected<Report> analyze(const ImportResult& original, const std::string& input_path, const AnalysisOptions& options) {
  int64_t emulator_times = 0;
  const std::optional<ImportResult> without = withoutEmulatorTimes(original, emulator_times);
  const ImportResult& input = without ? *without : original;
  const core::Trace& t = input.trace;
  Report r;
  r.options = options;
  r.input_path = input_path;
  r.input_format = input.format;
  r.producer = t.metadata.producer;
  r.stats = t.stats;
  noteInputProblems(t, emulator_times, r);
  KFUSE_RETURN_IF_ERROR(chooseGpu(t, options, r));

  const KernelCatalog catalog = KernelCatalog::build(t);
  const DependencyGraph graph = DependencyGraph::build(t, catalog);
  // Operator context, kernel families and tensor data flow (imported traces; advice.h).
  Advisor advisor(input, graph, catalog);
  if (!options.execution_trace.empty()) {
    KFUSE_RETURN_IF_ERROR(advisor.joinExecutionTrace(options.execution_trace));
  } else if (!graph.has_pointer_data) {
    advisor.inferTensorFlow();
  }
  summarizeTrace(t, catalog, graph, r);

  Analysis analysis(input, catalog, graph, r.gpu, options, advisor);
  const std::vector<char> on_path = markCriticalPath(t, graph, analysis, r);
  SearchStats stats;
  std::vector<Candidate> candidates = findCandidates(analysis, stats);
  const size_t no_gain = costAndRank(candidates, analysis, graph, catalog, advisor, on_path, options, r);
  advisor.summarize(r);
  r.candidates = std::move(candidates);
  summarizeKernels(graph, catalog, analysis, r);
  if (std::none_of(r.candidates.begin(), r.candidates.end(),
                   [](const Candidate& c) { return c.legality != Legality::kBlocked; })) {
    explainNone(stats, no_gain, r);
  }
  return r;
}

}  // namespace kfuse::analyzer
