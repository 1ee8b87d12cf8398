// Advice for imported traces: the glue between operator context, kernel families, tensor flow and candidates.
#include "advice/advice.h"
#include "report/text_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "advice/remedies.h"

namespace kfuse::analyzer {

namespace {

// How far past a chain the shape-based liveness check looks on the chain's stream.
constexpr size_t kInferredLivenessWindow = 64;
// An idle gap up to this long, before a kernel launched only after the GPU ran dry, counts as launch-bound.
constexpr double kLaunchBoundGapNs = 1e6;
// How far past a chain the Execution Trace liveness check looks.
constexpr size_t kEtLivenessWindow = 4096;

// A tensor's identity for shape-based matching: its dtype and element count, hashed (FNV-1a).
uint64_t shapeKey(const TensorShape& s) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : s.dtype) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  // numel() is a double (shapes multiply beyond 2^64 in a hostile trace): its bits are hashed, never converted.
  const double n = s.numel();
  uint64_t bits = 0;
  std::memcpy(&bits, &n, sizeof bits);
  return (h ^ bits) * 1099511628211ull;
}

int fusionStrength(FamilyFusion k) {
  switch (k) {
    case FamilyFusion::kEpilogue: return 4;
    case FamilyFusion::kPrologue: return 3;
    case FamilyFusion::kReductionEpilogue: return 2;
    case FamilyFusion::kPointwise: return 1;
    case FamilyFusion::kNone: return 0;
  }
  return 0;
}

// Per CPU operator, its tensors: many kernels share one operator, and patterns repeat.
class TensorCache {
 public:
  void reset(const std::vector<CpuOp>& ops) {
    base_ = ops.empty() ? nullptr : ops.data();
    slots_.clear();
    slots_.resize(ops.size());
    others_.clear();
  }
  const OpTensors& get(const CpuOp* op) {
    if (base_ && op >= base_ && op < base_ + slots_.size()) {
      std::unique_ptr<OpTensors>& slot = slots_[static_cast<size_t>(op - base_)];
      if (!slot) slot = std::make_unique<OpTensors>(operatorTensors(*op));
      return *slot;
    }
    auto it = others_.find(op);
    if (it == others_.end()) it = others_.emplace(op, operatorTensors(*op)).first;
    return it->second;
  }

 private:
  const CpuOp* base_ = nullptr;
  std::vector<std::unique_ptr<OpTensors>> slots_;  // by position in the ImportResult's cpu_ops
  std::unordered_map<const CpuOp*, OpTensors> others_;
};

TensorCache& tensorCache() {
  thread_local TensorCache cache;
  return cache;
}

}  // namespace

Advisor::Advisor(const ImportResult& input, const DependencyGraph& graph, const KernelCatalog& catalog)
    : in_(input), g_(graph), cat_(catalog), ctx_(OpContextTable::build(input)) {
  tensorCache().reset(input.cpu_ops);
  for (const auto& [id, k] : cat_.all()) classes_.emplace(id, classifyKernel(k.name));
  if (ctx_.empty()) return;
  std::unordered_map<const CpuOp*, uint32_t> per_op;
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    if (const OpContext* c = opContext(i); c && c->op) per_op[c->op]++;
  }
  kernels_per_op_.assign(g_.ops.size(), 0);
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    if (const OpContext* c = opContext(i); c && c->op) kernels_per_op_[i] = per_op[c->op];
  }
}

const KernelClass& Advisor::kernelClass(size_t op) const {
  static const KernelClass kCopyClass{KernelFamily::kCopy, "", false};
  static const KernelClass kUnknownClass{};
  if (g_.ops[op].kind != OpKind::kKernel) return kCopyClass;
  auto it = classes_.find(g_.ops[op].function_id);
  return it == classes_.end() ? kUnknownClass : it->second;
}

const std::vector<size_t>& Advisor::edgesFrom(size_t op) const {
  static const std::vector<size_t> kNone;
  return op < edges_out_.size() ? edges_out_[op] : kNone;
}

void Advisor::addEdge(const TensorEdge& e) {
  if (edges_out_.empty()) edges_out_.resize(g_.ops.size());
  edges_out_[e.from].push_back(edges_.size());
  edges_.push_back(e);
}

const OpContext* Advisor::opContext(size_t op) const {
  if (ctx_.empty()) return nullptr;
  return ctx_.find(g_.ops[op].kind, g_.ops[op].record_id);
}

bool Advisor::in_graph(size_t op) const {
  return g_.ops[op].kind == OpKind::kKernel && in_.launch_graph_ids.count(g_.ops[op].record_id) > 0;
}

Status Advisor::joinExecutionTrace(const std::string& path) {
  KFUSE_ASSIGN_OR_RETURN(ExecutionTrace et, readExecutionTrace(path));
  et_uses_.assign(g_.ops.size(), {});
  size_t joined = 0, with_op = 0;
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    const OpContext* c = opContext(i);
    if (!c || !c->op) continue;
    ++with_op;
    const EtNode* n = findEtNode(et, *c->op);
    if (!n) continue;
    ++joined;
    for (const EtTensor& t : n->reads) {
      if (t.device.rfind("cuda", 0) != 0) continue;
      et_uses_[i].push_back(Use{t.storage, t.bytes(), false});
    }
    for (const EtTensor& t : n->writes) {
      if (t.device.rfind("cuda", 0) != 0) continue;
      et_uses_[i].push_back(Use{t.storage, t.bytes(), true});
    }
  }
  if (with_op > 0 && joined == 0) {
    return invalidArgument(path +
                           ": no operator of the trace is in this Execution Trace (neither its `Record "
                           "function id` nor its `External id` names an ET node of the same operator): "
                           "was it recorded in the same run?");
  }
  // RAW / WAR / WAW per storage, in issue order. Kernels of one operator are not ordered against each other.
  struct State {
    long writer = -1;
    std::vector<size_t> readers;
  };
  std::unordered_map<int64_t, State> state;
  std::set<std::tuple<size_t, size_t, int, int64_t>> seen;
  auto sameOp = [&](size_t a, size_t b) {
    const OpContext* ca = opContext(a);
    const OpContext* cb = opContext(b);
    return ca && cb && ca->op == cb->op;
  };
  auto add = [&](size_t from, size_t to, EdgeKind kind, const Use& u) {
    if (from == to || sameOp(from, to)) return;
    if (!seen.insert({from, to, static_cast<int>(kind), u.storage}).second) return;
    addEdge(TensorEdge{from, to, kind, u.storage, u.bytes, false});
  };
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    for (const Use& u : et_uses_[i]) {
      if (u.write) continue;
      State& s = state[u.storage];
      if (s.writer >= 0) add(static_cast<size_t>(s.writer), i, EdgeKind::kRaw, u);
    }
    for (const Use& u : et_uses_[i]) {
      if (!u.write) continue;
      State& s = state[u.storage];
      for (size_t r : s.readers) add(r, i, EdgeKind::kWar, u);
      if (s.writer >= 0) add(static_cast<size_t>(s.writer), i, EdgeKind::kWaw, u);
      s.writer = static_cast<long>(i);
      s.readers.clear();
    }
    for (const Use& u : et_uses_[i]) {
      if (u.write) continue;
      bool also_written = false;
      for (const Use& w : et_uses_[i]) also_written = also_written || (w.write && w.storage == u.storage);
      if (!also_written) state[u.storage].readers.push_back(i);
    }
  }
  flow_source_ = "execution-trace";
  return Status::okStatus();
}

void Advisor::inferTensorFlow() {
  if (!flow_source_.empty() || ctx_.empty()) return;
  std::map<core::Id, std::unordered_map<uint64_t, size_t>> producers;  // per stream: shape key -> latest op
  size_t inferred = 0;
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    const OpContext* c = opContext(i);
    if (!c || !c->op) continue;
    const OpTensors& t = tensorCache().get(c->op);
    auto& prod = producers[g_.ops[i].stream_id];
    std::set<size_t> from;
    for (size_t k = 0; k < t.inputs.size(); ++k) {
      auto it = prod.find(shapeKey(t.inputs[k]));
      if (it == prod.end()) continue;
      const OpContext* pc = opContext(it->second);
      if (pc && pc->op == c->op) continue;
      if (from.insert(it->second).second) {
        addEdge(TensorEdge{it->second, i, EdgeKind::kRaw, 0, t.inputs[k].bytes(), true});
        ++inferred;
      }
    }
    if (t.output_known) prod[shapeKey(t.output)] = i;
  }
  if (inferred > 0) flow_source_ = "inferred-from-shapes";
}

Advisor::LinkVerdict Advisor::vertical(size_t a, size_t b) const {
  LinkVerdict v;
  v.rule = familyPairRule(kernelClass(a).family, kernelClass(b).family);
  if (v.rule.never) {
    v.link = Link::kFamiliesForbid;
    return v;
  }
  // The second waits for another stream's event: the gap between them is that wait, not launch latency, and the
  // fused kernel would have to wait before the first one's work.
  for (size_t e : g_.in_edges[b]) {
    if (g_.edges[e].kind == EdgeKind::kEventSync) {
      v.link = Link::kSyncBetween;
      return v;
    }
  }
  // Idle for more than a millisecond between two kernels of one stream: something the trace does not show (a wait
  // on another stream, a host synchronisation it lacks) separated them.
  if (g_.ops[a].gpu_end_ns != core::kNoTime && g_.ops[b].gpu_start_ns != core::kNoTime &&
      static_cast<double>(core::spanNs(g_.ops[a].gpu_end_ns, g_.ops[b].gpu_start_ns)) > kLaunchBoundGapNs) {
    v.link = Link::kSyncBetween;
    return v;
  }
  if (!flow_source_.empty()) {
    bool raw = false;
    for (size_t e : edgesFrom(a)) raw = raw || (edges_[e].to == b && edges_[e].kind == EdgeKind::kRaw);
    const OpContext* ca = opContext(a);
    const OpContext* cb = opContext(b);
    const bool both_known = ca && ca->op && cb && cb->op;
    if (!raw && (flow_source_ == "execution-trace" || both_known)) {
      v.link = Link::kNoDataFlow;
      return v;
    }
  }
  v.link = v.rule.kind != FamilyFusion::kNone ? Link::kLink : Link::kNoOpinion;
  return v;
}

std::optional<double> Advisor::operatorBytes(size_t op) const {
  const OpContext* c = opContext(op);
  if (!c || !c->op) return std::nullopt;
  const OpTensors& t = tensorCache().get(c->op);
  const double bytes = t.read_bytes + t.write_bytes;
  if (bytes <= 0) return std::nullopt;
  return bytes / std::max<uint32_t>(1, kernelsOfOperator(op));
}

std::optional<FlopCounts> Advisor::operatorFlops(size_t op) const {
  const OpContext* c = opContext(op);
  if (!c || !c->op) return std::nullopt;
  const OpTensors& t = tensorCache().get(c->op);
  if (t.flops.total() <= 0) return std::nullopt;
  return t.flops.scaled(1.0 / std::max<uint32_t>(1, kernelsOfOperator(op)));
}

bool Advisor::chainUses(const std::vector<size_t>& occ, std::vector<cost::UseBytes>& uses,
                        std::vector<bool>& live) const {
  uses.clear();
  live.clear();
  if (occ.empty()) return false;
  for (size_t op : occ) {
    const OpContext* c = opContext(op);
    if (!c || !c->op || kernelsOfOperator(op) != 1) return false;
  }
  const bool et = flow_source_ == "execution-trace";
  if (et) {
    std::map<int64_t, int> number;
    std::vector<int64_t> storages;
    for (size_t i = 0; i < occ.size(); ++i) {
      if (et_uses_[occ[i]].empty()) return false;
      std::map<int64_t, cost::UseBytes> per;
      for (const Use& u : et_uses_[occ[i]]) {
        auto [it, inserted] = number.try_emplace(u.storage, static_cast<int>(number.size()));
        if (inserted) storages.push_back(u.storage);
        cost::UseBytes& b = per[u.storage];
        b.kernel = static_cast<int>(i);
        b.buffer = it->second;
        (u.write ? b.write_bytes : b.read_bytes) = std::max(u.write ? b.write_bytes : b.read_bytes, u.bytes);
        b.source = cost::Source::kOperatorEstimate;
      }
      for (auto& [s, b] : per) uses.push_back(b);
    }
    live.assign(number.size(), false);
    const size_t last = occ.back();
    for (size_t b = 0; b < storages.size(); ++b) {
      // Read after the chain before being overwritten? The end of the trace: no; the window running out: unknown,
      // taken as yes.
      bool decided = false;
      size_t i = last + 1;
      for (; i < g_.ops.size() && i <= last + kEtLivenessWindow && !decided; ++i) {
        for (const Use& u : et_uses_[i]) {
          if (u.storage != storages[b] || decided) continue;
          live[b] = !u.write;
          decided = true;
        }
      }
      if (!decided) live[b] = i < g_.ops.size();
    }
    return true;
  }
  // Shapes: a chain kernel's input with the dtype and size of an earlier chain kernel's output is that tensor.
  std::unordered_map<uint64_t, int> produced;
  std::vector<uint64_t> written_keys;  // per buffer number, the shape key of what was written (0: read only)
  int buffers = 0;
  for (size_t i = 0; i < occ.size(); ++i) {
    const OpTensors& t = tensorCache().get(opContext(occ[i])->op);
    if (t.inputs.empty() || !t.output_known) return false;
    std::map<int, cost::UseBytes> per;
    for (size_t k = 0; k < t.inputs.size(); ++k) {
      auto it = produced.find(shapeKey(t.inputs[k]));
      const int b = it != produced.end() ? it->second : buffers++;
      if (static_cast<size_t>(b) >= written_keys.size()) written_keys.resize(static_cast<size_t>(b) + 1);
      cost::UseBytes& u = per[b];
      u.kernel = static_cast<int>(i);
      u.buffer = b;
      u.read_bytes += t.input_reads[k];
      u.source = cost::Source::kOperatorEstimate;
    }
    const int out = buffers++;
    written_keys.resize(static_cast<size_t>(out) + 1);
    written_keys[static_cast<size_t>(out)] = shapeKey(t.output);
    cost::UseBytes& w = per[out];
    w.kernel = static_cast<int>(i);
    w.buffer = out;
    w.write_bytes = t.write_bytes;
    w.source = cost::Source::kOperatorEstimate;
    produced[shapeKey(t.output)] = out;
    for (auto& [b, u] : per) uses.push_back(u);
  }
  // Liveness of what the chain wrote: the last kernel's output is the result; an intermediate is taken as read
  // later when an operator among the next ones on the stream has an input of its dtype and size.
  live.assign(static_cast<size_t>(buffers), false);
  const core::Id stream = g_.ops[occ.back()].stream_id;
  std::unordered_set<uint64_t> later_inputs;
  size_t seen = 0;
  for (size_t i = occ.back() + 1; i < g_.ops.size() && seen < kInferredLivenessWindow; ++i) {
    if (g_.ops[i].stream_id != stream) continue;
    ++seen;
    const OpContext* c = opContext(i);
    if (!c || !c->op) continue;
    for (const TensorShape& s : tensorCache().get(c->op).inputs) later_inputs.insert(shapeKey(s));
  }
  for (size_t b = 0; b < written_keys.size(); ++b) {
    if (written_keys[b] == 0) continue;
    live[b] = later_inputs.count(written_keys[b]) > 0;
  }
  // The final output is what the chain computes.
  for (const cost::UseBytes& u : uses) {
    if (u.kernel + 1 == static_cast<int>(occ.size()) && u.write_bytes > 0) live[static_cast<size_t>(u.buffer)] = true;
  }
  return true;
}

int Advisor::epilogueAnchor(const std::vector<size_t>& occ) const {
  for (size_t i = 0; i + 1 < occ.size(); ++i) {
    if (familyPairRule(kernelClass(occ[i]).family, kernelClass(occ[i + 1]).family).kind == FamilyFusion::kEpilogue) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool Advisor::confirmedByExecutionTrace(const std::vector<size_t>& occ) const {
  if (flow_source_ != "execution-trace" || occ.size() < 2) return false;
  for (size_t i = 0; i + 1 < occ.size(); ++i) {
    bool raw = false;
    for (size_t e : edgesFrom(occ[i])) raw = raw || (edges_[e].to == occ[i + 1] && edges_[e].kind == EdgeKind::kRaw);
    if (!raw) return false;
  }
  return true;
}

std::vector<std::pair<EdgeKind, std::string>> Advisor::describeEdges(const std::vector<size_t>& occ) const {
  std::vector<std::pair<EdgeKind, std::string>> out;
  std::set<size_t> members(occ.begin(), occ.end());
  for (size_t a : occ) {
    for (size_t e : edgesFrom(a)) {
      const TensorEdge& t = edges_[e];
      if (!members.count(t.to)) continue;
      auto name = [&](size_t op) {
        const OpContext* c = opContext(op);
        return c && c->op ? c->op->name : std::string("kernel");
      };
      std::string text =
          name(t.from) + " -> " + name(t.to) + ": " +
          (t.inferred ? "the second's input has the dtype and size of the first's output (" + fmt("%.0f", t.bytes) +
                            " bytes; inferred from operator shapes, no "
                            "Execution Trace)"
                      : std::string(edgeKindName(t.kind)) + " on tensor storage " + std::to_string(t.storage) + " (" +
                            fmt("%.0f", t.bytes) + " bytes, from the Execution Trace)");
      out.push_back({t.kind, std::move(text)});
    }
  }
  return out;
}

void Advisor::describe(Candidate& c, bool has_pointer_data, bool have_ptx) const {
  if (c.occurrences.empty()) return;
  const std::vector<size_t>& first = c.occurrences.front();
  c.members.clear();
  std::vector<KernelFamily> families;
  std::vector<std::string> ops;
  for (size_t i = 0; i < first.size(); ++i) {
    const size_t op = first[i];
    MemberContext m;
    const KernelClass& k = kernelClass(op);
    m.family = kernelFamilyName(k.family);
    m.library = std::string(k.library);
    const OpContext* ctx = opContext(op);
    if (ctx && ctx->op) {
      m.op = ctx->op->name;
      m.top_op = ctx->top_op ? ctx->top_op->name : std::string();
      m.label = operatorLabel(*ctx->op);
      // An operator that launched several kernels: say which one this is.
      if (kernelsOfOperator(op) > 1 && i < c.names.size()) m.label += " [" + shortKernelName(c.names[i], 32) + "]";
    } else {
      m.label = shortKernelName(i < c.names.size() ? c.names[i] : std::string(), 50);
    }
    if (ctx && ctx->module >= 0) m.module = ctx_.modulePath(ctx->module);
    if (ctx && ctx->annotation >= 0) m.annotation = ctx_.annotation(ctx->annotation);
    families.push_back(k.family);
    ops.push_back(m.op);
    c.members.push_back(std::move(m));
  }
  FamilyFusion fusion = FamilyFusion::kNone;
  if (c.kind == CandidateKind::kVertical) {
    for (size_t i = 0; i + 1 < first.size(); ++i) {
      const PairRule r = familyPairRule(kernelClass(first[i]).family, kernelClass(first[i + 1]).family);
      if (fusionStrength(r.kind) > fusionStrength(fusion)) fusion = r.kind;
      if (r.kind != FamilyFusion::kNone) c.reasons.push_back("kernel families: " + r.why);
    }
  }
  c.fusion_kind = fusion == FamilyFusion::kNone ? std::string() : familyFusionName(fusion);

  // Occurrences per module instance.
  std::vector<std::string> order;
  std::map<std::string, size_t> counts;
  for (const auto& occ : c.occurrences) {
    std::vector<std::string_view> paths;
    for (size_t op : occ) {
      const OpContext* ctx = opContext(op);
      paths.push_back(ctx && ctx->module >= 0 ? std::string_view(ctx_.modulePath(ctx->module)) : std::string_view());
    }
    const std::string common = commonModulePath(paths);
    if (counts[common]++ == 0) order.push_back(common);
  }
  c.modules.clear();
  if (order.size() == 1 && order.front().empty()) order.clear();  // no module known: nothing to list
  for (const std::string& m : order) c.modules.push_back(ModuleOccurrences{m, counts[m]});
  c.module_pattern = order.empty() ? std::string() : modulePattern(order.front());
  for (const std::string& m : order) {
    if (modulePattern(m) != c.module_pattern) {
      c.module_pattern = commonModulePath(std::vector<std::string_view>{c.module_pattern, modulePattern(m)});
    }
  }

  if (has_pointer_data) {
    c.data_flow = "pointer-arguments";
  } else {
    bool et = false, inferred = false;
    std::set<size_t> members(first.begin(), first.end());
    for (size_t a : first) {
      for (size_t e : edgesFrom(a)) {
        if (!members.count(edges_[e].to)) continue;
        (edges_[e].inferred ? inferred : et) = true;
      }
    }
    c.data_flow = et ? "execution-trace" : inferred ? "inferred-from-shapes" : "adjacency";
  }
  // Replays of a graph the trace recorded node by node (kfuse's collector), or graph launches an imported trace names.
  c.in_cuda_graph = c.inGraphs() || std::all_of(first.begin(), first.end(), [&](size_t op) { return in_graph(op); });

  RemedyInput ri;
  ri.kind = c.kind;
  ri.fusion = fusion;
  ri.families = families;
  ri.ops = ops;
  const std::string& top = c.modules.empty() ? std::string() : c.modules.front().module;
  // Name the module the user would wrap: the innermost two components of the common path.
  if (!top.empty()) {
    size_t cut = top.rfind('.');
    if (cut != std::string::npos) cut = top.rfind('.', cut - 1);
    ri.module = cut == std::string::npos ? top : top.substr(cut + 1);
  }
  ri.kfuse_trace_with_ptx = have_ptx;
  ri.proven = c.legality == Legality::kProven;
  ri.in_cuda_graph = c.in_cuda_graph;
  ri.graph_nodes = c.inGraphs();
  ri.rank = c.rank;
  ri.id = c.id;
  c.remedies = remediesFor(ri);
}

void Advisor::summarize(Report& r) const {
  r.gpu_records = ctx_.records();
  r.records_with_operator = ctx_.linked();
  r.records_with_module = ctx_.with_module();
  r.tensor_edges = edges_.size();
  r.tensor_edges_source = flow_source_;

  // Launch-bound: idle gaps between consecutive kernels (by GPU start, all streams) where the next launch was
  // issued only after the GPU had run out of work. Gaps inside one graph replay are the graph's own.
  std::vector<size_t> kernels;
  for (size_t i = 0; i < g_.ops.size(); ++i) {
    if (g_.ops[i].kind == OpKind::kKernel && g_.ops[i].gpu_start_ns != core::kNoTime &&
        g_.ops[i].gpu_end_ns != core::kNoTime) {
      kernels.push_back(i);
    }
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [&](size_t a, size_t b) { return g_.ops[a].gpu_start_ns < g_.ops[b].gpu_start_ns; });
  size_t graphed = 0;
  std::set<int64_t> replays;
  for (size_t k : kernels) {
    if (in_graph(k)) {
      ++graphed;
      replays.insert(in_.launch_graph_ids.at(g_.ops[k].record_id));
    }
  }
  if (kernels.size() >= 10) {
    double idle = 0, busy = 0;
    int64_t end = g_.ops[kernels.front()].gpu_start_ns;
    size_t host_bound_gaps = 0, long_gap_count = 0;
    double long_gaps = 0;
    for (size_t n = 0; n < kernels.size(); ++n) {
      const GpuOp& o = g_.ops[kernels[n]];
      if (n > 0 && o.gpu_start_ns > end) {
        const core::Launch& l = in_.trace.launches[o.record_index];
        const bool same_replay =
            in_graph(kernels[n]) && in_graph(kernels[n - 1]) &&
            in_.launch_graph_ids.at(o.record_id) == in_.launch_graph_ids.at(g_.ops[kernels[n - 1]].record_id);
        const double gap = static_cast<double>(core::spanNs(end, o.gpu_start_ns));
        if (!same_replay && l.api_start_ns != core::kNoTime && l.api_start_ns >= end) {
          // Launch overhead and Python between operators is what a graph removes; a longer gap is host work
          // (data loading, logging, a synchronisation) that stays.
          if (gap <= kLaunchBoundGapNs) {
            idle += gap;
            ++host_bound_gaps;
          } else {
            long_gaps += gap;
            ++long_gap_count;
          }
        }
      }
      // Busy time: the union of the kernels' spans.
      const int64_t from = std::max(o.gpu_start_ns, end);
      if (o.gpu_end_ns > from) busy += static_cast<double>(core::spanNs(from, o.gpu_end_ns));
      end = std::max(end, o.gpu_end_ns);
    }
    const double window = busy + idle;  // the GPU's time between kernels, longer host gaps left out
    const size_t ungraphed = kernels.size() - graphed;
    if (window > 0 && idle / window >= 0.3 && ungraphed >= 10) {
      // Where: the outermost module most kernels run in.
      std::map<std::string, size_t> roots;
      for (size_t k : kernels) {
        const OpContext* c = opContext(k);
        if (!c || c->module < 0) continue;
        const std::string& p = ctx_.modulePath(c->module);
        roots[p.substr(0, p.find('.'))]++;
      }
      std::string where;
      size_t best = 0;
      for (const auto& [m, n] : roots) {
        if (n > best) {
          best = n;
          where = m;
        }
      }
      Advice a;
      a.kind = "cuda-graph";
      a.where = where;
      a.idle_ns = idle;
      a.window_ns = window;
      a.launches = kernels.size();
      a.text = "launch-bound: the GPU idled " + durationText(idle) + " (" + fmt("%.0f", 100 * idle / window) +
               "% of its kernel time plus these gaps) in " + std::to_string(host_bound_gaps) +
               " gaps under 1 ms where the next kernel was launched only after the previous one ended; " +
               std::to_string(kernels.size()) + " kernels ran for " + durationText(busy) + " in all (mean " +
               durationText(busy / static_cast<double>(kernels.size())) + ")" +
               (long_gap_count ? "; " + std::to_string(long_gap_count) + " longer gaps (" + durationText(long_gaps) +
                                     ") are host work a graph does not remove"
                               : std::string()) +
               ". Capture " + (where.empty() ? std::string("the step") : "`" + modulePattern(where) + "`") +
               " in a CUDA graph (torch.compile(mode=\"reduce-overhead\") or torch.cuda.CUDAGraph), and fuse its "
               "small kernels (torch.compile) so that fewer launches are needed";
      r.advice.push_back(std::move(a));
    }
  }
  if (graphed > 0) {
    Advice a;
    a.kind = "graphed";
    a.launches = graphed;
    a.text = std::to_string(graphed) + " kernels ran as nodes of " + std::to_string(replays.size()) +
             " CUDA graph launches: their CPU launch cost is paid once per replay, so no launch-overhead advice is "
             "given for them; fusing graph nodes still saves memory traffic and per-node latency";
    r.advice.push_back(std::move(a));
  }
}

}  // namespace kfuse::analyzer
