// Remedies: what a user does about a recommendation, in their own terms.
//
// Private to the analyzer. A candidate's fusion kind, its members' kernel families and CPU operators, the module
// it sits in, whether it runs inside a CUDA graph and whether the trace has PTX decide which remedies apply, best
// first (docs/analyzer.md, "Remedies"). Pure and thread-safe.
#pragma once

#include <string>
#include <vector>

#include "advice/kernel_families.h"
#include "kfuse/analyzer/analysis.h"

namespace kfuse::analyzer {

struct RemedyInput {
  CandidateKind kind = CandidateKind::kVertical;
  FamilyFusion fusion = FamilyFusion::kNone;
  std::vector<KernelFamily> families;  // per member
  std::vector<std::string> ops;        // per member: the CPU operator ("aten::gelu"), "" when unknown
  std::string module;                  // where it sits ("BertLayer_0.BertOutput_0"), "" when unknown
  bool kfuse_trace_with_ptx = false;   // every member has PTX in the trace (kfuse rewrite can act)
  bool proven = false;
  bool in_cuda_graph = false;
  bool graph_nodes = false;  // the trace recorded the graph's kernel nodes (kfuse rewrite works from them)
  int rank = 0;
  std::string id;  // the candidate's stable id, which the kfuse-rewrite remedy names ("" : its rank instead)
};

std::vector<Remedy> remediesFor(const RemedyInput& in);

}  // namespace kfuse::analyzer
