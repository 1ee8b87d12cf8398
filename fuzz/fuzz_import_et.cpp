// libFuzzer target: a PyTorch Execution Trace (`kfuse analyze --et FILE`), read as a file as the verb reads it, then
// each node's tensors walked. Any crash, leak or sanitizer report is a bug; a bad-format Status is the expected
// answer to most inputs.
#include "fuzz_input_file.h"
#include "import/execution_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kfuse::fuzz::InputFile file("et.json");
  auto et = kfuse::analyzer::readExecutionTrace(file.write(data, size));
  if (!et.ok()) return 0;
  size_t tensors = 0;
  for (const auto& node : et->nodes) tensors += node.reads.size() + node.writes.size();
  for (const auto& [rf_id, index] : et->by_rf_id) {
    if (index >= et->nodes.size()) __builtin_trap();  // the reader's own index must point at a node
  }
  return tensors == SIZE_MAX ? 1 : 0;
}
