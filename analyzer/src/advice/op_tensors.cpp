// Operator tensors: the output shape rules and the bytes each operator moves.
#include "advice/op_tensors.h"

#include <algorithm>
#include <array>
#include <utility>

namespace kfuse::analyzer {

namespace {

struct DtypeInfo {
  std::string_view name, short_name;
  double bytes;
};
constexpr std::array kDtypes = {
    DtypeInfo{"float", "f32", 4},
    DtypeInfo{"double", "f64", 8},
    DtypeInfo{"c10::Half", "f16", 2},
    DtypeInfo{"c10::BFloat16", "bf16", 2},
    DtypeInfo{"c10::Float8_e4m3fn", "f8e4m3", 1},
    DtypeInfo{"c10::Float8_e5m2", "f8e5m2", 1},
    DtypeInfo{"c10::Float8_e4m3fnuz", "f8e4m3fnuz", 1},
    DtypeInfo{"c10::Float8_e5m2fnuz", "f8e5m2fnuz", 1},
    DtypeInfo{"long int", "i64", 8},
    DtypeInfo{"long", "i64", 8},
    DtypeInfo{"int", "i32", 4},
    DtypeInfo{"short int", "i16", 2},
    DtypeInfo{"short", "i16", 2},
    DtypeInfo{"signed char", "i8", 1},
    DtypeInfo{"unsigned char", "u8", 1},
    DtypeInfo{"bool", "bool", 1},
    DtypeInfo{"c10::complex<float>", "c64", 8},
    DtypeInfo{"c10::complex<double>", "c128", 16},
    DtypeInfo{"c10::complex<c10::Half>", "c32", 4},
};

const DtypeInfo* findDtype(std::string_view d) {
  for (const DtypeInfo& i : kDtypes) {
    if (i.name == d) return &i;
  }
  return nullptr;
}

bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// The operator's name without "aten::" and a trailing "_" (in-place) or "_out".
std::string_view baseName(std::string_view name) {
  if (startsWith(name, "aten::")) name.remove_prefix(6);
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  if (name.size() > 4 && name.substr(name.size() - 4) == "_out") name.remove_suffix(4);
  if (name.size() > 1 && name.back() == '_') name.remove_suffix(1);
  return name;
}

bool oneOf(std::string_view s, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// Numpy-style broadcast of the tensor inputs' shapes; nullopt-like empty result with ok=false when they clash.
std::vector<int64_t> broadcast(const std::vector<TensorShape>& in, bool& ok) {
  std::vector<int64_t> out;
  ok = true;
  for (const TensorShape& t : in) {
    if (t.dims.size() > out.size()) out.insert(out.begin(), t.dims.size() - out.size(), 1);
    for (size_t i = 0; i < t.dims.size(); ++i) {
      const int64_t d = t.dims[t.dims.size() - 1 - i];
      int64_t& o = out[out.size() - 1 - i];
      if (o == 1) {
        o = d;
      } else if (d != 1 && d != o) {
        ok = false;
      }
    }
  }
  return out;
}

// A gather/embedding reads only the rows it gathers: rows x row size of the table, plus the indices.
double gatheredBytes(const TensorShape& table, const TensorShape& index, size_t dim) {
  if (table.dims.empty()) return table.bytes();
  double row = 1;
  for (size_t i = 0; i < table.dims.size(); ++i) {
    if (i != dim) row *= static_cast<double>(std::max<int64_t>(table.dims[i], 0));
  }
  return std::min(table.bytes(), index.numel() * row * dtypeBytes(table.dtype));
}

const std::vector<std::string_view>& elementwiseOps() {
  static const std::vector<std::string_view> kOps = {"add",
                                                     "sub",
                                                     "mul",
                                                     "div",
                                                     "rsub",
                                                     "neg",
                                                     "abs",
                                                     "exp",
                                                     "exp2",
                                                     "log",
                                                     "log2",
                                                     "log1p",
                                                     "sqrt",
                                                     "rsqrt",
                                                     "pow",
                                                     "gelu",
                                                     "relu",
                                                     "silu",
                                                     "sigmoid",
                                                     "tanh",
                                                     "hardtanh",
                                                     "hardswish",
                                                     "hardsigmoid",
                                                     "leaky_relu",
                                                     "elu",
                                                     "mish",
                                                     "softplus",
                                                     "clamp",
                                                     "clamp_min",
                                                     "clamp_max",
                                                     "where",
                                                     "eq",
                                                     "ne",
                                                     "lt",
                                                     "le",
                                                     "gt",
                                                     "ge",
                                                     "logical_and",
                                                     "logical_or",
                                                     "logical_not",
                                                     "bitwise_and",
                                                     "bitwise_or",
                                                     "bitwise_not",
                                                     "sign",
                                                     "sin",
                                                     "cos",
                                                     "erf",
                                                     "reciprocal",
                                                     "maximum",
                                                     "minimum",
                                                     "masked_fill",
                                                     "threshold",
                                                     "threshold_backward",
                                                     "gelu_backward",
                                                     "silu_backward",
                                                     "sigmoid_backward",
                                                     "tanh_backward",
                                                     "mse_loss_backward",
                                                     "copy",
                                                     "to_copy",
                                                     "clone",
                                                     "contiguous",
                                                     "fill",
                                                     "zero",
                                                     "dropout",
                                                     "native_dropout",
                                                     "floor",
                                                     "ceil",
                                                     "round",
                                                     "lerp",
                                                     "addcmul",
                                                     "addcdiv",
                                                     "fmod",
                                                     "remainder",
                                                     "nan_to_num",
                                                     "type_as",
                                                     "square",
                                                     "uniform",
                                                     "normal"};
  return kOps;
}

}  // namespace

double TensorShape::numel() const {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(std::max<int64_t>(d, 0));
  return n;
}

double TensorShape::bytes() const {
  return numel() * dtypeBytes(dtype);
}

double dtypeBytes(std::string_view dtype) {
  const DtypeInfo* i = findDtype(dtype);
  return i ? i->bytes : 0;
}

std::string dtypeShort(std::string_view dtype) {
  const DtypeInfo* i = findDtype(dtype);
  return std::string(i ? i->short_name : dtype);
}

OpTensors operatorTensors(const CpuOp& op) {
  OpTensors t;
  // Tensor inputs keep their argument position: gathers and matrix products read them by position.
  std::vector<std::pair<size_t, TensorShape>> args;
  for (size_t i = 0; i < op.input_types.size(); ++i) {
    if (dtypeBytes(op.input_types[i]) <= 0) continue;
    TensorShape s;
    s.dtype = op.input_types[i];
    if (i < op.input_dims.size()) s.dims = op.input_dims[i];
    args.emplace_back(i, s);
  }
  for (const auto& [i, s] : args) {
    t.inputs.push_back(s);
    t.input_reads.push_back(s.bytes());
  }
  if (t.inputs.empty()) return t;
  auto arg = [&](size_t position) -> const TensorShape* {
    for (const auto& [i, s] : args) {
      if (i == position) return &s;
    }
    return nullptr;
  };
  const std::string_view name = baseName(op.name);
  const TensorShape& first = t.inputs.front();
  auto readOf = [&](const TensorShape* s) -> double& {
    return t.input_reads[static_cast<size_t>(s - t.inputs.data())];
  };

  auto setOutput = [&](std::vector<int64_t> dims, std::string dtype) {
    t.output.dims = std::move(dims);
    t.output.dtype = std::move(dtype);
    t.output_known = true;
  };
  auto matmul = [&](const TensorShape& a, const TensorShape& b) {
    // [..., M, K] x [..., K, N] -> [..., M, N]
    if (a.dims.size() < 2 || b.dims.size() < 2) return;
    std::vector<int64_t> out(a.dims.begin(), a.dims.end() - 1);
    out.push_back(b.dims.back());
    setOutput(out, a.dtype);
    const double k = static_cast<double>(a.dims.back());
    const double flops = 2 * t.output.numel() * k;
    if (a.dtype == "c10::BFloat16") {
      t.flops.bf16 = flops;
    } else if (a.dtype == "c10::Half") {
      t.flops.fp16 = flops;
    } else if (a.dtype == "double") {
      t.flops.fp64 = flops;
    } else {
      t.flops.fp32 = flops;
    }
  };

  if (oneOf(name, {"addmm", "baddbmm", "addbmm"}) && arg(1) && arg(2)) {
    matmul(*arg(1), *arg(2));
  } else if (oneOf(name, {"mm", "bmm", "matmul"}) && t.inputs.size() >= 2) {
    matmul(t.inputs[0], t.inputs[1]);
  } else if (name == "linear" && t.inputs.size() >= 2 && t.inputs[1].dims.size() == 2) {
    // input [..., K], weight [N, K]
    TensorShape w = t.inputs[1];
    std::swap(w.dims[0], w.dims[1]);
    matmul(t.inputs[0], w);
  } else if (oneOf(name, {"flash_attention_forward", "scaled_dot_product_flash_attention",
                          "scaled_dot_product_efficient_attention", "scaled_dot_product_cudnn_attention",
                          "efficient_attention_forward", "scaled_dot_product_attention"}) &&
             t.inputs.size() >= 3 && first.dims.size() == 4) {
    setOutput(first.dims, first.dtype);
    // q [B, S, H, D] (flash) or [B, H, S, D]: 2 products of S x S x D per head; the S's are the middle two.
    const double b = static_cast<double>(first.dims[0]);
    const double s = static_cast<double>(std::max(first.dims[1], first.dims[2]));
    const double h = static_cast<double>(std::min(first.dims[1], first.dims[2]));
    const double d = static_cast<double>(first.dims[3]);
    const double flops = 4 * b * h * s * s * d;
    if (first.dtype == "c10::BFloat16") {
      t.flops.bf16 = flops;
    } else if (first.dtype == "c10::Half") {
      t.flops.fp16 = flops;
    } else {
      t.flops.fp32 = flops;
    }
  } else if (oneOf(name, {"native_layer_norm", "layer_norm", "rms_norm", "fused_rms_norm", "native_batch_norm",
                          "batch_norm", "native_group_norm", "group_norm", "softmax", "log_softmax", "safe_softmax"})) {
    setOutput(first.dims, first.dtype);
  } else if (name == "index_select" && arg(0) && arg(2)) {
    // (self, dim, index): the dim is a scalar the profiler does not record in Input Dims; rows of dim 0 assumed
    // when the index has one dimension (embedding lookups).
    const TensorShape& table = t.inputs[0];
    const TensorShape& index = t.inputs[1];
    std::vector<int64_t> out = table.dims;
    if (!out.empty()) out[0] = index.dims.empty() ? 1 : index.dims[0];
    setOutput(out, table.dtype);
    readOf(&table) = gatheredBytes(table, index, 0);
  } else if (name == "embedding" && t.inputs.size() >= 2 && first.dims.size() == 2) {
    const TensorShape& index = t.inputs[1];
    std::vector<int64_t> out = index.dims;
    out.push_back(first.dims[1]);
    setOutput(out, first.dtype);
    readOf(&first) = gatheredBytes(first, index, 0);
  } else if (oneOf(name, {"sum", "mean", "amax", "amin", "max", "min", "all", "any", "prod", "norm",
                          "linalg_vector_norm", "argmax", "argmin", "var", "std"})) {
    // The reduced dims are not recorded: the output is taken as small (one element per row of the last dim).
    std::vector<int64_t> out = first.dims;
    if (!out.empty()) out.pop_back();
    setOutput(out, oneOf(name, {"all", "any"}) ? "bool" : first.dtype);
  } else if (name == "cat" || name == "stack") {
    // TensorList inputs are not recorded per tensor: unknown.
  } else if (std::find(elementwiseOps().begin(), elementwiseOps().end(), name) != elementwiseOps().end()) {
    bool ok = false;
    std::vector<int64_t> out = broadcast(t.inputs, ok);
    if (ok) {
      const bool compare =
          oneOf(name, {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not"});
      setOutput(out, compare ? "bool" : first.dtype);
    }
    // In-place and copy ops: the first input is the destination, written, not read (copy_ reads its source).
    if (!op.name.empty() && op.name.back() == '_' && name != "copy" && t.inputs.size() >= 1) {
      const bool reads_self = !oneOf(name, {"fill", "zero", "uniform", "normal"});
      if (!reads_self) readOf(&first) = 0;
    } else if (name == "copy" && t.inputs.size() >= 2) {
      readOf(&first) = 0;
    }
  }
  if (t.output_known) {
    t.write_bytes = t.output.bytes();
  } else {
    // Not known: an output the size of the largest input, as a guess.
    double largest = 0;
    for (const TensorShape& s : t.inputs) largest = std::max(largest, s.bytes());
    t.write_bytes = largest;
  }
  for (double b : t.input_reads) t.read_bytes += b;
  return t;
}

std::string operatorLabel(const CpuOp& op) {
  std::string out = op.name;
  const OpTensors t = operatorTensors(op);
  if (t.inputs.empty()) return out;
  auto dims = [](const std::vector<int64_t>& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s + "]";
  };
  const TensorShape& in = t.inputs.front();
  out += " " + dtypeShort(in.dtype);
  const std::string_view name = baseName(op.name);
  if (oneOf(name, {"addmm", "baddbmm", "addbmm"}) && t.inputs.size() >= 3) {
    out += dims(t.inputs[1].dims) + "x" + dims(t.inputs[2].dims);
  } else if (oneOf(name, {"mm", "bmm", "matmul", "linear"}) && t.inputs.size() >= 2) {
    out += dims(t.inputs[0].dims) + "x" + dims(t.inputs[1].dims);
  } else if (name == "index_select" && t.output_known) {
    out += dims(t.output.dims);
  } else {
    out += dims(in.dims);
  }
  return out;
}

}  // namespace kfuse::analyzer
