// One test per rule of the cost model, each against a value worked out by hand (the arithmetic is in the comments).
#include "cost/cost_model.h"

#include <gtest/gtest.h>

namespace kfuse::analyzer::cost {
namespace {

// Round figures so that the arithmetic stays readable: 1,000 bytes/ns of DRAM, 10,000 FP32 FLOP/ns.
core::GpuSpec testGpu() {
  core::GpuSpec g;
  g.short_name = "test";
  g.sm_count = 100;
  g.dram_bandwidth_bytes_per_s = 1e12;  // 1,000 B/ns
  g.fp32_flops = 1e13;                  // 10,000 FLOP/ns
  g.fp16_flops = 4e13;                  // 40,000 FLOP/ns
  g.fp64_flops = 5e11;                  // 500 FLOP/ns
  g.bf16_flops = 0;                     // no such path: runs at the FP32 peak
  g.max_blocks_per_sm = 32;
  g.max_threads_per_sm = 2048;
  g.registers_per_sm = 65536;
  g.max_shared_per_sm = 100'000;
  g.dependent_launch_gap_ns = 1'000;
  g.launch_latency_ns = 4'000;
  return g;
}

FlopCounts fp32(double n) {
  return {0, 0, n, 0};
}

constexpr double kTol = 1e-9;

TEST(CostModel, RooflineIsTheSlowerOfTheMemoryAndComputeBounds) {
  const core::GpuSpec g = testGpu();
  // 1e6 B / 1e12 B/s = 1e-6 s = 1,000 ns; 1e6 FLOP / 1e13 FLOP/s = 1e-7 s = 100 ns.
  EXPECT_NEAR(memoryNs(1e6, g), 1'000, kTol);
  EXPECT_NEAR(computeNs(fp32(1e6), g), 100, kTol);
  EXPECT_NEAR(rooflineNs(1e6, fp32(1e6), g), 1'000, kTol);  // memory bound
  // 1e8 FLOP / 1e13 FLOP/s = 1e-5 s = 10,000 ns > 1,000 ns: compute bound.
  EXPECT_NEAR(rooflineNs(1e6, fp32(1e8), g), 10'000, kTol);
}

TEST(CostModel, EachPrecisionRunsAtItsOwnPeak) {
  const core::GpuSpec g = testGpu();
  // FP16: 4e6 / 4e13 = 1e-7 s = 100 ns (at the FP32 peak it would have been 400 ns).
  EXPECT_NEAR(computeNs({4e6, 0, 0, 0}, g), 100, kTol);
  // FP64: 1e6 / 5e11 = 2e-6 s = 2,000 ns (at the FP32 peak: 100 ns).
  EXPECT_NEAR(computeNs({0, 0, 0, 1e6}, g), 2'000, kTol);
  // BF16 without a BF16 peak: the FP32 peak, 1e6 / 1e13 = 100 ns.
  EXPECT_NEAR(computeNs({0, 1e6, 0, 0}, g), 100, kTol);
  // Mixed: the precisions add up, 100 (FP16) + 100 (BF16) + 100 (FP32) + 2,000 (FP64) = 2,300 ns.
  EXPECT_NEAR(computeNs({4e6, 1e6, 1e6, 1e6}, g), 2'300, kTol);
  // The real table, H100 SXM: FP64 33.5 TFLOP/s, FP32 66.9, FP16 (non-tensor) 133.8. 1e9 FP64 FLOP take
  // 1e9 / 33.5e12 s = 29,850.7 ns (at the FP32 peak it would have been 14,947.7 ns); 1e9 FP16 FLOP 7,473.8 ns.
  const core::GpuSpec h100 = *core::findGpuSpec("h100-sxm");
  EXPECT_NEAR(computeNs({0, 0, 0, 1e9}, h100), 1e9 / 33.5e12 * 1e9, kTol);
  EXPECT_NEAR(computeNs({1e9, 0, 0, 0}, h100), 1e9 / 133.8e12 * 1e9, kTol);
}

TEST(CostModel, ALaunchSmallerThanTheGpuReachesOnlyItsShareOfThePeaks) {
  const core::GpuSpec g = testGpu();
  // 25 blocks on 100 SMs: a quarter of the GPU, so 1e6 B takes 1,000 / 0.25 = 4,000 ns.
  EXPECT_NEAR(smShare({25, 128, 0, 0}, g), 0.25, kTol);
  EXPECT_NEAR(launchRooflineNs(1e6, {}, {25, 128, 0, 0}, g), 4'000, kTol);
  // 500 blocks: the whole GPU; unknown shape (0 blocks): the whole GPU too.
  EXPECT_NEAR(launchRooflineNs(1e6, {}, {500, 128, 0, 0}, g), 1'000, kTol);
  EXPECT_NEAR(launchRooflineNs(1e6, {}, {0, 1, 0, 0}, g), 1'000, kTol);
}

TEST(CostModel, WavesCountBlocksAgainstWhatFitsOnTheGpu) {
  const core::GpuSpec g = testGpu();
  // 256 threads: min(32 blocks, 2048 / 256 = 8) = 8 per SM; 64 registers: 65536 / (256 * 64) = 4 per SM.
  // 4 x 100 SMs = 400 blocks.
  EXPECT_NEAR(blockCapacity({200, 256, 64, 0}, g), 400, kTol);
  // 30,000 B of shared memory a block: floor(100,000 / 30,000) = 3 per SM, 300 on the GPU.
  EXPECT_NEAR(blockCapacity({200, 256, 0, 30'000}, g), 300, kTol);
  // 128 threads: min(32, 16) = 16 per SM, 1,600 on the GPU. 200 / 400 + 300 / 1,600 = 0.5 + 0.1875 = 0.6875.
  EXPECT_NEAR(waves({{200, 256, 64, 0}, {300, 128, 0, 0}}, g), 0.6875, kTol);
}

TEST(CostModel, IdleGapCountsOnlyWhenTheNextLaunchWasIssuedBeforeThePreviousKernelEnded) {
  // A ends at 1,000; B was issued at 800 and started at 1,500: 500 ns of launch latency, removed.
  // B ends at 2,500; C was issued at 3,000 (the host was late) and started at 4,000: not removed.
  EXPECT_NEAR(removedIdleNs({{0, 0, 1'000}, {800, 1'500, 2'500}, {3'000, 4'000, 5'000}}), 500, kTol);
  // Overlapping kernels leave no gap.
  EXPECT_NEAR(removedIdleNs({{0, 0, 1'000}, {0, 900, 2'000}}), 0, kTol);
}

TEST(CostModel, IdleGapWithoutIssueTimesIsCappedAtFiveMicroseconds) {
  // Gaps of 8,000 ns (capped at 5,000) and 2,000 ns: 7,000 ns.
  EXPECT_NEAR(
      removedIdleNs({{core::kNoTime, 0, 1'000}, {core::kNoTime, 9'000, 10'000}, {core::kNoTime, 12'000, 13'000}}),
      5'000 + 2'000, kTol);
  EXPECT_DOUBLE_EQ(kUnknownIssueGapCapNs, 5'000);
}

TEST(CostModel, BusyTimeIsTheUnionOfTheKernelsSpans) {
  // [0, 100] and [50, 150] overlap: 150; [300, 400]: 100. 250 in all.
  EXPECT_NEAR(busyNs({{0, 0, 100}, {0, 50, 150}, {0, 300, 400}}), 250, kTol);
  EXPECT_NEAR(busyNs({{0, core::kNoTime, core::kNoTime}}), 0, kTol);
}

TEST(CostModel, LivenessLooksPastWritesToAnotherPartOfTheAllocation) {
  // The chain wrote bytes [0, 4096) of an allocation. A later kernel writes [4096, 8192) (another tensor in the
  // same allocation): that decides nothing. A read of [0, 1024) after it: live.
  LivenessScan scan(Region{0, 4096});
  EXPECT_FALSE(scan.see(Region{4096, 8192}, /*reads=*/false, /*writes=*/true, /*writes_exactly=*/true));
  EXPECT_FALSE(scan.see(Region{8192, 16384}, /*reads=*/true, /*writes=*/false, /*writes_exactly=*/false));
  EXPECT_TRUE(scan.see(Region{0, 1024}, /*reads=*/true, /*writes=*/false, /*writes_exactly=*/false));
  EXPECT_TRUE(scan.live(/*end_of_trace=*/false));
}

TEST(CostModel, LivenessEndsAtAWriteThatCoversTheWholeRegion) {
  LivenessScan covered(Region{0, 4096});
  EXPECT_TRUE(covered.see(Region{0, 8192}, /*reads=*/false, /*writes=*/true, /*writes_exactly=*/true));
  EXPECT_FALSE(covered.live(/*end_of_trace=*/false));
  // Half overwritten, or overwritten with a write whose extent is only an upper bound: still undecided.
  LivenessScan partial(Region{0, 4096});
  EXPECT_FALSE(partial.see(Region{0, 2048}, /*reads=*/false, /*writes=*/true, /*writes_exactly=*/true));
  EXPECT_FALSE(partial.see(Region{0, 4096}, /*reads=*/false, /*writes=*/true, /*writes_exactly=*/false));
  // [0, 2048) was overwritten: reading it reads the new data, not the chain's. The other half follows: dead.
  EXPECT_FALSE(partial.see(Region{0, 1024}, /*reads=*/true, /*writes=*/false, /*writes_exactly=*/false));
  EXPECT_TRUE(partial.see(Region{2048, 4096}, /*reads=*/false, /*writes=*/true, /*writes_exactly=*/true));
  EXPECT_FALSE(partial.live(/*end_of_trace=*/false));
  // After a partial overwrite, a read of what is left: live.
  LivenessScan rest(Region{0, 4096});
  EXPECT_FALSE(rest.see(Region{1024, 3072}, /*reads=*/false, /*writes=*/true, /*writes_exactly=*/true));
  EXPECT_TRUE(rest.see(Region{3000, 3100}, /*reads=*/true, /*writes=*/false, /*writes_exactly=*/false));
  EXPECT_TRUE(rest.live(/*end_of_trace=*/false));
}

TEST(CostModel, ABufferNothingReadsLaterIsNotLiveButAnUnknownFutureIs) {
  // No later use at all: at the end of the trace, nothing read it (dead); when the scan window ran out first, its
  // later use is unknown (live).
  LivenessScan scan(Region{0, 4096});
  EXPECT_FALSE(scan.live(/*end_of_trace=*/true));
  EXPECT_TRUE(scan.live(/*end_of_trace=*/false));
}

// produce: x (buffer 0) -> mid (buffer 1); consume: mid -> out (buffer 2); 4,000 bytes each way.
std::vector<UseBytes> chain(bool mid_followed) {
  return {{0, 0, 4'000, 0, true, Source::kPtxEstimate},
          {0, 1, 0, 4'000, mid_followed, Source::kPtxEstimate},
          {1, 1, 4'000, 0, mid_followed, Source::kPtxEstimate},
          {1, 2, 0, 4'000, true, Source::kPtxEstimate}};
}

TEST(CostModel, FusedChainReadsInputsOnceAndWritesBackOnlyWhatIsReadLater) {
  const auto uses = chain(/*mid_followed=*/true);
  // Unfused: 4 uses x 4,000 = 16,000 bytes.
  EXPECT_NEAR(unfusedChainBytes(uses), 16'000, kTol);
  // x read once (4,000); mid stays in registers; out read later (live): written (4,000). 8,000 bytes.
  EXPECT_NEAR(fusedChainBytes(uses, {false, false, true}), 8'000, kTol);
  // mid read later too: written back, 12,000 bytes.
  EXPECT_NEAR(fusedChainBytes(uses, {false, true, true}), 12'000, kTol);
  // Nothing reads out later: not written back, 4,000 bytes.
  EXPECT_NEAR(fusedChainBytes(uses, {false, false, false}), 4'000, kTol);
}

TEST(CostModel, AccessesThePtxAnalysisCannotFollowKeepTheirBytes) {
  // mid's accesses were not followed: its write and its read (4,000 + 4,000) stay, with x (4,000) and out
  // (4,000): 16,000 bytes, the unfused figure.
  EXPECT_NEAR(fusedChainBytes(chain(/*mid_followed=*/false), {false, false, true}), 16'000, kTol);
}

TEST(CostModel, SourcesCombineOnlyWithTheirOwnKind) {
  EXPECT_EQ(combine(Source::kEmulated, Source::kEmulated), Source::kEmulated);
  EXPECT_EQ(combine(Source::kPtxEstimate, Source::kExtentEstimate), Source::kMixedEstimate);
  EXPECT_EQ(combine(Source::kMeasured, Source::kUnknown), Source::kUnknown);
  EXPECT_STREQ(sourceName(Source::kPtxEstimate), "ptx-estimate");
}

KernelCost kernel(double bytes, Source source, KernelTimes times, uint64_t blocks) {
  KernelCost k;
  k.bytes = bytes;
  k.bytes_source = source;
  k.flops_source = source;
  k.times = times;
  k.shape = {blocks, 256, 0, 0};
  return k;
}

TEST(CostModel, VerticalChainCarriesTheAchievedFractionAndComparesBytesOfOneSource) {
  const core::GpuSpec g = testGpu();
  OccurrenceInput in;
  in.kind = CandidateKind::kVertical;
  // Emulated bytes say 1e7 per kernel; the per-buffer bytes (PTX) say 8e6. Before and after must both be PTX.
  // A runs [0, 10,000]; B was issued at 9,000 and runs [10,500, 20,500]: 500 ns of launch latency.
  in.kernels = {kernel(1e7, Source::kEmulated, {0, 0, 10'000}, 1'000),
                kernel(1e7, Source::kEmulated, {9'000, 10'500, 20'500}, 1'000)};
  for (UseBytes u : chain(true)) {
    u.read_bytes *= 1'000;  // 4e6 bytes per use
    u.write_bytes *= 1'000;
    in.uses.push_back(u);
  }
  in.live = {false, false, true};
  const CostEstimate c = occurrenceCost(in, g);
  EXPECT_EQ(c.bytes_source, "ptx-estimate");
  EXPECT_NEAR(c.bytes_before, 16e6, kTol);  // 4 uses x 4e6
  EXPECT_NEAR(c.bytes_after, 8e6, kTol);    // x read, out written
  EXPECT_NEAR(c.measured_ns, 20'000, kTol);
  EXPECT_NEAR(c.gap_ns, 500, kTol);
  // Roofline of each kernel's per-buffer bytes: 8e6 B / 1,000 B/ns = 8,000 ns (1,000 blocks: the whole GPU).
  // Achieved: (8,000 + 8,000) / 20,000 = 0.8. Fused: 8e6 B -> 8,000 ns at the roof, / 0.8 = 10,000 ns.
  EXPECT_NEAR(c.fused_ns, 10'000, kTol);
  // Saving: 20,000 + 500 - 10,000 = 10,500 ns.
  EXPECT_NEAR(c.saving_ns, 10'500, kTol);
}

TEST(CostModel, VerticalChainWithoutKnownBuffersSavesOnlyTheIdleTime) {
  OccurrenceInput in;
  in.kind = CandidateKind::kVertical;
  in.kernels = {kernel(1e6, Source::kMeasured, {0, 0, 10'000}, 1'000),
                kernel(1e6, Source::kMeasured, {9'000, 10'500, 20'500}, 1'000)};
  const CostEstimate c = occurrenceCost(in, testGpu());
  // Fused = the kernels' 20,000 ns; saving = the 500 ns gap. Bytes stay the measured 2e6.
  EXPECT_NEAR(c.fused_ns, 20'000, kTol);
  EXPECT_NEAR(c.saving_ns, 500, kTol);
  EXPECT_NEAR(c.bytes_after, 2e6, kTol);
  EXPECT_EQ(c.bytes_source, "measured");
}

TEST(CostModel, HorizontalPairTakesTheLongerKernelPerWave) {
  OccurrenceInput in;
  in.kind = CandidateKind::kHorizontal;
  // 1e6 B each (1,000 ns at the roof), measured at 3,000 and 5,000 ns one after the other: busy 8,000 ns.
  in.kernels = {kernel(1e6, Source::kMeasured, {0, 0, 3'000}, 100),
                kernel(1e6, Source::kMeasured, {0, 3'000, 8'000}, 100)};
  const CostEstimate c = occurrenceCost(in, testGpu());
  // 256 threads: 8 blocks per SM, 800 on the GPU; 100 / 800 + 100 / 800 = 0.25 waves -> one wave.
  // Fused: the longer kernel, 5,000 ns x 1 (above the fused roof of 2e6 B -> 2,000 ns). Saving 8,000 - 5,000.
  EXPECT_NEAR(c.fused_ns, 5'000, kTol);
  EXPECT_NEAR(c.saving_ns, 3'000, kTol);
}

TEST(CostModel, HorizontalFusedTimeNeverFallsBelowItsOwnRoof) {
  OccurrenceInput in;
  in.kind = CandidateKind::kHorizontal;
  // 1e5 B each, measured at their roof (100 ns), one after the other: busy 200 ns.
  in.kernels = {kernel(1e5, Source::kMeasured, {0, 0, 100}, 100), kernel(1e5, Source::kMeasured, {0, 100, 200}, 100)};
  const CostEstimate c = occurrenceCost(in, testGpu());
  // The wave rule says 100 ns, but the fused kernel moves 2e5 B: 200 ns at the roof. Nothing saved.
  EXPECT_NEAR(c.fused_ns, 200, kTol);
  EXPECT_NEAR(c.saving_ns, 0, kTol);
}

TEST(CostModel, WithoutGpuTimesKernelsAreCostedAtTheirLaunchRoofline) {
  // The emulator's many_small_kernels on H100 SXM: two kernels of 8 blocks moving 8,192 B each, no GPU times.
  const core::GpuSpec h100 = *core::findGpuSpec("h100-sxm");
  ASSERT_EQ(h100.sm_count, 132);
  ASSERT_DOUBLE_EQ(h100.dram_bandwidth_bytes_per_s, 3.35e12);
  OccurrenceInput in;
  in.kind = CandidateKind::kHorizontal;
  in.kernels = {kernel(8'192, Source::kEmulated, {}, 8), kernel(8'192, Source::kEmulated, {}, 8)};
  in.kernels[0].shape.threads_per_block = in.kernels[1].shape.threads_per_block = 128;
  const CostEstimate c = occurrenceCost(in, h100);
  // Each: 8,192 B / 3.35e12 B/s = 2.44537 ns on the whole GPU; on 8 of 132 SMs, x 132 / 8 = 40.3487 ns.
  const double each = 8'192 / 3.35e12 * 1e9 * 132 / 8;
  EXPECT_NEAR(c.measured_ns, 2 * each, kTol);
  // Fused: 16,384 B on 16 blocks = 4.89075 ns x 132 / 16 = 40.3487 ns, the fused kernel's own roof (the wave rule
  // gives the same: 16 blocks of 128 threads are far below one wave). It used to be 2.45 ns, half the roof.
  const double fused = 16'384 / 3.35e12 * 1e9 * 132 / 16;
  EXPECT_NEAR(c.fused_ns, fused, kTol);
  EXPECT_GE(c.fused_ns, rooflineNs(16'384, {}, h100));
  EXPECT_NEAR(c.saving_ns, 2 * each - fused, kTol);
  EXPECT_NE(c.note.find("roofline estimates"), std::string::npos);
}

TEST(CostModel, SavingsArePerOccurrenceMediansAndATotal) {
  std::vector<CostEstimate> occ(3);
  occ[0].saving_ns = 10;
  occ[1].saving_ns = 30;
  occ[2].saving_ns = 20;
  occ[0].measured_ns = 100;
  occ[1].measured_ns = 300;
  occ[2].measured_ns = 200;
  const CandidateCost c = summarize(occ, /*blocked=*/false);
  EXPECT_NEAR(c.per_occurrence.saving_ns, 20, kTol);     // median of 10, 20, 30
  EXPECT_NEAR(c.per_occurrence.measured_ns, 200, kTol);  // median of 100, 200, 300
  EXPECT_NEAR(c.total_saving_ns, 60, kTol);              // 10 + 30 + 20
  EXPECT_NEAR(summarize(occ, /*blocked=*/true).total_saving_ns, 0, kTol);
  EXPECT_NEAR(median({10, 20, 30, 40}), 25, kTol);  // even count: mean of the middle two
}

TEST(CostModel, AGraphOccurrenceCountsOncePerReplay) {
  std::vector<CostEstimate> occ(2);
  occ[0].saving_ns = 10;  // a graph's nodes, replayed 5 times
  occ[1].saving_ns = 30;  // replayed once
  const CandidateCost c = summarize(occ, /*blocked=*/false, /*times=*/{5, 1});
  EXPECT_NEAR(c.total_saving_ns, 80, kTol);           // 5 x 10 + 1 x 30
  EXPECT_NEAR(c.per_occurrence.saving_ns, 20, kTol);  // median of the distinct occurrences
  EXPECT_NEAR(summarize(occ, /*blocked=*/true, {5, 1}).total_saving_ns, 0, kTol);
}

TEST(CostModel, BackToBackLaunchesAreConsecutiveKernelsOnOneKnownStream) {
  // Streams 1, 1, 2, 2, unknown, unknown: the boundaries 1-1 and 2-2 count; 1-2, 2-unknown and unknown-unknown do
  // not.
  EXPECT_EQ(backToBackLaunches({1, 1, 2, 2, -1, -1}), 2);
  EXPECT_EQ(backToBackLaunches({5}), 0);
  EXPECT_EQ(backToBackLaunches({}), 0);
}

KernelCost onStream(KernelCost k, int64_t stream) {
  k.stream = stream;
  return k;
}

TEST(CostModel, WithoutGpuTimesEachRemovedBackToBackLaunchSavesTheDependentLaunchGap) {
  const core::GpuSpec g = testGpu();
  // Three kernels on stream 7, no GPU times, buffers unknown: each costed at its roofline, 1e6 B -> 1,000 ns on
  // 1,000 blocks (the whole GPU). Fusing removes 2 launches that were back to back: 2 x 1,000 ns of gap.
  OccurrenceInput in;
  in.kind = CandidateKind::kVertical;
  for (int i = 0; i < 3; ++i) in.kernels.push_back(onStream(kernel(1e6, Source::kEmulated, {}, 1'000), 7));
  CostEstimate c = occurrenceCost(in, g);
  EXPECT_NEAR(c.measured_ns, 3'000, kTol);
  EXPECT_NEAR(c.gap_ns, 2'000, kTol);
  // Buffers unknown: fused = the kernels' 3,000 ns; saving = the 2,000 ns of gaps.
  EXPECT_NEAR(c.fused_ns, 3'000, kTol);
  EXPECT_NEAR(c.saving_ns, 2'000, kTol);
  EXPECT_NE(c.note.find("2 launches removed that were back to back on one stream: 1000 ns of dependent-launch gap "
                        "each (up to 4000 ns of launch latency each"),
            std::string::npos)
      << c.note;

  // With known buffers that save nothing (no use followed: fused bytes = unfused bytes): the memory side saves
  // nothing, the gaps still do. Uses: 5e5 B read and 5e5 B written per kernel, 1e6 B (1,000 ns: achieved 1);
  // fused: 3e6 B -> 3,000 ns, the kernels' time. Saving: 3,000 + 2,000 - 3,000 = 2,000 ns.
  for (int k = 0; k < 3; ++k) {
    in.uses.push_back({k, k, 5e5, 0, false, Source::kExtentEstimate});
    in.uses.push_back({k, k + 1, 0, 5e5, false, Source::kExtentEstimate});
  }
  in.live = {true, true, true, true};
  c = occurrenceCost(in, g);
  EXPECT_NEAR(c.bytes_after, 3e6, kTol);
  EXPECT_NEAR(c.fused_ns, 3'000, kTol);
  EXPECT_NEAR(c.gap_ns, 2'000, kTol);
  EXPECT_NEAR(c.saving_ns, 2'000, kTol);
  EXPECT_GE(c.saving_ns, 2 * g.dependent_launch_gap_ns);
}

TEST(CostModel, LaunchGapsAreNotAddedWhereTheTraceHasGpuTimesOrTheKernelsRanOnDifferentStreams) {
  const core::GpuSpec g = testGpu();
  // One kernel with a GPU time: the trace's own gaps count (here none: B starts when A ends), no assumed gap.
  OccurrenceInput timed;
  timed.kind = CandidateKind::kVertical;
  timed.kernels = {onStream(kernel(1e6, Source::kMeasured, {0, 0, 2'000}, 1'000), 7),
                   onStream(kernel(1e6, Source::kMeasured, {}, 1'000), 7)};
  EXPECT_NEAR(occurrenceCost(timed, g).gap_ns, 0, kTol);
  // A horizontal pair on two streams without GPU times: the launches may overlap, no gap is removed. Each 1e6 B on
  // 100 blocks (a whole wave: 100 SMs), 1,000 ns; busy 2,000 ns; fused: 2e6 B, 2,000 ns at its roof. Saving 0.
  OccurrenceInput apart;
  apart.kind = CandidateKind::kHorizontal;
  apart.kernels = {onStream(kernel(1e6, Source::kEmulated, {}, 100), 1),
                   onStream(kernel(1e6, Source::kEmulated, {}, 100), 2)};
  CostEstimate c = occurrenceCost(apart, g);
  EXPECT_NEAR(c.gap_ns, 0, kTol);
  EXPECT_NEAR(c.saving_ns, 0, kTol);
  // The same pair on one stream: one back-to-back launch removed, 1,000 ns saved.
  apart.kernels[1].stream = 1;
  c = occurrenceCost(apart, g);
  EXPECT_NEAR(c.gap_ns, 1'000, kTol);
  EXPECT_NEAR(c.saving_ns, 1'000, kTol);
}

TEST(CostModel, FusedTimeNeverExceedsTheMembersTimesWhateverTheByteEstimateSays) {
  // The blocked histogram chain of issue 31 on an H200: two kernels measured at 49.9 us together, extent estimates
  // of 8.6e9 B per kernel that the PTX analysis could not follow (fused bytes = unfused = 1.72e10). At the roof
  // 1.72e10 B / 4.8e12 B/s = 3.58 ms: the old rule let that floor win and printed "49.9 us -> 3.59 ms fused".
  const core::GpuSpec h200 = *core::findGpuSpec("h200");
  ASSERT_DOUBLE_EQ(h200.dram_bandwidth_bytes_per_s, 4.8e12);
  OccurrenceInput in;
  in.kind = CandidateKind::kVertical;
  in.kernels = {onStream(kernel(8.6e9, Source::kExtentEstimate, {0, 0, 40'000}, 1'000), 3),
                onStream(kernel(8.6e9, Source::kExtentEstimate, {35'000, 40'500, 50'400}, 1'000), 3)};
  in.uses = {{0, 0, 8.6e9, 0, false, Source::kExtentEstimate}, {1, 0, 8.6e9, 0, false, Source::kExtentEstimate}};
  in.live = {false};
  const CostEstimate c = occurrenceCost(in, h200);
  EXPECT_NEAR(c.measured_ns, 49'900, kTol);
  EXPECT_NEAR(c.gap_ns, 500, kTol);  // B issued before A ended, started 500 ns after it
  // Fused: at most the members' 49,900 ns (no recomputation); saving = 49,900 + 500 - 49,900 = 500 ns.
  EXPECT_NEAR(c.fused_ns, 49'900, kTol);
  EXPECT_LE(c.fused_ns, c.measured_ns);
  EXPECT_NEAR(c.saving_ns, 500, kTol);
  EXPECT_NE(c.note.find("the fused time is capped at the kernels' time"), std::string::npos) << c.note;
}

// A prologue pair, GPU times measured on one stream: producer P [0, 1,000] ns reads 5e5 B and writes 5e5 B of the
// intermediate; consumer C, issued at 500 ns while P ran, runs [1,000, 3,000] and reads 2e6 B of it. The fused kernel
// runs in C's launch (anchor) and recomputes P.
OccurrenceInput prologuePair() {
  OccurrenceInput in;
  in.kind = CandidateKind::kVertical;
  in.kernels = {onStream(kernel(1e6, Source::kPtxEstimate, {0, 0, 1'000}, 1'000), 1),
                onStream(kernel(2e6, Source::kPtxEstimate, {500, 1'000, 3'000}, 1'000), 1)};
  in.uses = {{0, 0, 5e5, 0, true, Source::kPtxEstimate},
             {0, 1, 0, 5e5, true, Source::kPtxEstimate},
             {1, 1, 2e6, 0, true, Source::kPtxEstimate}};
  in.live = {false, false};
  in.anchor = 1;
  in.recompute = 0;
  return in;
}

TEST(CostModel, RecomputationMayMakeTheFusedKernelSlowerButNoMoreThanTheProducerOnceMorePerRecomputation) {
  const core::GpuSpec g = testGpu();
  // A prologue fusion, memory only: producer P (1,000 ns) and consumer C (2,000 ns), GPU times measured; the consumer
  // reads P's output 4 times over (recompute_times 4), and the fused kernel re-reads P's inputs each time: fused bytes
  // 1e7 -> 10,000 ns at the roof (achieved 1: the consumer's uses 2e6 B take 2,000 ns, its whole time).
  OccurrenceInput in = prologuePair();
  in.recompute_times = 4;
  in.fused_bytes = 1e7;
  const CostEstimate c = occurrenceCost(in, g);
  // Upper bound: 1,000 + 2,000 + 3 x 1,000 (the producer 3 times more) = 6,000 ns; the 10,000 ns the bytes say is
  // capped there. Saving: 3,000 - 6,000 < 0 -> 0: predicted to lose.
  EXPECT_NEAR(c.measured_ns, 3'000, kTol);
  EXPECT_NEAR(c.fused_ns, 6'000, kTol);
  EXPECT_NEAR(c.saving_ns, 0, kTol);
}

// The test GPU with a cache path: 100 SMs x 128 B per clock x 1 GHz = 12,800 B/ns of L1; 5,000 B per clock x 1 GHz
// = 5,000 B/ns of L2; 10 MB of L2.
core::GpuSpec cachedGpu() {
  core::GpuSpec g = testGpu();
  g.boost_clock_mhz = 1'000;
  g.l1_bytes_per_clock_per_sm = 128;
  g.l2_bytes_per_clock = 5'000;
  g.l2_bytes = 10'000'000;
  return g;
}

TEST(CostModel, CacheTermsRunAtTheCachesBandwidths) {
  const core::GpuSpec g = cachedGpu();
  // 1.28e6 B / 12,800 B/ns = 100 ns of L1; 1e6 B / 5,000 B/ns = 200 ns of L2.
  EXPECT_NEAR(l1Ns(1.28e6, g), 100, kTol);
  EXPECT_NEAR(l2Ns(1e6, g), 200, kTol);
  // 1e5 DRAM bytes take 100 ns; 1.28e7 B of requests 1,000 ns of L1: the L1 sets the time.
  EXPECT_NEAR(rooflineNs(1e5, {}, g, {1.28e7, 0}), 1'000, kTol);
  EXPECT_NEAR(rooflineNs(1e5, {}, g, {0, 1e7}), 2'000, kTol);  // 1e7 B of L2: 2,000 ns
  EXPECT_NEAR(rooflineNs(1e5, {}, g), 100, kTol);              // no cache traffic known: DRAM only
  // A kernel without a GPU time is costed at its slowest roof: 1,000 ns of L1 requests over 100 ns of DRAM.
  OccurrenceInput in;
  in.kind = CandidateKind::kHorizontal;
  KernelCost k = kernel(1e5, Source::kPtxEstimate, {}, 1'000);
  k.l1_bytes = 1.28e7;
  in.kernels = {k};
  EXPECT_NEAR(occurrenceCost(in, g).measured_ns, 1'000, kTol);
}

TEST(CostModel, ReadsOfWhatTheChainTouchedStayInL2WhenItFits) {
  // A reads buffer 0 (1 MB) and writes buffer 1 (1 MB); B reads buffer 1 (2 MB: 1 MB more than A wrote) and writes
  // buffer 2 (1 MB). Working set 1 + 2 + 1 = 4 MB.
  const std::vector<UseBytes> uses = {{0, 0, 1e6, 0, true, Source::kPtxEstimate},
                                      {0, 1, 0, 1e6, true, Source::kPtxEstimate},
                                      {1, 1, 2e6, 0, true, Source::kPtxEstimate},
                                      {1, 2, 0, 1e6, true, Source::kPtxEstimate}};
  // 10 MB of L2: B's read of the 1 MB A wrote is a hit; the other 1 MB comes from DRAM.
  EXPECT_EQ(l2ResidentReads(uses, 2, 1e7), (std::vector<double>{0, 1e6}));
  // 3 MB of L2: the working set does not fit, no hits.
  EXPECT_EQ(l2ResidentReads(uses, 2, 3e6), (std::vector<double>{0, 0}));
  // The chain's cost: before = 1 + 1 + 2 + 1 - 1 (the hit) = 4 MB of DRAM; after (buffer 2 live, buffer 1 dead and
  // first written, so never read from memory): A's read of buffer 0 and B's write of buffer 2, 2 MB.
  OccurrenceInput in;
  in.kind = CandidateKind::kVertical;
  in.kernels = {onStream(kernel(2e6, Source::kPtxEstimate, {}, 1'000), 1),
                onStream(kernel(3e6, Source::kPtxEstimate, {}, 1'000), 1)};
  in.uses = uses;
  in.live = {false, false, true};
  const CostEstimate c = occurrenceCost(in, cachedGpu());
  EXPECT_NEAR(c.bytes_before, 4e6, kTol);
  EXPECT_NEAR(c.bytes_after, 2e6, kTol);
  EXPECT_NE(c.note.find("DRAM bytes before: 1e+06 B of re-reads left out, L2 hits (the chain's working set fits the "
                        "10 MiB L2)"),
            std::string::npos)
      << c.note;
  // Times: A 2e6 B -> 2,000 ns; B its DRAM bytes less the hit, 2e6 B -> 2,000 ns; fused 2e6 B -> 2,000 ns
  // (achieved 1); one launch removed back to back: 1,000 ns. Saving 4,000 + 1,000 - 2,000 = 3,000 ns (without
  // the L2 B would have been costed at 3,000 ns and the saving 4,000 ns).
  EXPECT_NEAR(c.measured_ns, 4'000, kTol);
  EXPECT_NEAR(c.fused_ns, 2'000, kTol);
  EXPECT_NEAR(c.saving_ns, 3'000, kTol);
}

TEST(CostModel, RecomputingAtAnUncoalescedConsumerCostsItsL2Requests) {
  core::GpuSpec g = cachedGpu();
  g.l2_bytes = 0;  // no L2 hits between the kernels here: the achieved fractions stay those of the DRAM bytes
  // A prologue: producer P (1,000 ns) and consumer C (2,000 ns), GPU times measured, C issued while P ran and started
  // when it ended (no idle time). C reads the intermediate once (recompute_times 1), but a thread per row: each of
  // its loads, recomputed, reads P's inputs in the same uncoalesced pattern, requests the L1 does not keep: 2e7 B
  // of L2, 4,000 ns in C's launch (1,000 blocks: the whole GPU).
  OccurrenceInput in = prologuePair();
  in.recompute_times = 1;
  in.fused_bytes = 5e5;
  in.fused_l2_bytes = 2e7;
  const CostEstimate c = occurrenceCost(in, g);
  // Fused: its roof is the L2's 4,000 ns (DRAM 5e5 B: 500 ns), at C's achieved fraction (1: its 2e6 B take its
  // 2,000 ns); within the upper bound 3,000 + 4,000 (the recomputation's requests). Saving 3,000 - 4,000 < 0: 0.
  EXPECT_NEAR(c.measured_ns, 3'000, kTol);
  EXPECT_NEAR(c.fused_ns, 4'000, kTol);
  EXPECT_NEAR(c.saving_ns, 0, kTol);
  // Coalesced loads (no L2 term): the 500 ns of DRAM at the roof, a saving of 2,500 ns.
  in.fused_l2_bytes = 0;
  EXPECT_NEAR(occurrenceCost(in, g).saving_ns, 2'500, kTol);
}

TEST(CostModel, ACandidateThatSavesNothingIsToldWhyFromItsNumbers) {
  CostEstimate c;
  // Recomputation: fused 6,000 ns against 3,000 ns measured + 500 ns idle.
  c.measured_ns = 3'000;
  c.gap_ns = 500;
  c.fused_ns = 6'000;
  EXPECT_EQ(noGainReason(c, CandidateKind::kVertical),
            "recomputing the producer at the consumer's loads costs more than fusing saves: fused 6.0 us against the "
            "originals' 3.0 us + 500 ns idle");
  // As many bytes after as before, no idle time: 1.2e+05 -> 1.2e+05 bytes.
  c.gap_ns = 0;
  c.fused_ns = 3'000;
  c.bytes_before = c.bytes_after = 1.2e5;
  c.bytes_source = "extent-estimate";
  EXPECT_EQ(noGainReason(c, CandidateKind::kVertical),
            "the fused kernel moves as many DRAM bytes as the originals (1.2e+05 -> 1.2e+05, extent-estimate) and no "
            "idle time between them is removed");
  EXPECT_EQ(noGainReason(c, CandidateKind::kHorizontal),
            "the fused kernel (3.0 us) takes as long as the originals kept the GPU busy: they ran side by side "
            "already, or its longer kernel or the DRAM roof sets its time");
  c.bytes_after = 1e5;  // fewer bytes, yet no faster (a low achieved fraction): the plain figures
  EXPECT_EQ(noGainReason(c, CandidateKind::kVertical), "the fused kernel takes 3.0 us against the originals' 3.0 us");
  c.measured_ns = 0;
  EXPECT_EQ(noGainReason(c, CandidateKind::kVertical),
            "no time is known for these kernels (no GPU times, and no bytes or FLOPs to estimate)");
}

TEST(CostModel, MeasuredBytesWinOverThePerBufferEstimate) {
  const core::GpuSpec g = testGpu();
  // The chain of VerticalChainCarriesTheAchievedFraction..., its kernels' DRAM bytes measured: 6e6 and 2e6 B (the
  // per-buffer estimate says 8e6 each: an L2 that caught part of the traffic). Before: the measured 8e6 B. After:
  // the per-buffer estimate keeps 8e6 of its 16e6 B, half: 4e6 B.
  OccurrenceInput in;
  in.kind = CandidateKind::kVertical;
  in.kernels = {kernel(6e6, Source::kMeasured, {0, 0, 10'000}, 1'000),
                kernel(2e6, Source::kMeasured, {9'000, 10'500, 20'500}, 1'000)};
  for (UseBytes u : chain(true)) {
    u.read_bytes *= 1'000;
    u.write_bytes *= 1'000;
    in.uses.push_back(u);
  }
  in.live = {false, false, true};
  const CostEstimate c = occurrenceCost(in, g);
  EXPECT_EQ(c.bytes_source, "measured");
  EXPECT_NEAR(c.bytes_before, 8e6, kTol);
  EXPECT_NEAR(c.bytes_after, 4e6, kTol);
  // Achieved with the measured bytes: (6,000 + 2,000) / 20,000 = 0.4. Fused: 4e6 B -> 4,000 ns / 0.4 = 10,000 ns.
  // Saving: 20,000 + 500 - 10,000 = 10,500 ns.
  EXPECT_NEAR(c.fused_ns, 10'000, kTol);
  EXPECT_NEAR(c.saving_ns, 10'500, kTol);
  EXPECT_NE(c.note.find("fused bytes: the measured 8e+06 x 0.5, the share the per-buffer estimate (ptx-estimate) "
                        "keeps"),
            std::string::npos)
      << c.note;
  // One kernel without measured bytes: the per-buffer estimate for both sides, as before.
  in.kernels[1].bytes_source = Source::kEmulated;
  EXPECT_EQ(occurrenceCost(in, g).bytes_source, "ptx-estimate");
  EXPECT_NEAR(occurrenceCost(in, g).bytes_before, 16e6, kTol);
}

// Rule 11: re-prediction with the fused kernel's occupancy (public: analysis.h).
TEST(CostModel, LowerOccupancyScalesTheCarriedOverAchievedFractionDown) {
  // A chain: 30,000 ns measured + 2,000 ns idle; the fused kernel's roof is 6,000 ns and the originals achieved
  // 0.5 of theirs, so fused = 6,000 / 0.5 = 12,000 ns and saving = 30,000 + 2,000 - 12,000 = 20,000 ns.
  CostEstimate e;
  e.measured_ns = 30'000;
  e.gap_ns = 2'000;
  e.fused_ns = 12'000;
  e.saving_ns = 20'000;
  // Fused occupancy 50% where the originals had 100%: f = 0.5, achieved 0.25, fused = 6,000 / 0.25 = 24,000 ns;
  // saving = 20,000 - (24,000 - 12,000) = 8,000 ns.
  auto half = costWithOccupancy(e, 0.5, 1.0);
  ASSERT_TRUE(half.ok());
  EXPECT_NEAR(half->fused_ns, 24'000, kTol);
  EXPECT_NEAR(half->saving_ns, 8'000, kTol);
  EXPECT_NEAR(half->measured_ns, 30'000, kTol);
  EXPECT_NE(half->note.find("occupancy 50.0% vs the originals' 100.0%"), std::string::npos) << half->note;
  // 25% against 100%: f = 0.25, fused = 48,000 ns; saving = 20,000 - 36,000 = -16,000 ns: a predicted loss.
  auto quarter = costWithOccupancy(e, 0.25, 1.0);
  ASSERT_TRUE(quarter.ok());
  EXPECT_NEAR(quarter->fused_ns, 48'000, kTol);
  EXPECT_NEAR(quarter->saving_ns, -16'000, kTol);
  // Only the ratio counts: 37.5% against 75% is f = 0.5 again.
  EXPECT_NEAR(costWithOccupancy(e, 0.375, 0.75)->fused_ns, 24'000, kTol);
  // As high as the originals', or higher: unchanged (a higher occupancy is not credited).
  for (double fused : {0.75, 1.0}) {
    auto same = costWithOccupancy(e, fused, 0.75);
    ASSERT_TRUE(same.ok());
    EXPECT_NEAR(same->fused_ns, 12'000, kTol);
    EXPECT_NEAR(same->saving_ns, 20'000, kTol);
    EXPECT_TRUE(same->note.empty());
  }
  EXPECT_FALSE(costWithOccupancy(e, 0, 1.0).ok());
  EXPECT_FALSE(costWithOccupancy(e, 0.5, 0).ok());
  EXPECT_FALSE(costWithOccupancy(e, 1.5, 1.0).ok());
}

TEST(CostModel, ACandidatesTotalFallsByEachOccurrencesGrowth) {
  // 4 occurrences saving 80,000 ns in all, 8% of GPU busy time (so busy = 1,000,000 ns); fused 12,000 ns each.
  Candidate c;
  c.occurrence_launches.resize(4);
  c.cost.fused_ns = 12'000;
  c.cost.saving_ns = 20'000;
  c.total_saving_ns = 80'000;
  c.share_of_gpu_busy = 0.08;
  c.rank = 3;
  // f = 0.5: each fused time grows by 12,000 ns; total = 80,000 - 4 x 12,000 = 32,000 ns = 3.2% of 1,000,000 ns.
  auto r = candidateWithOccupancy(c, 0.5, 1.0);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->cost.fused_ns, 24'000, kTol);
  EXPECT_NEAR(r->total_saving_ns, 32'000, kTol);
  EXPECT_NEAR(r->share_of_gpu_busy, 0.032, kTol);
  EXPECT_EQ(r->rank, 3);
}

TEST(CostModel, OriginalsOccupancyIsTheirTimeWeightedMean) {
  // 100% for 3,000 ns and 50% for 1,000 ns: (3,000 x 1 + 1,000 x 0.5) / 4,000 = 0.875.
  EXPECT_NEAR(meanOccupancy({1.0, 0.5}, {3'000, 1'000}), 0.875, kTol);
  // Without times: the plain mean.
  EXPECT_NEAR(meanOccupancy({1.0, 0.5}, {}), 0.75, kTol);
  EXPECT_NEAR(meanOccupancy({1.0, 0.5}, {0, 0}), 0.75, kTol);
  EXPECT_NEAR(meanOccupancy({}, {}), 0, kTol);
}

}  // namespace
}  // namespace kfuse::analyzer::cost
