// Advice for imported traces: kernel families, operator context, tensor data flow, operator bytes, remedies.
//
// Private to the analyzer. analyze.cpp keeps the search, legality proofs and cost model; where a trace has no
// PTX and no pointer arguments (PyTorch profiler, Nsight Systems) it asks the Advisor:
//  - whether two adjacent kernels may form a chain (kernel families; tensor data flow from an Execution Trace, or
//    inferred from operator shapes), also when their launch shapes differ (an epilogue fusion does not need them
//    equal);
//  - how many bytes and FLOPs a kernel moves (its operator's tensors, op_tensors.h);
//  - the per-tensor uses of a chain for the cost model's per-buffer rule (docs/analyzer.md, rule 5);
// and, once candidates are ranked, describes each one (members by operator, dtype and shape; module; fusion kind;
// remedies) and adds trace-level advice (launch-bound regions, CUDA graphs). docs/analyzer.md, "Operator context",
// "Kernel families", "Remedies".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "advice/kernel_families.h"
#include "advice/op_context.h"
#include "advice/op_tensors.h"
#include "cost/cost_model.h"
#include "import/execution_trace.h"
#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"

namespace kfuse::analyzer {

// A data-flow edge between two GPU operations through one tensor storage.
struct TensorEdge {
  size_t from = 0, to = 0;  // DependencyGraph op indices, from < to
  EdgeKind kind = EdgeKind::kRaw;
  int64_t storage = 0;  // the Execution Trace's storage id; 0 when inferred from shapes
  double bytes = 0;     // the tensor's size
  bool inferred = false;
};

class Advisor {
 public:
  Advisor(const ImportResult& input, const DependencyGraph& graph, const KernelCatalog& catalog);

  // Joins a PyTorch Execution Trace: tensor-level RAW / WAR / WAW edges per storage between the GPU operations
  // whose CPU operators the ET describes. Errors name the file.
  Status joinExecutionTrace(const std::string& path);
  // Without an ET: RAW edges where an operator's input has the dtype and element count of an earlier operator's
  // output on the same stream (the latest such output), marked inferred.
  void inferTensorFlow();

  const std::vector<TensorEdge>& tensorEdges() const { return edges_; }
  const std::string& tensorEdgesSource() const { return flow_source_; }
  const OpContextTable& context() const { return ctx_; }

  const KernelClass& kernelClass(size_t op) const;
  // The CPU operator of a graph op, nullptr when unknown.
  const OpContext* opContext(size_t op) const;

  // For a trace without pointer arguments: may adjacent kernels `a` -> `b` form a chain?
  enum class Link { kNoOpinion, kLink, kNoDataFlow, kFamiliesForbid, kSyncBetween };
  struct LinkVerdict {
    Link link = Link::kNoOpinion;
    PairRule rule;
  };
  LinkVerdict vertical(size_t a, size_t b) const;

  // Bytes / FLOPs of a kernel from its operator's tensors, shared among the kernels the operator launched.
  // nullopt when the operator or its shapes are not known.
  std::optional<double> operatorBytes(size_t op) const;
  std::optional<FlopCounts> operatorFlops(size_t op) const;

  // Per-tensor uses of a vertical chain (each kernel reads its operator's inputs and writes its output; a tensor
  // one kernel writes and a later one reads is one buffer), and per buffer whether it is read after the chain.
  // false when some kernel's operator, shapes or output are not known, or an operator launched several kernels.
  bool chainUses(const std::vector<size_t>& occ, std::vector<cost::UseBytes>& uses, std::vector<bool>& live) const;

  // For an epilogue fusion (a GEMM or convolution followed by elementwise work), the heavy kernel's position in
  // the chain; -1 otherwise (cost model: OccurrenceInput::anchor).
  int epilogueAnchor(const std::vector<size_t>& occ) const;

  // True when the Execution Trace shows a RAW edge between every two consecutive kernels of the occurrence.
  bool confirmedByExecutionTrace(const std::vector<size_t>& occ) const;

  // The tensor edges inside one occurrence, described (for Candidate::edges).
  std::vector<std::pair<EdgeKind, std::string>> describeEdges(const std::vector<size_t>& occ) const;

  // Fills the candidate's members, module, fusion kind, data-flow source, graph flag and remedies.
  void describe(Candidate& c, bool has_pointer_data, bool have_ptx) const;

  // Trace-level findings and counts: launch-bound regions (a CUDA graph would help), graphed work, notices.
  void summarize(Report& r) const;

 private:
  const ImportResult& in_;
  const DependencyGraph& g_;
  const KernelCatalog& cat_;
  OpContextTable ctx_;
  std::unordered_map<core::Id, KernelClass> classes_;  // by function id
  std::vector<uint32_t> kernels_per_op_;        // by graph op: how many GPU ops its operator issued (empty: none known)
  std::vector<std::vector<size_t>> edges_out_;  // by graph op: indices into edges_ (empty until an edge exists)
  std::vector<TensorEdge> edges_;
  std::string flow_source_;
  // ET: per graph op, the tensors its operator reads / writes (storage id, bytes).
  struct Use {
    int64_t storage = 0;
    double bytes = 0;
    bool write = false;
  };
  std::vector<std::vector<Use>> et_uses_;
  bool in_graph(size_t op) const;
  uint32_t kernelsOfOperator(size_t op) const { return kernels_per_op_.empty() ? 0 : kernels_per_op_[op]; }
  const std::vector<size_t>& edgesFrom(size_t op) const;
  void addEdge(const TensorEdge& e);
};

}  // namespace kfuse::analyzer
