// The dependency graph around a candidate (its first occurrence and the operations one edge away) or in a time
// window, laid out by graphviz's `dot` through libgvc. The result is plain geometry (points, in graphviz units of
// 1/72 inch, y growing downwards) that the GUI draws; no Qt here. Graphviz is not thread-safe: calls are
// serialised by a lock.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::gui {

struct GraphPoint {
  double x = 0, y = 0;
};

struct GraphNode {
  size_t op = 0;  // index into DependencyGraph::ops
  std::string label;
  std::string text;     // the label broken into lines ("\n") as graphviz sized the box for it
  bool member = false;  // of the candidate the graph is centred on
  analyzer::OpKind kind = analyzer::OpKind::kKernel;
  core::Id launch_id = core::kNoId;  // kernels
  GraphPoint center;
  double width = 0, height = 0;
};

struct GraphEdge {
  size_t from = 0, to = 0;  // indices into GraphLayout::nodes
  analyzer::EdgeKind kind = analyzer::EdgeKind::kStreamOrder;
  bool inferred = false;
  std::string label;               // "RAW: ..." (kind and a short reason)
  std::string reason;              // DependencyGraph::describe()
  std::vector<GraphPoint> spline;  // cubic Bézier control points: p0, (c1, c2, p)...
  bool has_arrow = false;
  GraphPoint arrow_tip;
  GraphPoint label_pos;
};

struct GraphLayout {
  double width = 0, height = 0;
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
  size_t omitted_nodes = 0;  // neighbours left out to keep the graph readable
};

// The analyzer's kernel facts and dependency graph of a session's trace (analyze() builds the same ones inside; a
// candidate's occurrence op indices index this graph's ops). Built on demand, off the UI thread.
struct DependencyContext {
  analyzer::KernelCatalog catalog;
  analyzer::DependencyGraph graph;
};
DependencyContext buildDependencyContext(const core::Trace& trace);

// The operations to show: the ops of `centre` plus their neighbours `radius` edges away, at most `max_nodes`.
std::vector<size_t> neighbourhood(const analyzer::DependencyGraph& graph, const std::vector<size_t>& centre, int radius,
                                  size_t max_nodes, size_t* omitted = nullptr);
// Operations issued in [t0, t1) (by issue order time), at most `max_nodes`.
std::vector<size_t> opsInWindow(const analyzer::DependencyGraph& graph, int64_t t0, int64_t t1, size_t max_nodes);

// Lays out `ops` and the edges among them with dot. `members` are marked, and named by `member_labels` (the same
// order; the candidate's MemberContext::label, "aten::add bf16[1,141,512]") where given and not empty, else by their
// short kernel names. Edge labels carry the kind and a reason shortened to `max_label` characters.
Expected<GraphLayout> layoutGraph(const analyzer::DependencyGraph& graph, const core::Trace& trace,
                                  const analyzer::KernelCatalog& catalog, const std::vector<size_t>& ops,
                                  const std::vector<size_t>& members, size_t max_label = 48,
                                  const std::vector<std::string>& member_labels = {});

}  // namespace kfuse::gui
