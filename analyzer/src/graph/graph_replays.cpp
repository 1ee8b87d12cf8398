// expandGraphReplays: the graphs a trace's replays ran, flattened and made into records.
#include "graph/graph_replays.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace kfuse::analyzer {

namespace {

// How deep child graphs may nest before a graph is refused (the driver allows no cycles; a trace might).
constexpr int kMaxChildDepth = 16;

bool isOp(core::GraphNodeType t) {
  return t == core::GraphNodeType::kKernel || t == core::GraphNodeType::kMemcpy || t == core::GraphNodeType::kMemset;
}

// A graph's nodes with child graphs inlined; `preds` are indices into the same list.
struct FlatNode {
  const core::GraphNode* node = nullptr;
  std::vector<size_t> preds;
};

class Flattener {
 public:
  explicit Flattener(const core::Trace& t) {
    for (const core::GraphNode& n : t.graph_nodes) nodes_of_[n.graph_id].push_back(&n);
    for (const core::GraphEdge& e : t.graph_edges) edges_of_[e.graph_id].push_back(&e);
    for (const core::Graph& g : t.graphs) graphs_.insert(g.id);
  }

  // Appends the nodes of `graph_id` to `out`, its entry nodes after `entry`; returns its exit nodes (or `entry`
  // for a graph without nodes), nullopt when the graph cannot be replayed here.
  std::optional<std::vector<size_t>> flatten(core::Id graph_id, const std::vector<size_t>& entry, int depth,
                                             std::vector<FlatNode>& out) const {
    if (depth > kMaxChildDepth || !graphs_.count(graph_id)) return std::nullopt;
    auto found = nodes_of_.find(graph_id);
    // A child graph without nodes runs nothing: what follows it follows what preceded it.
    if (found == nodes_of_.end()) return depth == 0 ? std::nullopt : std::optional(entry);
    const std::vector<const core::GraphNode*>& nodes = found->second;
    std::unordered_map<core::Id, size_t> index;  // node id -> position in `nodes`
    for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]->id] = i;
    std::vector<std::vector<size_t>> in(nodes.size()), out_edges(nodes.size());
    if (auto e = edges_of_.find(graph_id); e != edges_of_.end()) {
      for (const core::GraphEdge* edge : e->second) {
        auto from = index.find(edge->from_node_id), to = index.find(edge->to_node_id);
        if (from == index.end() || to == index.end()) return std::nullopt;  // an edge to a node not recorded
        in[to->second].push_back(from->second);
        out_edges[from->second].push_back(to->second);
      }
    }
    // Kahn's order, ties by the driver's node order.
    std::vector<size_t> waiting(nodes.size());
    std::set<std::pair<int, size_t>> ready;
    for (size_t i = 0; i < nodes.size(); ++i) {
      waiting[i] = in[i].size();
      if (waiting[i] == 0) ready.insert({nodes[i]->index, i});
    }
    std::vector<std::vector<size_t>> exits_of(nodes.size());
    size_t done = 0;
    while (!ready.empty()) {
      const size_t i = ready.begin()->second;
      ready.erase(ready.begin());
      ++done;
      std::vector<size_t> preds;
      for (size_t p : in[i]) preds.insert(preds.end(), exits_of[p].begin(), exits_of[p].end());
      if (in[i].empty()) preds = entry;
      const core::GraphNode& n = *nodes[i];
      if (n.type == core::GraphNodeType::kOther) return std::nullopt;  // work the trace does not describe
      if (n.type == core::GraphNodeType::kChildGraph) {
        if (n.child_graph_id == core::kNoId) return std::nullopt;
        auto exits = flatten(n.child_graph_id, preds, depth + 1, out);
        if (!exits) return std::nullopt;
        exits_of[i] = std::move(*exits);
      } else {
        out.push_back(FlatNode{&n, std::move(preds)});
        exits_of[i] = {out.size() - 1};
      }
      for (size_t s : out_edges[i]) {
        if (--waiting[s] == 0) ready.insert({nodes[s]->index, s});
      }
    }
    if (done != nodes.size()) return std::nullopt;  // a cycle
    std::vector<size_t> exits;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (out_edges[i].empty()) exits.insert(exits.end(), exits_of[i].begin(), exits_of[i].end());
    }
    return exits;
  }

 private:
  std::unordered_map<core::Id, std::vector<const core::GraphNode*>> nodes_of_;
  std::unordered_map<core::Id, std::vector<const core::GraphEdge*>> edges_of_;
  std::set<core::Id> graphs_;
};

// The kernel, memcpy and memset nodes of a flattened graph with their nearest such predecessors.
std::vector<ReplayedGraph::Node> opNodes(const std::vector<FlatNode>& flat) {
  std::vector<ReplayedGraph::Node> ops;
  std::vector<std::vector<size_t>> op_preds(flat.size());  // per flat node: nearest op nodes before it
  std::vector<size_t> op_index(flat.size(), SIZE_MAX);
  for (size_t i = 0; i < flat.size(); ++i) {
    std::set<size_t> preds;
    for (size_t p : flat[i].preds) {
      if (op_index[p] != SIZE_MAX) {
        preds.insert(op_index[p]);
      } else {
        preds.insert(op_preds[p].begin(), op_preds[p].end());
      }
    }
    op_preds[i].assign(preds.begin(), preds.end());
    if (!isOp(flat[i].node->type)) continue;
    op_index[i] = ops.size();
    ops.push_back(ReplayedGraph::Node{flat[i].node->id, flat[i].node->type, 0, op_preds[i]});
  }
  return ops;
}

}  // namespace

GraphReplays expandGraphReplays(core::Trace& trace) {
  GraphReplays out;
  if (trace.graph_launches.empty()) return out;
  std::unordered_map<core::Id, const core::GraphExec*> execs;
  for (const core::GraphExec& e : trace.graph_execs) execs[e.id] = &e;
  // Replays per graph snapshot, in order of first replay.
  std::vector<core::Id> order;
  std::map<core::Id, std::vector<const core::GraphLaunch*>> launches_of;
  for (const core::GraphLaunch& l : trace.graph_launches) {
    auto e = execs.find(l.graph_exec_id);
    if (e == execs.end() || e->second->graph_id == core::kNoId) continue;
    auto& v = launches_of[e->second->graph_id];
    if (v.empty()) order.push_back(e->second->graph_id);
    v.push_back(&l);
  }
  const Flattener flattener(trace);
  std::unordered_map<core::Id, const core::GraphNode*> node_by_id;
  for (const core::GraphNode& n : trace.graph_nodes) node_by_id[n.id] = &n;
  for (core::Id gid : order) {
    std::vector<FlatNode> flat;
    if (!flattener.flatten(gid, {}, 0, flat)) continue;
    ReplayedGraph g;
    g.graph_id = gid;
    g.replays = static_cast<int64_t>(launches_of[gid].size());
    g.nodes = opNodes(flat);
    if (g.nodes.empty()) continue;
    out.graphs.push_back(std::move(g));
  }
  if (out.graphs.empty()) return out;

  out.first_launch = trace.launches.size();
  out.first_memcpy = trace.memcpys.size();
  out.first_memset = trace.memsets.size();
  auto nextId = [](const auto& records) {
    core::Id id = 0;
    for (const auto& r : records) id = std::max(id, r.id);
    return id + 1;
  };
  core::Id launch_id = nextId(trace.launches), memcpy_id = nextId(trace.memcpys), memset_id = nextId(trace.memsets);
  for (ReplayedGraph& g : out.graphs) {
    for (ReplayedGraph::Node& op : g.nodes) {
      const core::GraphNode& n = *node_by_id.at(op.node_id);
      switch (n.type) {
        case core::GraphNodeType::kKernel: {
          op.record_index = trace.launches.size();
          trace.launches.push_back(n.launch(launch_id++));
          break;
        }
        case core::GraphNodeType::kMemcpy: {
          core::Memcpy m;
          m.id = memcpy_id++;
          m.kind = n.memcpy_kind;
          m.src_address = n.src_address;
          m.dst_address = n.dst_address;
          m.src_allocation_id = n.src_allocation_id;
          m.dst_allocation_id = n.dst_allocation_id;
          m.bytes = n.bytes;
          m.async = true;
          op.record_index = trace.memcpys.size();
          trace.memcpys.push_back(m);
          break;
        }
        default: {
          core::Memset m;
          m.id = memset_id++;
          m.dst_address = n.dst_address;
          m.dst_allocation_id = n.dst_allocation_id;
          m.bytes = n.bytes;
          m.value = n.value;
          m.element_size = n.element_size;
          m.async = true;
          op.record_index = trace.memsets.size();
          trace.memsets.push_back(m);
          break;
        }
      }
    }
    core::Memset sentinel;
    sentinel.id = memset_id++;
    g.sentinel_memset = trace.memsets.size();
    trace.memsets.push_back(sentinel);
  }
  for (size_t gi = 0; gi < out.graphs.size(); ++gi) {
    for (const core::GraphLaunch* l : launches_of[out.graphs[gi].graph_id]) {
      core::Memset m;
      m.id = memset_id++;
      m.correlation_id = l->correlation_id;
      m.thread_id = l->thread_id;
      m.stream_id = l->stream_id;
      m.async = true;
      m.api_start_ns = l->api_start_ns;
      m.api_end_ns = l->api_end_ns;
      out.replays.push_back(GraphReplays::Replay{gi, l->id, trace.memsets.size()});
      trace.memsets.push_back(m);
    }
  }
  return out;
}

}  // namespace kfuse::analyzer
