// Analysis: what the cost model is fed for a candidate (bytes, FLOPs, times, live buffers) and its cost.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "kfuse/core/cancel.h"
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
  return kernelBytes(op, source, estimateKernel(op));
}

double Analysis::kernelBytes(size_t op, cost::Source& source, const KernelEstimate& estimate) const {
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
  if (estimate.bytes > 0) {
    source = estimate.source;
    return estimate.bytes;
  }
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
  const bool loops =
      std::any_of(p.accesses.begin(), p.accesses.end(), [](const ParamMemoryAccess& a) { return a.loop_steps; });
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

const std::vector<Analysis::ParamTraffic>& Analysis::paramTraffic(size_t op) const {
  static const std::vector<ParamTraffic> kNone;
  const GpuOp& o = g_.ops[op];
  if (o.kind != OpKind::kKernel) return kNone;
  const KernelFacts* k = cat_.find(o.function_id);
  if (!k || !k->has_ptx) return kNone;
  if (traffic_of_op_.size() != g_.ops.size()) traffic_of_op_.assign(g_.ops.size(), nullptr);
  if (traffic_of_op_[op]) return *traffic_of_op_[op];
  const core::Launch& l = launch(op);
  std::string key(reinterpret_cast<const char*>(&k->function_id), sizeof k->function_id);
  for (const uint32_t v : {l.grid.x, l.grid.y, l.grid.z, l.block.x, l.block.y, l.block.z}) {
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  key.append(reinterpret_cast<const char*>(l.arg_bytes.data()), l.arg_bytes.size());
  if (auto it = traffic_cache_.find(key); it != traffic_cache_.end()) {
    traffic_of_op_[op] = &it->second;  // unordered_map keeps its elements where they are
    return it->second;
  }

  const locality::AtomValues values = launchValues(*k, l);
  std::optional<std::vector<ptx::AccessRange>> ranges;  // evaluated for the first loop access only
  const double threads = static_cast<double>(l.grid.count() * l.block.count());
  const double lanes = static_cast<double>(std::min<uint64_t>(std::max(1, gpu_.warp_size), l.block.count()));
  const double sector = std::max(1, gpu_.sector_bytes);
  const locality::Var lane_var = l.block.x > 1 ? locality::kTidX : l.block.y > 1 ? locality::kTidY : locality::kTidZ;
  std::vector<ParamTraffic> out(k->params.size());
  for (size_t i = 0; i < k->params.size(); ++i) {
    const ParamFacts& p = k->params[i];
    ParamTraffic& t = out[i];
    t.known = fullyFollowed(p);
    for (const ParamMemoryAccess& a : p.accesses) {
      if (!t.known) break;
      if (!a.offset_form || a.bytes == 0) {
        t.known = false;
        break;
      }
      int64_t steps = 1;
      if (a.loop_steps) {
        if (!ranges) ranges = launchRanges(*k, l);
        const std::optional<int64_t> e = iterationEstimate(*k, l, static_cast<int>(i), a, values, *ranges);
        t.known = e.has_value();
        steps = e.value_or(1);
      }
      std::string why;
      const locality::Shape shape{l.grid, l.block, std::max<int64_t>(1, steps)};
      const std::optional<locality::LinearForm> f =
          t.known ? locality::bind(*a.offset_form, shape, values, &why) : std::nullopt;
      if (!f && t.known && a.loop_steps) {
        // The steps of two loops (a remainder loop after an unrolled one): once per thread, coalesced.
        const double once = threads * std::ceil(static_cast<double>(a.bytes) / sector) * sector / lanes;
        t.l1_bytes += once;
        if (a.is_read) {
          t.l1_load_bytes += once;
          t.loaded_bytes += threads * a.bytes;
        }
        continue;
      }
      if (!f) {
        t.known = false;
        break;
      }
      const double stride = std::fabs(static_cast<double>(f->coef[lane_var]));
      const double width = a.bytes;
      const double own = std::ceil(width / sector) * sector;  // what one lane alone moves
      const bool strided = lanes > 1 && stride >= sector;
      const double request = lanes <= 1 ? own
                             : strided  ? lanes * own
                                        : std::ceil(((lanes - 1) * stride + width) / sector) * sector;
      // The threads its guard lets through, each conjunct taken as independent of the others: the share of the
      // launch's values of the conjunct's form inside its bounds.
      const locality::Domain domain = locality::bindGuard(a.guard_conditions, shape, values);
      double share = domain.never ? 0.0 : 1.0;
      for (const locality::Constraint& c : domain.constraints) {
        const auto span = locality::range(c.form, locality::Domain{}, shape);
        if (!span) continue;
        const double lo = std::max<double>(static_cast<double>(c.lo), static_cast<double>(span->first));
        const double hi = std::min<double>(static_cast<double>(c.hi), static_cast<double>(span->second));
        share *= hi < lo ? 0.0 : (hi - lo + 1) / (static_cast<double>(span->second) - span->first + 1);
      }
      const double executions = threads * share * static_cast<double>(std::max<int64_t>(1, steps));
      const double l1 = executions / lanes * request;
      t.l1_bytes += l1;
      if (a.is_read) {
        t.l1_load_bytes += l1;
        t.loaded_bytes += executions * width;
        if (strided) t.strided_load_l1_bytes += l1;
      }
    }
    if (!t.known) t = ParamTraffic{};
  }
  const std::vector<ParamTraffic>& stored = traffic_cache_.emplace(std::move(key), std::move(out)).first->second;
  traffic_of_op_[op] = &stored;
  return stored;
}

void Analysis::fillTraffic(size_t op, const BufferUse& u, const UseEstimate& r, const UseEstimate& w,
                           cost::UseBytes& b) const {
  const std::vector<ParamTraffic>& traffic = paramTraffic(op);
  if (!u.in_struct && u.param_index >= 0 && static_cast<size_t>(u.param_index) < traffic.size() &&
      traffic[static_cast<size_t>(u.param_index)].known) {
    const ParamTraffic& t = traffic[static_cast<size_t>(u.param_index)];
    b.l1_bytes = t.l1_bytes;
    b.l1_load_bytes = t.l1_load_bytes;
    b.loaded_bytes = t.loaded_bytes;
    b.strided_load_l1_bytes = t.strided_load_l1_bytes;
    return;
  }
  if (g_.ops[op].kind != OpKind::kKernel) return;  // a copy or set: the copy engines, not the SMs
  b.l1_bytes = r.bytes + w.bytes;
  b.l1_load_bytes = r.bytes;
  b.loaded_bytes = r.bytes;
  b.strided_load_l1_bytes = 0;
}

Analysis::KernelEstimate Analysis::estimateKernel(size_t op) const {
  KernelEstimate e;
  bool any = false;
  for (const BufferUse& u : g_.ops[op].uses) {
    if (!readsMode(u.mode) && !writesMode(u.mode)) continue;
    const UseEstimate r = useBytes(op, u, /*reads=*/true), w = useBytes(op, u, /*reads=*/false);
    for (const UseEstimate* x : {&r, &w}) {
      if (x->bytes <= 0) continue;
      e.source = any ? cost::combine(e.source, x->source) : x->source;
      any = true;
    }
    cost::UseBytes b;
    fillTraffic(op, u, r, w, b);
    e.bytes += r.bytes + w.bytes;
    e.l1_bytes += b.l1_bytes;
  }
  return e;
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
      fillTraffic(occ[i], u, r, w, b);
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
    if (core::cancelRequested()) break;  // analyze() returns cancelled after ranking
    const ChainBuffers bufs = chainBuffers(occ);
    live.resize(std::max(live.size(), bufs.written.size()), false);
    for (size_t b = 0; b < bufs.written.size(); ++b) {
      if (!live[b] && liveAfter(bufs.written[b].first, bufs.written[b].second, occ.back())) live[b] = true;
    }
  }
  return live;
}

bool Analysis::loopsMerge(const std::vector<size_t>& occ) const {
  std::string steps;
  std::map<core::Id, uint64_t> pointer_in;  // allocation -> the one pointer the chain passes into it
  struct Shared {
    std::set<std::string> forms;  // offset forms of every access, step counts unnamed
    std::set<uint32_t> widths;
    int kernels = 0, last = -1;
    bool written = false;
  };
  std::map<core::Id, Shared> buffers;
  // An offset form with its step counts' names ("iter:%r10@12", one per kernel) replaced by "k".
  auto unnamedSteps = [](const std::string& form) {
    std::string out;
    const std::string prefix = ptx::kIterationPrefix;
    for (size_t i = 0; i < form.size();) {
      if (form.compare(i, prefix.size(), prefix) != 0) {
        out += form[i++];
        continue;
      }
      out += "k";
      while (i < form.size() && form[i] != ' ' && form[i] != '*') ++i;
    }
    return out;
  };
  for (size_t at = 0; at < occ.size(); ++at) {
    const GpuOp& o = g_.ops[occ[at]];
    const KernelFacts* k = o.kind == OpKind::kKernel ? cat_.find(o.function_id) : nullptr;
    if (!k || k->loop_steps.empty()) return false;
    // The steps with each parameter replaced by this launch's argument.
    const locality::AtomValues values = launchValues(*k, launch(occ[at]));
    std::string bound;
    for (size_t i = 0; i < k->loop_steps.size();) {
      const size_t p = k->loop_steps.find("param#", i);
      bound += k->loop_steps.substr(i, p == std::string::npos ? std::string::npos : p - i);
      if (p == std::string::npos) break;
      size_t end = p + 6;
      while (end < k->loop_steps.size() && std::isdigit(static_cast<unsigned char>(k->loop_steps[end]))) ++end;
      auto v = values.find("param" + k->loop_steps.substr(p + 6, end - p - 6));
      if (v == values.end()) return false;
      bound += "=" + std::to_string(v->second);
      i = end;
    }
    if (at == 0) steps = bound;
    if (bound != steps) return false;
    for (const BufferUse& u : o.uses) {
      if (u.in_struct || u.param_index < 0 || static_cast<size_t>(u.param_index) >= k->params.size()) return false;
      auto [it, added] = pointer_in.emplace(u.allocation_id, u.offset);
      if (!added && it->second != u.offset) return false;
      Shared& b = buffers[u.allocation_id];
      if (b.last != static_cast<int>(at)) ++b.kernels;
      b.last = static_cast<int>(at);
      for (const ParamMemoryAccess& a : k->params[static_cast<size_t>(u.param_index)].accesses) {
        if (!a.affine) return false;
        b.forms.insert(unnamedSteps(a.offset));
        b.widths.insert(a.bytes);
        b.written = b.written || a.is_write;
      }
    }
  }
  for (const auto& [alloc, b] : buffers) {
    if (b.kernels > 1 && b.written && (b.forms.size() != 1 || b.widths.size() != 1)) return false;
  }
  return !occ.empty();
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
    const KernelEstimate estimate = estimateKernel(op);
    k.bytes = kernelBytes(op, k.bytes_source, estimate);
    k.flops = kernelFlops(op, k.flops_source);
    k.times = {launch(op).api_start_ns, o.gpu_start_ns, o.gpu_end_ns};
    k.shape = launchResources(launch(op));
    k.stream = o.stream_id == core::kNoId ? -1 : o.stream_id;
    k.l1_bytes = estimate.l1_bytes;
    // The emulator counts every global load and store a kernel ran: at least that much goes through the L1.
    if (k.bytes_source == cost::Source::kEmulated) k.l1_bytes = std::max(k.l1_bytes, k.bytes);
    in.kernels.push_back(k);
  }
  if (kind == CandidateKind::kVertical && g_.has_pointer_data) {
    in.uses = chainBuffers(occ).uses;
    in.live = live;
    if (fusion == FusionKind::kPrologue && occ.size() == 2) {
      // The fused kernel runs in the consumer's launch and redoes the producer's work at each load of its output.
      in.anchor = 1;
      in.recompute = 0;
      // How often it recomputes: the consumer's loads of the intermediate (every execution, loops counted) over
      // the bytes the producer wrote. Its bytes: the consumer's other traffic, the producer's inputs (once when
      // they stay in L2 between recomputations, else once per recomputation), and the producer's own traffic again
      // where the intermediate is read later (its threads still write it). Its requests: each consumer load of the
      // intermediate becomes loads of the producer's inputs in the same pattern, and the producer's threads still
      // run; loads a thread per row makes (uncoalesced) to recompute miss the L1, which the consumer's own rows
      // fill: those go to L2.
      double written = 0, read = 0, loaded = 0, inputs = 0, other = 0;
      double other_l1 = 0, intermediate_l1 = 0, strided_l1 = 0, producer_l1 = 0;
      bool live_out = false;
      std::set<int> outputs;
      for (const cost::UseBytes& u : in.uses) {
        if (u.kernel != 0) continue;
        inputs += u.read_bytes;
        producer_l1 += u.l1_bytes;
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
          loaded += u.loaded_bytes;
          intermediate_l1 += u.l1_load_bytes;
          strided_l1 += u.strided_load_l1_bytes;
        } else {
          other += u.read_bytes + u.write_bytes;
          other_l1 += u.l1_bytes;
        }
      }
      const double per_byte = written > 0 ? inputs / written : 0;  // producer input bytes per intermediate byte
      in.recompute_times = written > 0 ? std::max(1.0, std::max(read, loaded) / written) : 1.0;
      const bool inputs_stay = inputs + other + written <= static_cast<double>(gpu_.l2_bytes);
      in.fused_bytes = other + (inputs_stay ? 1.0 : in.recompute_times) * inputs + (live_out ? inputs + written : 0);
      in.fused_l1_bytes = other_l1 + intermediate_l1 * per_byte + producer_l1;
      in.fused_l2_bytes = strided_l1 * per_byte;
    }
    if (fusion == FusionKind::kEpilogue || fusion == FusionKind::kPrologue) {
      // A grid-stride element-wise part (the consumers of an epilogue, the producer of a prologue, and the producer
      // of an epilogue launched as its element view: epilogue.producer_grid) runs as its element view in the fused
      // kernel (legality/grid_stride.h): each element's accesses once, like a kernel with one element per thread,
      // whose uses the PTX analysis follows.
      for (cost::UseBytes& u : in.uses) {
        const bool element_side = fusion == FusionKind::kEpilogue || u.kernel == 0;
        if (!element_side || u.kernel < 0 || static_cast<size_t>(u.kernel) >= occ.size()) continue;
        const GpuOp& o = g_.ops[occ[static_cast<size_t>(u.kernel)]];
        const KernelFacts* k = o.kind == OpKind::kKernel ? cat_.find(o.function_id) : nullptr;
        if (k && k->element_view) u.followed = true;
      }
    }
    if (fusion == FusionKind::kThreadLocal && loopsMerge(occ)) {
      // One merged loop: a later kernel reads an earlier one's element from a register, in the same iteration.
      for (cost::UseBytes& u : in.uses) u.followed = true;
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
  std::vector<int64_t> times;  // a graph's nodes run once per replay
  const std::vector<bool> live = c.kind == CandidateKind::kVertical ? liveBuffers(c) : std::vector<bool>{};
  for (const auto& occ : c.occurrences) {
    if (core::cancelRequested()) break;
    per_occurrence.push_back(occurrenceCost(c.kind, occ, live, c.fusion));
    times.push_back(g_.ops[occ.front()].replays);
  }
  const cost::CandidateCost summary = cost::summarize(per_occurrence, c.legality == Legality::kBlocked, times);
  c.cost = summary.per_occurrence;
  c.total_saving_ns = summary.total_saving_ns;
}

}  // namespace kfuse::analyzer
