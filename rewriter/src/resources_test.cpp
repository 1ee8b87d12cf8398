#include "kfuse/rewriter/resources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace kfuse::rewriter {
namespace {

std::string readTestdata(const std::string& name) {
  std::ifstream in(std::string(KFUSE_REWRITER_TESTDATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const KernelResources* find(const std::vector<KernelResources>& all, const std::string& kernel) {
  for (const KernelResources& r : all) {
    if (r.kernel == kernel) return &r;
  }
  return nullptr;
}

KernelResources kernel(const std::string& arch, int registers, uint64_t static_shared = 0, int barriers = 0) {
  KernelResources r;
  r.kernel = "k";
  r.arch = arch;
  r.registers = registers;
  r.static_shared_bytes = static_shared;
  r.barriers = barriers;
  return r;
}

// ---- ptxas reports ----

TEST(PtxasLog, ReadsEveryEntryOfARecordedReport) {
  // testdata/ptxas_sm80.log: ptxas 13.0 -v -arch=sm_80 on testdata/resources.ptx.
  auto all = parsePtxasLog(readTestdata("ptxas_sm80.log"), "sm_80");
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 3u);  // bump, heavy, scale; the .func helper is no entry
  EXPECT_EQ(find(*all, "_Z6helperfi"), nullptr);

  const KernelResources* heavy = find(*all, "_Z5heavyPfPKfi");
  ASSERT_NE(heavy, nullptr);
  EXPECT_EQ(heavy->arch, "sm_80");
  EXPECT_EQ(heavy->registers, 32);
  EXPECT_EQ(heavy->barriers, 1);
  EXPECT_EQ(heavy->spill_store_bytes, 940u);
  EXPECT_EQ(heavy->spill_load_bytes, 1184u);
  EXPECT_EQ(heavy->stack_bytes, 824u);  // the cumulative stack size
  EXPECT_EQ(heavy->static_shared_bytes, 0u);

  const KernelResources* scale = find(*all, "_Z5scalePfPKfi");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->registers, 10);
  EXPECT_EQ(scale->static_shared_bytes, 1024u);  // __shared__ float tile[256]
  EXPECT_EQ(scale->spill_store_bytes, 0u);

  const KernelResources* bump = find(*all, "_Z4bumpIiEvPT_");
  ASSERT_NE(bump, nullptr);
  EXPECT_EQ(bump->registers, 8);
  EXPECT_EQ(bump->barriers, 0);
}

TEST(PtxasLog, AnEntryWithoutAResourceLineIsAnError) {
  const std::string log =
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
      "ptxas info    : Function properties for k\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
  auto all = parsePtxasLog(log, "sm_90");
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("'k'"), std::string::npos);
}

TEST(CompileResources, ReportsTheEntriesOfRealNvccPtxForEachArchitecture) {
  const std::string ptx = readTestdata("resources.ptx");
  for (const std::string arch : {"sm_80", "sm_90", "sm_100"}) {
    SCOPED_TRACE(arch);
    auto all = compileResources(ptx, arch);
    ASSERT_TRUE(all.ok()) << all.status().message();
    ASSERT_EQ(all->size(), 3u);
    for (const KernelResources& r : *all) {
      EXPECT_EQ(r.arch, arch);
      EXPECT_GT(r.registers, 0);
      EXPECT_EQ(r.occupancy, 0);
    }
    const KernelResources* heavy = find(*all, "_Z5heavyPfPKfi");
    ASSERT_NE(heavy, nullptr);
    EXPECT_LE(heavy->registers, 32);  // .maxnreg 32
    EXPECT_GT(heavy->spill_store_bytes, 0u);
    EXPECT_GT(heavy->spill_load_bytes, 0u);
    EXPECT_GT(heavy->stack_bytes, 0u);
    EXPECT_EQ(find(*all, "_Z5scalePfPKfi")->static_shared_bytes, 1024u);
    EXPECT_EQ(find(*all, "_Z5scalePfPKfi")->barriers, 1);
  }
}

TEST(CompileResources, ARejectionCarriesPtxassLog) {
  auto all = compileResources(readTestdata("undeclared_register.ptx"), "sm_80");
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(all.status().message().find("Unknown symbol '%f1'"), std::string::npos) << all.status().message();
}

TEST(CompileResources, PtxForANewerTargetIsRejectedWithTheReason) {
  // .target sm_90 PTX cannot be compiled for sm_80.
  const std::string ptx =
      std::string(".version 8.0\n.target sm_90\n.address_size 64\n") + ".visible .entry k()\n{\n\tret;\n}\n";
  auto all = compileResources(ptx, "sm_80");
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("SM version"), std::string::npos) << all.status().message();
}

// ---- architecture limits ----

TEST(ArchLimits, KnowsEachArchitectureOfTheTable) {
  struct Row {
    const char* arch;
    int warps, blocks;
    uint64_t shared_per_sm, per_block;
    uint32_t reserved;
  };
  // CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (12.x: 24 blocks per SM, as the
  // occupancy calculator of CUDA 13.0 has it).
  const Row rows[] = {
      {"sm_70", 64, 32, 96 * 1024, 96 * 1024, 0},       {"sm_75", 32, 16, 64 * 1024, 64 * 1024, 0},
      {"sm_80", 64, 32, 164 * 1024, 163 * 1024, 1024},  {"sm_86", 48, 16, 100 * 1024, 99 * 1024, 1024},
      {"sm_87", 48, 16, 164 * 1024, 163 * 1024, 1024},  {"sm_89", 48, 24, 100 * 1024, 99 * 1024, 1024},
      {"sm_90", 64, 32, 228 * 1024, 227 * 1024, 1024},  {"sm_100", 64, 32, 228 * 1024, 227 * 1024, 1024},
      {"sm_103", 64, 32, 228 * 1024, 227 * 1024, 1024}, {"sm_120", 48, 24, 100 * 1024, 99 * 1024, 1024},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.arch);
    auto l = archLimits(row.arch);
    ASSERT_TRUE(l.ok()) << l.status().message();
    EXPECT_EQ(l->arch, row.arch);
    EXPECT_EQ(l->max_warps_per_sm, row.warps);
    EXPECT_EQ(l->max_blocks_per_sm, row.blocks);
    EXPECT_EQ(l->registers_per_sm, 65536);
    EXPECT_EQ(l->register_allocation_unit, 256);
    EXPECT_EQ(l->max_registers_per_thread, 255);
    EXPECT_EQ(l->shared_per_sm, row.shared_per_sm);
    EXPECT_EQ(l->max_shared_per_block, row.per_block);
    EXPECT_EQ(l->reserved_shared_per_block, row.reserved);
  }
}

TEST(ArchLimits, AcceptsArchitectureSpecificSuffixesAndRejectsTheUnknown) {
  EXPECT_EQ(archLimits("sm_90a")->max_warps_per_sm, 64);
  EXPECT_EQ(archLimits("sm_100f")->max_blocks_per_sm, 32);
  for (const char* bad : {"sm_61", "sm_9", "compute_90", "", "sm_9x", "sm_1000"}) {
    auto l = archLimits(bad);
    ASSERT_FALSE(l.ok()) << bad;
    EXPECT_NE(l.status().message().find("sm_120"), std::string::npos);  // lists the known ones
  }
}

// ---- occupancy, worked out by hand ----

TEST(Occupancy, FullWhenNothingButWarpsLimits) {
  // sm_90, 256 threads = 8 warps. Warps: 64 / 8 = 8 blocks. Registers: 32 x 32 = 1024 per warp; a partition holds
  // 16384 / 1024 = 16 warps, 4 partitions 64 warps = 8 blocks. Shared: 0 + 1 KiB reserved -> 233472 / 1024 = 228.
  // Blocks: 32. Least: 8 blocks = 64 warps = 100%; warps and registers tie, warps named.
  KernelResources r = kernel("sm_90", 32);
  ASSERT_TRUE(computeOccupancy(r, 256, 0).ok());
  EXPECT_EQ(r.threads_per_block, 256u);
  EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kWarps);
}

TEST(Occupancy, RegistersHalveIt) {
  // sm_90, 256 threads, 64 registers: 2048 per warp; 16384 / 2048 = 8 warps per partition, 32 per SM = 4 blocks
  // of 8 warps = 32 / 64 = 50%.
  KernelResources r = kernel("sm_90", 64);
  ASSERT_TRUE(computeOccupancy(r, 256, 0).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 0.5);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kRegisters);
}

TEST(Occupancy, RegistersAreAllocatedPerWarpInUnitsAndPerPartition) {
  // sm_90, 96 threads = 3 warps, 40 registers: 1280 per warp (a multiple of 256 already). Per partition
  // 16384 / 1280 = 12 warps, 48 per SM = 16 blocks (the whole file would hold 65536 / 1280 = 51 warps = 17
  // blocks: the partitions cost one). Warps allow 64 / 3 = 21, blocks 32. 16 x 3 = 48 warps = 75%.
  KernelResources r = kernel("sm_90", 40);
  ASSERT_TRUE(computeOccupancy(r, 96, 0).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 0.75);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kRegisters);
  // 33 registers: 1056 rounds up to 1280, the same as 40.
  KernelResources r33 = kernel("sm_90", 33);
  ASSERT_TRUE(computeOccupancy(r33, 96, 0).ok());
  EXPECT_DOUBLE_EQ(r33.occupancy, 0.75);
}

TEST(Occupancy, SharedMemoryCountsTheReservedKilobyte) {
  // sm_90, 256 threads, 32 registers, 48 KiB static: 49152 + 1024 reserved = 50176 (a multiple of 128) per block;
  // 233472 / 50176 = 4.65 -> 4 blocks = 32 warps = 50%.
  KernelResources r = kernel("sm_90", 32, 48 * 1024);
  ASSERT_TRUE(computeOccupancy(r, 256, 0).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 0.5);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kSharedMemory);
  // The same as dynamic shared memory, split 16 KiB static + 32 KiB dynamic.
  KernelResources split = kernel("sm_90", 32, 16 * 1024);
  ASSERT_TRUE(computeOccupancy(split, 256, 32 * 1024).ok());
  EXPECT_DOUBLE_EQ(split.occupancy, 0.5);
  // 45 KiB: 46080 + 1024 = 47104; 233472 / 47104 = 4.96 -> 4 blocks. Without the reserved kilobyte it would be 5.
  KernelResources k45 = kernel("sm_90", 32, 45 * 1024);
  ASSERT_TRUE(computeOccupancy(k45, 256, 0).ok());
  EXPECT_DOUBLE_EQ(k45.occupancy, 0.5);
}

TEST(Occupancy, SharedMemoryRoundsUpToTheAllocationUnit) {
  // sm_75 (64 KiB per SM, no reserved bytes, 256-byte unit, 32 warps): 256 threads, 20000 bytes -> 20224 per block;
  // 65536 / 20224 = 3.2 -> 3 blocks = 24 warps of 32 = 75%.
  KernelResources r = kernel("sm_75", 16, 20000);
  ASSERT_TRUE(computeOccupancy(r, 256, 0).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 0.75);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kSharedMemory);
}

TEST(Occupancy, TheBlockLimitBindsSmallBlocks) {
  // sm_90, 32 threads = 1 warp, 16 registers: warps allow 64 blocks, registers 128, blocks 32 -> 32 warps = 50%.
  KernelResources r = kernel("sm_90", 16);
  ASSERT_TRUE(computeOccupancy(r, 32, 0).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 0.5);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kBlocks);
}

TEST(Occupancy, PartialWarpsCountAsWholeWarps) {
  // sm_86 (48 warps, 16 blocks): 100 threads = 4 warps; warps allow 12 blocks, blocks 16, 16 registers allow
  // (16384 / 512) x 4 / 4 = 32 -> 12 blocks x 4 warps = 48 warps = 100%.
  KernelResources r = kernel("sm_86", 16);
  ASSERT_TRUE(computeOccupancy(r, 100, 0).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 1.0);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kWarps);
}

TEST(Occupancy, BarriersLimitBlocksWhereAnSmHasOnePerBlock) {
  // sm_86 has 16 hardware barriers per SM (one per resident block). 64 threads = 2 warps, 16 registers, 2 barriers
  // (two named barriers, as a thread-partitioned horizontal fusion uses): 16 / 2 = 8 blocks; warps allow 24,
  // blocks 16, registers 64. 8 x 2 = 16 warps of 48 = 1/3.
  KernelResources r = kernel("sm_86", 16, 0, /*barriers=*/2);
  ASSERT_TRUE(computeOccupancy(r, 64, 0).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 16.0 / 48.0);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kBarriers);
  // sm_90 has two per block slot: 64 / 2 = 32 blocks, no limit below the block limit.
  KernelResources h = kernel("sm_90", 16, 0, 2);
  ASSERT_TRUE(computeOccupancy(h, 64, 0).ok());
  EXPECT_DOUBLE_EQ(h.occupancy, 1.0);
}

TEST(Occupancy, TheLargestSharedMemoryABlockMayOptInToStillRuns) {
  // sm_90: 227 KiB + 1 KiB reserved = 228 KiB = the whole SM: 1 block of 8 warps = 12.5%.
  KernelResources r = kernel("sm_90", 32, 0);
  ASSERT_TRUE(computeOccupancy(r, 256, 227 * 1024).ok());
  EXPECT_DOUBLE_EQ(r.occupancy, 0.125);
  EXPECT_EQ(r.occupancy_limiter, OccupancyLimiter::kSharedMemory);
}

TEST(Occupancy, ALaunchThatCannotRunIsAnErrorWithZeroOccupancy) {
  // 1024 threads x 72 registers: 2304 per warp x 32 warps = 73728 > 65536.
  KernelResources regs = kernel("sm_90", 72);
  Status s = computeOccupancy(regs, 1024, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("73728"), std::string::npos) << s.message();
  EXPECT_EQ(regs.occupancy, 0);
  EXPECT_EQ(regs.occupancy_limiter, OccupancyLimiter::kRegisters);
  // 228 KiB of dynamic shared memory is 1 KiB more than a block may have on sm_90.
  KernelResources smem = kernel("sm_90", 32);
  s = computeOccupancy(smem, 256, 228 * 1024);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(smem.occupancy, 0);
  EXPECT_EQ(smem.occupancy_limiter, OccupancyLimiter::kSharedMemory);
}

TEST(Occupancy, RejectsBadBlockSizesAndUnknownArchitectures) {
  KernelResources r = kernel("sm_90", 32);
  EXPECT_FALSE(computeOccupancy(r, 0, 0).ok());
  EXPECT_FALSE(computeOccupancy(r, 1025, 0).ok());
  KernelResources old = kernel("sm_61", 32);
  EXPECT_FALSE(computeOccupancy(old, 256, 0).ok());
}

}  // namespace
}  // namespace kfuse::rewriter
