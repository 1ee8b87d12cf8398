#include "kfuse/gui/graph_layout.h"

#include <graphviz/gvc.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace kfuse::gui {

DependencyContext buildDependencyContext(const core::Trace& trace) {
  DependencyContext c;
  c.catalog = analyzer::KernelCatalog::build(trace);
  c.graph = analyzer::DependencyGraph::build(trace, c.catalog);
  return c;
}

std::vector<size_t> neighbourhood(const analyzer::DependencyGraph& graph, const std::vector<size_t>& centre, int radius,
                                  size_t max_nodes, size_t* omitted) {
  std::set<size_t> seen;
  std::deque<std::pair<size_t, int>> queue;
  for (size_t op : centre) {
    if (op < graph.ops.size() && seen.insert(op).second) queue.emplace_back(op, 0);
  }
  size_t dropped = 0;
  while (!queue.empty()) {
    const size_t op = queue.front().first;
    const int d = queue.front().second;  // not a structured binding: clang 14 cannot capture one in the lambda below
    queue.pop_front();
    if (d >= radius) continue;
    auto visit = [&](size_t other) {
      if (seen.count(other)) return;
      if (seen.size() >= max_nodes) {
        ++dropped;
        return;
      }
      seen.insert(other);
      queue.emplace_back(other, d + 1);
    };
    for (size_t e : graph.in_edges[op]) visit(graph.edges[e].from);
    for (size_t e : graph.out_edges[op]) visit(graph.edges[e].to);
  }
  if (omitted) *omitted = dropped;
  return {seen.begin(), seen.end()};
}

std::vector<size_t> opsInWindow(const analyzer::DependencyGraph& graph, int64_t t0, int64_t t1, size_t max_nodes) {
  std::vector<size_t> out;
  for (size_t i = 0; i < graph.ops.size() && out.size() < max_nodes; ++i) {
    const analyzer::GpuOp& op = graph.ops[i];
    const int64_t t = op.gpu_start_ns != core::kNoTime ? op.gpu_start_ns : op.order_ns;
    if (t >= t0 && t < t1) out.push_back(i);
  }
  return out;
}

namespace {

std::mutex& graphvizLock() {
  static std::mutex m;
  return m;
}

// One graphviz context for the life of the process (under graphvizLock). A context per layout leaks what graphviz
// allocates when it loads its plugins, and its pango text-layout plugin keeps a pointer to the last font name it
// measured, which the next context's first label then compares against freed memory (found by ASan).
GVC_t* graphvizContext() {
  static GVC_t* const gvc = gvContext();
  return gvc;
}

std::string shorten(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  return s.substr(0, max > 1 ? max - 1 : 0) + "…";
}

// `s` broken into lines of about `width` characters at spaces.
std::string breakLines(const std::string& s, size_t width) {
  std::string out;
  size_t col = 0;
  for (char c : s) {
    if (c == ' ' && col >= width) {
      out += '\n';
      col = 0;
      continue;
    }
    out += c;
    ++col;
  }
  return out;
}

// Breaks `s` into lines of about `width` characters at spaces (graphviz "\n" escapes).
std::string wrap(const std::string& s, size_t width) {
  std::string out;
  size_t col = 0;
  for (char c : s) {
    if (c == ' ' && col >= width) {
      out += "\\n";
      col = 0;
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
    ++col;
  }
  return out;
}

}  // namespace

Expected<GraphLayout> layoutGraph(const analyzer::DependencyGraph& graph, const core::Trace& trace,
                                  const analyzer::KernelCatalog& catalog, const std::vector<size_t>& ops,
                                  const std::vector<size_t>& members, size_t max_label,
                                  const std::vector<std::string>& member_labels) {
  GraphLayout out;
  std::map<size_t, size_t> node_of_op;
  std::vector<size_t> sorted = ops;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const std::set<size_t> member_set(members.begin(), members.end());
  for (size_t op : sorted) {
    if (op >= graph.ops.size()) return invalidArgument("operation " + std::to_string(op) + " is not in the graph");
    const analyzer::GpuOp& g = graph.ops[op];
    GraphNode n;
    n.op = op;
    n.kind = g.kind;
    n.member = member_set.count(op) > 0;
    switch (g.kind) {
      case analyzer::OpKind::kKernel: {
        const analyzer::KernelFacts* f = catalog.find(g.function_id);
        n.label = analyzer::shortKernelName(f ? f->name : "kernel", 32);
        for (size_t i = 0; i < members.size() && i < member_labels.size(); ++i) {
          if (members[i] == op && !member_labels[i].empty()) n.label = member_labels[i];
        }
        n.launch_id = g.record_id;
        break;
      }
      case analyzer::OpKind::kMemcpy: n.label = "memcpy"; break;
      case analyzer::OpKind::kMemset: n.label = "memset"; break;
    }
    n.label = "#" + std::to_string(op) + " " + n.label;
    node_of_op[op] = out.nodes.size();
    out.nodes.push_back(std::move(n));
  }
  for (size_t op : sorted) {
    for (size_t ei : graph.out_edges[op]) {
      const analyzer::Edge& e = graph.edges[ei];
      auto to = node_of_op.find(e.to);
      if (to == node_of_op.end()) continue;
      GraphEdge ge;
      ge.from = node_of_op[op];
      ge.to = to->second;
      ge.kind = e.kind;
      ge.inferred = e.inferred;
      ge.reason = graph.describe(e, trace, catalog);
      ge.label = std::string(analyzer::edgeKindName(e.kind)) + (e.inferred ? " (inferred)" : "") + ": " +
                 shorten(ge.reason, max_label);
      out.edges.push_back(std::move(ge));
    }
  }

  std::lock_guard<std::mutex> lock(graphvizLock());
  GVC_t* gvc = graphvizContext();
  if (!gvc) return internalError("graphviz: gvContext() failed");
  Agraph_t* g = agopen(const_cast<char*>("deps"), Agdirected, nullptr);
  agsafeset(g, const_cast<char*>("rankdir"), const_cast<char*>("TB"), const_cast<char*>(""));
  agsafeset(g, const_cast<char*>("nodesep"), const_cast<char*>("0.4"), const_cast<char*>(""));
  agsafeset(g, const_cast<char*>("ranksep"), const_cast<char*>("0.6"), const_cast<char*>(""));
  std::vector<Agnode_t*> gn;
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    const std::string name = "n" + std::to_string(i);
    Agnode_t* n = agnode(g, const_cast<char*>(name.c_str()), 1);
    agsafeset(n, const_cast<char*>("shape"), const_cast<char*>("box"), const_cast<char*>(""));
    agsafeset(n, const_cast<char*>("fontsize"), const_cast<char*>("10"), const_cast<char*>(""));
    out.nodes[i].text = breakLines(out.nodes[i].label, 24);
    const std::string label = wrap(out.nodes[i].label, 24);
    agsafeset(n, const_cast<char*>("label"), const_cast<char*>(label.c_str()), const_cast<char*>(""));
    gn.push_back(n);
  }
  std::vector<Agedge_t*> ge;
  for (size_t i = 0; i < out.edges.size(); ++i) {
    const std::string name = "e" + std::to_string(i);
    Agedge_t* e = agedge(g, gn[out.edges[i].from], gn[out.edges[i].to], const_cast<char*>(name.c_str()), 1);
    agsafeset(e, const_cast<char*>("fontsize"), const_cast<char*>("8"), const_cast<char*>(""));
    const std::string label = wrap(out.edges[i].label, 28);
    agsafeset(e, const_cast<char*>("label"), const_cast<char*>(label.c_str()), const_cast<char*>(""));
    ge.push_back(e);
  }
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    return internalError("graphviz: dot layout failed (is the dot layout plugin installed? libgvplugin_dot_layout)");
  }
  const boxf bb = GD_bb(g);
  out.width = bb.UR.x - bb.LL.x;
  out.height = bb.UR.y - bb.LL.y;
  auto flip = [&](pointf p) { return GraphPoint{p.x - bb.LL.x, bb.UR.y - p.y}; };
  for (size_t i = 0; i < gn.size(); ++i) {
    out.nodes[i].center = flip(ND_coord(gn[i]));
    out.nodes[i].width = ND_width(gn[i]) * 72.0;
    out.nodes[i].height = ND_height(gn[i]) * 72.0;
  }
  for (size_t i = 0; i < ge.size(); ++i) {
    const splines* spl = ED_spl(ge[i]);
    if (spl && spl->size > 0) {
      const bezier& bz = spl->list[0];
      for (int k = 0; k < bz.size; ++k) out.edges[i].spline.push_back(flip(bz.list[k]));
      if (bz.eflag) {
        out.edges[i].has_arrow = true;
        out.edges[i].arrow_tip = flip(bz.ep);
      }
    }
    if (const textlabel_t* l = ED_label(ge[i])) out.edges[i].label_pos = flip(l->pos);
  }
  gvFreeLayout(gvc, g);
  agclose(g);
  return out;
}

}  // namespace kfuse::gui
