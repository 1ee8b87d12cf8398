// Remedies: rules from fusion kind, families and operators to the action a user takes.
#include "advice/remedies.h"

#include <algorithm>

namespace kfuse::analyzer {

namespace {

bool has(const std::vector<std::string>& ops, std::initializer_list<std::string_view> names) {
  for (const std::string& op : ops) {
    for (std::string_view n : names) {
      if (op == n) return true;
    }
  }
  return false;
}

bool hasPrefix(const std::vector<std::string>& ops, std::string_view prefix) {
  return std::any_of(ops.begin(), ops.end(), [&](const std::string& op) { return op.rfind(prefix, 0) == 0; });
}

std::string where(const RemedyInput& in) {
  return in.module.empty() ? "the code that runs these operators" : "`" + in.module + "`";
}

}  // namespace

std::vector<Remedy> remediesFor(const RemedyInput& in) {
  std::vector<Remedy> out;
  if (in.kfuse_trace_with_ptx) {
    const std::string rewrite = std::string(in.proven ? "" : "after checking the data flow by hand, ") +
                                "`kfuse rewrite TRACE --candidate " +
                                (in.id.empty() ? std::to_string(in.rank) : in.id) + "` writes the fused kernel ";
    out.push_back(
        {"kfuse-rewrite", rewrite + (in.graph_nodes ? "from the recorded graph nodes (PTX, compiled and validated on "
                                                      "the emulator); `kfuse run` puts it in place of the node chain "
                                                      "when the application instantiates the graph, without changing "
                                                      "the application"
                                                    : "(PTX, compiled and validated on the emulator); `kfuse run` "
                                                      "injects it without changing the application")});
  }
  const bool optimizer =
      hasPrefix(in.ops, "aten::_foreach_") ||
      std::find(in.families.begin(), in.families.end(), KernelFamily::kOptimizer) != in.families.end();
  if (optimizer) {
    out.push_back({"fused-operator",
                   "use the optimizer's fused implementation: torch.optim.AdamW(..., fused=True) "
                   "(or foreach=True): one kernel per step for all parameters"});
  }
  switch (in.fusion) {
    case FamilyFusion::kEpilogue: {
      const bool activation = has(in.ops, {"aten::gelu", "aten::relu", "aten::silu", "aten::tanh", "aten::sigmoid",
                                           "aten::gelu_", "aten::relu_", "aten::silu_"});
      const bool residual = has(in.ops, {"aten::add", "aten::add_"});
      if (activation) {
        out.push_back({"gemm-epilogue",
                       "run the activation in the GEMM's epilogue: cuBLASLt CUBLASLT_EPILOGUE_GELU_BIAS / RELU_BIAS "
                       "(PyTorch: torch._addmm_activation(bias, x, w.t(), use_gelu=True)), or a CUTLASS GEMM with a "
                       "fused activation epilogue"});
      }
      if (residual) {
        out.push_back({"gemm-epilogue",
                       "add the residual in the GEMM itself: addmm with beta=1 and the residual as "
                       "its C input, or a cuBLASLt / CUTLASS epilogue with a source tensor"});
      }
      out.push_back({"torch-compile", "torch.compile " + where(in) +
                                          " (mode=\"max-autotune\" lets Inductor fuse the elementwise tail into "
                                          "a Triton GEMM template's epilogue)"});
      break;
    }
    case FamilyFusion::kPrologue:
    case FamilyFusion::kReductionEpilogue: {
      const bool norm =
          std::find(in.families.begin(), in.families.end(), KernelFamily::kNormalization) != in.families.end();
      const bool softmax =
          std::find(in.families.begin(), in.families.end(), KernelFamily::kSoftmax) != in.families.end();
      out.push_back({"torch-compile", "torch.compile " + where(in) +
                                          ": Inductor fuses elementwise work into the reduction's loads (one Triton "
                                          "kernel for " +
                                          std::string(norm ? "the add and the norm" : "both") + ")"});
      if (norm && has(in.ops, {"aten::add", "aten::add_"})) {
        out.push_back({"fused-operator",
                       "a fused residual-add + norm kernel does this in one pass (e.g. Transformer "
                       "Engine, Apex or Liger fused add + LayerNorm / RMSNorm)"});
      }
      if (softmax) {
        out.push_back({"fused-operator",
                       "if this is attention (scale, mask, softmax), "
                       "torch.nn.functional.scaled_dot_product_attention does it in one kernel"});
      }
      break;
    }
    case FamilyFusion::kPointwise:
      out.push_back({"torch-compile", "torch.compile " + where(in) +
                                          ": Inductor fuses these elementwise operators into one Triton kernel"});
      break;
    case FamilyFusion::kNone:
      // A kfuse trace with PTX is no PyTorch program: kfuse rewrite is the remedy there.
      if (in.kfuse_trace_with_ptx) break;
      out.push_back({"torch-compile", "torch.compile " + where(in) +
                                          (in.kind == CandidateKind::kHorizontal
                                               ? " may run these independent kernels as one (horizontal fusion), or "
                                                 "launch them on separate streams"
                                               : " to fuse these kernels")});
      break;
  }
  if (in.in_cuda_graph) {
    out.push_back({"note",
                   "these kernels already run inside a CUDA graph: fusing them saves their memory traffic "
                   "and per-node latency, not CPU launch overhead"});
  }
  return out;
}

}  // namespace kfuse::analyzer
