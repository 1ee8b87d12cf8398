// libFuzzer target: ELF, fatbin and cubin reading as `kfuse ptx list --params` and `kfuse ptx extract` do it.
#include <span>

#include "kfuse/ptx/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  auto entries = kfuse::ptx::listEntries(input);
  if (!entries.ok()) return 0;
  for (const auto& e : *entries) {
    auto payload = kfuse::ptx::extractEntry(input, e);
    if (!payload.ok() || e.kind != kfuse::ptx::EntryKind::kCubin) continue;
    (void)kfuse::ptx::readCubin(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload->data()), payload->size()));
  }
  return 0;
}
