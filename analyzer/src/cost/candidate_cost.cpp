// Analysis: what the cost model is fed for a candidate (bytes, FLOPs, times, live buffers) and its cost.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "pattern_analysis.h"

namespace kfuse::analyzer {

double Analysis::durationNs(size_t op) const {
  const GpuOp& o = g_.ops[op];
  return o.gpu_start_ns == core::kNoTime || o.gpu_end_ns == core::kNoTime
             ? 0.0
             : static_cast<double>(core::spanNs(o.gpu_start_ns, o.gpu_end_ns));
}

cost::Source Analysis::metricSource(core::MetricSource s) {
  switch (s) {
    case core::MetricSource::kMeasured: return cost::Source::kMeasured;
    case core::MetricSource::kEmulated: return cost::Source::kEmulated;
    case core::MetricSource::kEstimated: return cost::Source::kEstimated;
  }
  return cost::Source::kEstimated;
}

// DRAM bytes a kernel moves: measured/emulated metrics, else an estimate; `source` says which.
double Analysis::kernelBytes(size_t op, cost::Source& source) const {
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

// PTX access widths x threads, capped by the allocation's extent, when the PTX analysis followed every access
// through the parameter; without PTX, the extent; with PTX whose accesses were not all followed, the extent,
// marked not followed. Copies and sets: their size.
Analysis::UseEstimate Analysis::useBytes(size_t op, const BufferUse& u, bool reads) const {
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
  // An access in a loop runs an unknown number of times per thread: the extent, as for one not followed.
  const bool loops = std::any_of(p.accesses.begin(), p.accesses.end(), [](const ParamMemoryAccess& a) {
    return a.offset_form && countsLoopSteps(*a.offset_form);
  });
  if (!fullyFollowed(p) || loops) return {by_extent.bytes, by_extent.source, /*followed=*/false, /*exact=*/false};
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
// from the use's offset to its end; 0 when the allocation is unknown. A footprint is a sound over-approximation
// of the addresses and may run past the allocation's end (a loose bound, or a launch whose guard allows more
// elements than the buffer holds): no byte beyond the allocation is counted.
double Analysis::extentFrom(const BufferUse& u) const {
  const auto a = allocs_.find(u.allocation_id);
  const bool known = a != allocs_.end() && a->second->size > 0;
  if (!u.wholeAllocation() && u.hi >= u.lo && u.hi != UINT64_MAX) {
    const double footprint = static_cast<double>(u.hi - u.lo);
    if (!known) return footprint;
    const double left = a->second->size > u.lo ? static_cast<double>(a->second->size - u.lo) : 0.0;
    return std::min(footprint, left);
  }
  if (known && a->second->size > u.offset) return static_cast<double>(a->second->size - u.offset);
  return 0;
}

// FLOPs by precision: the flops_fp16/32/64 metrics (any other "flops*" metric counts as FP32), else the PTX
// count per thread x threads.
FlopCounts Analysis::kernelFlops(size_t op, cost::Source& source) const {
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
double Analysis::rooflineNs(size_t op) const {
  cost::Source bs, fs;
  return cost::launchRooflineNs(kernelBytes(op, bs), kernelFlops(op, fs), launchResources(launch(op)), gpu_);
}

cost::LaunchResources Analysis::launchResources(const core::Launch& l) const {
  return {shapeUnknown(l) ? 0 : l.grid.count(), l.block.count(), static_cast<int>(l.registers_per_thread),
          static_cast<double>(l.static_shared_bytes) + l.dynamic_shared_bytes};
}

Analysis::ChainBuffers Analysis::chainBuffers(const std::vector<size_t>& occ) const {
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
bool Analysis::liveAfter(core::Id alloc, cost::Region written, size_t after) const {
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
std::vector<bool> Analysis::liveBuffers(const Candidate& c) const {
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
CostEstimate Analysis::occurrenceCost(CandidateKind kind, const std::vector<size_t>& occ, const std::vector<bool>& live,
                                      FusionKind fusion) const {
  cost::OccurrenceInput in;
  in.kind = kind;
  for (size_t op : occ) {
    const GpuOp& o = g_.ops[op];
    cost::KernelCost k;
    k.bytes = kernelBytes(op, k.bytes_source);
    k.flops = kernelFlops(op, k.flops_source);
    k.times = {launch(op).api_start_ns, o.gpu_start_ns, o.gpu_end_ns};
    k.shape = launchResources(launch(op));
    k.stream = o.stream_id == core::kNoId ? -1 : o.stream_id;
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

void Analysis::cost(Candidate& c) const {
  std::vector<CostEstimate> per_occurrence;
  const std::vector<bool> live = c.kind == CandidateKind::kVertical ? liveBuffers(c) : std::vector<bool>{};
  for (const auto& occ : c.occurrences) {
    per_occurrence.push_back(occurrenceCost(c.kind, occ, live, c.fusion));
  }
  const cost::CandidateCost summary = cost::summarize(per_occurrence, c.legality == Legality::kBlocked);
  c.cost = summary.per_occurrence;
  c.total_saving_ns = summary.total_saving_ns;
}

}  // namespace kfuse::analyzer
