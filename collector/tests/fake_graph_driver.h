// A fake CUDA graph driver for the collector's tests: graphs and nodes are these structs, their handles the structs'
// addresses; the f* functions answer the driver's graph queries (cuGraphGetNodes, cuGraphGetEdges_v2,
// cuGraphNodeGetType, the node parameter getters) from them, for a hooks::DriverTable.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <vector>

namespace kfuse::collector::fake_graph {

struct FakeNode {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUDA_KERNEL_NODE_PARAMS kernel{};
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUDA_MEMCPY3D copy{};
  CUgraph child = nullptr;
};
struct FakeGraph {
  std::vector<FakeNode*> nodes;
  std::vector<std::pair<FakeNode*, FakeNode*>> edges;
};
inline FakeGraph* graphOf(CUgraph g) {
  return reinterpret_cast<FakeGraph*>(g);
}
inline FakeNode* nodeOf(CUgraphNode n) {
  return reinterpret_cast<FakeNode*>(n);
}
inline CUgraph handle(FakeGraph& g) {
  return reinterpret_cast<CUgraph>(&g);
}
inline CUgraphNode handle(FakeNode& n) {
  return reinterpret_cast<CUgraphNode>(&n);
}

inline CUresult CUDAAPI fGetNodes(CUgraph g, CUgraphNode* out, size_t* n) {
  const auto& nodes = graphOf(g)->nodes;
  if (out) {
    *n = std::min(*n, nodes.size());
    for (size_t i = 0; i < *n; ++i) out[i] = reinterpret_cast<CUgraphNode>(nodes[i]);
  } else {
    *n = nodes.size();
  }
  return CUDA_SUCCESS;
}
inline CUresult CUDAAPI fGetEdges(CUgraph g, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data, size_t* n) {
  const auto& edges = graphOf(g)->edges;
  if (from) {
    *n = std::min(*n, edges.size());
    for (size_t i = 0; i < *n; ++i) {
      from[i] = reinterpret_cast<CUgraphNode>(edges[i].first);
      to[i] = reinterpret_cast<CUgraphNode>(edges[i].second);
      if (data) data[i] = CUgraphEdgeData{};
    }
  } else {
    *n = edges.size();
  }
  return CUDA_SUCCESS;
}
inline CUresult CUDAAPI fNodeType(CUgraphNode n, CUgraphNodeType* t) {
  *t = nodeOf(n)->type;
  return CUDA_SUCCESS;
}
inline CUresult CUDAAPI fKernelParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS* p) {
  *p = nodeOf(n)->kernel;
  return CUDA_SUCCESS;
}
inline CUresult CUDAAPI fMemsetParams(CUgraphNode n, CUDA_MEMSET_NODE_PARAMS* p) {
  *p = nodeOf(n)->memset;
  return CUDA_SUCCESS;
}
inline CUresult CUDAAPI fMemcpyParams(CUgraphNode n, CUDA_MEMCPY3D* p) {
  *p = nodeOf(n)->copy;
  return CUDA_SUCCESS;
}
inline CUresult CUDAAPI fChildGraph(CUgraphNode n, CUgraph* g) {
  *g = nodeOf(n)->child;
  return CUDA_SUCCESS;
}

}  // namespace kfuse::collector::fake_graph
