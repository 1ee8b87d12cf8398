// libFuzzer target: a plan directory's plan.json as `kfuse validate`, `kfuse run` and the injector read it.
#include "fuzz_input_file.h"
#include "kfuse/rewriter/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kfuse::fuzz::InputFile file("plan.json");
  file.write(data, size);
  auto plan = kfuse::rewriter::readPlan(file.dir());
  if (plan.ok()) (void)kfuse::rewriter::planReadme(*plan);
  return 0;
}
