// libFuzzer target: the PTX front end as `kfuse ptx check` and the analyzer run it: parse, verify, print, and
// every analysis of every function with a body.
#include <string_view>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto mod = kfuse::ptx::parseModule(text, "fuzz.ptx");
  if (!mod.ok()) return 0;
  (void)kfuse::ptx::verify(*mod);
  (void)kfuse::ptx::printModule(*mod);
  for (const auto& f : mod->functions) {
    if (!f.has_body) continue;
    kfuse::ptx::FunctionAnalyses fa(&*mod, f);
    (void)fa.paramAccess();
    (void)fa.memoryAccesses();
    (void)fa.usage();
  }
  return 0;
}
