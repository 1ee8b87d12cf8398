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

// The MLP block's first half as examples/driver_api/mlp_block.cpp launches it: matmul(h, w1, u, t, f, h) on a
// (f/16 x t/16) grid of 16x16 blocks, then bias_add(u, b1, t, f) and gelu(u, v, t*f) on 1-D launches.
constexpr int kT = 32, kH = 64, kF = 256;
enum Buffer { kHid, kW1, kU, kB1, kV, kBuffers };

std::vector<std::vector<uint8_t>> buffers() {
  return {randomFloats(kT * kH, 1), randomFloats(kH * kF, 2), randomFloats(kT * kF, 3), randomFloats(kF, 4),
          randomFloats(kT * kF, 5)};
}

EpilogueFusion mlpSpec() {
  EpilogueFusion spec;
  spec.producer = "matmul";
  spec.consumers = {"bias_add", "gelu"};
  spec.fused_name = "fused";
  // u, m, n of matmul are bias_add's c, m, n; u is gelu's x.
  spec.equal_args = {{{0, 2}, {1, 0}}, {{0, 3}, {1, 2}}, {{0, 4}, {1, 3}}, {{0, 2}, {2, 0}}};
  spec.producer_param = 2;
  spec.consumer = 1;
  spec.consumer_param = 0;
  spec.element_bytes = 4;
  spec.consumer_shape.grid = {kT * kF / 256, 1, 1};
  spec.consumer_shape.block = {256, 1, 1};
  return spec;
}

TEST(EpilogueFusion, MatmulBiasGeluIsBitIdenticalToTheThreeLaunches) {
  const std::string original = examplePtx("mlp_block");
  ptx::Module m = parsed(original);
  auto r = fuseEpilogue(m, mlpSpec());
  ASSERT_TRUE(r.ok()) << r.status().message();
  // h, w1, u, t, f, k, b1, v, n (u, t, f merged with the consumers' arguments)
  ASSERT_EQ(r->params.size(), 9u);
  EXPECT_TRUE(ptx::verify(m).ok()) << ptx::verify(m).message();
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused);

  Runner a(buffers()), b(buffers());
  const core::Dim3 mm_grid{kF / 16, kT / 16, 1}, mm_block{16, 16, 1}, grid{kT * kF / 256, 1, 1}, block{256, 1, 1};
  ASSERT_TRUE(a.launch(original, "matmul", mm_grid, mm_block,
                       {Arg::buf(kHid), Arg::buf(kW1), Arg::buf(kU), Arg::value(kT), Arg::value(kF), Arg::value(kH)})
                  .ok());
  ASSERT_TRUE(
      a.launch(original, "bias_add", grid, block, {Arg::buf(kU), Arg::buf(kB1), Arg::value(kT), Arg::value(kF)}).ok());
  ASSERT_TRUE(a.launch(original, "gelu", grid, block, {Arg::buf(kU), Arg::buf(kV), Arg::value(kT * kF)}).ok());
  ASSERT_TRUE(b.launch(fused, "fused", mm_grid, mm_block,
                       {Arg::buf(kHid), Arg::buf(kW1), Arg::buf(kU), Arg::value(kT), Arg::value(kF), Arg::value(kH),
                        Arg::buf(kB1), Arg::buf(kV), Arg::value(kT * kF)})
                  .ok());
  for (int i = 0; i < kBuffers; ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
}

TEST(EpilogueFusion, RefusesAConsumerThatSynchronisesItsBlock) {
  ptx::Module m = parsed(examplePtx("mlp_block"));
  EpilogueFusion spec = mlpSpec();
  spec.consumers = {"layernorm"};
  spec.equal_args.clear();
  auto r = fuseEpilogue(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("synchronises its block"), std::string::npos) << r.status().message();
}

TEST(EpilogueFusion, RefusesAProducerStoringInALoop) {
  ptx::Module m = parsed(examplePtx("mlp_block"));
  EpilogueFusion spec = mlpSpec();
  spec.producer = "layernorm";  // y[row + i] inside its row loop
  spec.producer_param = 1;
  spec.consumers = {"gelu"};
  spec.equal_args.clear();
  auto r = fuseEpilogue(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inside a loop"), std::string::npos) << r.status().message();
}

TEST(EpilogueFusion, RefusesAMultiDimensionalConsumerLaunch) {
  ptx::Module m = parsed(examplePtx("mlp_block"));
  EpilogueFusion spec = mlpSpec();
  spec.consumer_shape.grid = {16, 2, 1};
  auto r = fuseEpilogue(m, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1-D"), std::string::npos) << r.status().message();
}

// examples/driver_api/gridstride: tile_scale (16 x 16 tiles of a rows x cols matrix) then gs_gelu, a grid-stride
// loop on 3 blocks of 128 threads (five steps over 1,665 elements), run as one element per thread on 14 blocks.
constexpr int kRows = 37, kCols = 45, kElements = kRows * kCols;
enum GridStrideBuffer { kIn, kScaled, kAct, kGridStrideBuffers };

EpilogueFusion gridStrideSpec() {
  EpilogueFusion spec;
  spec.producer = "tile_scale";
  spec.consumers = {"gs_gelu"};
  spec.fused_name = "fused";
  spec.equal_args = {{{0, 1}, {1, 0}}};  // tile_scale's y is gs_gelu's x
  spec.producer_param = 1;
  spec.consumer = 1;
  spec.consumer_param = 0;
  spec.element_bytes = 4;
  spec.consumer_shape.grid = {(kElements + 127) / 128, 1, 1};
  spec.consumer_shape.block = {128, 1, 1};
  spec.element_per_thread = true;
  return spec;
}

TEST(EpilogueFusion, GridStrideConsumerAsOneElementPerThreadIsBitIdenticalToTheTwoLaunches) {
  const std::string original = examplePtx("gridstride");
  ptx::Module m = parsed(original);
  auto r = fuseEpilogue(m, gridStrideSpec());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(ptx::verify(m).ok()) << ptx::verify(m).message();
  const std::string fused = ptx::printModule(m);
  testing::expectCompiles(fused);
  auto data = [] {
    return std::vector<std::vector<uint8_t>>{randomFloats(kElements, 7), randomFloats(kElements, 8),
                                             randomFloats(kElements, 9)};
  };
  Runner a(data()), b(data());
  const core::Dim3 tiles{(kCols + 15) / 16, (kRows + 15) / 16, 1}, tile{16, 16, 1};
  const std::vector<Arg> scale_args{Arg::buf(kIn), Arg::buf(kScaled), Arg::value(kRows), Arg::value(kCols),
                                    Arg::value(0.5f)};
  ASSERT_TRUE(a.launch(original, "tile_scale", tiles, tile, scale_args).ok());
  ASSERT_TRUE(
      a.launch(original, "gs_gelu", {3, 1, 1}, {128, 1, 1}, {Arg::buf(kScaled), Arg::buf(kAct), Arg::value(kElements)})
          .ok());
  std::vector<Arg> fused_args = scale_args;
  fused_args.push_back(Arg::buf(kAct));
  fused_args.push_back(Arg::value(kElements));
  ASSERT_TRUE(b.launch(fused, "fused", tiles, tile, fused_args).ok());
  for (int i = 0; i < kGridStrideBuffers; ++i) EXPECT_EQ(a.download(i), b.download(i)) << "buffer " << i;
}

TEST(EpilogueFusion, ElementPerThreadNeedsAGridStrideConsumer) {
  ptx::Module mlp = parsed(examplePtx("mlp_block"));
  EpilogueFusion plain = mlpSpec();
  plain.element_per_thread = true;
  auto p = fuseEpilogue(mlp, plain);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("grid-stride"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace kfuse::rewriter
