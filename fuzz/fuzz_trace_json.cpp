// libFuzzer target: kfuse trace JSON (`kfuse import`), from text to a Trace, and the Trace back to JSON text.
#include "fuzz_input_file.h"
#include "kfuse/core/text.h"
#include "kfuse/core/trace_json.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kfuse::fuzz::InputFile file("trace.json");
  auto trace = kfuse::core::readTraceJsonFile(file.write(data, size));
  if (trace.ok()) (void)kfuse::core::dumpJson(kfuse::core::traceToJson(*trace));
  return 0;
}
