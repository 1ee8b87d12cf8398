// DependencyGraph: GPU operations of a trace and the reasons each must follow another.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "graph/byte_dependences.h"
#include "graph/footprint.h"
#include "graph/graph_replays.h"
#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/cancel.h"

namespace kfuse::analyzer {

namespace {

std::string opName(const GpuOp& op, const core::Trace& trace, const KernelCatalog& catalog) {
  if (op.graph_launch_id != core::kNoId) return "graph launch " + std::to_string(op.graph_launch_id);
  if (op.inGraph()) {
    const std::string graph = "graph " + std::to_string(op.graph_id);
    if (op.graph_node_id == core::kNoId) return "the end of a replay of " + graph;
    std::string what = graph + " node " + std::to_string(op.graph_node_id);
    if (op.kind == OpKind::kKernel) {
      const KernelFacts* k = catalog.find(op.function_id);
      return what + " (" + (k ? k->name : std::string("?")) + ")";
    }
    return what + (op.kind == OpKind::kMemcpy ? " (memcpy)" : " (memset)");
  }
  switch (op.kind) {
    case OpKind::kKernel: {
      const KernelFacts* k = catalog.find(op.function_id);
      return "launch " + std::to_string(op.record_id) + " (" + (k ? k->name : std::string("?")) + ")";
    }
    case OpKind::kMemcpy:
      return "memcpy " + std::to_string(op.record_id) + " (" +
             std::string(core::toString(trace.memcpys[op.record_index].kind)) + ")";
    case OpKind::kMemset: return "memset " + std::to_string(op.record_id);
  }
  return "?";
}

// " (param 2)" for kernel parameters, "" for copies and sets.
std::string paramText(int param) {
  return param < 0 ? std::string() : " (param " + std::to_string(param) + ")";
}

// Stream ids of the chains of replayed graphs: far above any stream a trace numbers.
constexpr core::Id kGraphChainStreams = core::Id{1} << 48;

// Appends one block of ops per replayed graph (`blocks`, built like the trace's own) after the trace's ops: the
// graph's edges as order edges, data edges inside the block, chains as streams, one host-sync epoch per graph that
// no other op shares, and a closing memset of no bytes that reads what may be read after the replay (liveness).
void addGraphBlocks(DependencyGraph& g, const GraphReplays& replays, std::vector<std::vector<GpuOp>> blocks) {
  std::unordered_map<core::Id, size_t> replay_op;  // graph launch id -> its op on the timeline
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].graph_launch_id != core::kNoId) replay_op[g.ops[i].graph_launch_id] = i;
  }
  core::Id next_stream = kGraphChainStreams;
  const size_t own_ops = g.ops.size();
  for (size_t gi = 0; gi < replays.graphs.size(); ++gi) {
    const ReplayedGraph& rg = replays.graphs[gi];
    std::vector<GpuOp>& block = blocks[gi];
    const size_t base = g.ops.size(), n = block.size();
    // Ancestors of each node, as bit sets (a graph has thousands of nodes at most).
    const size_t words = (n + 63) / 64;
    std::vector<std::vector<uint64_t>> ancestors(n, std::vector<uint64_t>(words, 0));
    auto isAncestor = [&](size_t a, size_t b) { return (ancestors[b][a / 64] >> (a % 64)) & 1; };
    for (size_t b = 0; b < n; ++b) {
      for (size_t a : rg.nodes[b].preds) {
        for (size_t w = 0; w < words; ++w) ancestors[b][w] |= ancestors[a][w];
        ancestors[b][a / 64] |= uint64_t{1} << (a % 64);
      }
    }
    const int64_t epoch = -static_cast<int64_t>(gi) - 1;
    for (GpuOp& op : block) {
      op.host_sync_epoch = epoch;
      g.ops.push_back(std::move(op));
    }
    for (size_t b = 0; b < n; ++b) {
      for (size_t a : rg.nodes[b].preds) g.edges.push_back(Edge{base + a, base + b, EdgeKind::kStreamOrder});
    }
    const size_t order_edges = g.edges.size();
    ByteDependences data;
    for (size_t b = 0; b < n; ++b) data.add(base + b, g.ops[base + b].uses, g.edges);
    // Chains: each node continues the chain of an immediate predecessor (one with no other node between them)
    // that no other node continued yet, one it reads from when there is one.
    std::set<std::pair<size_t, size_t>> raw;
    for (size_t e = order_edges; e < g.edges.size(); ++e) {
      if (g.edges[e].kind == EdgeKind::kRaw) raw.insert({g.edges[e].from - base, g.edges[e].to - base});
    }
    std::vector<char> continued(n, 0);
    for (size_t b = 0; b < n; ++b) {
      size_t pick = SIZE_MAX;
      for (size_t a : rg.nodes[b].preds) {
        const bool immediate = std::none_of(rg.nodes[b].preds.begin(), rg.nodes[b].preds.end(),
                                            [&](size_t p) { return p != a && isAncestor(a, p); });
        if (!immediate || continued[a]) continue;
        if (pick == SIZE_MAX || (raw.count({a, b}) && !raw.count({pick, b}))) pick = a;
      }
      if (pick == SIZE_MAX) {
        g.ops[base + b].stream_id = next_stream++;
      } else {
        continued[pick] = 1;
        g.ops[base + b].stream_id = g.ops[base + pick].stream_id;
      }
    }
    // After the replay: bytes a node reads that no copy or set before it in the graph wrote (the next replay may
    // read them first), and what the trace's ops after the first replay read of the allocations the graph uses.
    GpuOp after;
    after.kind = OpKind::kMemset;
    after.record_index = rg.sentinel_memset;
    after.stream_id = next_stream++;
    after.host_sync_epoch = epoch;
    after.graph_id = rg.graph_id;
    after.replays = rg.replays;
    std::set<core::Id> touched;
    std::vector<size_t> transfers;  // the copies and sets of the graph
    for (size_t a = 0; a < n; ++a) {
      if (g.ops[base + a].kind != OpKind::kKernel) transfers.push_back(a);
    }
    for (size_t b = 0; b < n; ++b) {
      for (const BufferUse& u : g.ops[base + b].uses) {
        touched.insert(u.allocation_id);
        if (u.mode != core::AccessMode::kRead && u.mode != core::AccessMode::kReadWrite) continue;
        bool written_before = false;
        for (size_t a : transfers) {
          if (written_before || !isAncestor(a, b)) continue;
          for (const BufferUse& w : g.ops[base + a].uses) {
            written_before =
                written_before || (w.mode == core::AccessMode::kWrite && w.allocation_id == u.allocation_id &&
                                   !w.wholeAllocation() && w.lo <= u.lo && u.hi <= w.hi);
          }
        }
        if (written_before) continue;
        BufferUse r = u;
        r.mode = core::AccessMode::kRead;
        r.param_index = -1;
        after.uses.push_back(r);
      }
    }
    size_t first_replay = SIZE_MAX;
    for (const GraphReplays::Replay& r : replays.replays) {
      if (r.graph != gi) continue;
      if (auto it = replay_op.find(r.graph_launch_id); it != replay_op.end()) {
        first_replay = std::min(first_replay, it->second);
      }
    }
    for (size_t i = first_replay == SIZE_MAX ? own_ops : first_replay + 1; i < own_ops; ++i) {
      for (const BufferUse& u : g.ops[i].uses) {
        if (!touched.count(u.allocation_id) ||
            (u.mode != core::AccessMode::kRead && u.mode != core::AccessMode::kReadWrite))
          continue;
        BufferUse r = u;
        r.mode = core::AccessMode::kRead;
        r.param_index = -1;
        after.uses.push_back(r);
      }
    }
    g.ops.push_back(std::move(after));
    for (size_t b = 0; b < n; ++b) g.edges.push_back(Edge{base + b, g.ops.size() - 1, EdgeKind::kStreamOrder});
  }
}

}  // namespace

DependencyGraph DependencyGraph::build(const core::Trace& trace, const KernelCatalog& catalog,
                                       const GraphReplays* replays) {
  DependencyGraph g;
  std::unordered_map<core::Id, const core::Allocation*> allocations;
  for (const core::Allocation& a : trace.allocations) allocations[a.id] = &a;
  FootprintCache footprints;
  auto orderOf = [](int64_t api, int64_t gpu) { return api != core::kNoTime ? api : gpu; };
  // Records made from replayed graphs follow the trace's own; they become ops of the graph blocks below.
  const size_t own_launches = replays ? replays->first_launch : trace.launches.size();
  const size_t own_memcpys = replays ? replays->first_memcpy : trace.memcpys.size();
  const size_t own_memsets = replays ? replays->first_memset : trace.memsets.size();
  auto kernelOp = [&](size_t i) {
    const core::Launch& l = trace.launches[i];
    GpuOp op;
    op.kind = OpKind::kKernel;
    op.record_id = l.id;
    op.record_index = i;
    op.stream_id = l.stream_id;
    op.function_id = l.function_id;
    op.order_ns = orderOf(l.api_start_ns, l.gpu_start_ns);
    op.gpu_start_ns = l.gpu_start_ns;
    op.gpu_end_ns = l.gpu_end_ns;
    const KernelFacts* k = catalog.find(l.function_id);
    const std::vector<RelativeRange>* ranges = nullptr;
    for (const core::PointerArg& p : l.pointer_args) {
      if (p.allocation_id == core::kNoId) continue;
      g.has_pointer_data = true;
      if (p.field_offset >= 0) {
        BufferUse use{p.allocation_id, p.offset, p.param_index, core::AccessMode::kReadWrite};
        use.in_struct = true;
        op.uses.push_back(use);
        continue;
      }
      core::AccessMode mode = core::AccessMode::kReadWrite;
      if (k && p.param_index >= 0 && static_cast<size_t>(p.param_index) < k->params.size()) {
        mode = k->params[static_cast<size_t>(p.param_index)].mode;
      }
      if (mode == core::AccessMode::kNone) continue;
      if (mode == core::AccessMode::kUnknown) mode = core::AccessMode::kReadWrite;
      BufferUse use{p.allocation_id, p.offset, p.param_index, mode};
      if (k && k->has_ptx) {
        if (!ranges) ranges = &footprints.of(*k, l);
        if (p.param_index >= 0 && static_cast<size_t>(p.param_index) < ranges->size()) {
          const ByteRange r = (*ranges)[static_cast<size_t>(p.param_index)].at(p.offset);
          use.lo = r.lo;
          use.hi = r.hi;
        }
      }
      op.uses.push_back(use);
    }
    return op;
  };
  for (size_t i = 0; i < own_launches; ++i) {
    if (core::cancelRequested()) break;  // analyze() returns cancelled after building the graph
    g.ops.push_back(kernelOp(i));
  }
  // Copies and sets: the same fields under the same names in both record types.
  auto addTransfer = [&](OpKind kind, const auto& m, size_t index, core::Id src, uint64_t src_address, core::Id dst,
                         uint64_t dst_address) -> GpuOp {
    GpuOp op;
    op.kind = kind;
    op.record_id = m.id;
    op.record_index = index;
    op.stream_id = m.stream_id;
    op.order_ns = orderOf(m.api_start_ns, m.gpu_start_ns);
    op.gpu_start_ns = m.gpu_start_ns;
    op.gpu_end_ns = m.gpu_end_ns;
    // The copied bytes, where the record gives the address and the size.
    auto use = [&](core::Id alloc, uint64_t address, core::AccessMode mode) {
      BufferUse u{alloc, 0, -1, mode};
      auto it = allocations.find(alloc);
      if (it != allocations.end() && m.bytes > 0 && address >= it->second->address &&
          address - it->second->address <= it->second->size) {
        u.offset = address - it->second->address;
        u.lo = u.offset;
        u.hi = u.offset + m.bytes;
      }
      op.uses.push_back(u);
    };
    if (src != core::kNoId) use(src, src_address, core::AccessMode::kRead);
    if (dst != core::kNoId) use(dst, dst_address, core::AccessMode::kWrite);
    return op;
  };
  auto memcpyOp = [&](size_t i) {
    const core::Memcpy& m = trace.memcpys[i];
    return addTransfer(OpKind::kMemcpy, m, i, m.src_allocation_id, m.src_address, m.dst_allocation_id, m.dst_address);
  };
  auto memsetOp = [&](size_t i) {
    const core::Memset& m = trace.memsets[i];
    return addTransfer(OpKind::kMemset, m, i, core::kNoId, 0, m.dst_allocation_id, m.dst_address);
  };
  for (size_t i = 0; i < own_memcpys; ++i) g.ops.push_back(memcpyOp(i));
  for (size_t i = 0; i < own_memsets; ++i) g.ops.push_back(memsetOp(i));
  // The replayed graphs' ops (appended after the trace's own below), and each replay's place on the timeline: a
  // memset of no bytes touching what its graph touches.
  std::vector<std::vector<GpuOp>> blocks;
  if (replays) {
    for (const ReplayedGraph& rg : replays->graphs) {
      std::vector<GpuOp>& block = blocks.emplace_back();
      for (const ReplayedGraph::Node& n : rg.nodes) {
        GpuOp op = n.type == core::GraphNodeType::kKernel   ? kernelOp(n.record_index)
                   : n.type == core::GraphNodeType::kMemcpy ? memcpyOp(n.record_index)
                                                            : memsetOp(n.record_index);
        op.graph_id = rg.graph_id;
        op.graph_node_id = n.node_id;
        op.replays = rg.replays;
        block.push_back(std::move(op));
      }
    }
    // What each graph touches, each distinct range once (a replay's op stands for all of its nodes).
    std::vector<std::vector<BufferUse>> touches(blocks.size());
    for (size_t gi = 0; gi < blocks.size(); ++gi) {
      std::set<std::tuple<core::Id, uint64_t, uint64_t, core::AccessMode, bool>> seen;
      for (const GpuOp& member : blocks[gi]) {
        for (BufferUse u : member.uses) {
          if (!seen.insert({u.allocation_id, u.lo, u.hi, u.mode, u.in_struct}).second) continue;
          u.param_index = -1;
          touches[gi].push_back(u);
        }
      }
    }
    for (const GraphReplays::Replay& r : replays->replays) {
      GpuOp op = memsetOp(r.memset_index);
      op.graph_launch_id = r.graph_launch_id;
      op.uses = touches[r.graph];
      g.ops.push_back(std::move(op));
      ++g.graph_launches_seen;
    }
  }
  // Issue order: API time where known, then GPU time; ties by kind and record id (launch ids are API order).
  std::stable_sort(g.ops.begin(), g.ops.end(), [](const GpuOp& a, const GpuOp& b) {
    const int64_t ta = a.order_ns == core::kNoTime ? INT64_MAX : a.order_ns;
    const int64_t tb = b.order_ns == core::kNoTime ? INT64_MAX : b.order_ns;
    if (ta != tb) return ta < tb;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.record_id < b.record_id;
  });

  auto addEdge = [&g](size_t from, size_t to, EdgeKind kind, core::Id alloc = core::kNoId, int from_param = -1,
                      int to_param = -1, size_t sync_index = SIZE_MAX) {
    if (from == to) return;
    if (from > to) std::swap(from, to);
    g.edges.push_back(Edge{from, to, kind, false, alloc, from_param, to_param, sync_index});
  };

  // Host syncs, in time order, with the stream each affects (kNoId: every stream).
  struct HostWait {
    int64_t time;
    core::Id stream;
    size_t sync_index;
  };
  std::vector<HostWait> waits;
  std::unordered_map<core::Id, const core::Event*> events;
  for (const core::Event& e : trace.events) events[e.id] = &e;
  for (size_t si = 0; si < trace.syncs.size(); ++si) {
    const core::Sync& s = trace.syncs[si];
    if (s.kind == core::SyncKind::kStreamWaitEvent) continue;
    const int64_t t = s.end_ns != core::kNoTime ? s.end_ns : s.start_ns;
    if (t == core::kNoTime) continue;
    core::Id stream = s.kind == core::SyncKind::kStream ? s.stream_id : core::kNoId;
    if (s.kind == core::SyncKind::kEvent) {
      auto it = events.find(s.event_id);
      stream = it != events.end() ? it->second->stream_id : core::kNoId;
    }
    waits.push_back({t, stream, si});
  }
  std::sort(waits.begin(), waits.end(), [](const HostWait& a, const HostWait& b) { return a.time < b.time; });

  // Stream order and host-sync epochs, walking ops in issue order.
  std::unordered_map<core::Id, size_t> last_on_stream;
  std::unordered_map<core::Id, int64_t> epoch_of_stream;
  int64_t global_epoch = 0;
  size_t wi = 0;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    GpuOp& op = g.ops[i];
    while (wi < waits.size() && op.order_ns != core::kNoTime && waits[wi].time <= op.order_ns) {
      const HostWait& w = waits[wi];
      if (w.stream == core::kNoId) {
        ++global_epoch;
        for (auto& [s, last] : last_on_stream) addEdge(last, i, EdgeKind::kHostSync, core::kNoId, -1, -1, w.sync_index);
      } else {
        ++epoch_of_stream[w.stream];
        if (auto it = last_on_stream.find(w.stream); it != last_on_stream.end()) {
          addEdge(it->second, i, EdgeKind::kHostSync, core::kNoId, -1, -1, w.sync_index);
        }
      }
      ++wi;
    }
    op.host_sync_epoch = global_epoch + epoch_of_stream[op.stream_id];
    if (auto it = last_on_stream.find(op.stream_id); it != last_on_stream.end()) {
      addEdge(it->second, i, EdgeKind::kStreamOrder);
    }
    last_on_stream[op.stream_id] = i;
  }

  // Event edges: cuStreamWaitEvent makes the waiting stream's next op follow the last op before the record.
  std::unordered_map<core::Id, std::vector<size_t>> ops_of_stream;  // issue order, ops with a known time
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].order_ns != core::kNoTime) ops_of_stream[g.ops[i].stream_id].push_back(i);
  }
  for (size_t si = 0; si < trace.syncs.size(); ++si) {
    const core::Sync& s = trace.syncs[si];
    if (s.kind != core::SyncKind::kStreamWaitEvent) continue;
    auto it = events.find(s.event_id);
    if (it == events.end() || it->second->record_ns == core::kNoTime || s.start_ns == core::kNoTime) continue;
    const core::Event& e = *it->second;
    const auto& producers = ops_of_stream[e.stream_id];
    const auto& consumers = ops_of_stream[s.stream_id];
    auto p = std::upper_bound(producers.begin(), producers.end(), e.record_ns,
                              [&](int64_t t, size_t op) { return t < g.ops[op].order_ns; });
    auto c = std::lower_bound(consumers.begin(), consumers.end(), s.start_ns,
                              [&](size_t op, int64_t t) { return g.ops[op].order_ns < t; });
    if (p == producers.begin() || c == consumers.end()) continue;
    const size_t producer = *std::prev(p), consumer = *c;
    if (producer < consumer) addEdge(producer, consumer, EdgeKind::kEventSync, core::kNoId, -1, -1, si);
  }

  // Data edges per allocation, exact by byte range (ByteDependences says how).
  ByteDependences data;
  for (size_t i = 0; i < g.ops.size() && !core::cancelRequested(); ++i) data.add(i, g.ops[i].uses, g.edges);

  if (replays) addGraphBlocks(g, *replays, std::move(blocks));

  g.out_edges.assign(g.ops.size(), {});
  g.in_edges.assign(g.ops.size(), {});
  for (size_t e = 0; e < g.edges.size(); ++e) {
    g.out_edges[g.edges[e].from].push_back(e);
    g.in_edges[g.edges[e].to].push_back(e);
  }
  return g;
}

std::string DependencyGraph::describe(const Edge& e, const core::Trace& trace, const KernelCatalog& catalog) const {
  const std::string from = opName(ops[e.from], trace, catalog), to = opName(ops[e.to], trace, catalog);
  std::string alloc = "allocation " + std::to_string(e.allocation_id);
  // Which bytes: the overlap of the two operations' ranges, when both are known.
  auto use = [&](const GpuOp& op, int param) -> const BufferUse* {
    for (const BufferUse& u : op.uses) {
      if (u.allocation_id == e.allocation_id && u.param_index == param) return &u;
    }
    return nullptr;
  };
  if (const BufferUse* a = use(ops[e.from], e.from_param), *b = use(ops[e.to], e.to_param);
      a && b && !a->wholeAllocation() && !b->wholeAllocation()) {
    alloc += " bytes [" + std::to_string(std::max(a->lo, b->lo)) + ", " + std::to_string(std::min(a->hi, b->hi)) + ")";
  }
  auto syncText = [&]() -> std::string {
    if (e.sync_index >= trace.syncs.size()) return "a synchronization";
    const core::Sync& s = trace.syncs[e.sync_index];
    return std::string(core::toString(s.kind)) + " synchronize (sync " + std::to_string(s.id) + ")";
  };
  switch (e.kind) {
    case EdgeKind::kStreamOrder:
      if (ops[e.from].inGraph()) return to + " follows " + from + " (an edge of the graph)";
      return to + " follows " + from + " on stream " + std::to_string(ops[e.from].stream_id);
    case EdgeKind::kEventSync: {
      const core::Sync* s = e.sync_index < trace.syncs.size() ? &trace.syncs[e.sync_index] : nullptr;
      return to + " on stream " + std::to_string(ops[e.to].stream_id) + " waits for event " +
             (s ? std::to_string(s->event_id) : std::string("?")) + " recorded after " + from;
    }
    case EdgeKind::kHostSync: return to + " is issued after a host " + syncText() + " that waited for " + from;
    case EdgeKind::kRaw:
      return to + " reads " + alloc + paramText(e.to_param) + " that " + from + " wrote" + paramText(e.from_param);
    case EdgeKind::kWar:
      return to + " writes " + alloc + paramText(e.to_param) + " after " + from + " read it" + paramText(e.from_param);
    case EdgeKind::kWaw:
      return to + " overwrites " + alloc + paramText(e.to_param) + " written by " + from + paramText(e.from_param);
  }
  return "?";
}

std::vector<const Edge*> DependencyGraph::edgesBetween(size_t a, size_t b) const {
  std::vector<const Edge*> out;
  if (a >= out_edges.size()) return out;
  for (size_t e : out_edges[a]) {
    if (edges[e].to == b) out.push_back(&edges[e]);
  }
  return out;
}

bool DependencyGraph::reaches(size_t a, size_t b) const {
  if (a >= b || b >= ops.size()) return false;
  std::vector<size_t> stack{a};
  std::unordered_set<size_t> seen{a};
  size_t budget = 20000;  // beyond this, assume a path exists: conservative for horizontal fusion
  while (!stack.empty()) {
    const size_t n = stack.back();
    stack.pop_back();
    for (size_t e : out_edges[n]) {
      const size_t t = edges[e].to;
      if (t == b) return true;
      if (t > b || !seen.insert(t).second) continue;
      if (--budget == 0) return true;
      stack.push_back(t);
    }
  }
  return false;
}

}  // namespace kfuse::analyzer
