#include "kfuse/core/gpu_spec.h"

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>

#include "kfuse/core/status.h"

namespace kfuse::core {
namespace {

constexpr double kTera = 1e12;
constexpr double kPeta = 1e15;
constexpr double kGBps = 1e9;  // datasheets give bandwidth in decimal GB/s
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

// Per-SM limits depend only on the compute capability. Source for every row: CUDA C++ Programming Guide, table
// "Technical Specifications per Compute Capability" (resident blocks/warps/threads per SM, 32-bit registers per SM,
// registers per thread, threads per block, shared memory per SM and per block). The per-block figure is the opt-in
// maximum: CUDA keeps 1 KB of the SM's shared memory per block from 8.0 on, hence 163 of 164 KB on 8.0 and 227 of
// 228 KB on 9.0 and 10.0 (Blackwell Tuning Guide says the same for 10.0). Allocation granularities (registers per
// warp, shared bytes per block), register-file partitions and barrier slots (2 per resident block, 1 on 8.6, 8.7,
// 8.9 and 12.x) are those of the occupancy calculator shipped with CUDA 13.0 (cuda_occupancy.h), which also gives
// 24 blocks per SM for 12.x. Cross-checked against real traces in ../shared/data: A100 167936/166912 B and H100
// 233472/232448 B (Kineto deviceProperties); RTX 3080 102400/101376 B, 48 warps and 16 blocks per SM (Nsight
// Systems TARGET_INFO_GPU); RTX 4090 24 blocks, 1536 threads (nvbench output in NVIDIA/nvbench#207).
SmLimits limits(int major, int minor, int warps, int blocks, uint64_t shared_kib, int barriers_per_block) {
  SmLimits l;
  l.cc_major = major;
  l.cc_minor = minor;
  l.max_threads_per_sm = warps * 32;
  l.max_warps_per_sm = warps;
  l.max_blocks_per_sm = blocks;
  l.registers_per_sm = 65536;
  l.max_registers_per_thread = 255;
  l.register_allocation_unit = 256;
  l.register_file_partitions = 4;
  l.max_threads_per_block = 1024;
  l.max_shared_per_sm = shared_kib * kKiB;
  const bool ampere_or_later = major >= 8;
  l.reserved_shared_per_block = ampere_or_later ? 1024 : 0;
  l.max_shared_per_block_optin = l.max_shared_per_sm - l.reserved_shared_per_block;
  l.shared_allocation_unit = ampere_or_later ? 128 : 256;
  l.barriers_per_sm = blocks * barriers_per_block;
  return l;
}

// AMD CDNA2 (gfx90a, GFX IP 9.0: MI250, MI250X) and CDNA3 (gfx942, 9.4: MI300X, MI325X) compute units. Sources:
// ROCm documentation, "AMD GPU specifications" table (wavefront size 64, LDS 64 KiB, VGPR file 512 KiB per CU) and
// the ROCm Compute Profiler's "Pipeline descriptions" (four SIMDs per CU, "execution slots for up to 8 wavefronts"
// per SIMD, 32 per CU). Threads per CU (32 x 64 = 2048) and per workgroup (1024) agree with the deviceProperties
// of the MI250 trace in ../shared/data/kineto (maxThreadsPerMultiprocessor 2048, maxThreadsPerBlock 1024,
// sharedMemPerBlock 65536). Derived, not printed: workgroups per CU are bounded by the 32 wavefront slots (each
// workgroup holds at least one); 512 registers per lane is the 512 KiB VGPR file over 4 SIMDs x 64 lanes x 4 B.
// Not in the documents read, so not modelled: register and LDS allocation granules (1 register per lane and 1 byte,
// i.e. no rounding) and barrier slots (one per workgroup, never the binding limit).
SmLimits amdCdnaLimits(int major, int minor) {
  SmLimits l;
  l.vendor = GpuVendor::kAmd;
  l.cc_major = major;
  l.cc_minor = minor;
  l.warp_size = 64;
  l.max_warps_per_sm = 32;
  l.max_threads_per_sm = l.max_warps_per_sm * l.warp_size;
  l.max_blocks_per_sm = 32;
  l.registers_per_sm = static_cast<int>(512 * kKiB / 4);
  l.max_registers_per_thread = 512;
  l.register_allocation_unit = l.warp_size;
  l.register_file_partitions = 4;
  l.max_threads_per_block = 1024;
  l.max_shared_per_sm = 64 * kKiB;
  l.reserved_shared_per_block = 0;
  l.max_shared_per_block_optin = l.max_shared_per_sm;
  l.shared_allocation_unit = 1;
  l.barriers_per_sm = l.max_blocks_per_sm;
  return l;
}

std::vector<SmLimits> buildSmLimits() {
  return {
      limits(7, 0, /*warps=*/64, /*blocks=*/32, /*shared_kib=*/96, /*barriers_per_block=*/2),  // Volta
      limits(7, 5, 32, 16, 64, 2),                                                             // Turing
      limits(8, 0, 64, 32, 164, 2),                                                            // GA100
      limits(8, 6, 48, 16, 100, 1),                                                            // GA10x
      limits(8, 7, 48, 16, 164, 1),                                                            // Orin
      limits(8, 9, 48, 24, 100, 1),                                                            // Ada
      limits(9, 0, 64, 32, 228, 2),                                                            // Hopper
      limits(10, 0, 64, 32, 228, 2),  // Blackwell data centre (B200)
      limits(10, 3, 64, 32, 228, 2),  // Blackwell Ultra (B300)
      limits(12, 0, 48, 24, 100, 1),  // Blackwell GeForce / workstation
      amdCdnaLimits(9, 0),            // AMD CDNA2 (gfx90a)
      amdCdnaLimits(9, 4),            // AMD CDNA3 (gfx942)
  };
}

void applySmLimits(GpuSpec& spec) {
  const SmLimits* l = findSmLimits(spec.cc_major, spec.cc_minor, spec.vendor);
  KFUSE_CHECK(l != nullptr && "GPU spec entry with a compute capability missing from the SmLimits table");
  spec.max_threads_per_sm = l->max_threads_per_sm;
  spec.max_warps_per_sm = l->max_warps_per_sm;
  spec.max_blocks_per_sm = l->max_blocks_per_sm;
  spec.registers_per_sm = l->registers_per_sm;
  spec.max_registers_per_thread = l->max_registers_per_thread;
  spec.max_threads_per_block = l->max_threads_per_block;
  spec.max_shared_per_sm = l->max_shared_per_sm;
  spec.max_shared_per_block_optin = l->max_shared_per_block_optin;
  spec.warp_size = l->warp_size;
}

// Launch costs. No vendor document gives them per product (they belong to the driver and the GPU's front end more
// than to the chip), so one pair per vendor:
//  - dependent-launch gap, 1 us: NVIDIA Technical Blog, "Getting Started with CUDA Graphs" (A. Gray, 2019; V100,
//    CUDA 10.1): kernels of 2.9 us each took 3.8 us per kernel when launched back to back on one stream without
//    synchronising between them, i.e. 0.9 us of each launch showed on the GPU; graphs brought it to 3.4 us. Our
//    own H100 run (README, "Checked on a GPU": many_small_kernels, 36.4 -> 21.1 us of CUPTI kernel time with 14
//    launches fewer) lost 1.1 us of GPU time per launch removed. 1 us is the round figure of both.
//  - launch latency, 4 us: the same blog's figure with a synchronisation after every launch is 9.6 us per 2.9 us
//    kernel (launch, start and synchronisation: 6.7 us); the 2-4 us of host-side overhead per launch commonly quoted
//    for cudaLaunchKernel/cuLaunchKernel is the part a host that does not keep ahead of the GPU pays per launch.
//    4 us is the upper end of that range, an assumed value: scripts/gpu_check.sh would measure it as the median
//    time from the API start of a launch on an idle stream to its kernel's GPU start (CUPTI), and the gap as the
//    median idle time between back-to-back empty kernels on one stream.
//  - AMD (HIP/ROCm): no figure read here; the NVIDIA values are assumed, to be measured the same way.
void applyLaunchCosts(GpuSpec& spec) {
  spec.dependent_launch_gap_ns = 1'000;
  spec.launch_latency_ns = 4'000;
}

// The cache path, used by the cost model for traffic that stays on chip (re-reads, uncoalesced requests):
//  - sector: 32 bytes, the unit of a global memory request (CUDA C++ Best Practices Guide, "Coalesced Access to
//    Global Memory": a warp's accesses are coalesced into 32-byte transactions).
//  - L1: 128 bytes per clock per SM, derived: the L1 and shared memory are one array whose data path serves 32
//    banks of 4 bytes per clock (CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x and later).
//  - L2: 5120 bytes per clock for the whole L2 from compute capability 8.0 on, the A100's figure (NVIDIA A100 Tensor
//    Core GPU Architecture whitepaper: "5120 Bytes/clk", against V100's 2048); later parts publish none, so A100's
//    per-clock figure is assumed for them (a lower bound: their L2s are larger and no slower per clock), and V100's
//    for compute capability 7.x.
//  - AMD (CDNA): no figure read here; the NVIDIA values are assumed, as for launch costs.
void applyCachePath(GpuSpec& spec) {
  spec.sector_bytes = 32;
  spec.l1_bytes_per_clock_per_sm = 128;
  spec.l2_bytes_per_clock = spec.vendor == GpuVendor::kNvidia && spec.cc_major < 8 ? 2048 : 5120;
}

// What the documents say about one product. The per-SM limits are not here: they follow from the compute
// capability (findSmLimits). Every field is given in every entry, so nothing is left at a default by accident;
// only `vendor` has one (NVIDIA), set by the AMD entries.
struct Product {
  std::string short_name;
  std::string marketing_name;
  std::vector<std::string> device_names;
  int cc_major;
  int cc_minor;
  int sm_count;
  int boost_clock_mhz;
  uint64_t memory_bytes;
  double dram_bandwidth_bytes_per_s;
  uint64_t l2_bytes;
  double fp64_flops;
  double fp64_tensor_flops;
  double fp32_flops;
  double tf32_tensor_flops;
  double fp16_flops;
  double fp16_tensor_flops;
  double bf16_flops;
  double bf16_tensor_flops;
  std::string source;
  GpuVendor vendor = GpuVendor::kNvidia;
};

GpuSpec toSpec(const Product& product) {
  GpuSpec spec;
  spec.vendor = product.vendor;
  spec.short_name = product.short_name;
  spec.marketing_name = product.marketing_name;
  spec.device_names = product.device_names;
  spec.cc_major = product.cc_major;
  spec.cc_minor = product.cc_minor;
  spec.sm_count = product.sm_count;
  spec.boost_clock_mhz = product.boost_clock_mhz;
  spec.memory_bytes = product.memory_bytes;
  spec.dram_bandwidth_bytes_per_s = product.dram_bandwidth_bytes_per_s;
  spec.l2_bytes = product.l2_bytes;
  spec.fp64_flops = product.fp64_flops;
  spec.fp64_tensor_flops = product.fp64_tensor_flops;
  spec.fp32_flops = product.fp32_flops;
  spec.tf32_tensor_flops = product.tf32_tensor_flops;
  spec.fp16_flops = product.fp16_flops;
  spec.fp16_tensor_flops = product.fp16_tensor_flops;
  spec.bf16_flops = product.bf16_flops;
  spec.bf16_tensor_flops = product.bf16_tensor_flops;
  spec.source = product.source;
  applySmLimits(spec);
  applyLaunchCosts(spec);
  applyCachePath(spec);
  return spec;
}

// A product that differs from `base` only in memory (and so in name and, for A100, in bandwidth).
Product memoryVariant(const Product& base, std::string short_name, std::string marketing_name,
                      std::vector<std::string> device_names, uint64_t memory_bytes, double dram_bandwidth_bytes_per_s) {
  Product spec = base;
  spec.short_name = std::move(short_name);
  spec.marketing_name = std::move(marketing_name);
  spec.device_names = std::move(device_names);
  spec.memory_bytes = memory_bytes;
  spec.dram_bandwidth_bytes_per_s = dram_bandwidth_bytes_per_s;
  return spec;
}

std::vector<GpuSpec> buildTable() {
  std::vector<Product> products;

  // ---- Volta (CC 7.0) -----------------------------------------------------------------------------------------
  // NVIDIA Tesla V100 GPU Architecture whitepaper, Table 1 (V100 SXM2: 80 SMs, GPU boost 1530 MHz, 6144 KB L2,
  // 7.8 TFLOPS FP64, 15.7 FP32, 125 tensor) and NVIDIA V100 Tensor Core GPU datasheet (SXM2 7.8/15.7/125 TFLOPS,
  // PCIe 7/14/112 TFLOPS; HBM2 16 or 32 GB at 900 GB/s for both form factors). Volta tensor cores take FP16
  // inputs with FP32 accumulate at the full 125 TFLOPS; there is no BF16, TF32 or FP64 tensor path.
  // FP16 non-tensor is not in either document: derived from the CUDA C++ Programming Guide's arithmetic-throughput
  // table (CC 7.x: 128 16-bit FMA results/clk/SM vs 64 for 32-bit) as 80 SMs x 128 x 2 FLOP x 1.53 GHz = 31.3 TFLOPS.
  const Product v100_sxm2{
      .short_name = "v100-sxm2-16gb",
      .marketing_name = "NVIDIA Tesla V100 SXM2 16GB",
      .device_names = {"Tesla V100-SXM2-16GB"},
      .cc_major = 7,
      .cc_minor = 0,
      .sm_count = 80,
      .boost_clock_mhz = 1530,
      .memory_bytes = 16 * kGiB,
      .dram_bandwidth_bytes_per_s = 900 * kGBps,
      .l2_bytes = 6 * kMiB,
      .fp64_flops = 7.8 * kTera,
      .fp64_tensor_flops = 0,
      .fp32_flops = 15.7 * kTera,
      .tf32_tensor_flops = 0,
      .fp16_flops = 31.3 * kTera,
      .fp16_tensor_flops = 125 * kTera,
      .bf16_flops = 0,
      .bf16_tensor_flops = 0,
      .source =
          "NVIDIA Tesla V100 GPU Architecture whitepaper, Table 1; NVIDIA V100 Tensor Core GPU datasheet; "
          "CUDA C++ Programming Guide (FP16 throughput, per-SM limits)",
  };
  products.push_back(v100_sxm2);
  products.push_back(memoryVariant(v100_sxm2, "v100-sxm2-32gb", "NVIDIA Tesla V100 SXM2 32GB", {"Tesla V100-SXM2-32GB"},
                                   32 * kGiB, 900 * kGBps));

  // V100 PCIe: datasheet 7 / 14 / 112 TFLOPS, 900 GB/s. Boost clock: not in the datasheet; 1380 MHz is the max
  // clock the driver reports for Tesla V100-PCIE (deviceQuery "GPU Max Clock rate"). The datasheet's rounded
  // figures imply ~1370 MHz (14 TFLOPS / (80 SMs x 64 FMA x 2 FLOP)), within 1%.
  // FP16 non-tensor derived as for SXM2: 80 x 128 x 2 x 1.38 GHz = 28.3 TFLOPS.
  Product v100_pcie = v100_sxm2;
  v100_pcie.short_name = "v100-pcie-16gb";
  v100_pcie.marketing_name = "NVIDIA Tesla V100 PCIe 16GB";
  v100_pcie.device_names = {"Tesla V100-PCIE-16GB"};
  v100_pcie.boost_clock_mhz = 1380;
  v100_pcie.fp64_flops = 7 * kTera;
  v100_pcie.fp32_flops = 14 * kTera;
  v100_pcie.fp16_flops = 28.3 * kTera;
  v100_pcie.fp16_tensor_flops = 112 * kTera;
  products.push_back(v100_pcie);
  products.push_back(memoryVariant(v100_pcie, "v100-pcie-32gb", "NVIDIA Tesla V100 PCIe 32GB", {"Tesla V100-PCIE-32GB"},
                                   32 * kGiB, 900 * kGBps));

  // ---- Ampere GA100 (CC 8.0) ----------------------------------------------------------------------------------
  // NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1 (108 SMs, boost 1410 MHz, 40 MB L2; FP64 9.7,
  // FP64 tensor 19.5, FP32 19.5, TF32 tensor 156, FP16 non-tensor 78, BF16 non-tensor 39, FP16/BF16 tensor 312
  // TFLOPS dense) and the NVIDIA A100 datasheet (same peaks for SXM and PCIe; bandwidth 40GB: 1,555 GB/s,
  // 80GB PCIe: 1,935 GB/s, 80GB SXM: 2,039 GB/s). The 40 MiB L2, 1410 MHz and 1555.2 GB/s also appear in the
  // Nsight Systems export ../shared/data/nsys/pipit_saxpy_a100.sqlite (TARGET_INFO_GPU, "NVIDIA A100-SXM4-40GB").
  // "NVIDIA A100-PG509-200" is how some drivers name A100 SXM4 boards (PG509 is the SXM4 module). The traces in
  // ../shared/data/kineto/hta_*.json.gz that carry it report 108 SMs, CC 8.0 and totalGlobalMem 42297524224 B,
  // byte for byte the A100-SXM4-40GB's, so it is listed here and only here; other PG509 SKUs are not guessed.
  const Product a100_sxm_40gb{
      .short_name = "a100-sxm-40gb",
      .marketing_name = "NVIDIA A100 SXM4 40GB",
      .device_names = {"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PG509-200"},
      .cc_major = 8,
      .cc_minor = 0,
      .sm_count = 108,
      .boost_clock_mhz = 1410,
      .memory_bytes = 40 * kGiB,
      .dram_bandwidth_bytes_per_s = 1555 * kGBps,
      .l2_bytes = 40 * kMiB,
      .fp64_flops = 9.7 * kTera,
      .fp64_tensor_flops = 19.5 * kTera,
      .fp32_flops = 19.5 * kTera,
      .tf32_tensor_flops = 156 * kTera,
      .fp16_flops = 78 * kTera,
      .fp16_tensor_flops = 312 * kTera,
      .bf16_flops = 39 * kTera,
      .bf16_tensor_flops = 312 * kTera,
      .source =
          "NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1; NVIDIA A100 Tensor Core GPU "
          "datasheet; CUDA C++ Programming Guide (per-SM limits)",
  };
  products.push_back(a100_sxm_40gb);
  products.push_back(memoryVariant(a100_sxm_40gb, "a100-sxm-80gb", "NVIDIA A100 SXM4 80GB", {"NVIDIA A100-SXM4-80GB"},
                                   80 * kGiB, 2039 * kGBps));
  products.push_back(memoryVariant(a100_sxm_40gb, "a100-pcie-40gb", "NVIDIA A100 PCIe 40GB", {"NVIDIA A100-PCIE-40GB"},
                                   40 * kGiB, 1555 * kGBps));
  products.push_back(memoryVariant(a100_sxm_40gb, "a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", {"NVIDIA A100 80GB PCIe"},
                                   80 * kGiB, 1935 * kGBps));

  // ---- Ampere GA10x (CC 8.6) ----------------------------------------------------------------------------------
  // NVIDIA Ampere GA102 GPU Architecture whitepaper, GeForce RTX 3080 column: 68 SMs, boost 1710 MHz, 10 GB
  // GDDR6X at 760 GB/s, 5120 KB L2; FP32 29.8, FP16 and BF16 non-tensor 29.8 (1:1 with FP32 on GA10x), TF32 tensor
  // 29.8, FP16/BF16 tensor with FP32 accumulate 59.5 TFLOPS dense. All but the FLOP/s match the Nsight Systems
  // export ../shared/data/nsys/nsysai_mock_rtx3080.sqlite (68 SMs, 1710 MHz, L2 5242880 B, 760.08 GB/s).
  // FP64 is not in the whitepaper: derived from the CUDA C++ Programming Guide's throughput table (CC 8.6: 2 FP64
  // FMA results/clk/SM) as 68 x 2 x 2 FLOP x 1.71 GHz = 0.465 TFLOPS. No FP64 tensor cores.
  // The 12 GB RTX 3080 (70 SMs, 384-bit, 912 GB/s) is reported under the same device name; pass the trace's SM
  // count to findGpuSpec() to keep it from matching this entry.
  products.push_back(Product{
      .short_name = "rtx-3080",
      .marketing_name = "NVIDIA GeForce RTX 3080 10GB",
      .device_names = {"NVIDIA GeForce RTX 3080"},
      .cc_major = 8,
      .cc_minor = 6,
      .sm_count = 68,
      .boost_clock_mhz = 1710,
      .memory_bytes = 10 * kGiB,
      .dram_bandwidth_bytes_per_s = 760 * kGBps,
      .l2_bytes = 5 * kMiB,
      .fp64_flops = 0.465 * kTera,
      .fp64_tensor_flops = 0,
      .fp32_flops = 29.8 * kTera,
      .tf32_tensor_flops = 29.8 * kTera,
      .fp16_flops = 29.8 * kTera,
      .fp16_tensor_flops = 59.5 * kTera,
      .bf16_flops = 29.8 * kTera,
      .bf16_tensor_flops = 59.5 * kTera,
      .source = "NVIDIA Ampere GA102 GPU Architecture whitepaper (GeForce RTX 3080); CUDA C++ Programming Guide "
                "(FP64 throughput, per-SM limits)",
  });

  // ---- Ada Lovelace (CC 8.9) ----------------------------------------------------------------------------------
  // Ada has no FP64 tensor cores and runs FP64 at 1/64 of FP32 (CUDA C++ Programming Guide throughput table, CC
  // 8.9: 2 FP64 vs 128 FP32 results/clk/SM); no Ada document prints an FP64 figure, so it is derived below as
  // SMs x 2 x 2 FLOP x boost clock. FP16 and BF16 non-tensor run at the FP32 rate (NVIDIA Ada GPU Architecture
  // whitepaper, RTX 4090: FP32, FP16 and BF16 non-tensor all 82.6 TFLOPS); the L4 and L40S datasheets do not print
  // them, so for those the FP32 figure is used.

  // NVIDIA Ada GPU Architecture whitepaper, Appendix A (GeForce RTX 4090): 128 SMs, boost 2520 MHz, 24 GB GDDR6X
  // at 1008 GB/s, 72 MB L2; FP32 82.6, TF32 tensor 82.6, FP16/BF16 tensor with FP32 accumulate 165.2 TFLOPS dense.
  // (128 SMs, 2520 MHz, 1008 GB/s and L2 73728 KiB also in the nvbench device dump in NVIDIA/nvbench#207.)
  // FP64 derived: 128 x 4 x 2.52 GHz = 1.29 TFLOPS.
  products.push_back(Product{
      .short_name = "rtx-4090",
      .marketing_name = "NVIDIA GeForce RTX 4090",
      .device_names = {"NVIDIA GeForce RTX 4090"},
      .cc_major = 8,
      .cc_minor = 9,
      .sm_count = 128,
      .boost_clock_mhz = 2520,
      .memory_bytes = 24 * kGiB,
      .dram_bandwidth_bytes_per_s = 1008 * kGBps,
      .l2_bytes = 72 * kMiB,
      .fp64_flops = 1.29 * kTera,
      .fp64_tensor_flops = 0,
      .fp32_flops = 82.6 * kTera,
      .tf32_tensor_flops = 82.6 * kTera,
      .fp16_flops = 82.6 * kTera,
      .fp16_tensor_flops = 165.2 * kTera,
      .bf16_flops = 82.6 * kTera,
      .bf16_tensor_flops = 165.2 * kTera,
      .source = "NVIDIA Ada GPU Architecture whitepaper, Appendix A (GeForce RTX 4090); CUDA C++ Programming Guide "
                "(FP64 throughput, per-SM limits)",
  });

  // NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3 TFLOPS; TF32 tensor 120, FP16 and BF16 tensor 242 TFLOPS
  // *with sparsity*, so 60 and 121 dense; 24 GB GDDR6 at 300 GB/s. The datasheet prints neither SM count nor
  // clock: 58 SMs (7,424 CUDA cores) at a 2040 MHz boost is the configuration listed for the L4 elsewhere, and it
  // reproduces the datasheet's FP32 figure (58 x 128 x 2 FLOP x 2.04 GHz = 30.3 TFLOPS) and dense FP16 tensor
  // figure (58 x 1024 FLOP/clk x 2.04 GHz = 121). L2: 48 MB, the AD104 L2 per the Ada whitepaper (not printed in
  // the L4 datasheet). FP64 derived: 58 x 4 x 2.04 GHz = 0.473 TFLOPS.
  products.push_back(Product{
      .short_name = "l4",
      .marketing_name = "NVIDIA L4",
      .device_names = {"NVIDIA L4"},
      .cc_major = 8,
      .cc_minor = 9,
      .sm_count = 58,
      .boost_clock_mhz = 2040,
      .memory_bytes = 24 * kGiB,
      .dram_bandwidth_bytes_per_s = 300 * kGBps,
      .l2_bytes = 48 * kMiB,
      .fp64_flops = 0.473 * kTera,
      .fp64_tensor_flops = 0,
      .fp32_flops = 30.3 * kTera,
      .tf32_tensor_flops = 60 * kTera,
      .fp16_flops = 30.3 * kTera,
      .fp16_tensor_flops = 121 * kTera,
      .bf16_flops = 30.3 * kTera,
      .bf16_tensor_flops = 121 * kTera,
      .source = "NVIDIA L4 Tensor Core GPU datasheet (tensor figures halved: printed with sparsity; SM count and "
                "clock not printed, checked against its FP32 figure); NVIDIA Ada GPU Architecture whitepaper (AD104 "
                "L2, FP16:FP32 ratio); CUDA C++ Programming Guide (FP64 throughput, per-SM limits)",
  });

  // NVIDIA L40S datasheet: 18,176 CUDA cores and 568 tensor cores (= 142 SMs), FP32 91.6 TFLOPS, TF32 tensor
  // 183 | 366*, FP16/BF16 tensor 362.05 | 733* TFLOPS (* = sparsity; the dense column is used), 48 GB GDDR6 at
  // 864 GB/s. Boost 2520 MHz is not printed; it is the clock of the FP32 figure (142 x 128 x 2 x 2.52 GHz = 91.6).
  // The datasheet's dense and sparse tensor columns are not exactly 1:2 (362.05 vs 733); the printed dense value
  // is kept. L2: 96 MB (full AD102 per the Ada whitepaper; not printed in the L40S datasheet).
  // FP64 derived: 142 x 4 x 2.52 GHz = 1.43 TFLOPS.
  products.push_back(Product{
      .short_name = "l40s",
      .marketing_name = "NVIDIA L40S",
      .device_names = {"NVIDIA L40S"},
      .cc_major = 8,
      .cc_minor = 9,
      .sm_count = 142,
      .boost_clock_mhz = 2520,
      .memory_bytes = 48 * kGiB,
      .dram_bandwidth_bytes_per_s = 864 * kGBps,
      .l2_bytes = 96 * kMiB,
      .fp64_flops = 1.43 * kTera,
      .fp64_tensor_flops = 0,
      .fp32_flops = 91.6 * kTera,
      .tf32_tensor_flops = 183 * kTera,
      .fp16_flops = 91.6 * kTera,
      .fp16_tensor_flops = 362.05 * kTera,
      .bf16_flops = 91.6 * kTera,
      .bf16_tensor_flops = 362.05 * kTera,
      .source = "NVIDIA L40S datasheet (dense column; clock not printed, derived from its FP32 figure); NVIDIA Ada "
                "GPU Architecture whitepaper (AD102 L2, FP16:FP32 ratio); CUDA C++ Programming Guide (FP64 "
                "throughput, per-SM limits)",
  });

  // ---- Hopper (CC 9.0) ----------------------------------------------------------------------------------------
  // NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 (H100 SXM5): 132 SMs, 50 MB L2; FP64 33.5, FP64
  // tensor 66.9, FP32 66.9, FP16 and BF16 non-tensor 133.8, TF32 tensor 494.7, FP16/BF16 tensor 989.4 TFLOPS
  // dense. The NVIDIA H100 datasheet rounds these (34 / 67 / 67 / 989* / 1,979* with sparsity) and gives 80 GB HBM3
  // at 3.35 TB/s. The FP32/FP64 figures are at the 1980 MHz max boost (132 x 128 x 2 x 1.98 GHz = 66.9); the
  // tensor figures at 1830 MHz (132 x 4096 FLOP/clk x 1.83 GHz = 989.4), which is why they are not derived.
  products.push_back(Product{
      .short_name = "h100-sxm",
      .marketing_name = "NVIDIA H100 SXM5 80GB",
      .device_names = {"NVIDIA H100 80GB HBM3"},
      .cc_major = 9,
      .cc_minor = 0,
      .sm_count = 132,
      .boost_clock_mhz = 1980,
      .memory_bytes = 80 * kGiB,
      .dram_bandwidth_bytes_per_s = 3350 * kGBps,
      .l2_bytes = 50 * kMiB,
      .fp64_flops = 33.5 * kTera,
      .fp64_tensor_flops = 66.9 * kTera,
      .fp32_flops = 66.9 * kTera,
      .tf32_tensor_flops = 494.7 * kTera,
      .fp16_flops = 133.8 * kTera,
      .fp16_tensor_flops = 989.4 * kTera,
      .bf16_flops = 133.8 * kTera,
      .bf16_tensor_flops = 989.4 * kTera,
      .source = "NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 (H100 SXM5); NVIDIA H100 Tensor Core "
                "GPU datasheet; CUDA C++ Programming Guide (per-SM limits)",
  });

  // Same whitepaper table, H100 PCIe: 114 SMs, 50 MB L2, 80 GB HBM2e at 2000 GB/s; FP64 25.6, FP64 tensor 51.2,
  // FP32 51.2, FP16/BF16 non-tensor 102.4, TF32 tensor 378, FP16/BF16 tensor 756 TFLOPS dense (datasheet:
  // 26 / 51 / 51 / 756* / 1,513* with sparsity, 2 TB/s). Boost 1755 MHz: the clock of the FP32 figure
  // (51.2 TFLOPS / (114 x 128 x 2) = 1.754 GHz).
  products.push_back(Product{
      .short_name = "h100-pcie",
      .marketing_name = "NVIDIA H100 PCIe 80GB",
      .device_names = {"NVIDIA H100 PCIe"},
      .cc_major = 9,
      .cc_minor = 0,
      .sm_count = 114,
      .boost_clock_mhz = 1755,
      .memory_bytes = 80 * kGiB,
      .dram_bandwidth_bytes_per_s = 2000 * kGBps,
      .l2_bytes = 50 * kMiB,
      .fp64_flops = 25.6 * kTera,
      .fp64_tensor_flops = 51.2 * kTera,
      .fp32_flops = 51.2 * kTera,
      .tf32_tensor_flops = 378 * kTera,
      .fp16_flops = 102.4 * kTera,
      .fp16_tensor_flops = 756 * kTera,
      .bf16_flops = 102.4 * kTera,
      .bf16_tensor_flops = 756 * kTera,
      .source = "NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 (H100 PCIe); NVIDIA H100 Tensor Core "
                "GPU datasheet; CUDA C++ Programming Guide (per-SM limits)",
  });

  // NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): FP64 34, FP64 tensor 67, FP32 67, TF32 tensor 989*,
  // FP16/BF16 tensor 1,979* TFLOPS (* = sparsity; halved here), 141 GB HBM3e at 4.8 TB/s. The H200 is the GH100 die
  // in the H100 SXM5 configuration with new memory, so what its datasheet does not print is the H100 SXM5's
  // (whitepaper): 132 SMs, 50 MB L2, FP16/BF16 non-tensor 133.8 TFLOPS. Max clock 1980 MHz is what nvidia-smi
  // reports on H200 (awslabs/amazon-eks-ami#1985) and gives the datasheet's FP32 (132 x 256 x 1.98 GHz = 66.9).
  products.push_back(Product{
      .short_name = "h200",
      .marketing_name = "NVIDIA H200 SXM 141GB",
      .device_names = {"NVIDIA H200"},
      .cc_major = 9,
      .cc_minor = 0,
      .sm_count = 132,
      .boost_clock_mhz = 1980,
      .memory_bytes = 141 * kGiB,
      .dram_bandwidth_bytes_per_s = 4800 * kGBps,
      .l2_bytes = 50 * kMiB,
      .fp64_flops = 34 * kTera,
      .fp64_tensor_flops = 67 * kTera,
      .fp32_flops = 67 * kTera,
      .tf32_tensor_flops = 494.5 * kTera,
      .fp16_flops = 133.8 * kTera,
      .fp16_tensor_flops = 989.5 * kTera,
      .bf16_flops = 133.8 * kTera,
      .bf16_tensor_flops = 989.5 * kTera,
      .source = "NVIDIA H200 Tensor Core GPU datasheet (tensor figures halved: printed with sparsity); NVIDIA H100 "
                "Tensor Core GPU Architecture whitepaper (SM count, L2, FP16/BF16 non-tensor); CUDA C++ Programming "
                "Guide (per-SM limits)",
  });

  // ---- Blackwell data centre (CC 10.0) ------------------------------------------------------------------------
  // NVIDIA HGX B200 specifications ("individual Blackwell GPU" column): FP64 and FP64 tensor 37 TFLOPS, FP32 75
  // TFLOPS, TF32 tensor 2.2 PFLOPS* and FP16/BF16 tensor 4.5 PFLOPS* (* = sparsity; halved here), 180 GB HBM3e at
  // 7.7 TB/s. (Earlier revisions printed 40 / 80 TFLOPS, 192 GB and 8 TB/s.) NVIDIA publishes neither the SM count,
  // the L2 size nor the clock for B200:
  //  - 148 SMs and L2 126.5 MiB (132644864 B) are what cudaGetDeviceProperties reports on "NVIDIA B200"
  //    (pytorch/ao#4002); the Blackwell Tuning Guide gives the L2 as 126 MB.
  //  - 1980 MHz is the clock that yields the datasheet FP32: 75 TFLOPS / (148 x 128 x 2) = 1.979 GHz.
  //  - FP16/BF16 non-tensor are not published: assumed 2x FP32 as on Hopper (150 TFLOPS). Unverified.
  products.push_back(Product{
      .short_name = "b200",
      .marketing_name = "NVIDIA B200 SXM 180GB",
      .device_names = {"NVIDIA B200"},
      .cc_major = 10,
      .cc_minor = 0,
      .sm_count = 148,
      .boost_clock_mhz = 1980,
      .memory_bytes = 180 * kGiB,
      .dram_bandwidth_bytes_per_s = 7700 * kGBps,
      .l2_bytes = 132644864,
      .fp64_flops = 37 * kTera,
      .fp64_tensor_flops = 37 * kTera,
      .fp32_flops = 75 * kTera,
      .tf32_tensor_flops = 1.1 * kPeta,
      .fp16_flops = 150 * kTera,
      .fp16_tensor_flops = 2.25 * kPeta,
      .bf16_flops = 150 * kTera,
      .bf16_tensor_flops = 2.25 * kPeta,
      .source = "NVIDIA HGX B200 specifications (tensor figures halved: printed with sparsity); NVIDIA Blackwell "
                "Tuning Guide (L2, shared memory); SM count and L2 from cudaGetDeviceProperties (not published); "
                "clock and FP16/BF16 non-tensor derived; CUDA C++ Programming Guide (per-SM limits)",
  });

  // ---- AMD Instinct (CDNA2, CDNA3) ----------------------------------------------------------------------------
  // Sources (AMD): ROCm documentation, "AMD GPU specifications" (rocm.docs.amd.com/en/latest/reference/
  // gpu-specs.html): CUs, VRAM, L2, GFX IP version, per-CU figures (see amdCdnaLimits); "AMD Instinct MI250
  // microarchitecture" (.../conceptual/gpu-arch/mi250.html): 1.7 GHz peak clock, "1.6 TB/sec per GCD", and its
  // peak table for the MI250 (208 CUs), in FLOP per clock per CU and TFLOPS: Matrix FP64 256 / 90.5, Vector FP64
  // 128 / 45.3, Vector FP32 128 / 45.3, Matrix FP16 and BF16 1024 / 362.1; "AMD Instinct MI300 microarchitecture"
  // (.../gpu-arch/mi300.html): "aggregated peak memory bandwidth of the GPU is 5.3 TB per second" and its MI300X
  // table: Vector FP64 128 / 81.7, Matrix FP64 256 / 163.4, Vector FP32 256 / 163.4, Vector TF32 (an MFMA rate)
  // 1024 / 653.7, Matrix FP16 and BF16 2048 / 1307.4 (all dense). Device names: libdrm's amdgpu.ids, which ROCm
  // reports ("AMD Instinct MI250X", "AMD Instinct MI250X / MI250", "AMD Instinct MI300X", "AMD Instinct MI325X").
  // Conventions here: "Vector" rates are the non-tensor figures and "Matrix" the tensor ones. AMD prints no
  // non-matrix FP16/BF16 rate: FP16 is derived from packed-FP16 FMA, 64 lanes x 2 halves x 2 FLOP = 256 FLOP per
  // clock per CU, and BF16, which CDNA2/3 vector units do not compute natively, is set to the FP32 vector rate.
  // CDNA2 has no TF32 (0). CDNA3's "Vector FP32" (256 FLOP/clock/CU) counts packed FP32, CDNA2's (128) does not.
  //
  // MI250X, per GCD: 110 CUs (gpu-specs: "220 (110 per GCD)"), 64 GiB of 128, 8 MiB L2 ("16 (8 per GCD)"),
  // gfx90a 9.0. The MI250 page's per-CU rates at 1.7 GHz give FP64 110 x 128 x 1.7 GHz = 23.9, matrix FP64 47.9,
  // FP32 23.9, FP16/BF16 matrix 110 x 1024 x 1.7 GHz = 191.5 TFLOPS; 1.6 TB/s per GCD (same HBM2e as the MI250).
  products.push_back(Product{
      .short_name = "mi250x-gcd",
      .marketing_name = "AMD Instinct MI250X (one GCD)",
      .device_names = {"AMD Instinct MI250X", "AMD Instinct MI250X / MI250"},
      .cc_major = 9,
      .cc_minor = 0,
      .sm_count = 110,
      .boost_clock_mhz = 1700,
      .memory_bytes = 64 * kGiB,
      .dram_bandwidth_bytes_per_s = 1600 * kGBps,
      .l2_bytes = 8 * kMiB,
      .fp64_flops = 23.9 * kTera,
      .fp64_tensor_flops = 47.9 * kTera,
      .fp32_flops = 23.9 * kTera,
      .tf32_tensor_flops = 0,
      .fp16_flops = 47.9 * kTera,
      .fp16_tensor_flops = 191.5 * kTera,
      .bf16_flops = 23.9 * kTera,
      .bf16_tensor_flops = 191.5 * kTera,
      .source = "ROCm documentation: AMD GPU specifications (CUs, memory, L2 per GCD); AMD Instinct MI250 "
                "microarchitecture (clock, per-GCD bandwidth, FLOP/clock/CU: peak rates derived for 110 CUs); "
                "non-matrix FP16/BF16 derived (not printed by AMD)",
      .vendor = GpuVendor::kAmd,
  });

  // MI250, per GCD: 104 CUs ("208 (104 per GCD)"), 64 GiB, 8 MiB L2; the MI250 page's table halved: FP64 22.65,
  // matrix FP64 45.25, FP32 22.65, FP16/BF16 matrix 181.05 TFLOPS; 1.6 TB/s per GCD. The MI250 trace in
  // ../shared/data/kineto is one of these GCDs (104 CUs, 64 GiB, 9.0), named "AMD Radeon Graphics".
  products.push_back(Product{
      .short_name = "mi250-gcd",
      .marketing_name = "AMD Instinct MI250 (one GCD)",
      .device_names = {"AMD Instinct MI250X / MI250"},
      .cc_major = 9,
      .cc_minor = 0,
      .sm_count = 104,
      .boost_clock_mhz = 1700,
      .memory_bytes = 64 * kGiB,
      .dram_bandwidth_bytes_per_s = 1600 * kGBps,
      .l2_bytes = 8 * kMiB,
      .fp64_flops = 22.65 * kTera,
      .fp64_tensor_flops = 45.25 * kTera,
      .fp32_flops = 22.65 * kTera,
      .tf32_tensor_flops = 0,
      .fp16_flops = 45.3 * kTera,
      .fp16_tensor_flops = 181.05 * kTera,
      .bf16_flops = 22.65 * kTera,
      .bf16_tensor_flops = 181.05 * kTera,
      .source = "ROCm documentation: AMD GPU specifications (CUs, memory, L2 per GCD); AMD Instinct MI250 "
                "microarchitecture (clock, per-GCD bandwidth, peak table halved per GCD); non-matrix FP16/BF16 "
                "derived (not printed by AMD)",
      .vendor = GpuVendor::kAmd,
  });

  // MI300X: 304 CUs ("304 (38 per XCD)"), 192 GiB HBM3, L2 32 MiB ("32 (4 per XCD)"; the 256 MiB Infinity Cache is
  // a memory-side cache and not counted as L2), gfx942 9.4; the MI300 page's table. The clock is derived from it:
  // 1307.4 TFLOPS / (304 CUs x 2048 FLOP/clock) = 2.10 GHz.
  products.push_back(Product{
      .short_name = "mi300x",
      .marketing_name = "AMD Instinct MI300X",
      .device_names = {"AMD Instinct MI300X"},
      .cc_major = 9,
      .cc_minor = 4,
      .sm_count = 304,
      .boost_clock_mhz = 2100,
      .memory_bytes = 192 * kGiB,
      .dram_bandwidth_bytes_per_s = 5300 * kGBps,
      .l2_bytes = 32 * kMiB,
      .fp64_flops = 81.7 * kTera,
      .fp64_tensor_flops = 163.4 * kTera,
      .fp32_flops = 163.4 * kTera,
      .tf32_tensor_flops = 653.7 * kTera,
      .fp16_flops = 163.4 * kTera,
      .fp16_tensor_flops = 1307.4 * kTera,
      .bf16_flops = 163.4 * kTera,
      .bf16_tensor_flops = 1307.4 * kTera,
      .source = "ROCm documentation: AMD GPU specifications (CUs, memory, L2); AMD Instinct MI300 microarchitecture "
                "(bandwidth, peak table); clock and non-matrix FP16/BF16 derived (not printed by AMD)",
      .vendor = GpuVendor::kAmd,
  });

  // MI325X: the MI300X's die and CUs (gpu-specs: gfx942, "304 (38 per XCD)", L2 "32 (4 per XCD)") with 256 GiB of
  // HBM3E. Its bandwidth and compute are not in the ROCm documents read: 6.0 TB/s and FP16 1,307 TFLOPS are AMD's
  // MI325X product page as quoted by Vultr's documentation ("Specifications from AMD MI325X product page"), read
  // second-hand; the compute figures are therefore the MI300X's.
  Product mi325x = products.back();
  mi325x.short_name = "mi325x";
  mi325x.marketing_name = "AMD Instinct MI325X";
  mi325x.device_names = {"AMD Instinct MI325X"};
  mi325x.memory_bytes = 256 * kGiB;
  mi325x.dram_bandwidth_bytes_per_s = 6000 * kGBps;
  mi325x.source =
      "ROCm documentation: AMD GPU specifications (CUs, memory, L2); AMD MI325X product page as quoted "
      "second-hand (bandwidth 6.0 TB/s, FP16 1,307 TFLOPS); other peaks those of the MI300X (same die, "
      "CUs and clock)";
  products.push_back(mi325x);

  std::vector<GpuSpec> table;
  table.reserve(products.size());
  for (const Product& product : products) table.push_back(toSpec(product));
  return table;
}

// Other spellings users type, each naming exactly one entry (by short name).
constexpr std::pair<const char*, const char*> kExtraAliases[] = {
    {"a100-sxm4-40gb", "a100-sxm-40gb"},
    {"a100-sxm4-80gb", "a100-sxm-80gb"},
    {"h100-sxm5", "h100-sxm"},
    {"h100-sxm5-80gb", "h100-sxm"},
    {"h100-sxm-80gb", "h100-sxm"},
    {"h100-pcie-80gb", "h100-pcie"},
    {"h200-sxm", "h200"},
    {"h200-sxm-141gb", "h200"},
    {"b200-sxm", "b200"},
    {"rtx-3080-10gb", "rtx-3080"},
    // Bare family names: the configuration each architecture whitepaper describes. A user who types "a100" most
    // likely has the SXM part, and the 40GB is the original one; the choice is documented in gpu_spec.h.
    {"a100", "a100-sxm-40gb"},
    {"h100", "h100-sxm"},
    {"v100", "v100-sxm2-16gb"},
};

class SpecIndex {
 public:
  SpecIndex() : specs_(buildTable()) {
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const GpuSpec& spec = specs_[i];
      add(spec.short_name, i);
      add(spec.marketing_name, i);
      for (const std::string& name : spec.device_names) add(name, i);
    }
    for (const auto& [alias, short_name] : kExtraAliases) {
      auto it = by_key_.find(gpuNameKey(short_name));
      KFUSE_CHECK(it != by_key_.end() && it->second.size() == 1);
      add(alias, it->second.front());
    }
  }

  const std::vector<GpuSpec>& specs() const { return specs_; }

  // Every entry `name` names, in table order (empty when none).
  std::vector<const GpuSpec*> find(std::string_view name) const {
    std::vector<const GpuSpec*> found;
    const std::string key = gpuNameKey(name);
    if (key.empty()) return found;
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return found;
    for (std::size_t i : it->second) found.push_back(&specs_[i]);
    return found;
  }

 private:
  // A name may repeat within one entry (a short name often normalises like a device name). It may name two
  // entries only when they differ in SM count, so that a trace's facts can tell them apart.
  void add(std::string_view name, std::size_t index) {
    const std::string key = gpuNameKey(name);
    KFUSE_CHECK(!key.empty());
    std::vector<std::size_t>& entries = by_key_[key];
    for (std::size_t other : entries) {
      if (other == index) return;
      KFUSE_CHECK(specs_[other].sm_count != specs_[index].sm_count);
    }
    entries.push_back(index);
  }

  std::vector<GpuSpec> specs_;
  std::unordered_map<std::string, std::vector<std::size_t>> by_key_;
};

const SpecIndex& specIndex() {
  static const SpecIndex index;
  return index;
}

bool isAsciiAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

char asciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool isVendorWord(std::string_view word) {
  return word == "nvidia" || word == "tesla" || word == "geforce";
}

}  // namespace

std::string gpuNameKey(std::string_view name) {
  std::string key;
  bool in_prefix = true;  // still among the leading vendor/brand words
  std::size_t i = 0;
  while (i < name.size()) {
    if (!isAsciiAlnum(name[i])) {
      ++i;
      continue;
    }
    std::string word;
    for (; i < name.size() && isAsciiAlnum(name[i]); ++i) word.push_back(asciiLower(name[i]));
    if (in_prefix && isVendorWord(word)) continue;
    in_prefix = false;
    key += word;
  }
  return key;
}

const std::vector<GpuSpec>& gpuSpecs() {
  return specIndex().specs();
}

const std::vector<SmLimits>& smLimitsTable() {
  static const std::vector<SmLimits> table = buildSmLimits();
  return table;
}

const SmLimits* findSmLimits(int cc_major, int cc_minor, GpuVendor vendor) {
  for (const SmLimits& l : smLimitsTable()) {
    if (l.vendor == vendor && l.cc_major == cc_major && l.cc_minor == cc_minor) return &l;
  }
  return nullptr;
}

std::optional<GpuSpec> findGpuSpec(std::string_view name) {
  const std::vector<const GpuSpec*> found = specIndex().find(name);
  if (found.empty()) return std::nullopt;
  return *found.front();
}

std::optional<GpuSpec> findGpuSpec(std::string_view name, const ObservedDevice& observed) {
  auto agrees = [&](const GpuSpec& spec) {
    if (observed.sm_count != 0 && observed.sm_count != spec.sm_count) return false;
    return observed.cc_major == 0 || (observed.cc_major == spec.cc_major && observed.cc_minor == spec.cc_minor);
  };
  if (gpuNameKey(name) == gpuNameKey(kAmdGenericDeviceName)) {
    if (observed.sm_count == 0 || observed.cc_major == 0) return std::nullopt;
    const GpuSpec* match = nullptr;
    for (const GpuSpec& spec : gpuSpecs()) {
      if (spec.vendor != GpuVendor::kAmd || !agrees(spec)) continue;
      if (match) return std::nullopt;  // two candidates: the facts do not decide
      match = &spec;
    }
    if (!match) return std::nullopt;
    return *match;
  }
  for (const GpuSpec* spec : specIndex().find(name)) {
    if (agrees(*spec)) return *spec;
  }
  return std::nullopt;
}

}  // namespace kfuse::core
