// PyTorch Execution Traces (the JSON torch.profiler.ExecutionTraceObserver writes, plain or gzip): operator nodes
// with the tensors they read and write, joined to a Kineto trace's CPU operators by record-function id.
//
// Private to the analyzer. A node's tensor argument is `[tensor id, storage id, offset, numel, itemsize,
// device]`; its `op_schema` marks the arguments it mutates (`Tensor(a!) self`). Nodes carry `rf_id` (schema 1.0.1+:
// a key of the node; older: an `attrs` entry), which Kineto writes as the CPU op's `Record function id` (older
// Kineto versions: equal to its `External id`, checked by name here).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/analyzer/importer.h"
#include "kfuse/core/status.h"

namespace kfuse::analyzer {

struct EtTensor {
  int64_t tensor = 0, storage = 0, offset = 0, numel = 0, itemsize = 0;
  std::string device;  // "cuda:0", "cpu"
  double bytes() const { return static_cast<double>(numel) * static_cast<double>(itemsize); }
};

struct EtNode {
  int64_t id = 0;
  int64_t rf_id = -1;
  std::string name;
  std::vector<EtTensor> reads;   // tensor inputs (mutated ones too: a mutation may read)
  std::vector<EtTensor> writes;  // outputs and mutated inputs
};

struct ExecutionTrace {
  std::string path;
  std::vector<EtNode> nodes;
  std::unordered_map<int64_t, size_t> by_rf_id;  // rf_id -> index into nodes
};

// Reads an Execution Trace. Errors name the file: not JSON, no "nodes" array.
Expected<ExecutionTrace> readExecutionTrace(const std::string& path);

// The ET node of a Kineto CPU operator: by `Record function id`, else by `External id` when the node of that rf_id
// has the operator's name. nullptr when none.
const EtNode* findEtNode(const ExecutionTrace& et, const CpuOp& op);

}  // namespace kfuse::analyzer
