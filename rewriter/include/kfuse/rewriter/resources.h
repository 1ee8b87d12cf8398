// Resources of compiled kernels (ptxas -v) and the theoretical occupancy they allow per architecture.
// Thread-safe (each ptxas call uses its own temporary directory).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/rewriter/plan.h"

namespace kfuse::rewriter {

// Per-SM limits of one architecture (CUDA C++ Programming Guide, "Technical Specifications per Compute
// Capability").
struct ArchLimits {
  std::string arch;  // "sm_90"
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;
  int register_allocation_unit = 256;  // registers, per warp
  int max_registers_per_thread = 255;
  uint64_t shared_per_sm = 0;          // bytes, largest carveout
  uint64_t max_shared_per_block = 0;   // bytes, opt-in maximum
  uint32_t reserved_shared_per_block = 1024;
};
Expected<ArchLimits> archLimits(std::string_view arch);

// Compiles `ptx` with `ptxas -v -arch=<arch>` and returns one entry per .entry (occupancy left at 0). When ptxas
// rejects the PTX the error carries ptxas's log.
Expected<std::vector<KernelResources>> compileResources(std::string_view ptx, const std::string& arch);

// Fills `r.occupancy` and `r.occupancy_limiter` for blocks of `threads_per_block` threads with
// `dynamic_shared_bytes` of dynamic shared memory.
Status computeOccupancy(KernelResources& r, uint32_t threads_per_block, uint64_t dynamic_shared_bytes);

}  // namespace kfuse::rewriter
