// What a PyTorch operator reads and writes, from the shapes and dtypes the profiler recorded (`Input Dims`,
// `Input type`).
//
// Private to the analyzer. The profiler records each CPU operator's inputs but not its outputs; the output is
// derived here for the operators whose result shape follows from their inputs (matrix products, elementwise ops
// with broadcasting, normalisations, softmax, gathers, reductions, attention, copies) and is left unknown for the
// rest (their bytes are the inputs read and an output the size of the largest input written, marked as a guess).
// Bytes are what the operator must move at least: every input tensor read once (a gather reads only the rows it
// gathers), the output written once.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"

namespace kfuse::analyzer {

struct TensorShape {
  std::vector<int64_t> dims;
  std::string dtype;  // as the profiler writes it: "float", "c10::BFloat16", "long int", ...
  double numel() const;
  double bytes() const;  // numel x element size (0 when the dtype's size is not known)
};

struct OpTensors {
  std::vector<TensorShape> inputs;  // the tensor inputs (scalars and lists left out), in order
  std::vector<double> input_reads;  // bytes read of each input (a gather's rows; 0 for a destination only written)
  TensorShape output;               // empty dims and dtype when unknown
  bool output_known = false;        // the output's shape follows from a rule, not a guess
  double read_bytes = 0, write_bytes = 0;
  FlopCounts flops;  // matrix products and attention only (2 x M x N x K); 0 otherwise
};

// Bytes per element of a profiler dtype name; 0 when unknown.
double dtypeBytes(std::string_view dtype);
// A short dtype name: "f32", "bf16", "f16", "i64", "bool", ...; the input itself when unknown.
std::string dtypeShort(std::string_view dtype);

OpTensors operatorTensors(const CpuOp& op);

// "aten::add bf16[1,141,512]": the operator, and its first tensor input's dtype and shape (the output's when
// known and different: "aten::addmm bf16[141,512]x[512,2048]").
std::string operatorLabel(const CpuOp& op);

}  // namespace kfuse::analyzer
