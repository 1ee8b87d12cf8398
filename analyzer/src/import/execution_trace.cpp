// Execution Trace reader (nlohmann/json: the files are small, one node per operator call).
#include "import/execution_trace.h"

#include <nlohmann/json.hpp>

#include "import/input_file.h"
#include "kfuse/core/json_reader.h"

namespace kfuse::analyzer {

namespace {

using nlohmann::json;

// `[tensor, storage, offset, numel, itemsize, device]`
bool readTensor(const json& v, EtTensor& t) {
  if (!v.is_array() || v.size() < 6) return false;
  for (size_t i = 0; i < 5; ++i) {
    if (!v[i].is_number_integer()) return false;
  }
  t.tensor = v[0].get<int64_t>();
  t.storage = v[1].get<int64_t>();
  t.offset = v[2].get<int64_t>();
  t.numel = v[3].get<int64_t>();
  t.itemsize = v[4].get<int64_t>();
  t.device = v[5].is_string() ? v[5].get<std::string>() : std::string();
  return true;
}

// The tensors of one argument: a Tensor, or a list of them (TensorList / GenericList[Tensor...]).
void collectTensors(const json& value, const json* type, std::vector<EtTensor>& out) {
  const std::string t = type && type->is_string() ? type->get<std::string>() : std::string();
  if (t.rfind("Tensor", 0) == 0) {
    EtTensor x;
    if (readTensor(value, x)) out.push_back(x);
  } else if ((t.find("List") != std::string::npos && t.find("Tensor") != std::string::npos) && value.is_array()) {
    for (const json& e : value) {
      EtTensor x;
      if (readTensor(e, x)) out.push_back(x);
    }
  }
}

// Which arguments the schema marks as mutated: "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar
// alpha=1) -> Tensor(a!)" -> {0}. The keyword-only marker "*" is not an argument.
std::vector<bool> mutatedArguments(const std::string& schema) {
  std::vector<bool> out;
  const size_t open = schema.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  std::string arg;
  for (size_t i = open + 1; i < schema.size(); ++i) {
    const char c = schema[i];
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && depth-- == 0) {
      if (!arg.empty() && arg.find_first_not_of(" *") != std::string::npos)
        out.push_back(arg.find('!') != std::string::npos);
      break;
    }
    if (c == ',' && depth == 0) {
      if (arg.find_first_not_of(" *") != std::string::npos) out.push_back(arg.find('!') != std::string::npos);
      arg.clear();
      continue;
    }
    arg += c;
  }
  return out;
}

}  // namespace

Expected<ExecutionTrace> readExecutionTrace(const std::string& path) {
  // One string or whitespace run over 64 MiB is refused while inflating (found by fuzz_import_et: a 300 KB gzip
  // inflating one 300 MiB string took 1 GB and 22 s under the fuzzer). ET strings are names, types and shapes.
  KFUSE_ASSIGN_OR_RETURN(detail::TextBuffer text, detail::loadText(path, uint64_t{4} << 30, /*padding=*/1,
                                                                   /*max_run_bytes=*/uint64_t{64} << 20));
  // Depth-limited: the node values below are copied and walked recursively.
  auto parsed = core::parseJsonDocument(text.view());
  if (!parsed.ok()) return badFormat(path + ": not an Execution Trace: " + parsed.status().message());
  const json j = std::move(parsed).value();
  if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array()) {
    return badFormat(path +
                     ": not an Execution Trace: no \"nodes\" array (expected the JSON that PyTorch's "
                     "ExecutionTraceObserver writes)");
  }
  ExecutionTrace et;
  et.path = path;
  for (const json& n : j["nodes"]) {
    if (!n.is_object()) continue;
    EtNode node;
    if (n.contains("id") && n["id"].is_number_integer()) node.id = n["id"].get<int64_t>();
    if (n.contains("name") && n["name"].is_string()) node.name = n["name"].get<std::string>();
    if (n.contains("rf_id") && n["rf_id"].is_number_integer()) {
      node.rf_id = n["rf_id"].get<int64_t>();
    } else if (n.contains("attrs") && n["attrs"].is_array()) {
      for (const json& a : n["attrs"]) {
        if (a.is_object() && a.value("name", "") == "rf_id" && a.contains("value") && a["value"].is_number_integer()) {
          node.rf_id = a["value"].get<int64_t>();
        }
      }
    }
    const std::string schema =
        n.contains("op_schema") && n["op_schema"].is_string() ? n["op_schema"].get<std::string>() : "";
    const std::vector<bool> mutated = mutatedArguments(schema);
    const bool inplace_by_name = schema.empty() && !node.name.empty() && node.name.back() == '_';
    // Inputs: schema 1.0.1 keeps values and types side by side ("inputs", "input_types"); 1.1+ nests them
    // ({"inputs": {"values": [...], "types": [...]}}).
    auto args = [&](const char* key, const char* types_key, std::vector<json>& values, std::vector<json>& types) {
      if (!n.contains(key)) return;
      const json& v = n[key];
      if (v.is_object()) {
        if (v.contains("values") && v["values"].is_array()) values = v["values"].get<std::vector<json>>();
        if (v.contains("types") && v["types"].is_array()) types = v["types"].get<std::vector<json>>();
      } else if (v.is_array()) {
        values = v.get<std::vector<json>>();
        if (n.contains(types_key) && n[types_key].is_array()) types = n[types_key].get<std::vector<json>>();
      }
    };
    std::vector<json> in_values, in_types, out_values, out_types;
    args("inputs", "input_types", in_values, in_types);
    args("outputs", "output_types", out_values, out_types);
    for (size_t i = 0; i < in_values.size(); ++i) {
      std::vector<EtTensor> ts;
      collectTensors(in_values[i], i < in_types.size() ? &in_types[i] : nullptr, ts);
      const bool written = (i < mutated.size() && mutated[i]) || (inplace_by_name && i == 0);
      for (const EtTensor& t : ts) {
        node.reads.push_back(t);
        if (written) node.writes.push_back(t);
      }
    }
    for (size_t i = 0; i < out_values.size(); ++i) {
      std::vector<EtTensor> ts;
      collectTensors(out_values[i], i < out_types.size() ? &out_types[i] : nullptr, ts);
      for (const EtTensor& t : ts) {
        bool dup = false;
        for (const EtTensor& w : node.writes) dup = dup || w.tensor == t.tensor;
        if (!dup) node.writes.push_back(t);
      }
    }
    if (node.rf_id >= 0) et.by_rf_id.emplace(node.rf_id, et.nodes.size());
    et.nodes.push_back(std::move(node));
  }
  return et;
}

const EtNode* findEtNode(const ExecutionTrace& et, const CpuOp& op) {
  if (op.record_function_id >= 0) {
    auto it = et.by_rf_id.find(op.record_function_id);
    return it == et.by_rf_id.end() ? nullptr : &et.nodes[it->second];
  }
  auto it = et.by_rf_id.find(op.external_id);
  if (it == et.by_rf_id.end()) return nullptr;
  const EtNode& n = et.nodes[it->second];
  return n.name == op.name ? &n : nullptr;
}

}  // namespace kfuse::analyzer
