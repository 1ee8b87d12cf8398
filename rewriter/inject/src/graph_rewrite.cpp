// Injector::Impl, graphs: at cuGraphInstantiate* and cuGraphExecUpdate, the graph is cloned and every node chain
// matching a plan is replaced in the clone by one kernel node running the fused kernel; the clone is instantiated
// beside the application's graph and launched in its place (graph_execs.cpp). The application's graph is never
// modified: its CUgraph handle keeps referring to the original.
//
// A chain is a plan's kernels in order, each after a direct edge from an earlier node of the chain, such that no
// path leaves the chain and comes back into it (no node outside runs between two of its kernels) and no edge
// between two of its nodes runs against the plan's order. For a horizontal plan it is the plan's kernels on
// separate branches instead: no path between any two of them (they are independent in the graph, as the analysis
// found them in the recorded one). The fused node takes every edge into the chain from
// outside and gives every edge out of it: what ran before any of its kernels runs before it, what ran after any of
// them runs after it, and since it writes everything they wrote, every dependent still reads what it read. Stream
// capture makes such chains out of a stream's kernels, with the extra edges its events add (a kernel that forked a
// second stream and is also the stream order's predecessor of the join). The plan's predicates are checked on the
// nodes' kernel parameters and shapes, as on a launch's.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "injector_impl.h"

namespace kfuse::inject {
namespace {

using core::LaunchShape;
using hooks::DriverTable;
using rewriter::Predicate;

// Child graphs nested deeper than this are left as they are.
constexpr int kMaxGraphDepth = 8;

bool defaultEdge(const CUgraphEdgeData& e) {
  static const CUgraphEdgeData kDefault{};
  return std::memcmp(&e, &kDefault, sizeof e) == 0;
}

struct NodeInfo {
  CUgraphNode handle = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  int identity = kUnknownIdentity;
  CUDA_KERNEL_NODE_PARAMS params{};
  std::vector<size_t> in, out;  // edge indices
  bool used = false;            // already part of a replaced chain
};

}  // namespace

bool Injector::Impl::rewriteClone(CUgraph graph, RewrittenClone* out) {
  auto clone_fn = table().GraphClone.load();
  auto destroy = table().GraphDestroyDirect.load();
  auto get_nodes = table().GraphGetNodes.load();
  auto find = table().GraphNodeFindInClone.load();
  if (!options.rewrite_graphs || t_inside || !graph || plans.empty() || enabledMask() == 0 || !clone_fn || !destroy)
    return false;
  Inside inside;
  CUgraph clone = nullptr;
  if (clone_fn(&clone, graph) != CUDA_SUCCESS || !clone) return false;
  // Where the application's nodes are in the clone, read before the chains' nodes leave it. Without
  // cuGraphNodeFindInClone nothing is known: every per-node setter then makes the application's exec run.
  std::unordered_map<CUgraphNode, CUgraphNode> nodes;
  size_t n = 0;
  if (find && get_nodes && get_nodes(graph, nullptr, &n) == CUDA_SUCCESS) {
    std::vector<CUgraphNode> handles(n);
    if (n && get_nodes(graph, handles.data(), &n) != CUDA_SUCCESS) n = 0;
    for (size_t i = 0; i < n && i < handles.size(); ++i) {
      CUgraphNode mine = nullptr;
      if (find(&mine, handles[i], clone) == CUDA_SUCCESS && mine) nodes.emplace(handles[i], mine);
    }
  }
  std::unordered_set<CUgraphNode> removed;
  std::vector<GraphChain> checks;
  const int replaced = rewriteInPlace(clone, 0, &removed, options.validate > 0 ? &checks : nullptr);
  if (replaced <= 0) {
    (void)destroy(clone);
    if (replaced == -1) std::fprintf(stderr, "kfuse run: a graph could not be rewritten; it runs unchanged\n");
    if (replaced == kUntouchable && options.log) {
      std::fprintf(stderr,
                   "kfuse run: a graph with memory allocation, free, conditional or device-updatable kernel nodes is "
                   "left unchanged\n");
    }
    return false;
  }
  std::erase_if(nodes, [&](const auto& entry) { return removed.count(entry.second) != 0; });
  out->graph = clone;
  out->nodes = std::move(nodes);
  out->chains = replaced;
  out->checks = std::move(checks);
  return true;
}

int Injector::Impl::rewriteInPlace(CUgraph g, int depth, std::unordered_set<CUgraphNode>* removed,
                                   std::vector<GraphChain>* checks) {
  DriverTable& t = table();
  auto get_nodes = t.GraphGetNodes.load();
  auto get_edges = t.GraphGetEdges.load();
  auto get_type = t.GraphNodeGetType.load();
  auto get_params = t.GraphKernelNodeGetParams.load();
  auto child_of = t.GraphChildGraphNodeGetGraph.load();
  auto get_attribute = t.GraphKernelNodeGetAttribute.load();
  auto add_node = t.GraphAddKernelNode.load();
  auto add_deps = t.GraphAddDependencies.load();
  auto destroy_node = t.GraphDestroyNode.load();
  if (!get_nodes || !get_edges || !get_type || !get_params || !add_node || !add_deps || !destroy_node) return -1;
  Inside inside;

  size_t n = 0;
  if (get_nodes(g, nullptr, &n) != CUDA_SUCCESS) return -1;
  std::vector<CUgraphNode> handles(n);
  if (n && get_nodes(g, handles.data(), &n) != CUDA_SUCCESS) return -1;
  handles.resize(n);
  size_t m = 0;
  if (get_edges(g, nullptr, nullptr, nullptr, &m) != CUDA_SUCCESS) return -1;
  std::vector<CUgraphNode> from(m), to(m);
  std::vector<CUgraphEdgeData> data(m);
  if (m && get_edges(g, from.data(), to.data(), data.data(), &m) != CUDA_SUCCESS) return -1;

  std::vector<NodeInfo> nodes(n);
  std::vector<std::vector<size_t>> groups;  // the nodes of each chain replaced so far
  std::vector<size_t> group_of(n, SIZE_MAX);
  std::unordered_map<CUgraphNode, size_t> index;
  int replaced = 0;
  for (size_t i = 0; i < n; ++i) {
    NodeInfo& node = nodes[i];
    node.handle = handles[i];
    index[handles[i]] = i;
    if (get_type(handles[i], &node.type) != CUDA_SUCCESS) return -1;
    // The application's exec and the rewritten one both exist: a graph's allocations must not be made twice, and
    // what the device sets in the application's exec (conditional handles, device-updatable kernel nodes) would not
    // reach the rewritten one.
    if (node.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || node.type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
        node.type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
      return kUntouchable;
    }
    if (node.type == CU_GRAPH_NODE_TYPE_KERNEL && get_attribute) {
      CUkernelNodeAttrValue value{};
      if (get_attribute(handles[i], CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &value) == CUDA_SUCCESS &&
          value.deviceUpdatableKernelNode.deviceUpdatable) {
        return kUntouchable;
      }
    }
    if (node.type == CU_GRAPH_NODE_TYPE_GRAPH && child_of && depth < kMaxGraphDepth) {
      CUgraph child = nullptr;
      if (child_of(handles[i], &child) != CUDA_SUCCESS || !child) return -1;
      // The node owns its graph: changes show in the node.
      const int r = rewriteInPlace(child, depth + 1, nullptr, checks);
      if (r < 0) return r;
      replaced += r;
    } else if (node.type == CU_GRAPH_NODE_TYPE_KERNEL) {
      if (get_params(handles[i], &node.params) != CUDA_SUCCESS) return -1;
      CUfunction f = node.params.func ? node.params.func : reinterpret_cast<CUfunction>(node.params.kern);
      node.params.func = f;
      node.identity = identify(f);
    }
  }
  for (size_t e = 0; e < m; ++e) {
    const auto a = index.find(from[e]), b = index.find(to[e]);
    if (a == index.end() || b == index.end()) return -1;
    nodes[a->second].out.push_back(e);
    nodes[b->second].in.push_back(e);
  }

  // Chain nodes already replaced -> their fused node: the edges read above still name them.
  std::unordered_map<CUgraphNode, CUgraphNode> fused_for;
  const auto current = [&](CUgraphNode h) {
    const auto it = fused_for.find(h);
    return it == fused_for.end() ? h : it->second;
  };
  const auto add_unique = [](std::vector<CUgraphNode>& v, CUgraphNode h) {
    if (std::find(v.begin(), v.end(), h) == v.end()) v.push_back(h);
  };
  const auto position = [](const std::vector<size_t>& chain, size_t i) {
    return static_cast<size_t>(std::find(chain.begin(), chain.end(), i) - chain.begin());
  };
  // Whether `chain` can become one node: its inner edges follow the plan's order, and no path leaves it and comes
  // back (a chain replaced before is one node: a path into any of its nodes goes on from all of them).
  const auto contractible = [&](const std::vector<size_t>& chain) {
    std::vector<size_t> stack;
    std::unordered_set<size_t> seen;
    const auto visit = [&](size_t i) {
      if (!seen.insert(i).second) return;
      if (group_of[i] == SIZE_MAX) {
        stack.push_back(i);
      } else {
        for (size_t member : groups[group_of[i]]) {
          if (member == i || seen.insert(member).second) stack.push_back(member);
        }
      }
    };
    for (size_t k = 0; k < chain.size(); ++k) {
      for (size_t e : nodes[chain[k]].out) {
        const size_t succ = index.at(to[e]);
        const size_t at = position(chain, succ);
        if (at == chain.size()) {
          visit(succ);
        } else if (at <= k) {
          return false;
        }
      }
    }
    while (!stack.empty()) {
      const size_t i = stack.back();
      stack.pop_back();
      for (size_t e : nodes[i].out) {
        const size_t succ = index.at(to[e]);
        if (position(chain, succ) != chain.size()) return false;
        visit(succ);
      }
    }
    return true;
  };
  // Whether a path leads from node `a` to node `b` (a chain replaced before is one node, as above).
  std::vector<char> seen(n, 0);
  const auto reaches = [&](size_t a, size_t b) {
    std::fill(seen.begin(), seen.end(), 0);
    std::vector<size_t> stack;
    const auto visit = [&](size_t i) {
      if (seen[i]) return;
      seen[i] = 1;
      stack.push_back(i);
      if (group_of[i] == SIZE_MAX) return;
      for (size_t member : groups[group_of[i]]) {
        if (!seen[member]) {
          seen[member] = 1;
          stack.push_back(member);
        }
      }
    };
    visit(a);
    while (!stack.empty()) {
      const size_t i = stack.back();
      stack.pop_back();
      for (size_t e : nodes[i].out) {
        const size_t succ = index.at(to[e]);
        if (succ == b) return true;
        visit(succ);
      }
      if (seen[b]) return true;
    }
    return false;
  };
  const size_t per_slot = kMaxPatternKernels * arg_stride;
  std::vector<uint8_t> args(std::max<size_t>(per_slot, 1)), verified(std::max<size_t>(per_slot, 1));
  const uint64_t enabled = enabledMask();
  for (size_t pi = 0; pi < plans.size(); ++pi) {
    const uint64_t bit = uint64_t{1} << pi;
    if (!(enabled & bit)) continue;
    PlanState& st = *plans[pi];
    const RuntimePlan& p = st.plan;
    const size_t len = p.kernels.size();
    if (len < 1 || len > static_cast<size_t>(kMaxPatternKernels)) continue;
    if (p.drops_stores) {
      if (options.log) {
        std::fprintf(stderr, "kfuse run: %s: drops stores of intermediates (--aggressive): not applied to graphs\n",
                     p.dir.c_str());
      }
      continue;
    }
    for (size_t start = 0; start < n; ++start) {
      const auto plan_kernel = [&](size_t i, size_t k) {
        const NodeInfo& node = nodes[i];
        return !node.used && node.identity >= 0 && (identities[static_cast<size_t>(node.identity)].at[k] & bit);
      };
      if (!plan_kernel(start, 0)) continue;
      std::vector<size_t> chain{start};
      if (p.fusion == core::FusionKind::kHorizontal) {
        // Independent kernels: each next one a node no path links to any already taken (the first in node order),
        // so the one fused node they become is ordered after all their predecessors and before all their
        // dependents without closing a cycle.
        while (chain.size() < len) {
          size_t next = SIZE_MAX;
          for (size_t i = 0; i < n && next == SIZE_MAX; ++i) {
            if (position(chain, i) != chain.size() || !plan_kernel(i, chain.size())) continue;
            const bool apart =
                std::none_of(chain.begin(), chain.end(), [&](size_t c) { return reaches(c, i) || reaches(i, c); });
            if (apart) next = i;
          }
          if (next == SIZE_MAX) break;
          chain.push_back(next);
        }
        if (chain.size() != len) continue;
      } else {
        // Each next kernel: a direct dependent of the chain's nodes, of the latest first.
        while (chain.size() < len) {
          size_t next = SIZE_MAX;
          for (auto it = chain.rbegin(); it != chain.rend() && next == SIZE_MAX; ++it) {
            for (size_t e : nodes[*it].out) {
              const size_t succ = index.at(to[e]);
              if (position(chain, succ) == chain.size() && plan_kernel(succ, chain.size())) {
                next = succ;
                break;
              }
            }
          }
          if (next == SIZE_MAX) break;
          chain.push_back(next);
        }
        if (chain.size() != len || !contractible(chain)) continue;
      }
      bool plain_edges = true;
      for (size_t i : chain) {
        for (size_t e : nodes[i].in) plain_edges = plain_edges && defaultEdge(data[e]);
        for (size_t e : nodes[i].out) plain_edges = plain_edges && defaultEdge(data[e]);
      }

      // The predicates, on the nodes' arguments and shapes laid out as a stream slot holds deferred launches.
      StreamSlot s;
      std::fill(args.begin(), args.end(), uint8_t{0});
      s.args = args.data();
      s.verified = verified.data();
      s.viable = bit;
      bool captured = plain_edges;
      for (size_t k = 0; k < len && captured; ++k) {
        const CUDA_KERNEL_NODE_PARAMS& kp = nodes[chain[k]].params;
        PendingLaunch& l = s.launches[k];
        l.f = kp.func;
        l.grid[0] = kp.gridDimX, l.grid[1] = kp.gridDimY, l.grid[2] = kp.gridDimZ;
        l.block[0] = kp.blockDimX, l.block[1] = kp.blockDimY, l.block[2] = kp.blockDimZ;
        l.shmem = kp.sharedMemBytes;
        captured = capture(s, static_cast<int>(k), p.kernels[k], kp.kernelParams, kp.extra);
      }
      s.count = static_cast<int>(len);
      if (!captured) {
        graph_chains_refused.fetch_add(1, std::memory_order_relaxed);
        if (options.log) {
          std::fprintf(stderr, "kfuse run: %s: a graph chain's parameters or edges cannot be read; left unchanged\n",
                       p.dir.c_str());
        }
        continue;
      }
      bool reusable = false;
      int row = 0;
      const int failed = failingPredicate(s, st, &reusable, &row);
      if (failed >= 0) {
        const Predicate::Kind kind = p.predicates[static_cast<size_t>(failed)].kind;
        st.predicate_failures[static_cast<int>(kind)].fetch_add(1);
        graph_chains_refused.fetch_add(1, std::memory_order_relaxed);
        if (options.log) {
          std::fprintf(stderr, "kfuse run: %s: predicate %d (%s) does not hold for a graph chain; left unchanged\n",
                       p.dir.c_str(), failed, rewriter::predicateKindName(kind));
        }
        continue;
      }
      CUfunction fn = fusedFunction(pi);
      if (!fn) {
        graph_chains_refused.fetch_add(1, std::memory_order_relaxed);
        continue;
      }

      void* ptrs[kMaxParams];
      for (size_t i = 0; i < p.fused_args.size(); ++i) ptrs[i] = const_cast<uint8_t*>(argBytes(s, p, p.fused_args[i]));
      const LaunchShape& shape = p.fused_shape;
      CUDA_KERNEL_NODE_PARAMS fused{};
      fused.func = fn;
      fused.gridDimX = shape.grid.x, fused.gridDimY = shape.grid.y, fused.gridDimZ = shape.grid.z;
      fused.blockDimX = shape.block.x, fused.blockDimY = shape.block.y, fused.blockDimZ = shape.block.z;
      fused.sharedMemBytes = shape.dynamic_shared_bytes;
      fused.kernelParams = ptrs;
      fused.ctx = nodes[chain[0]].params.ctx;
      std::vector<CUgraphNode> deps, dependents;
      for (size_t i : chain) {
        for (size_t e : nodes[i].in) {
          if (position(chain, index.at(from[e])) == chain.size()) add_unique(deps, current(from[e]));
        }
        for (size_t e : nodes[i].out) {
          if (position(chain, index.at(to[e])) == chain.size()) add_unique(dependents, current(to[e]));
        }
      }
      CUgraphNode node = nullptr;
      // A failure from here on leaves the clone half changed: the caller discards it.
      if (add_node(&node, g, deps.data(), deps.size(), &fused) != CUDA_SUCCESS || !node) return -1;
      if (!dependents.empty()) {
        const std::vector<CUgraphNode> sources(dependents.size(), node);
        if (add_deps(g, sources.data(), dependents.data(), nullptr, dependents.size()) != CUDA_SUCCESS) return -1;
      }
      for (size_t i : chain) {
        if (destroy_node(nodes[i].handle) != CUDA_SUCCESS) return -1;
        if (removed) removed->insert(nodes[i].handle);
        nodes[i].used = true;
        fused_for[nodes[i].handle] = node;
        group_of[i] = groups.size();
      }
      groups.push_back(chain);
      ++replaced;
      if (checks) {
        GraphChain& c = checks->emplace_back();
        c.plan = pi;
        c.count = s.count;
        std::copy(s.launches, s.launches + len, c.launches);
        c.args.assign(s.args, s.args + len * arg_stride);
      }
      if (options.log) {
        std::fprintf(stderr, "kfuse run: %s: fused a chain of %zu graph nodes\n", p.dir.c_str(), len);
      }
    }
  }
  return replaced;
}

}  // namespace kfuse::inject
