// The CUDA graphs a trace's replays ran (trace schema 4: graph, graph_node, graph_edge, graph_exec, graph_launch),
// made into records the dependency graph can hold. Private to the analyzer.
//
// Each graph snapshot that some recorded cuGraphLaunch ran becomes one ReplayedGraph: its kernel, memcpy and memset
// nodes with child graphs inlined, in a topological order of the graph's edges, each with its nearest predecessors
// among those nodes (edges through empty, event, host, memory-allocation and child-graph nodes followed). A graph
// with a node whose work the trace does not describe (kOther: semaphores, conditional bodies, ...), a cycle, or a
// child graph that is missing or nested too deep is not replayed here: its launches stay unseen work.
#pragma once

#include <cstdint>
#include <vector>

#include "kfuse/core/trace.h"

namespace kfuse::analyzer {

struct ReplayedGraph {
  core::Id graph_id = core::kNoId;
  int64_t replays = 0;  // graph_launch rows whose exec runs this snapshot
  struct Node {
    core::Id node_id = core::kNoId;
    core::GraphNodeType type = core::GraphNodeType::kKernel;  // kKernel, kMemcpy or kMemset
    size_t record_index = 0;    // into the expanded trace's launches, memcpys or memsets (by type)
    std::vector<size_t> preds;  // indices into `nodes` of the nearest predecessors, ascending
  };
  std::vector<Node> nodes;     // topological order
  size_t sentinel_memset = 0;  // a zero-byte memset record standing for "after the replay" (liveness)
};

struct GraphReplays {
  std::vector<ReplayedGraph> graphs;
  // Records of the expanded trace from these indices on were made here, not recorded one by one.
  size_t first_launch = 0, first_memcpy = 0, first_memset = 0;
  // One per graph_launch row that runs a graph of `graphs`: a zero-byte memset record placed where the launch was
  // issued (its stream, its API time), standing for the replay's work on the launch timeline.
  struct Replay {
    size_t graph = 0;  // index into `graphs`
    core::Id graph_launch_id = core::kNoId;
    size_t memset_index = 0;
  };
  std::vector<Replay> replays;
  bool empty() const { return graphs.empty(); }
};

// Appends to `trace` a Launch per kernel node, a Memcpy or Memset per memcpy or memset node of every replayed
// graph (ids after the trace's own), a zero-byte Memset per recorded replay and one per graph (see above), and
// says where they are. Leaves `trace` unchanged and returns an empty result when no graph launch can be replayed.
GraphReplays expandGraphReplays(core::Trace& trace);

}  // namespace kfuse::analyzer
