#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/rewriter/fusion.h"
#include "test_kernels.h"

namespace kfuse::rewriter {
namespace {

using testing::Arg;
using testing::examplePtx;
using testing::parsed;
using testing::randomFloats;
using testing::Runner;
using testing::testPtx;

constexpr int kN = 1000;  // not a multiple of the block: the last block is ragged
const core::Dim3 kGrid{4, 1, 1};
const core::Dim3 kBlock{256, 1, 1};

// The elementwise chain as examples/driver_api/elementwise_chain.cpp launches it:
// scale(x, t1, a, n); add(t1, b, t2, n); relu(t2, t3, n); mul(t3, g, out, n).
VerticalFusion chainSpec() {
  VerticalFusion spec;
  spec.kernels = {"scale", "add", "relu", "mul"};
  spec.fused_name = "fused_chain";
  spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 3}, {1, 3}}, {{1, 2}, {2, 0}},
                     {{1, 3}, {2, 2}}, {{2, 1}, {3, 0}}, {{2, 2}, {3, 3}}};
  spec.params_disjoint = true;
  return spec;
}

enum ChainBuffer { kX, kT1, kB, kT2, kT3, kG, kOut, kBuffers };

std::vector<std::vector<uint8_t>> chainBuffers() {
  std::vector<std::vector<uint8_t>> b;
  for (int i = 0; i < kBuffers; ++i) b.push_back(randomFloats(1024, 100 + static_cast<uint32_t>(i)));
  return b;
}

void runChainOriginals(Runner& r, const std::string& ptx_text) {
  const float alpha = 1.5f;
  ASSERT_TRUE(
      r.launch(ptx_text, "scale", kGrid, kBlock, {Arg::buf(kX), Arg::buf(kT1), Arg::value(alpha), Arg::value(kN)})
          .ok());
  ASSERT_TRUE(
      r.launch(ptx_text, "add", kGrid, kBlock, {Arg::buf(kT1), Arg::buf(kB), Arg::buf(kT2), Arg::value(kN)}).ok());
  ASSERT_TRUE(r.launch(ptx_text, "relu", kGrid, kBlock, {Arg::buf(kT2), Arg::buf(kT3), Arg::value(kN)}).ok());
  ASSERT_TRUE(
      r.launch(ptx_text, "mul", kGrid, kBlock, {Arg::buf(kT3), Arg::buf(kG), Arg::buf(kOut), Arg::value(kN)}).ok());
}

TEST(VerticalFusion, ElementwiseChainIsBitIdenticalToTheFourLaunches) {
  const std::string original = examplePtx("elementwise_chain");
  ptx::Module m = parsed(original);
  auto r = fuseVertical(m, chainSpec());
  ASSERT_TRUE(r.ok()) << r.status().message();
  // x, t1, a, n, b, t2, t3, g, out
  ASSERT_EQ(r->params.size(), 9u);
  EXPECT_EQ(r->params[3].sources.size(), 4u);  // n is passed to all four kernels
  EXPECT_EQ(r->forwarded_loads, 3);            // t1, t2 and t3 are handed over in registers
  EXPECT_TRUE(ptx::verify(m).ok()) << ptx::verify(m).message();
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused);

  Runner a(chainBuffers()), b(chainBuffers());
  runChainOriginals(a, original);
  const float alpha = 1.5f;
  ASSERT_TRUE(b.launch(fused, "fused_chain", kGrid, kBlock,
                       {Arg::buf(kX), Arg::buf(kT1), Arg::value(alpha), Arg::value(kN), Arg::buf(kB), Arg::buf(kT2),
                        Arg::buf(kT3), Arg::buf(kG), Arg::buf(kOut)})
                  .ok());
  for (int i = 0; i < kBuffers; ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
}

TEST(VerticalFusion, GoldenElementwiseChainAfterCleanup) {
  ptx::Module m = parsed(examplePtx("elementwise_chain"));
  ASSERT_TRUE(fuseVertical(m, chainSpec()).ok());
  ASSERT_TRUE(cleanupFunction(m, "fused_chain", /*remove_params=*/false).ok());
  const ptx::Function* f = m.findFunction("fused_chain");
  ASSERT_NE(f, nullptr);
  const std::string got = ptx::printFunction(*f);
  // Regenerate with KFUSE_UPDATE_GOLDEN=1 and review the diff.
  const std::string path = std::string(KFUSE_REWRITER_TESTDATA) + "/vertical/elementwise_chain.fused.ptx";
  if (std::getenv("KFUSE_UPDATE_GOLDEN")) std::ofstream(path, std::ios::binary) << got;
  EXPECT_EQ(got, testing::readText(path)) << "golden " << path << " differs; KFUSE_UPDATE_GOLDEN=1 rewrites it";
}

TEST(VerticalFusion, EarlyReturnOfTheFirstKernelDoesNotSkipTheSecond) {
  const std::string original = testPtx("chain_cases");
  ptx::Module m = parsed(original);
  VerticalFusion spec;
  spec.kernels = {"early_a", "late_b"};
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}};  // y; the bounds differ
  auto r = fuseVertical(m, spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->forwarded_loads, 0);  // different guards: the load stays
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused, {"sm_90"});
  const int n1 = 500, n2 = kN;
  std::vector<std::vector<uint8_t>> bufs = {randomFloats(1024, 1), randomFloats(1024, 2), randomFloats(1024, 3)};
  Runner a(bufs), b(bufs);
  ASSERT_TRUE(a.launch(original, "early_a", kGrid, kBlock, {Arg::buf(0), Arg::buf(1), Arg::value(n1)}).ok());
  ASSERT_TRUE(a.launch(original, "late_b", kGrid, kBlock, {Arg::buf(1), Arg::buf(2), Arg::value(n2)}).ok());
  ASSERT_TRUE(
      b.launch(fused, "fused", kGrid, kBlock, {Arg::buf(0), Arg::buf(1), Arg::value(n1), Arg::buf(2), Arg::value(n2)})
          .ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
}

TEST(VerticalFusion, ReadOnlyLoadsOfAWrittenBufferBecomePlainLoads) {
  ptx::Module m = parsed(testPtx("chain_cases"));
  VerticalFusion spec;
  spec.kernels = {"early_a", "ldg_b"};
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}};
  spec.forward_stores = false;
  auto r = fuseVertical(m, spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string fused = ptx::printFunction(*m.findFunction("fused"));
  EXPECT_EQ(fused.find(".nc"), std::string::npos) << fused;
  EXPECT_NE(ptx::printFunction(*m.findFunction("ldg_b")).find("ld.global.nc"), std::string::npos);
}

TEST(VerticalFusion, VectorStoresAreForwardedElementByElement) {
  const std::string original = testPtx("chain_cases");
  ptx::Module m = parsed(original);
  VerticalFusion spec;
  spec.kernels = {"vec_a", "vec_b"};
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 2}, {1, 2}}};
  spec.params_disjoint = true;
  auto r = fuseVertical(m, spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->forwarded_loads, 1);
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused, {"sm_90"});
  const int n = 250;  // float4 elements
  std::vector<std::vector<uint8_t>> bufs = {randomFloats(1024, 4), randomFloats(1024, 5), randomFloats(1024, 6)};
  Runner a(bufs), b(bufs);
  ASSERT_TRUE(a.launch(original, "vec_a", {1, 1, 1}, kBlock, {Arg::buf(0), Arg::buf(1), Arg::value(n)}).ok());
  ASSERT_TRUE(a.launch(original, "vec_b", {1, 1, 1}, kBlock, {Arg::buf(1), Arg::buf(2), Arg::value(n)}).ok());
  ASSERT_TRUE(b.launch(fused, "fused", {1, 1, 1}, kBlock, {Arg::buf(0), Arg::buf(1), Arg::value(n), Arg::buf(2)}).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
}

TEST(VerticalFusion, RefusesABlockBarrierBeforeTheLastPart) {
  ptx::Module m = parsed(testPtx("chain_cases"));
  VerticalFusion spec;
  spec.kernels = {"staged_a", "late_b"};
  auto r = fuseVertical(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("synchronises its block"), std::string::npos) << r.status().message();
  EXPECT_EQ(m.findFunction("kfuse_vertical_staged_a_late_b"), nullptr);
}

TEST(VerticalFusion, RefusesUnknownKernelsAndBadArgumentReferences) {
  ptx::Module m = parsed(examplePtx("elementwise_chain"));
  VerticalFusion spec;
  spec.kernels = {"scale", "nope"};
  EXPECT_FALSE(fuseVertical(m, spec).ok());
  spec.kernels = {"scale", "add"};
  spec.equal_args = {{{0, 7}, {1, 0}}};
  auto r = fuseVertical(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
}

TEST(VerticalFusion, AggressiveFusionDropsTheIntermediateStores) {
  const std::string original = examplePtx("elementwise_chain");
  ptx::Module m = parsed(original);
  VerticalFusion spec;
  spec.kernels = {"scale", "add"};
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 3}, {1, 3}}};
  spec.params_disjoint = true;
  spec.drop_stores = {{0, 1}};
  auto r = fuseVertical(m, spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dropped_stores, 1);
  ASSERT_TRUE(cleanupFunction(m, "fused", false).ok());
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused, {"sm_90"});
  std::vector<std::vector<uint8_t>> bufs = {randomFloats(1024, 7), randomFloats(1024, 8), randomFloats(1024, 9),
                                            randomFloats(1024, 10)};
  Runner a(bufs), b(bufs);
  const float alpha = -0.5f;
  ASSERT_TRUE(
      a.launch(original, "scale", kGrid, kBlock, {Arg::buf(0), Arg::buf(1), Arg::value(alpha), Arg::value(kN)}).ok());
  ASSERT_TRUE(a.launch(original, "add", kGrid, kBlock, {Arg::buf(1), Arg::buf(2), Arg::buf(3), Arg::value(kN)}).ok());
  ASSERT_TRUE(b.launch(fused, "fused", kGrid, kBlock,
                       {Arg::buf(0), Arg::buf(1), Arg::value(alpha), Arg::value(kN), Arg::buf(2), Arg::buf(3)})
                  .ok());
  EXPECT_EQ(a.download(3), b.download(3));  // the output
  EXPECT_EQ(b.download(1), bufs[1]);        // the intermediate was never written
}

TEST(VerticalFusion, JoinsKernelsOfTwoModules) {
  const std::string chain = examplePtx("elementwise_chain");
  const std::string cases = testPtx("chain_cases");
  std::vector<Rename> renames;
  auto merged = mergeModules({parsed(chain), parsed(cases)}, &renames);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  VerticalFusion spec;
  spec.kernels = {"scale", "late_b"};
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 3}, {1, 2}}};
  spec.params_disjoint = true;
  auto r = fuseVertical(*merged, spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->forwarded_loads, 1);
  const std::string fused = ptx::printModule(*merged);
  testing::expectCompiles(fused);
  std::vector<std::vector<uint8_t>> bufs = {randomFloats(1024, 11), randomFloats(1024, 12), randomFloats(1024, 13)};
  Runner a(bufs), b(bufs);
  const float alpha = 3.f;
  ASSERT_TRUE(
      a.launch(chain, "scale", kGrid, kBlock, {Arg::buf(0), Arg::buf(1), Arg::value(alpha), Arg::value(kN)}).ok());
  ASSERT_TRUE(a.launch(cases, "late_b", kGrid, kBlock, {Arg::buf(1), Arg::buf(2), Arg::value(kN)}).ok());
  ASSERT_TRUE(b.launch(fused, "fused", kGrid, kBlock,
                       {Arg::buf(0), Arg::buf(1), Arg::value(alpha), Arg::value(kN), Arg::buf(2)})
                  .ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
}

namespace grid_stride {

// Few threads for many elements: each thread takes four or five steps, the last ones ragged.
const core::Dim3 kGrid{3, 1, 1};
const core::Dim3 kBlock{64, 1, 1};
constexpr int kN = 900;

// gs_axpb(x, y, a, b, n) then a consumer of y: the fused kernel and the two launches give the same buffers.
struct Case {
  std::string consumer;
  std::vector<Arg> consumer_args;  // after gs_axpb's (x = 0, y = 1)
  VerticalFusion spec;
};

FusionResult fuseAndCompare(const Case& c, const std::vector<Arg>& fused_args) {
  const std::string gridstride = examplePtx("gridstride");
  const std::string cases = testPtx("chain_cases");
  std::vector<Rename> renames;
  auto module = mergeModules({parsed(gridstride), parsed(cases)}, &renames);
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return {};
  auto r = fuseVertical(*module, c.spec);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  EXPECT_TRUE(ptx::verify(*module).ok()) << ptx::verify(*module).message();
  const std::string fused = ptx::printModule(*module);
  testing::expectCompiles(fused, {"sm_90"});
  // Room for gs_read_next's reads one step past n.
  std::vector<std::vector<uint8_t>> bufs = {randomFloats(2048, 21), randomFloats(2048, 22), randomFloats(2048, 23),
                                            randomFloats(2048, 24)};
  Runner a(bufs), b(bufs);
  const float alpha = 0.75f, beta = -0.25f;
  EXPECT_TRUE(a.launch(gridstride, "gs_axpb", kGrid, kBlock,
                       {Arg::buf(0), Arg::buf(1), Arg::value(alpha), Arg::value(beta), Arg::value(kN)})
                  .ok());
  const std::string& consumer_ptx = c.consumer.rfind("gs_relu", 0) == 0 ? gridstride : cases;
  EXPECT_TRUE(a.launch(consumer_ptx, c.consumer, kGrid, kBlock, c.consumer_args).ok());
  std::vector<Arg> args = {Arg::buf(0), Arg::buf(1), Arg::value(alpha), Arg::value(beta), Arg::value(kN)};
  args.insert(args.end(), fused_args.begin(), fused_args.end());
  EXPECT_TRUE(b.launch(fused, c.spec.fused_name, kGrid, kBlock, args).ok());
  for (size_t i = 0; i < bufs.size(); ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
  return *r;
}

bool mentions(const FusionResult& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// Loops in the fused kernel: blocks that branch back to themselves.
int loopsIn(const std::string& kernel_ptx, const std::string& kernel) {
  ptx::Module m = parsed(kernel_ptx);
  const ptx::Function* f = m.findFunction(kernel);
  if (!f) return -1;
  const std::vector<char> cyclic = ptx::blocksInLoops(ptx::Cfg::build(*f));
  return static_cast<int>(std::count(cyclic.begin(), cyclic.end(), 1));
}

Case reluMul() {
  Case c;
  c.consumer = "gs_relu_mul";
  c.consumer_args = {Arg::buf(1), Arg::buf(2), Arg::buf(3), Arg::value(kN)};
  c.spec.kernels = {"gs_axpb", "gs_relu_mul"};
  c.spec.fused_name = "fused";
  c.spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 4}, {1, 3}}};  // y, n
  c.spec.params_disjoint = true;
  return c;
}

TEST(VerticalFusion, GridStrideLoopsOfTheSameStepsBecomeOneLoop) {
  const Case c = reluMul();
  const FusionResult r = fuseAndCompare(c, {Arg::buf(2), Arg::buf(3)});
  EXPECT_TRUE(mentions(r, "one loop runs every part's iteration in turn")) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.forwarded_loads, 1);  // y[i] is handed over in a register, in the same iteration
  ptx::Module m = parsed(examplePtx("gridstride"));
  ASSERT_TRUE(fuseVertical(m, c.spec).ok());
  EXPECT_EQ(loopsIn(ptx::printModule(m), "fused"), 1);
}

TEST(VerticalFusion, GridStrideLoopsWithBoundsNotPinnedEqualRunOneAfterTheOther) {
  Case c = reluMul();
  c.spec.equal_args = {{{0, 1}, {1, 0}}};  // y only: the two n may differ
  const FusionResult r = fuseAndCompare(c, {Arg::buf(2), Arg::buf(3), Arg::value(kN)});
  EXPECT_TRUE(mentions(r, "do not take the same steps")) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.forwarded_loads, 0);
}

TEST(VerticalFusion, GridStrideLoopsOverBuffersThePlanDoesNotKeepApartRunOneAfterTheOther) {
  Case c = reluMul();
  c.spec.params_disjoint = false;
  const FusionResult r = fuseAndCompare(c, {Arg::buf(2), Arg::buf(3)});
  EXPECT_TRUE(mentions(r, "two buffers the plan does not keep apart")) << ::testing::PrintToString(r.notes);
}

TEST(VerticalFusion, AConsumerReadingTheNextStepsElementKeepsTwoLoops) {
  Case c;
  c.consumer = "gs_read_next";
  c.consumer_args = {Arg::buf(1), Arg::buf(2), Arg::value(kN)};
  c.spec.kernels = {"gs_axpb", "gs_read_next"};
  c.spec.fused_name = "fused";
  c.spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 4}, {1, 2}}};
  c.spec.params_disjoint = true;
  const FusionResult r = fuseAndCompare(c, {Arg::buf(2)});
  EXPECT_TRUE(mentions(r, "not at the same address in every iteration")) << ::testing::PrintToString(r.notes);
}

TEST(VerticalFusion, AnInPlaceGridStrideConsumerMergesAndReadsTheRegister) {
  Case c;
  c.consumer = "gs_square_inplace";
  c.consumer_args = {Arg::buf(1), Arg::value(kN)};
  c.spec.kernels = {"gs_axpb", "gs_square_inplace"};
  c.spec.fused_name = "fused";
  c.spec.equal_args = {{{0, 1}, {1, 0}}, {{0, 4}, {1, 1}}};
  c.spec.params_disjoint = true;
  const FusionResult r = fuseAndCompare(c, {});
  EXPECT_TRUE(mentions(r, "one loop")) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.forwarded_loads, 1);
}

}  // namespace grid_stride

}  // namespace
}  // namespace kfuse::rewriter
