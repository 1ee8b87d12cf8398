// `kfuse gpus`: the GPU spec table the cost model uses, and name lookup as the analyzer does it.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kfuse/core/gpu_spec.h"
#include "verbs.h"

namespace kfuse::cli {
namespace {

struct GpusOptions {
  std::string name;
  bool json = false;
};

nlohmann::json specToJson(const core::GpuSpec& g) {
  return {{"vendor", g.vendor == core::GpuVendor::kAmd ? "amd" : "nvidia"},
          {"short_name", g.short_name},
          {"marketing_name", g.marketing_name},
          {"device_names", g.device_names},
          {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
          {"sm_count", g.sm_count},
          {"boost_clock_mhz", g.boost_clock_mhz},
          {"memory_bytes", g.memory_bytes},
          {"dram_bandwidth_bytes_per_s", g.dram_bandwidth_bytes_per_s},
          {"l2_bytes", g.l2_bytes},
          {"fp64_flops", g.fp64_flops},
          {"fp64_tensor_flops", g.fp64_tensor_flops},
          {"fp32_flops", g.fp32_flops},
          {"tf32_tensor_flops", g.tf32_tensor_flops},
          {"fp16_flops", g.fp16_flops},
          {"fp16_tensor_flops", g.fp16_tensor_flops},
          {"bf16_flops", g.bf16_flops},
          {"bf16_tensor_flops", g.bf16_tensor_flops},
          {"max_threads_per_sm", g.max_threads_per_sm},
          {"max_warps_per_sm", g.max_warps_per_sm},
          {"max_blocks_per_sm", g.max_blocks_per_sm},
          {"registers_per_sm", g.registers_per_sm},
          {"max_registers_per_thread", g.max_registers_per_thread},
          {"max_threads_per_block", g.max_threads_per_block},
          {"max_shared_per_sm", g.max_shared_per_sm},
          {"max_shared_per_block_optin", g.max_shared_per_block_optin},
          {"warp_size", g.warp_size},
          {"source", g.source}};
}

int runGpus(const GpusOptions& o) {
  std::vector<core::GpuSpec> specs;
  if (o.name.empty()) {
    specs = core::gpuSpecs();
  } else {
    auto found = core::findGpuSpec(o.name);
    if (!found) {
      return reportError(notFound("no GPU named '" + o.name + "' in the spec table; `kfuse gpus` lists them"));
    }
    specs.push_back(*found);
  }
  if (o.json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& g : specs) a.push_back(specToJson(g));
    std::cout << a.dump(2) << '\n';
    return kExitOk;
  }
  std::printf("%-15s %-29s %-5s %4s %9s %10s %10s %9s %7s\n", "name", "product", "sm", "SMs", "FP32 TF/s", "FP16T TF/s",
              "BF16T TF/s", "DRAM GB/s", "L2 MiB");
  for (const auto& g : specs) {
    const std::string cc = std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor);
    std::printf("%-15s %-29s %-5s %4d %9.1f %10.1f %10.1f %9.0f %7.1f\n", g.short_name.c_str(),
                g.marketing_name.c_str(), cc.c_str(), g.sm_count, g.fp32_flops / 1e12, g.fp16_tensor_flops / 1e12,
                g.bf16_tensor_flops / 1e12, g.dram_bandwidth_bytes_per_s / 1e9,
                static_cast<double>(g.l2_bytes) / (1024.0 * 1024.0));
  }
  if (std::any_of(specs.begin(), specs.end(),
                  [](const core::GpuSpec& g) { return g.vendor == core::GpuVendor::kAmd; })) {
    std::printf(
        "AMD rows: SMs are compute units, sm is the GFX IP version, tensor is matrix cores; MI250/MI250X rows "
        "are one GCD (one device to the driver)\n");
  }
  return kExitOk;
}

}  // namespace

void registerGpuVerbs(CLI::App& app, VerbContext& ctx) {
  auto o = std::make_shared<GpusOptions>();
  CLI::App* cmd = app.add_subcommand("gpus", "List the GPU spec table used by the cost model, or look one GPU up");
  cmd->add_option("name", o->name, "Device name as in traces (\"NVIDIA H100 80GB HBM3\") or short name (h100-sxm)");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o, &ctx] { ctx.exit_code = runGpus(*o); });
}

}  // namespace kfuse::cli
