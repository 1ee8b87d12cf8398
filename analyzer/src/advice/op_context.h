// Operator and module context of GPU work: which CPU operator issued each kernel, copy and set, under which
// nn.Module and user annotation.
//
// Private to the analyzer. The trace model (core/) knows nothing of PyTorch: the Kineto importer hands over the
// CPU operators as ImportResult::cpu_ops (name, External id, thread, times, input shapes and dtypes) and the
// nn.Module forward calls and record_function / user annotations as trace.nvtx_ranges (domains "nn.Module" and
// "user_annotation"); Nsight Systems NVTX ranges and kfuse's own are NVTX ranges already. This table joins them:
//
//  - the operator: the innermost CPU operator whose span holds the launch call on the launch call's thread (what
//    physically issued it); when the trace dropped the launch call (no API time), the operator with the record's
//    External id. Where both exist and disagree (older Kineto versions wrote the correlation id as the GPU
//    event's External id), the span wins and the disagreement is counted;
//  - the top operator: the outermost CPU operator around it (aten::linear around aten::addmm);
//  - the module path: the nn.Module ranges around the operator on its thread, outermost first, joined by ".",
//    each named as PyTorch names it ("BertLayer_3": the class and its instance number);
//  - the annotation: the innermost other NVTX / user-annotation range around it.
//
// build() sorts ranges and queries once per thread and sweeps them with a stack: O((ranges + records) log).
// The table keeps pointers into the ImportResult it was built from, which must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"

namespace kfuse::analyzer {

struct OpContext {
  const CpuOp* op = nullptr;      // the operator that issued it
  const CpuOp* top_op = nullptr;  // the outermost operator around `op` (== op when nothing encloses it)
  int32_t module = -1;            // OpContextTable::modulePath index; -1 none
  int32_t annotation = -1;        // OpContextTable::annotation index; -1 none
};

class OpContextTable {
 public:
  static OpContextTable build(const ImportResult& input);

  // The context of a launch / memcpy / memset by record id; nullptr when none was found.
  const OpContext* find(OpKind kind, core::Id record_id) const;
  const std::string& modulePath(int32_t index) const { return module_paths_[static_cast<size_t>(index)]; }
  const std::string& annotation(int32_t index) const { return annotations_[static_cast<size_t>(index)]; }
  bool empty() const { return linked_ == 0 && with_annotation_ == 0; }

  size_t linked() const { return linked_; }                      // records with an operator
  size_t with_module() const { return with_module_; }            // records inside an nn.Module
  size_t external_id_mismatches() const { return mismatches_; }  // span and External id named different ops
  size_t records() const { return records_; }

 private:
  std::vector<OpContext> launches_, memcpys_, memsets_;  // by record id - 1
  std::vector<std::string> module_paths_, annotations_;
  size_t linked_ = 0, with_module_ = 0, with_annotation_ = 0, mismatches_ = 0, records_ = 0;
};

// "Model_0.Encoder_0.Layer_3.Mlp_3" -> "Model.Encoder.Layer.Mlp": the module path with instance numbers dropped,
// the same for every layer of a stack of identical layers.
std::string modulePattern(std::string_view path);
// The longest common prefix of module paths, component by component ("" when they share none).
std::string commonModulePath(const std::vector<std::string_view>& paths);

}  // namespace kfuse::analyzer
