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
// Capability"), taken from core's table (core::findSmLimits), which GpuSpec's per-SM figures come from too.
struct ArchLimits {
  std::string arch;  // "sm_90"
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;
  int register_allocation_unit = 256;  // registers, per warp
  int max_registers_per_thread = 255;
  uint64_t shared_per_sm = 0;         // bytes, largest carveout
  uint64_t max_shared_per_block = 0;  // bytes, opt-in maximum
  uint32_t reserved_shared_per_block = 1024;
  // Also from core's table: what the occupancy calculator needs besides the above.
  int max_threads_per_block = 1024;
  int register_file_partitions = 4;       // registers are allocated to warps within one partition's share
  uint32_t shared_allocation_unit = 128;  // bytes, per block
  int barriers_per_sm = 0;                // hardware barriers of all resident blocks together
};
// `arch` is "sm_XY" or "sm_XYZ" (compute capability X.Y / XY.Z), optionally with ptxas's "a" or "f" suffix
// ("sm_90a", "sm_100f"). Known: sm_70, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_103, sm_120; any other
// is an error naming them.
Expected<ArchLimits> archLimits(std::string_view arch);

// Compiles `ptx` with `ptxas -v -arch=<arch>` and returns one entry per .entry, in the order ptxas reports them
// (occupancy left at 0). `arch` empty: ptxas's default, and each entry's arch is the one ptxas names. Device
// functions (.func) are not entries and get none; their own spills are not added to their callers' (a caller's
// stack_bytes is its cumulative stack, callees included, when ptxas reports one). When ptxas rejects the PTX the
// error (kBadFormat) carries ptxas's log; when ptxas cannot be run at all, findPtxas()'s or the OS's error.
Expected<std::vector<KernelResources>> compileResources(std::string_view ptx, const std::string& arch);

// The parser compileResources() uses, on the text of a `ptxas -v` run that succeeded (its stdout and stderr): one
// entry per "Compiling entry function" line; `arch` where the line names none. kBadFormat when an entry has no
// "Used N registers" line.
Expected<std::vector<KernelResources>> parsePtxasLog(std::string_view log, const std::string& arch);

// Fills `r.threads_per_block`, `r.occupancy` and `r.occupancy_limiter` for blocks of `threads_per_block` threads
// with `dynamic_shared_bytes` of dynamic shared memory, from `r.arch`, `r.registers`, `r.static_shared_bytes` and
// `r.barriers`, by the rules of CUDA's occupancy calculator (cuda_occupancy.h) with the largest shared-memory
// carveout and the opt-in per-block maximum:
//  - warps: max warps per SM / warps per block (threads rounded up to whole warps);
//  - blocks: the per-SM block limit;
//  - registers: a warp's registers (registers x 32) are rounded up to the allocation unit; the register file is
//    split among the partitions, each holding as many whole warps as fit in its share;
//  - shared memory: static + dynamic + the driver's reserved bytes per block, rounded up to the allocation unit,
//    into the SM's shared memory;
//  - barriers: the SM's hardware barriers / the barriers one block uses.
// Resident blocks = the least of these; occupancy = resident warps / max warps per SM. The limiter is the resource
// that gives the least ("warps", "blocks", "registers", "shared memory", "barriers"); on a tie the first in that
// order, so a kernel at full occupancy is limited by "warps".
// Errors: an unknown architecture or a block size of 0 or above the per-block maximum (kInvalidArgument, `r`
// unchanged); a launch that cannot run at all (more registers or shared memory per block than an SM has): r's
// occupancy is set to 0 with the resource as limiter, and the error (kInvalidArgument) says by how much.
Status computeOccupancy(KernelResources& r, uint32_t threads_per_block, uint64_t dynamic_shared_bytes);

}  // namespace kfuse::rewriter
