// GPU spec table: peak throughput, memory system and per-SM limits of the GPUs kfuse reasons about: NVIDIA parts,
// and AMD Instinct parts (whose PyTorch profiler traces have the same format).
//
// The roofline cost model, the occupancy/waves estimate for horizontal fusion and the reports take their device
// figures from here. Every figure comes from the vendor's documents (NVIDIA: product datasheet, architecture
// whitepaper, CUDA C++ Programming Guide, tuning guide; AMD: the ROCm documentation's GPU specification table and
// microarchitecture pages); gpu_spec.cpp cites it beside the entry and says so where a figure is derived rather
// than printed or was read second-hand.
//
// AMD terms map onto the NVIDIA ones: a compute unit (CU) is an "SM", a wavefront (64 lanes) a "warp", LDS is
// shared memory, matrix cores are tensor cores, and cc_major.cc_minor is the GFX IP version (gfx90a = 9.0,
// gfx942 = 9.4). An MI250/MI250X is two devices to the driver (one per graphics compute die, GCD): its entries
// are per GCD, as traces see them.
//
// Conventions for every entry:
//  - FLOP/s are peak and DENSE (no 2:4 structured sparsity); an FMA counts as 2 FLOP. 0 means the GPU has no such
//    path (V100 has no BF16 or TF32; only the big data-centre dies have FP64 tensor cores).
//  - Tensor FP16/BF16 figures are with FP32 accumulate (what cuBLAS and PyTorch use). GeForce parts run
//    FP16-accumulate MMA at twice that rate; the table does not record it.
//  - Tensor figures are stored as published, not derived from the clock: NVIDIA computes some of them at a lower
//    clock than boost_clock_mhz (H100 SXM5: 1830 MHz for tensor, 1980 MHz for FP32/FP64).
//  - dram_bandwidth_bytes_per_s uses decimal units as datasheets do (1 GB/s = 1e9 B/s). memory_bytes is the
//    datasheet capacity read as GiB (the driver reports slightly less: it reserves some). l2_bytes and the shared
//    memory sizes are binary, as cudaDeviceProp reports them.
//
// Thread-safety: the table is built once, on first use, and never changes afterwards; every function here may be
// called from any thread. The reference returned by gpuSpecs() stays valid for the life of the program.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse::core {

enum class GpuVendor { kNvidia, kAmd };

struct GpuSpec {
  GpuVendor vendor = GpuVendor::kNvidia;
  std::string short_name;      // stable id used on the command line and in reports: "h100-sxm"
  std::string marketing_name;  // "NVIDIA H100 SXM5 80GB"
  // Names the driver reports for this product (cuDeviceGetName, CUPTI device records, Kineto deviceProperties,
  // Nsight Systems TARGET_INFO_GPU), verbatim: "NVIDIA H100 80GB HBM3".
  std::vector<std::string> device_names;

  int cc_major = 0;  // compute capability
  int cc_minor = 0;
  int sm_count = 0;
  int boost_clock_mhz = 0;  // maximum boost clock of the SMs
  uint64_t memory_bytes = 0;
  double dram_bandwidth_bytes_per_s = 0;
  uint64_t l2_bytes = 0;

  // Peak dense FLOP/s; 0 = no such path on this GPU.
  double fp64_flops = 0;
  double fp64_tensor_flops = 0;
  double fp32_flops = 0;
  double tf32_tensor_flops = 0;
  double fp16_flops = 0;  // non-tensor (HFMA2)
  double fp16_tensor_flops = 0;
  double bf16_flops = 0;  // non-tensor
  double bf16_tensor_flops = 0;

  // Per-SM limits: these depend only on the compute capability and are copied from its SmLimits entry.
  int max_threads_per_sm = 0;
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;  // 32-bit registers in one SM's register file (65536 = 256 KiB)
  int max_registers_per_thread = 0;
  int max_threads_per_block = 0;
  uint64_t max_shared_per_sm = 0;           // bytes, largest shared-memory carveout
  uint64_t max_shared_per_block_optin = 0;  // bytes, with cudaFuncAttributeMaxDynamicSharedMemorySize
  int warp_size = 32;                       // 64 on AMD CDNA

  // Launch costs, what fusing saves beyond memory traffic (the same for every product of a vendor: they are the
  // driver's and the GPU front end's; gpu_spec.cpp says where each comes from):
  double launch_latency_ns = 0;        // from a launch call on an idle stream to the kernel running: what each
                                       // launch costs when the host does not keep ahead of the GPU
  double dependent_launch_gap_ns = 0;  // the GPU idle between a kernel's end and the start of the next kernel
                                       // already queued on the same stream (launches issued ahead)

  // The cache path of global memory accesses (per vendor and architecture; gpu_spec.cpp says where each comes from):
  int sector_bytes = 32;                 // the unit a warp's request moves between the caches
  double l1_bytes_per_clock_per_sm = 0;  // requests one SM's L1 serves per clock (hits and misses alike)
  double l2_bytes_per_clock = 0;         // what the whole L2 delivers per clock (at boost_clock_mhz)

  std::string source;  // the documents the figures come from
};

// Per-SM limits of one compute capability: what an SM can hold at once, the same for every product of that
// capability (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"; the allocation
// granularities and barrier slots are those of the CUDA occupancy calculator, cuda_occupancy.h). GpuSpec's per-SM
// fields are copied from here, and the rewriter's occupancy calculator reads it, so each fact is stated once.
struct SmLimits {
  GpuVendor vendor = GpuVendor::kNvidia;
  int cc_major = 0;
  int cc_minor = 0;
  int max_threads_per_sm = 0;
  int max_warps_per_sm = 0;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;  // 32-bit registers (65536 = 256 KiB); also the most one block may use
  int max_registers_per_thread = 0;
  int register_allocation_unit = 0;  // registers: a warp's registers are allocated in multiples of this
  int register_file_partitions = 0;  // warp schedulers; registers are allocated within one partition's share
  int max_threads_per_block = 0;
  uint64_t max_shared_per_sm = 0;           // bytes, largest shared-memory carveout
  uint64_t max_shared_per_block_optin = 0;  // bytes, with cudaFuncAttributeMaxDynamicSharedMemorySize
  uint32_t reserved_shared_per_block = 0;   // bytes the driver keeps per resident block (1 KiB from 8.0 on)
  uint32_t shared_allocation_unit = 0;      // bytes: a block's shared memory is allocated in multiples of this
  int barriers_per_sm = 0;                  // hardware barriers (bar.sync ids) of all resident blocks together
  int warp_size = 32;                       // 64 on AMD CDNA (wavefront)
};

// Every compute capability kfuse knows, NVIDIA's in ascending order, then AMD's.
const std::vector<SmLimits>& smLimitsTable();
// The limits of compute capability (GFX IP version for AMD) `cc_major`.`cc_minor` of `vendor`; nullptr when it is
// not in the table. The two vendors' numbers overlap (9.0 is Hopper and gfx90a).
const SmLimits* findSmLimits(int cc_major, int cc_minor, GpuVendor vendor = GpuVendor::kNvidia);

// Facts a trace records about a device besides its name (Kineto deviceProperties, Nsight Systems
// TARGET_INFO_GPU, CUPTI device records). 0 = not recorded.
struct ObservedDevice {
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
};

// Every GPU in the table, in a fixed order (by architecture, then product).
const std::vector<GpuSpec>& gpuSpecs();

// Looks a GPU up by a device name as found in traces ("NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB"), by its
// short name ("h100-sxm") or by its marketing name. Names are compared by gpuNameKey(), exactly: there is no
// prefix, substring or nearest match, so a name that is not in the table is not found rather than guessed. In
// particular a MIG slice ("NVIDIA A100-SXM4-40GB MIG 1g.5gb"), a laptop part ("NVIDIA GeForce RTX 4090 Laptop GPU")
// and other vendors' devices are not found.
// The bare family names "a100", "h100" and "v100" (with or without "NVIDIA ") resolve to a documented default
// product: A100 SXM4 40GB, H100 SXM5 80GB and V100 SXM2 16GB, the configurations of the architecture whitepapers.
std::optional<GpuSpec> findGpuSpec(std::string_view name);

// As findGpuSpec(name), and also not found when the trace's own facts contradict the entry: a different SM count
// or compute capability. Use this whenever the trace has them: one device name can cover products that differ
// (the GeForce RTX 3080 12GB has 70 SMs, the 10GB has 68, and the driver calls both "NVIDIA GeForce RTX 3080";
// ROCm calls the 110-CU MI250X GCD and the 104-CU MI250 GCD both "AMD Instinct MI250X / MI250"): where a name
// belongs to several entries, the one the facts agree with is returned.
// One name is resolved by facts alone: "AMD Radeon Graphics", what ROCm reports for a GPU its name table (libdrm's
// amdgpu.ids) lacks. It is found only when the SM (CU) count and GFX IP version match exactly one AMD entry.
std::optional<GpuSpec> findGpuSpec(std::string_view name, const ObservedDevice& observed);

// The device name ROCm reports for a GPU missing from its name table: findGpuSpec(name, observed) identifies it
// by CU count and GFX IP version.
inline constexpr std::string_view kAmdGenericDeviceName = "AMD Radeon Graphics";

// The key names are compared by: ASCII letters lower-cased, every character that is not a letter or digit
// dropped, and leading "NVIDIA", "Tesla" and "GeForce" words dropped. gpuNameKey("NVIDIA GeForce RTX 4090") ==
// "rtx4090"; gpuNameKey("Tesla V100-SXM2-16GB") == "v100sxm216gb"; a name made only of those words gives "".
std::string gpuNameKey(std::string_view name);

}  // namespace kfuse::core
