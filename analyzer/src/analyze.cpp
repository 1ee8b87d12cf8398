// analyze(): the steps of `kfuse analyze`, over the Analysis of pattern_analysis.h.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "advice/advice.h"
#include "advice/kernel_families.h"
#include "cost/cost_model.h"
#include "graph/footprint.h"
#include "graph/graph_replays.h"
#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/cancel.h"
#include "kfuse/core/stats.h"
#include "legality/block_level.h"
#include "legality/epilogue.h"
#include "legality/prologue.h"
#include "legality/thread_locality.h"
#include "pattern_analysis.h"

namespace kfuse::analyzer {

namespace {

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

bool recordedOnEmulator(const core::Trace& t) {
  return !t.devices.empty() && core::isEmulatorDevice(t.devices.front());
}

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

// Says which CUDA graphs were analysed over their nodes, and how many replays ran them.
void noteGraphReplays(const GraphReplays& replays, const DependencyGraph& graph, Report& r) {
  if (replays.empty()) return;
  std::string ids;
  for (size_t i = 0; i < replays.graphs.size() && i < 8; ++i) {
    ids += (i ? ", " : "") + std::to_string(replays.graphs[i].graph_id);
  }
  if (replays.graphs.size() > 8) ids += ", ...";
  r.notices.push_back("CUDA graphs: " + std::to_string(graph.graph_launches_seen) + " replays of " +
                      std::to_string(replays.graphs.size()) + (replays.graphs.size() == 1 ? " graph" : " graphs") +
                      " (" + ids + ") analysed over their nodes; a graph candidate counts once per replay");
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
        r.notices.push_back("the trace names its GPU '" + d.name +
                            "' (what ROCm reports for a GPU missing from its "
                            "name table); identified by its " +
                            std::to_string(d.sm_count) +
                            " compute units and GFX "
                            "IP " +
                            std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + " as " +
                            spec->marketing_name + " (pass --gpu NAME if that is wrong)");
      }
    } else {
      r.gpu = *core::findGpuSpec("h100-sxm");
      r.gpu_source = "default";
      // A trace recorded on kfuse's own emulator has no GPU to cost for: expected, so only noted.
      const bool emulator = recordedOnEmulator(t);
      core::Stat s = core::makeStat(core::StatId::kGpuNotInSpecTable, 1,
                                    (t.devices.empty() ? std::string("the trace names no device")
                                     : emulator        ? std::string("recorded on kfuse's CPU emulator")
                                                : "device '" + t.devices.front().name + "' is not in the spec table") +
                                        "; costs use h100-sxm (pass --gpu NAME)");
      if (emulator) s.severity = core::StatSeverity::kInfo;
      r.stats.push_back(std::move(s));
      if (!emulator && !t.devices.empty()) {
        r.notices.push_back("the trace's GPU '" + t.devices.front().name +
                            "' is not in kfuse's spec table: the costs "
                            "below are for " +
                            r.gpu.marketing_name +
                            ", not for that GPU (pass --gpu NAME; `kfuse "
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
      // A replayed graph's kernels run once per replay.
      if (graph.ops[i].kind == OpKind::kKernel) estimated += weights[i] * static_cast<double>(graph.ops[i].replays);
    }
    r.gpu_busy_ns = static_cast<int64_t>(estimated);
    r.gpu_busy_estimated = r.gpu_busy_ns > 0;
  } else {
    // Graph nodes have no GPU times (hook backend): their roofline estimates, once per replay, join the busy time.
    double graph_ns = 0;
    for (size_t i = 0; i < graph.ops.size(); ++i) {
      const GpuOp& o = graph.ops[i];
      if (o.inGraph() && o.kind == OpKind::kKernel && o.gpu_start_ns == core::kNoTime) {
        graph_ns += analysis.rooflineNs(i) * static_cast<double>(o.replays);
      }
    }
    r.gpu_busy_ns += static_cast<int64_t>(graph_ns);
  }
  return on_path;
}

std::string candidateId(const std::string& pattern_key, const Candidate& c) {
  const std::string what = pattern_key + "|" + fusionKindName(c.fusion) + "|" + legalityName(c.legality);
  return "k" + core::sha256Hex(reinterpret_cast<const uint8_t*>(what.data()), what.size()).substr(0, 10);
}

// The legal chains inside blocked ones. A chain is judged as a whole, so one illegal pair (a GEMM before a
// softmax -> cross-entropy pair, say) blocks every kernel in it. Windows of each blocked occurrence are judged,
// longest first, all windows of one pattern together (and with that pattern's own occurrences where the search
// found it elsewhere, so that one pattern keeps one id); a window inside a legal longer window is not tried again.
// Legal windows become candidates of their own; overlapping ones compete in the selection like any other
// candidates. Blocked windows are not listed: the blocked chain already says why.
void addLegalSubChains(Analysis& analysis, const std::vector<std::vector<size_t>>& blocked,
                       std::map<std::string, std::vector<std::vector<size_t>>>& searched,
                       std::map<std::string, std::vector<size_t>>& reported, std::vector<Candidate>& candidates,
                       std::vector<char>& superseded) {
  size_t longest = 0;
  for (const auto& occ : blocked) longest = std::max(longest, occ.size());
  std::vector<std::vector<std::pair<size_t, size_t>>> legal(blocked.size());  // per occurrence: legal [start, end)
  for (size_t len = longest - 1; len >= 2; --len) {
    std::map<std::string, size_t> index;
    std::vector<Candidate> layer;
    std::map<std::vector<size_t>, std::pair<size_t, size_t>> window_of;  // sub-occurrence -> (occurrence, start)
    for (size_t b = 0; b < blocked.size(); ++b) {
      const auto& occ = blocked[b];
      for (size_t start = 0; start + len <= occ.size(); ++start) {
        const bool covered = std::any_of(legal[b].begin(), legal[b].end(),
                                         [&](const auto& w) { return w.first <= start && start + len <= w.second; });
        if (covered) continue;
        std::vector<size_t> sub(occ.begin() + static_cast<std::ptrdiff_t>(start),
                                occ.begin() + static_cast<std::ptrdiff_t>(start + len));
        if (!window_of.emplace(sub, std::make_pair(b, start)).second) continue;
        analysis.group(index, layer, CandidateKind::kVertical, sub);
      }
    }
    for (Candidate& c : layer) {
      const std::string key = analysis.patternKey(c.kind, c.occurrences.front());
      const auto found = searched.find(key);
      if (found != searched.end()) {
        // The search found this pattern on its own: its occurrences and the windows are judged as one pattern.
        std::set<std::vector<size_t>> have(c.occurrences.begin(), c.occurrences.end());
        for (const auto& occ : found->second) {
          if (have.insert(occ).second) c.occurrences.push_back(occ);
        }
      }
      const std::vector<Candidate> parts = analysis.judge(c);
      bool window_legal = false;
      for (const Candidate& part : parts) {
        if (part.legality == Legality::kBlocked) continue;
        for (const auto& occ : part.occurrences) {
          auto w = window_of.find(occ);
          if (w == window_of.end()) continue;
          window_legal = true;
          legal[w->second.first].push_back({w->second.second, w->second.second + len});
        }
      }
      // Nothing legal inside a blocked chain: the chain already says why (and the search's own candidates for the
      // pattern stand as they were).
      if (!window_legal) continue;
      if (found != searched.end()) {
        for (size_t i : reported[key]) superseded[i] = 1;
        reported[key].clear();
        found->second = c.occurrences;
      }
      for (const Candidate& part : parts) {
        if (part.legality == Legality::kBlocked && found == searched.end()) continue;
        Candidate kept = part;
        kept.id = candidateId(key, kept);
        if (part.legality != Legality::kBlocked) {
          kept.reasons.push_back("a legal part of a longer chain that is blocked as a whole");
        }
        reported[key].push_back(candidates.size());
        candidates.push_back(std::move(kept));
        superseded.push_back(0);
      }
    }
  }
}

// Every pattern the search finds, judged (split by legality where argument tuples disagree), each with its id, and
// the legal chains inside the blocked ones.
std::vector<Candidate> findCandidates(Analysis& analysis, SearchStats& stats) {
  std::vector<Candidate> candidates;
  std::vector<char> superseded;
  std::map<std::string, std::vector<std::vector<size_t>>> searched;  // pattern key -> its occurrences
  std::map<std::string, std::vector<size_t>> reported;               // pattern key -> its candidates' positions
  std::vector<std::vector<size_t>> blocked;  // occurrences of blocked vertical chains of three or more kernels
  for (Candidate& found : analysis.run(stats)) {
    const std::string key = analysis.patternKey(found.kind, found.occurrences.front());
    if (found.kind == CandidateKind::kVertical) searched[key] = found.occurrences;
    for (Candidate& part : analysis.judge(std::move(found))) {
      part.id = candidateId(key, part);
      if (part.kind == CandidateKind::kVertical && part.legality == Legality::kBlocked &&
          part.function_ids.size() > 2) {
        blocked.insert(blocked.end(), part.occurrences.begin(), part.occurrences.end());
      }
      if (part.kind == CandidateKind::kVertical) reported[key].push_back(candidates.size());
      candidates.push_back(std::move(part));
      superseded.push_back(0);
    }
  }
  if (!blocked.empty()) addLegalSubChains(analysis, blocked, searched, reported, candidates, superseded);
  std::vector<Candidate> out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!superseded[i]) out.push_back(std::move(candidates[i]));
  }
  return out;
}

// "k0123456789 thread-local scale -> add (3 occurrences): proven, predicted to save nothing: WHY".
std::string noGainLine(const Candidate& c) {
  std::string kernels;
  for (const std::string& n : c.names) {
    kernels += (kernels.empty() ? "" : c.kind == CandidateKind::kVertical ? " -> " : " + ") + shortKernelName(n, 40);
  }
  const size_t n = c.occurrences.size();
  return c.id + " " + fusionKindName(c.fusion) + " " + kernels + " (" + std::to_string(n) +
         (n == 1 ? " occurrence" : " occurrences") +
         "): proven, predicted to save nothing: " + cost::noGainReason(c.cost, c.kind);
}

// The GPU time the candidates' shares are of: the busy time; on a trace without GPU times (whose busy time sums
// roofline estimates) also the dependent-launch gap before every kernel that followed another kernel on its
// stream with no host wait between, the idle time the cost model credits fusions with removing.
double shareBase(const DependencyGraph& graph, const Report& r) {
  double base = static_cast<double>(r.gpu_busy_ns);
  if (!r.gpu_busy_estimated) return base;
  std::map<core::Id, size_t> last_on_stream;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const GpuOp& op = graph.ops[i];
    auto it = last_on_stream.find(op.stream_id);
    if (it != last_on_stream.end() && op.kind == OpKind::kKernel) {
      const GpuOp& prev = graph.ops[it->second];
      if (prev.kind == OpKind::kKernel && prev.host_sync_epoch == op.host_sync_epoch) {
        base += r.gpu.dependent_launch_gap_ns * static_cast<double>(op.replays);  // a graph's: once per replay
      }
    }
    last_on_stream[op.stream_id] = i;
  }
  return base;
}

// Costs each candidate, drops those predicted to save nothing (unless options.keep_no_gain; returns how many),
// ranks the rest, marks conflicts and adds the advice of each.
size_t costAndRank(std::vector<Candidate>& candidates, Analysis& analysis, const DependencyGraph& graph,
                   const KernelCatalog& catalog, Advisor& advisor, const std::vector<char>& on_path,
                   const AnalysisOptions& options, Report& r) {
  const double share_base = shareBase(graph, r);
  for (Candidate& c : candidates) {
    analysis.cost(c);
    for (const auto& occ : c.occurrences) {
      std::vector<core::Id>& ids = c.occurrence_launches.emplace_back();
      const GpuOp& head = graph.ops[occ.front()];
      for (size_t op : occ) ids.push_back(head.inGraph() ? graph.ops[op].graph_node_id : graph.ops[op].record_id);
      if (head.inGraph()) {
        c.occurrence_graphs.push_back(head.graph_id);
        c.occurrence_replays.push_back(head.replays);
      }
    }
    size_t on = 0;
    for (const auto& occ : c.occurrences) {
      on += std::all_of(occ.begin(), occ.end(), [&](size_t op) { return on_path[op] != 0; }) ? 1 : 0;
    }
    c.on_critical_path = on * 2 >= c.occurrences.size();
    c.share_of_gpu_busy = share_base > 0 ? std::min(1.0, c.total_saving_ns / share_base) : 0;
  }
  // A pattern predicted to save nothing is no recommendation: it is counted, not listed (blocked ones stay, with
  // their reasons, so the user sees why an obvious-looking fusion is not proposed). A proven one gets a line
  // saying why, so that the reader knows it exists.
  size_t no_gain = 0;
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                  [&](const Candidate& c) {
                                    const bool drop = !options.keep_no_gain && c.legality != Legality::kBlocked &&
                                                      c.total_saving_ns <= 0;
                                    no_gain += drop ? 1 : 0;
                                    if (drop && c.legality == Legality::kProven)
                                      r.proven_no_gain.push_back(noGainLine(c));
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
    double bytes = 0, flops = 0, ns = 0, predicted_ns = 0, predicted_bytes = 0;
    size_t launches = 0;
    cost::Source bytes_source = cost::Source::kUnknown, flops_source = cost::Source::kUnknown;
  };
  std::map<core::Id, Acc> per_function;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].kind != OpKind::kKernel) continue;
    cost::Source bs, fs;
    Acc& a = per_function[graph.ops[i].function_id];
    const double runs = static_cast<double>(graph.ops[i].replays);  // a replayed graph's node: once per replay
    const Analysis::KernelEstimate estimated = analysis.estimateKernel(i);
    a.bytes += runs * analysis.kernelBytes(i, bs, estimated);
    a.bytes_source = a.launches == 0 ? bs : cost::combine(a.bytes_source, bs);
    const FlopCounts flops = analysis.kernelFlops(i, fs);
    a.flops += runs * flops.total();
    a.flops_source = a.launches == 0 ? fs : cost::combine(a.flops_source, fs);
    a.ns += runs * analysis.durationNs(i);
    a.predicted_bytes += runs * estimated.bytes;
    a.predicted_ns +=
        runs * cost::launchRooflineNs(estimated.bytes, flops, analysis.launchResources(analysis.launch(i)), r.gpu,
                                      {estimated.l1_bytes, 0});
    a.launches += static_cast<size_t>(graph.ops[i].replays);
  }
  for (const auto& [fid, a] : per_function) {
    const KernelFacts* k = catalog.find(fid);
    KernelRow row;
    row.name = k ? k->name : "function " + std::to_string(fid);
    row.launches = a.launches;
    row.ns = a.ns;
    row.bytes = a.bytes;
    row.flops = a.flops;
    row.predicted_ns = a.predicted_ns;
    row.predicted_bytes = a.predicted_bytes;
    row.bytes_source = cost::sourceName(a.bytes_source);
    row.flops_source = cost::sourceName(a.flops_source);
    if (row.ns <= 0) row.ns = a.predicted_ns;  // no GPU time: the model's estimate stands in
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
    if (c.legality == Legality::kBlocked || c.cost.bytes_after <= 0 || c.cost.flops <= 0 || c.cost.fused_ns <= 0)
      continue;
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
    r.why_none.push_back(std::to_string(stats.pairs_sync_between) +
                         " adjacent pairs have a host synchronization (or the second an event wait) between them");
  }
  if (stats.pairs_copy_between) {
    r.why_none.push_back(std::to_string(stats.pairs_copy_between) +
                         " kernels are followed by a copy or memset on their stream");
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
    r.why_none.push_back(std::to_string(no_gain) +
                         " fusable patterns are predicted to save no time (the proven ones are listed above with "
                         "the reason; kfuse analyze --all lists every one)");
  }
  size_t blocked = r.candidates.size();
  if (blocked)
    r.why_none.push_back(std::to_string(blocked) +
                         " candidate patterns were found but are blocked (listed with reasons)");
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
  // Replayed CUDA graphs: their nodes become records of a copy of the trace that the search, the legality proofs
  // and the cost model read; the report's summary stays that of the trace as recorded.
  std::optional<ImportResult> expanded;
  GraphReplays replays;
  if (!t.graph_launches.empty()) {
    expanded = input;
    replays = expandGraphReplays(expanded->trace);
    if (replays.empty()) expanded.reset();
  }
  const ImportResult& work = expanded ? *expanded : input;
  Report r;
  r.options = options;
  r.input_path = input_path;
  if (auto it = original.trace.metadata.extra.find("kineto.rank"); it != original.trace.metadata.extra.end()) {
    char* end = nullptr;
    const long rank = std::strtol(it->second.c_str(), &end, 10);
    if (end && *end == '\0' && !it->second.empty() && rank >= 0 && rank <= INT32_MAX) r.rank = static_cast<int>(rank);
  }
  r.input_format = input.format;
  r.producer = t.metadata.producer;
  r.stats = t.stats;
  noteInputProblems(t, emulator_times, r);
  KFUSE_RETURN_IF_ERROR(chooseGpu(t, options, r));

  // Cancellation (core/cancel.h, the GUI's Cancel) is checked between the stages and inside the long ones.
  KFUSE_RETURN_IF_CANCELLED();
  const KernelCatalog catalog = KernelCatalog::build(work.trace);
  KFUSE_RETURN_IF_CANCELLED();
  const DependencyGraph graph = DependencyGraph::build(work.trace, catalog, expanded ? &replays : nullptr);
  KFUSE_RETURN_IF_CANCELLED();
  noteGraphReplays(replays, graph, r);
  // Operator context, kernel families and tensor data flow (imported traces; advice.h).
  Advisor advisor(work, graph, catalog);
  if (!options.execution_trace.empty()) {
    KFUSE_RETURN_IF_ERROR(advisor.joinExecutionTrace(options.execution_trace));
  } else if (!graph.has_pointer_data) {
    advisor.inferTensorFlow();
  }
  summarizeTrace(t, catalog, graph, r);
  KFUSE_RETURN_IF_CANCELLED();

  Analysis analysis(work, catalog, graph, r.gpu, options, advisor);
  const std::vector<char> on_path = markCriticalPath(work.trace, graph, analysis, r);
  KFUSE_RETURN_IF_CANCELLED();
  SearchStats stats;
  std::vector<Candidate> candidates = findCandidates(analysis, stats);
  KFUSE_RETURN_IF_CANCELLED();
  const size_t no_gain = costAndRank(candidates, analysis, graph, catalog, advisor, on_path, options, r);
  KFUSE_RETURN_IF_CANCELLED();
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
