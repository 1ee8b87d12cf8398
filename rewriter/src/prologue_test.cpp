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
  const emulator::Dim3 grid{kT * kF / 256, 1, 1}, block{256, 1, 1}, mm_grid{kH / 16, kT / 16, 1}, mm_block{16, 16, 1};
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

}  // namespace
}  // namespace kfuse::rewriter
