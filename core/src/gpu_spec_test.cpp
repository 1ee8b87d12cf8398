#include "kfuse/core/gpu_spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kfuse::core {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

std::string shortNameOf(std::string_view name) {
  std::optional<GpuSpec> spec = findGpuSpec(name);
  return spec ? spec->short_name : "<not found>";
}

ObservedDevice observed(int sm_count, int cc_major, int cc_minor) {
  ObservedDevice device;
  device.sm_count = sm_count;
  device.cc_major = cc_major;
  device.cc_minor = cc_minor;
  return device;
}

// FP32 FMA lanes per SM, by compute capability: Volta and GA100 have 64, GA10x, Ada, Hopper and Blackwell 128
// (architecture whitepapers; CUDA C++ Programming Guide arithmetic-throughput table).
// AMD, per CU: CDNA2 64 (its "Vector FP32" is 128 FLOP/clock), CDNA3 128 (256 FLOP/clock, packed FP32 counted), as
// the ROCm MI250 and MI300 microarchitecture pages print them.
int fp32LanesPerSm(const GpuSpec& spec) {
  if (spec.vendor == GpuVendor::kAmd) return spec.cc_minor == 0 ? 64 : 128;
  if (spec.cc_major == 7 || (spec.cc_major == 8 && spec.cc_minor == 0)) return 64;
  return 128;
}

TEST(GpuSpecTest, FindsDeviceNamesSeenInRealTraces) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"},
      {"NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"},
      {"NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"},
      {"NVIDIA A100 80GB PCIe", "a100-pcie-80gb"},
      {"NVIDIA A100-PG509-200", "a100-sxm-40gb"},
      {"NVIDIA H100 80GB HBM3", "h100-sxm"},
      {"NVIDIA H100 PCIe", "h100-pcie"},
      {"NVIDIA H200", "h200"},
      {"NVIDIA GeForce RTX 3080", "rtx-3080"},
      {"NVIDIA GeForce RTX 4090", "rtx-4090"},
      {"Tesla V100-SXM2-16GB", "v100-sxm2-16gb"},
      {"Tesla V100-SXM2-32GB", "v100-sxm2-32gb"},
      {"Tesla V100-PCIE-16GB", "v100-pcie-16gb"},
      {"Tesla V100-PCIE-32GB", "v100-pcie-32gb"},
      {"NVIDIA L4", "l4"},
      {"NVIDIA L40S", "l40s"},
      {"NVIDIA B200", "b200"},
  };
  for (const auto& [name, short_name] : cases) EXPECT_EQ(shortNameOf(name), short_name) << name;
}

TEST(GpuSpecTest, FindsEveryShortNameMarketingNameAndDeviceNameOfEveryEntry) {
  for (const GpuSpec& spec : gpuSpecs()) {
    EXPECT_EQ(shortNameOf(spec.short_name), spec.short_name);
    EXPECT_EQ(shortNameOf(spec.marketing_name), spec.short_name) << spec.marketing_name;
    EXPECT_FALSE(spec.device_names.empty()) << spec.short_name;
    // A device name shared by two products (AMD's MI250X / MI250) is told apart by the SM count.
    const ObservedDevice facts = observed(spec.sm_count, spec.cc_major, spec.cc_minor);
    for (const std::string& name : spec.device_names) {
      EXPECT_EQ(findGpuSpec(name, facts)->short_name, spec.short_name) << name;
    }
  }
}

TEST(GpuSpecTest, FindsShortNames) {
  for (const char* short_name : {"v100-sxm2-16gb", "v100-sxm2-32gb", "v100-pcie-16gb", "v100-pcie-32gb",
                                 "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "rtx-3080",
                                 "rtx-4090", "l4", "l40s", "h100-sxm", "h100-pcie", "h200", "b200"}) {
    EXPECT_EQ(shortNameOf(short_name), short_name);
  }
}

TEST(GpuSpecTest, MatchingIgnoresCaseVendorWordsAndPunctuation) {
  EXPECT_EQ(shortNameOf("nvidia a100-sxm4-80gb"), "a100-sxm-80gb");
  EXPECT_EQ(shortNameOf("A100_SXM4_80GB"), "a100-sxm-80gb");
  EXPECT_EQ(shortNameOf("A100 SXM4 80GB"), "a100-sxm-80gb");
  EXPECT_EQ(shortNameOf("  NVIDIA   H100 80GB HBM3\n"), "h100-sxm");
  EXPECT_EQ(shortNameOf("H100-SXM"), "h100-sxm");
  EXPECT_EQ(shortNameOf("h100 sxm5"), "h100-sxm");
  EXPECT_EQ(shortNameOf("NVIDIA Tesla V100-SXM2-32GB"), "v100-sxm2-32gb");
  EXPECT_EQ(shortNameOf("V100-SXM2-16GB"), "v100-sxm2-16gb");
  EXPECT_EQ(shortNameOf("GeForce RTX 4090"), "rtx-4090");
  EXPECT_EQ(shortNameOf("RTX4090"), "rtx-4090");
  EXPECT_EQ(shortNameOf("rtx_3080"), "rtx-3080");
  EXPECT_EQ(shortNameOf("NVIDIA-L40S"), "l40s");
  EXPECT_EQ(shortNameOf("nvidia h200"), "h200");
}

TEST(GpuSpecTest, UnknownNamesAreNotFoundRatherThanGuessed) {
  for (const char* name : {
           "AMD Radeon Graphics",  // what the MI250 Kineto trace in ../shared/data reports
           "kfuse emulator",
           "",
           "   ",
           "NVIDIA",
           "NVIDIA GeForce",
           "Tesla",
           "NVIDIA A100-SXM4-40GB MIG 1g.5gb",  // a MIG slice has a fraction of the SMs
           "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
           "NVIDIA GeForce RTX 4090 Laptop GPU",  // AD103, 76 SMs
           "NVIDIA GeForce RTX 4090 D",
           "NVIDIA GeForce RTX 3080 Ti",
           "NVIDIA GeForce RTX 3080 Laptop GPU",
           "NVIDIA GeForce RTX 4080",
           "NVIDIA L40",  // not the L40S
           "NVIDIA A10",
           "NVIDIA A100X",
           "NVIDIA A800-SXM4-80GB",
           "NVIDIA A100-PG509-210",
           "NVIDIA H100 NVL",
           "NVIDIA H200 NVL",
           "NVIDIA H800",
           "NVIDIA GH200 480GB",
           "NVIDIA B100",
           "NVIDIA GB200",
           "Tesla T4",
           "Tesla V100S-PCIE-32GB",
           "a100 sxm",  // ambiguous between 40 and 80 GB
       }) {
    EXPECT_FALSE(findGpuSpec(name).has_value()) << '"' << name << "\" -> " << shortNameOf(name);
  }
}

TEST(GpuSpecTest, BareFamilyNamesResolveToTheWhitepaperConfiguration) {
  EXPECT_EQ(shortNameOf("NVIDIA A100"), "a100-sxm-40gb");
  EXPECT_EQ(shortNameOf("a100"), "a100-sxm-40gb");
  EXPECT_EQ(shortNameOf("NVIDIA H100"), "h100-sxm");
  EXPECT_EQ(shortNameOf("h100"), "h100-sxm");
  EXPECT_EQ(shortNameOf("Tesla V100"), "v100-sxm2-16gb");
  EXPECT_EQ(shortNameOf("v100"), "v100-sxm2-16gb");
}

TEST(GpuSpecTest, ObservedFactsThatContradictTheEntryMeanNotFound) {
  // The RTX 3080 12GB (70 SMs) reports the same device name as the 10GB (68 SMs).
  EXPECT_FALSE(findGpuSpec("NVIDIA GeForce RTX 3080", observed(/*sm_count=*/70, 0, 0)).has_value());
  EXPECT_EQ(findGpuSpec("NVIDIA GeForce RTX 3080", observed(/*sm_count=*/68, 0, 0))->short_name, "rtx-3080");
  EXPECT_EQ(findGpuSpec("NVIDIA GeForce RTX 3080", observed(0, /*cc_major=*/8, /*cc_minor=*/6))->short_name,
            "rtx-3080");
  EXPECT_FALSE(findGpuSpec("NVIDIA GeForce RTX 3080", observed(0, /*cc_major=*/8, /*cc_minor=*/9)).has_value());
  // Facts from ../shared/data/kineto/tracelens_bert_small_h100.json.gz deviceProperties.
  EXPECT_EQ(
      findGpuSpec("NVIDIA H100 80GB HBM3", observed(/*sm_count=*/132, /*cc_major=*/9, /*cc_minor=*/0))->short_name,
      "h100-sxm");
  // Nothing recorded: same as the name-only lookup.
  EXPECT_EQ(findGpuSpec("NVIDIA L4", ObservedDevice{})->short_name, "l4");
  EXPECT_FALSE(findGpuSpec("kfuse emulator", observed(/*sm_count=*/4, 0, 0)).has_value());
}

TEST(GpuSpecTest, AmdInstinctPartsAreFoundByTheNamesRocmReports) {
  EXPECT_EQ(shortNameOf("AMD Instinct MI300X"), "mi300x");
  EXPECT_EQ(shortNameOf("AMD Instinct MI325X"), "mi325x");
  EXPECT_EQ(shortNameOf("AMD Instinct MI250X"), "mi250x-gcd");
  // One name for two products (amdgpu.ids "AMD Instinct MI250X / MI250"; PyTorch prints it without the spaces):
  // the CU count decides, and without facts the first entry is taken.
  EXPECT_EQ(findGpuSpec("AMD Instinct MI250X / MI250", observed(110, 9, 0))->short_name, "mi250x-gcd");
  EXPECT_EQ(findGpuSpec("AMD Instinct MI250X/MI250", observed(104, 9, 0))->short_name, "mi250-gcd");
  EXPECT_EQ(shortNameOf("AMD Instinct MI250X / MI250"), "mi250x-gcd");
  EXPECT_FALSE(findGpuSpec("AMD Instinct MI250X / MI250", observed(96, 9, 0)).has_value());
}

TEST(GpuSpecTest, RocmsGenericNameIsIdentifiedByItsFactsOrNotAtAll) {
  // ../shared/data/kineto/hta_amd_mi250.json.gz deviceProperties: "AMD Radeon Graphics", numSms 104, 9.0.
  EXPECT_EQ(findGpuSpec("AMD Radeon Graphics", observed(104, 9, 0))->short_name, "mi250-gcd");
  EXPECT_FALSE(findGpuSpec("AMD Radeon Graphics", observed(304, 9, 4)).has_value());  // MI300X or MI325X: undecided
  EXPECT_FALSE(findGpuSpec("AMD Radeon Graphics", observed(104, 0, 0)).has_value());
  EXPECT_FALSE(findGpuSpec("AMD Radeon Graphics", observed(60, 9, 0)).has_value());
  EXPECT_FALSE(findGpuSpec("AMD Radeon Graphics").has_value());
}

TEST(GpuSpecTest, Mi300xFiguresMatchTheRocmTable) {
  // ROCm "AMD Instinct MI300 microarchitecture" peak table and "AMD GPU specifications".
  const GpuSpec g = *findGpuSpec("mi300x");
  EXPECT_EQ(g.vendor, GpuVendor::kAmd);
  EXPECT_EQ(g.sm_count, 304);
  EXPECT_DOUBLE_EQ(g.fp64_flops, 81.7e12);
  EXPECT_DOUBLE_EQ(g.fp64_tensor_flops, 163.4e12);
  EXPECT_DOUBLE_EQ(g.fp32_flops, 163.4e12);
  EXPECT_DOUBLE_EQ(g.tf32_tensor_flops, 653.7e12);
  EXPECT_DOUBLE_EQ(g.bf16_tensor_flops, 1307.4e12);
  EXPECT_DOUBLE_EQ(g.dram_bandwidth_bytes_per_s, 5.3e12);
  EXPECT_EQ(g.l2_bytes, 32 * kMiB);
  // 304 CUs x 2048 FLOP/clock (matrix FP16) x 2.1 GHz = 1307.4 TFLOPS.
  EXPECT_NEAR(g.fp16_tensor_flops / (g.sm_count * 2048.0 * g.boost_clock_mhz * 1e6), 1.0, 0.001);
}

TEST(GpuSpecTest, Mi250GcdAgreesWithTheRealTracesDeviceProperties) {
  // ../shared/data/kineto/hta_amd_mi250.json.gz: totalGlobalMem 68702699520, numSms 104, warpSize 64,
  // maxThreadsPerMultiprocessor 2048, maxThreadsPerBlock 1024, maxSharedMemoryPerMultiProcessor 65536.
  const GpuSpec g = *findGpuSpec("AMD Radeon Graphics", observed(104, 9, 0));
  EXPECT_GT(g.memory_bytes, 68702699520u);  // 64 GiB; the driver leaves a little less usable
  EXPECT_EQ(g.warp_size, 64);
  EXPECT_EQ(g.max_threads_per_sm, 2048);
  EXPECT_EQ(g.max_threads_per_block, 1024);
  EXPECT_EQ(g.max_shared_per_sm, 65536u);
  // The ROCm MI250 table (208 CUs) halved per GCD.
  EXPECT_DOUBLE_EQ(g.fp16_tensor_flops, 362.1e12 / 2);
  EXPECT_DOUBLE_EQ(g.fp64_flops, 45.3e12 / 2);
}

TEST(GpuSpecTest, NameKeyDropsCaseVendorWordsAndPunctuation) {
  EXPECT_EQ(gpuNameKey("NVIDIA GeForce RTX 4090"), "rtx4090");
  EXPECT_EQ(gpuNameKey("Tesla V100-SXM2-16GB"), "v100sxm216gb");
  EXPECT_EQ(gpuNameKey("NVIDIA A100 80GB PCIe"), "a10080gbpcie");
  EXPECT_EQ(gpuNameKey("NVIDIA"), "");
  EXPECT_EQ(gpuNameKey("GeForce NVIDIA"), "");
  // Only leading vendor words go: one later in the name is part of the name.
  EXPECT_EQ(gpuNameKey("Foo NVIDIA 1"), "foonvidia1");
}

TEST(GpuSpecTest, TableCoversTheGpusTheIssueAsksFor) {
  std::set<std::string> short_names;
  for (const GpuSpec& spec : gpuSpecs()) short_names.insert(spec.short_name);
  EXPECT_EQ(short_names.size(), gpuSpecs().size()) << "short names must be unique";
  for (const char* required :
       {"v100-sxm2-16gb", "a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm", "h100-pcie", "h200", "l4", "l40s", "rtx-4090",
        "rtx-3080", "b200", "mi250x-gcd", "mi250-gcd", "mi300x", "mi325x"}) {
    EXPECT_TRUE(short_names.count(required)) << required;
  }
}

TEST(GpuSpecTest, EveryEntryIsInternallyConsistent) {
  for (const GpuSpec& spec : gpuSpecs()) {
    SCOPED_TRACE(spec.short_name);
    EXPECT_FALSE(spec.marketing_name.empty());
    EXPECT_FALSE(spec.source.empty());
    for (char c : spec.short_name) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');

    EXPECT_GE(spec.cc_major, 7);
    EXPECT_GT(spec.sm_count, 0);
    EXPECT_GT(spec.boost_clock_mhz, 0);
    EXPECT_GT(spec.memory_bytes, 0u);
    EXPECT_GT(spec.dram_bandwidth_bytes_per_s, 0);
    EXPECT_GT(spec.l2_bytes, 0u);

    EXPECT_GT(spec.fp64_flops, 0);
    EXPECT_GT(spec.fp32_flops, 0);
    EXPECT_GT(spec.fp16_flops, 0);
    EXPECT_GT(spec.fp16_tensor_flops, 0);

    // Tensor paths are never slower than the matching non-tensor path.
    if (spec.fp64_tensor_flops > 0) {
      EXPECT_GE(spec.fp64_tensor_flops, spec.fp64_flops);
    }
    if (spec.tf32_tensor_flops > 0) {
      EXPECT_GE(spec.tf32_tensor_flops, spec.fp32_flops);
    }
    EXPECT_GE(spec.fp16_tensor_flops, spec.fp16_flops);
    if (spec.bf16_tensor_flops > 0) {
      EXPECT_GE(spec.bf16_tensor_flops, spec.bf16_flops);
    }
    EXPECT_GE(spec.fp16_flops, spec.fp32_flops);
    // CDNA2 runs FP64 at the FP32 vector rate; every other part has slower FP64.
    if (spec.vendor == GpuVendor::kAmd) {
      EXPECT_GE(spec.fp32_flops, spec.fp64_flops);
    } else {
      EXPECT_GT(spec.fp32_flops, spec.fp64_flops);
    }

    // BF16 and TF32 arrived with Ampere (CC 8.0), in the tensor cores and the ALUs alike; on AMD, BF16 matrix
    // cores are in CDNA2 and CDNA3, TF32 only in CDNA3 (9.4).
    const bool amd = spec.vendor == GpuVendor::kAmd;
    const bool ampere_or_later = spec.cc_major >= 8;
    EXPECT_EQ(spec.tf32_tensor_flops > 0, amd ? spec.cc_minor >= 4 : ampere_or_later);
    EXPECT_EQ(spec.bf16_tensor_flops > 0, amd || ampere_or_later);
    EXPECT_EQ(spec.bf16_flops > 0, amd || ampere_or_later);

    // FP32 peak = SMs x FP32 lanes x 2 FLOP x boost clock, within rounding of the published figure.
    const double derived_fp32 = spec.sm_count * fp32LanesPerSm(spec) * 2.0 * spec.boost_clock_mhz * 1e6;
    EXPECT_NEAR(spec.fp32_flops / derived_fp32, 1.0, 0.02) << "derived " << derived_fp32;

    // Per-SM limits.
    EXPECT_EQ(spec.warp_size, amd ? 64 : 32);
    EXPECT_EQ(spec.max_threads_per_sm, spec.max_warps_per_sm * spec.warp_size);
    EXPECT_GT(spec.max_blocks_per_sm, 0);
    EXPECT_EQ(spec.registers_per_sm, amd ? 131072 : 65536);
    EXPECT_EQ(spec.max_registers_per_thread, amd ? 512 : 255);
    EXPECT_EQ(spec.max_threads_per_block, 1024);
    EXPECT_GT(spec.max_shared_per_block_optin, 48 * kKiB);
    EXPECT_LE(spec.max_shared_per_block_optin, spec.max_shared_per_sm);
  }
}

TEST(GpuSpecTest, EveryEntryHasLaunchCosts) {
  // 1 us of GPU idle per dependent back-to-back launch, 4 us per launch the host does not issue ahead of the GPU
  // (gpu_spec.cpp, applyLaunchCosts: the CUDA Graphs blog's V100 figures and our H100 run).
  for (const GpuSpec& spec : gpuSpecs()) {
    SCOPED_TRACE(spec.short_name);
    EXPECT_DOUBLE_EQ(spec.dependent_launch_gap_ns, 1'000);
    EXPECT_DOUBLE_EQ(spec.launch_latency_ns, 4'000);
    EXPECT_LE(spec.dependent_launch_gap_ns, spec.launch_latency_ns);
  }
}

TEST(GpuSpecTest, EveryEntryHasItsCachePath) {
  // 32-byte sectors, 128 B per clock per SM from L1, 5120 B per clock from L2 (A100's whitepaper figure; V100's
  // 2048 for compute capability 7.x): gpu_spec.cpp, applyCachePath. On an H100 SXM5 (132 SMs, 1980 MHz) that is
  // 33.5 TB/s of L1 and 10.1 TB/s of L2, against 3.35 TB/s of DRAM.
  for (const GpuSpec& spec : gpuSpecs()) {
    SCOPED_TRACE(spec.short_name);
    EXPECT_EQ(spec.sector_bytes, 32);
    EXPECT_DOUBLE_EQ(spec.l1_bytes_per_clock_per_sm, 128);
    const bool volta_or_turing = spec.vendor == GpuVendor::kNvidia && spec.cc_major == 7;
    EXPECT_DOUBLE_EQ(spec.l2_bytes_per_clock, volta_or_turing ? 2048 : 5120);
  }
  const std::optional<GpuSpec> h100 = findGpuSpec("h100-sxm");
  ASSERT_TRUE(h100.has_value());
  EXPECT_NEAR(h100->sm_count * h100->l1_bytes_per_clock_per_sm * h100->boost_clock_mhz * 1e6, 33.45e12, 0.01e12);
  EXPECT_NEAR(h100->l2_bytes_per_clock * h100->boost_clock_mhz * 1e6, 10.14e12, 0.01e12);
}

TEST(GpuSpecTest, PerSmLimitsComeFromTheComputeCapabilityTable) {
  for (const GpuSpec& spec : gpuSpecs()) {
    SCOPED_TRACE(spec.short_name);
    const SmLimits* limits = findSmLimits(spec.cc_major, spec.cc_minor, spec.vendor);
    ASSERT_NE(limits, nullptr);
    EXPECT_EQ(spec.warp_size, limits->warp_size);
    EXPECT_EQ(spec.max_warps_per_sm, limits->max_warps_per_sm);
    EXPECT_EQ(spec.max_blocks_per_sm, limits->max_blocks_per_sm);
    EXPECT_EQ(spec.max_shared_per_sm, limits->max_shared_per_sm);
    EXPECT_EQ(spec.max_shared_per_block_optin, limits->max_shared_per_block_optin);
  }
  int previous = 0;
  GpuVendor previous_vendor = GpuVendor::kNvidia;
  for (const SmLimits& l : smLimitsTable()) {
    const int cc = l.cc_major * 10 + l.cc_minor;
    if (l.vendor != previous_vendor) previous = 0;  // NVIDIA's, then AMD's, each ascending
    EXPECT_GT(cc, previous);
    previous = cc;
    previous_vendor = l.vendor;
    EXPECT_EQ(l.max_threads_per_sm, l.max_warps_per_sm * l.warp_size);
    EXPECT_EQ(l.max_shared_per_block_optin + l.reserved_shared_per_block, l.max_shared_per_sm);
    if (l.vendor == GpuVendor::kAmd) continue;
    EXPECT_EQ(l.warp_size, 32);
    // The driver's 1 KiB per block (8.0 on) is what separates the per-block opt-in from the per-SM carveout.
    EXPECT_EQ(l.reserved_shared_per_block, l.cc_major >= 8 ? 1024u : 0u);
  }
  EXPECT_EQ(findSmLimits(12, 0)->max_blocks_per_sm, 24);
  EXPECT_EQ(findSmLimits(7, 5)->max_warps_per_sm, 32);
  EXPECT_EQ(findSmLimits(6, 1), nullptr);
  // 9.0 is Hopper and AMD's gfx90a: the vendor decides.
  EXPECT_EQ(findSmLimits(9, 0)->warp_size, 32);
  EXPECT_EQ(findSmLimits(9, 0, GpuVendor::kAmd)->warp_size, 64);
  EXPECT_EQ(findSmLimits(9, 4), nullptr);
  EXPECT_EQ(findSmLimits(9, 4, GpuVendor::kAmd)->max_shared_per_sm, 64 * kKiB);
}

TEST(GpuSpecTest, A100FiguresMatchTheDatasheet) {
  const GpuSpec sxm80 = *findGpuSpec("NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(sxm80.sm_count, 108);
  EXPECT_DOUBLE_EQ(sxm80.dram_bandwidth_bytes_per_s, 2039e9);
  EXPECT_EQ(sxm80.memory_bytes, 80 * 1024 * kMiB);
  EXPECT_DOUBLE_EQ(sxm80.fp16_tensor_flops, 312e12);
  EXPECT_DOUBLE_EQ(sxm80.tf32_tensor_flops, 156e12);
  EXPECT_DOUBLE_EQ(sxm80.fp64_tensor_flops, 19.5e12);
  EXPECT_EQ(sxm80.cc_major, 8);
  EXPECT_EQ(sxm80.cc_minor, 0);

  EXPECT_DOUBLE_EQ(findGpuSpec("NVIDIA A100 80GB PCIe")->dram_bandwidth_bytes_per_s, 1935e9);
  EXPECT_DOUBLE_EQ(findGpuSpec("NVIDIA A100-PCIE-40GB")->dram_bandwidth_bytes_per_s, 1555e9);
}

TEST(GpuSpecTest, H100FiguresMatchTheWhitepaper) {
  const GpuSpec sxm = *findGpuSpec("NVIDIA H100 80GB HBM3");
  EXPECT_EQ(sxm.sm_count, 132);
  EXPECT_DOUBLE_EQ(sxm.dram_bandwidth_bytes_per_s, 3.35e12);
  EXPECT_EQ(sxm.l2_bytes, 50 * kMiB);
  EXPECT_DOUBLE_EQ(sxm.bf16_tensor_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(sxm.fp32_flops, 66.9e12);

  const GpuSpec pcie = *findGpuSpec("NVIDIA H100 PCIe");
  EXPECT_EQ(pcie.sm_count, 114);
  EXPECT_DOUBLE_EQ(pcie.dram_bandwidth_bytes_per_s, 2.0e12);
}

// Device records in the real traces under ../shared/data, copied here as literals.
TEST(GpuSpecTest, AgreesWithDevicePropertiesRecordedInRealTraces) {
  // nsys/pipit_saxpy_a100.sqlite, TARGET_INFO_GPU.
  const GpuSpec a100 = *findGpuSpec("NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_EQ(a100.l2_bytes, 41943040u);
  EXPECT_EQ(a100.boost_clock_mhz, 1410);
  EXPECT_NEAR(a100.dram_bandwidth_bytes_per_s, 1555200000000.0, 1e9);
  EXPECT_EQ(a100.max_shared_per_sm, 167936u);
  EXPECT_EQ(a100.max_shared_per_block_optin, 166912u);
  EXPECT_EQ(a100.max_warps_per_sm, 64);
  EXPECT_EQ(a100.max_blocks_per_sm, 32);
  EXPECT_GT(a100.memory_bytes, 42297524224u);  // totalGlobalMem: what the driver leaves usable

  // nsys/nsysai_mock_rtx3080.sqlite, TARGET_INFO_GPU.
  const GpuSpec rtx3080 = *findGpuSpec("NVIDIA GeForce RTX 3080");
  EXPECT_EQ(rtx3080.sm_count, 68);
  EXPECT_EQ(rtx3080.l2_bytes, 5242880u);
  EXPECT_EQ(rtx3080.boost_clock_mhz, 1710);
  EXPECT_NEAR(rtx3080.dram_bandwidth_bytes_per_s, 760080000000.0, 1e9);
  EXPECT_EQ(rtx3080.max_shared_per_sm, 102400u);
  EXPECT_EQ(rtx3080.max_shared_per_block_optin, 101376u);
  EXPECT_EQ(rtx3080.max_warps_per_sm, 48);
  EXPECT_EQ(rtx3080.max_blocks_per_sm, 16);
  EXPECT_GT(rtx3080.memory_bytes, 10736893952u);

  // kineto/tracelens_bert_small_h100.json.gz, deviceProperties.
  const GpuSpec h100 = *findGpuSpec("NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.max_threads_per_sm, 2048);
  EXPECT_EQ(h100.max_shared_per_sm, 233472u);
  EXPECT_EQ(h100.max_shared_per_block_optin, 232448u);
  EXPECT_GT(h100.memory_bytes, 85018279936u);

  // kineto/hta_simple_add.json.gz, deviceProperties of "NVIDIA A100-PG509-200".
  const GpuSpec pg509 = *findGpuSpec("NVIDIA A100-PG509-200");
  EXPECT_EQ(pg509.sm_count, 108);
  EXPECT_GT(pg509.memory_bytes, 42297524224u);
  EXPECT_LT(pg509.memory_bytes, 84990623744u);  // not the 80 GB part (hta_six_streams_rank0.json.gz)
}

TEST(GpuSpecTest, PerSmLimitsFollowTheComputeCapability) {
  const GpuSpec l4 = *findGpuSpec("l4");
  EXPECT_EQ(l4.max_threads_per_sm, 1536);
  EXPECT_EQ(l4.max_blocks_per_sm, 24);
  EXPECT_EQ(l4.max_shared_per_block_optin, 99 * kKiB);

  const GpuSpec b200 = *findGpuSpec("b200");
  EXPECT_EQ(b200.cc_major, 10);
  EXPECT_EQ(b200.sm_count, 148);
  EXPECT_EQ(b200.max_shared_per_sm, 228 * kKiB);
  EXPECT_EQ(b200.max_shared_per_block_optin, 227 * kKiB);

  const GpuSpec v100 = *findGpuSpec("v100-sxm2-16gb");
  EXPECT_EQ(v100.max_shared_per_block_optin, 96 * kKiB);
  EXPECT_EQ(v100.bf16_tensor_flops, 0);
  EXPECT_EQ(v100.tf32_tensor_flops, 0);
}

TEST(GpuSpecTest, LookupReturnsTheSameEntryAsTheTable) {
  const GpuSpec& first = gpuSpecs().front();
  const std::optional<GpuSpec> found = findGpuSpec(first.short_name);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->marketing_name, first.marketing_name);
  EXPECT_EQ(found->source, first.source);
  EXPECT_EQ(&gpuSpecs(), &gpuSpecs());  // one table for the life of the program
}

}  // namespace
}  // namespace kfuse::core
