#include <gtest/gtest.h>

#include "kfuse/rewriter/fusion.h"
#include "test_kernels.h"

namespace kfuse::rewriter {
namespace {

using testing::Arg;
using testing::examplePtx;
using testing::parsed;
using testing::randomFloats;
using testing::Runner;

// The MLP block's second half with the activation folded into the matmul's operand loads: gelu(u, v, t*f) on a
// 1-D launch, then matmul(v, w2, out, t, h, f) on an (h/16 x t/16) grid of 16x16 blocks (nvcc unrolls its k loop:
// several loads of v, each replaced).
constexpr int kT = 32, kH = 64, kF = 256;
enum Buffer { kU, kV, kW2, kOut, kBuffers };

std::vector<std::vector<uint8_t>> buffers() {
  return {randomFloats(kT * kF, 1), randomFloats(kT * kF, 2), randomFloats(kF * kH, 3), randomFloats(kT * kH, 4)};
}

PrologueFusion geluMatmul() {
  PrologueFusion spec;
  spec.producer = "gelu";
  spec.consumer = "matmul";
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}};  // gelu's y is matmul's a
  spec.producer_param = 1;
  spec.consumer_param = 0;
  spec.element_bytes = 4;
  spec.producer_shape.grid = {kT * kF / 256, 1, 1};
  spec.producer_shape.block = {256, 1, 1};
  spec.consumer_shape.grid = {kH / 16, kT / 16, 1};
  spec.consumer_shape.block = {16, 16, 1};
  return spec;
}

// Runs gelu then matmul, and the fused kernel, on the emulator; compares every buffer but `skip`.
void expectSameAsTwoLaunches(const PrologueFusion& spec, int skip) {
  const std::string original = examplePtx("mlp_block");
  ptx::Module m = parsed(original);
  auto r = fusePrologue(m, spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->params.size(), 8u);  // u, v, n; w2, out, m, n, k (v merged with matmul's a)
  EXPECT_TRUE(ptx::verify(m).ok()) << ptx::verify(m).message();
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused);

  Runner a(buffers()), b(buffers());
  const core::Dim3 grid{kT * kF / 256, 1, 1}, block{256, 1, 1}, mm_grid{kH / 16, kT / 16, 1}, mm_block{16, 16, 1};
  ASSERT_TRUE(a.launch(original, "gelu", grid, block, {Arg::buf(kU), Arg::buf(kV), Arg::value(kT * kF)}).ok());
  ASSERT_TRUE(a.launch(original, "matmul", mm_grid, mm_block,
                       {Arg::buf(kV), Arg::buf(kW2), Arg::buf(kOut), Arg::value(kT), Arg::value(kH), Arg::value(kF)})
                  .ok());
  ASSERT_TRUE(b.launch(fused, "fused", mm_grid, mm_block,
                       {Arg::buf(kU), Arg::buf(kV), Arg::value(kT * kF), Arg::buf(kW2), Arg::buf(kOut), Arg::value(kT),
                        Arg::value(kH), Arg::value(kF)})
                  .ok());
  for (int i = 0; i < kBuffers; ++i) {
    if (i != skip) {
      EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
    }
  }
  if (skip >= 0) {
    EXPECT_NE(a.download(skip), b.download(skip)) << "the intermediate was still written";
  }
}

TEST(PrologueFusion, GeluIntoMatmulIsBitIdenticalToTheTwoLaunches) {
  expectSameAsTwoLaunches(geluMatmul(), -1);
}

TEST(PrologueFusion, WithoutTheIntermediateEveryOtherBufferIsTheSame) {
  PrologueFusion spec = geluMatmul();
  spec.write_intermediate = false;
  expectSameAsTwoLaunches(spec, kV);
}

TEST(PrologueFusion, RefusesAProducerThatSynchronisesItsBlock) {
  ptx::Module m = parsed(examplePtx("mlp_block"));
  PrologueFusion spec = geluMatmul();
  spec.producer = "layernorm";
  auto r = fusePrologue(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("synchronises its block"), std::string::npos) << r.status().message();
}

TEST(PrologueFusion, RefusesAProducerThatWritesBesidesTheIntermediate) {
  ptx::Module m = parsed(examplePtx("mlp_block"));
  PrologueFusion spec = geluMatmul();
  spec.producer = "bias_add";  // c[i] += b[i % n]: it reads what it writes
  spec.producer_param = 1;     // ... and b is not what it writes
  auto r = fusePrologue(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("writes memory other than the intermediate"), std::string::npos)
      << r.status().message();
}

TEST(PrologueFusion, RefusesLaunchesTooLargeForItsIndices) {
  ptx::Module m = parsed(examplePtx("mlp_block"));
  PrologueFusion spec = geluMatmul();
  spec.producer_shape.grid = {1u << 24, 1, 1};
  auto r = fusePrologue(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("2^32"), std::string::npos) << r.status().message();
}

// examples/driver_api/gridstride: gs_relu_mul, a grid-stride loop on 3 blocks of 128 threads (five steps over
// 1,665 elements), recomputed as one element per thread (14 blocks) at tile_scale's loads (16 x 16 tiles).
TEST(PrologueFusion, GridStrideProducerAsOneElementPerThreadIsBitIdenticalToTheTwoLaunches) {
  constexpr int kRows = 37, kCols = 45, kElements = kRows * kCols;
  enum { kY, kGate, kOut, kScaled, kCount };
  PrologueFusion spec;
  spec.producer = "gs_relu_mul";
  spec.consumer = "tile_scale";
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 2}, {1, 0}}};  // gs_relu_mul's out is tile_scale's x
  spec.producer_param = 2;
  spec.consumer_param = 0;
  spec.element_bytes = 4;
  spec.producer_shape.grid = {(kElements + 127) / 128, 1, 1};
  spec.producer_shape.block = {128, 1, 1};
  const core::Dim3 tiles{(kCols + 15) / 16, (kRows + 15) / 16, 1}, tile{16, 16, 1};
  spec.consumer_shape.grid = tiles;
  spec.consumer_shape.block = tile;
  spec.element_per_thread = true;
  const std::string original = examplePtx("gridstride");
  ptx::Module m = parsed(original);
  auto r = fusePrologue(m, spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(ptx::verify(m).ok()) << ptx::verify(m).message();
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused);
  auto data = [] {
    return std::vector<std::vector<uint8_t>>{randomFloats(kElements, 1), randomFloats(kElements, 2),
                                             randomFloats(kElements, 3), randomFloats(kElements, 4)};
  };
  Runner a(data()), b(data());
  ASSERT_TRUE(a.launch(original, "gs_relu_mul", {3, 1, 1}, {128, 1, 1},
                       {Arg::buf(kY), Arg::buf(kGate), Arg::buf(kOut), Arg::value(kElements)})
                  .ok());
  ASSERT_TRUE(a.launch(original, "tile_scale", tiles, tile,
                       {Arg::buf(kOut), Arg::buf(kScaled), Arg::value(kRows), Arg::value(kCols), Arg::value(0.5f)})
                  .ok());
  ASSERT_TRUE(b.launch(fused, "fused", tiles, tile,
                       {Arg::buf(kY), Arg::buf(kGate), Arg::buf(kOut), Arg::value(kElements), Arg::buf(kScaled),
                        Arg::value(kRows), Arg::value(kCols), Arg::value(0.5f)})
                  .ok());
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
}

}  // namespace
}  // namespace kfuse::rewriter
