// Horizontal fusion of real nvcc PTX: every fused kernel must print to PTX that verifies, compiles with ptxas
// for sm_80, sm_90 and sm_100, and computes on the emulator exactly (bit for bit) what the original launches
// compute on the same inputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kfuse/emulator/emulator.h"
#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/ptx/ptxas.h"
#include "kfuse/rewriter/fusion.h"
#include "test_kernels.h"

namespace kfuse::rewriter {
namespace {

using testing::examplePtx;
using testing::readText;

// One module holding the kernels of several nvcc PTX files (they share .version/.target; the test inputs have
// distinct kernel and variable names).
ptx::Module moduleOf(const std::vector<std::string>& texts) {
  ptx::Module m;
  for (const std::string& text : texts) {
    auto parsed = ptx::parseModule(text);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    if (!parsed.ok()) return m;
    if (m.version.empty()) {
      m = std::move(parsed.value());
      continue;
    }
    for (const ptx::TopLevel& t : parsed->order) {
      if (t.kind == ptx::TopLevelKind::kVariable) {
        m.variables.push_back(parsed->variables[t.index]);
        m.order.push_back({t.kind, m.variables.size() - 1});
      } else if (t.kind == ptx::TopLevelKind::kFunction) {
        m.functions.push_back(parsed->functions[t.index]);
        m.order.push_back({t.kind, m.functions.size() - 1});
      }
    }
  }
  return m;
}

// An argument of a test launch: a buffer (by index) or a scalar's bytes.
struct Arg {
  int buffer = -1;
  std::vector<uint8_t> bytes;
};
Arg buf(int i) {
  return Arg{i, {}};
}
template <typename T>
Arg scalar(T v) {
  Arg a;
  a.bytes.resize(sizeof(T));
  std::memcpy(a.bytes.data(), &v, sizeof(T));
  return a;
}

struct Launch {
  std::string kernel;
  core::LaunchShape shape;
  std::vector<Arg> args;
};

std::vector<uint8_t> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<uint8_t> out(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    float v = dist(rng);
    std::memcpy(out.data() + i * sizeof(float), &v, sizeof(float));
  }
  return out;
}
std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

class Runner {
 public:
  Runner(const std::string& ptx_text, std::vector<std::vector<uint8_t>> buffers) : dev_(2), init_(std::move(buffers)) {
    auto program = dev_.loadPtx(ptx_text, "fused");
    EXPECT_TRUE(program.ok()) << program.status().message();
    if (!program.ok()) return;
    program_ = program.value();
    for (const auto& b : init_) {
      auto p = dev_.memory().allocate(b.size());
      EXPECT_TRUE(p.ok());
      ptrs_.push_back(p.ok() ? p.value() : 0);
    }
  }
  ~Runner() {
    for (emulator::DevicePtr p : ptrs_) {
      if (p != 0) {
        EXPECT_TRUE(dev_.memory().free(p).ok());
      }
    }
  }
  bool ok() const { return program_ != nullptr; }

  void reset() {
    for (size_t i = 0; i < init_.size(); ++i) {
      ASSERT_TRUE(dev_.memory().copyToDevice(ptrs_[i], init_[i].data(), init_[i].size()).ok());
    }
  }
  std::vector<std::vector<uint8_t>> read() {
    std::vector<std::vector<uint8_t>> out(init_.size());
    for (size_t i = 0; i < init_.size(); ++i) {
      out[i].resize(init_[i].size());
      EXPECT_TRUE(dev_.memory().copyToHost(out[i].data(), ptrs_[i], out[i].size()).ok());
    }
    return out;
  }
  std::vector<uint8_t> value(const Arg& a) const {
    if (a.buffer < 0) return a.bytes;
    std::vector<uint8_t> v(sizeof(emulator::DevicePtr));
    std::memcpy(v.data(), &ptrs_[static_cast<size_t>(a.buffer)], v.size());
    return v;
  }
  void launch(const std::string& name, const core::LaunchShape& s, const std::vector<std::vector<uint8_t>>& values) {
    const emulator::Kernel* k = program_->findKernel(name);
    ASSERT_NE(k, nullptr) << name;
    ASSERT_EQ(k->info().params.size(), values.size()) << name;
    std::vector<void*> args;
    for (const auto& v : values) args.push_back(const_cast<uint8_t*>(v.data()));
    std::vector<uint8_t> params = emulator::Device::packParams(k->info(), args.data());
    Status st = dev_.launch(*k, s, params);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  const std::vector<std::vector<uint8_t>>& initial() const { return init_; }

 private:
  emulator::Device dev_;
  std::vector<std::vector<uint8_t>> init_;
  std::shared_ptr<emulator::Program> program_;
  std::vector<emulator::DevicePtr> ptrs_;
};

HorizontalFusion specOf(const std::vector<Launch>& launches, HorizontalLayout layout) {
  HorizontalFusion spec;
  spec.layout = layout;
  for (const Launch& l : launches) {
    spec.kernels.push_back(l.kernel);
    spec.shapes.push_back(l.shape);
  }
  return spec;
}

// ptxas for each architecture (the module's .target lowered to it: nvcc wrote sm_90).
void expectCompiles(const ptx::Module& module) {
  auto ptxas = ptx::findPtxas();
  if (!ptxas.ok()) GTEST_SKIP() << "ptxas not found: " << ptxas.status().message();
  for (const char* arch : {"sm_80", "sm_90", "sm_100"}) {
    auto report = ptx::runPtxas(ptx::printForArch(module, arch), arch, ptxas.value());
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_EQ(report->exit_code, 0) << arch << ":\n" << report->log;
  }
}

// Fuses, prints, verifies, compiles, then runs the original launches and the fused launch on identical inputs
// and compares every buffer bit for bit. Returns the fusion result (for further checks).
FusionResult fuseAndCompare(ptx::Module module, const HorizontalFusion& spec, const std::vector<Launch>& launches,
                            const std::vector<std::vector<uint8_t>>& buffers, std::string* printed = nullptr) {
  auto fused = fuseHorizontal(module, spec);
  EXPECT_TRUE(fused.ok()) << fused.status().message();
  if (!fused.ok()) return {};
  FusionResult r = fused.value();
  Status v = ptx::verify(module);
  EXPECT_TRUE(v.ok()) << v.message();
  std::string text = ptx::printModule(module);
  if (printed) *printed = text;
  if (std::getenv("KFUSE_DUMP_FUSED") != nullptr) std::cerr << ptx::printFunction(*module.findFunction(r.fused_name));
  auto reparsed = ptx::parseModule(text);
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().message() << "\n" << text;
  expectCompiles(module);

  Runner run(text, buffers);
  EXPECT_TRUE(run.ok());
  if (!run.ok()) return r;
  run.reset();
  for (const Launch& l : launches) {
    std::vector<std::vector<uint8_t>> values;
    for (const Arg& a : l.args) values.push_back(run.value(a));
    run.launch(l.kernel, l.shape, values);
  }
  std::vector<std::vector<uint8_t>> expected = run.read();
  EXPECT_NE(expected, run.initial()) << "the original launches wrote nothing: the test proves nothing";

  run.reset();
  std::vector<std::vector<uint8_t>> values;
  for (const FusedParam& p : r.params) {
    const ArgRef& src = p.sources.front();
    values.push_back(run.value(launches[static_cast<size_t>(src.kernel)].args[static_cast<size_t>(src.param)]));
  }
  run.launch(r.fused_name, r.shape, values);
  std::vector<std::vector<uint8_t>> actual = run.read();
  for (size_t b = 0; b < expected.size(); ++b) {
    if (expected[b] == actual[b]) continue;
    size_t i = 0;
    while (expected[b][i] == actual[b][i]) ++i;
    ADD_FAILURE() << "buffer " << b << " differs first at byte " << i << " (expected " << int(expected[b][i])
                  << ", got " << int(actual[b][i]) << ")\n"
                  << ptx::printFunction(*module.findFunction(r.fused_name));
  }
  return r;
}

core::LaunchShape shape1d(uint32_t grid, uint32_t block, uint32_t dynamic = 0) {
  core::LaunchShape s;
  s.grid = {grid, 1, 1};
  s.block = {block, 1, 1};
  s.dynamic_shared_bytes = dynamic;
  return s;
}
uint32_t blocksFor(uint32_t n, uint32_t block) {
  return (n + block - 1) / block;
}

// axpb(x, y, a, b, n) on buffers 0 -> 1 and square(x, y, n) on buffers 2 -> 3.
std::vector<Launch> smallKernels(uint32_t na, uint32_t ba, uint32_t ns, uint32_t bs) {
  return {
      {"axpb", shape1d(blocksFor(na, ba), ba), {buf(0), buf(1), scalar(1.5f), scalar(-0.25f), scalar<int32_t>(na)}},
      {"square", shape1d(blocksFor(ns, bs), bs), {buf(2), buf(3), scalar<int32_t>(ns)}},
  };
}
std::vector<std::vector<uint8_t>> smallKernelBuffers(uint32_t na, uint32_t ns) {
  // Outputs start as random data too: elements past n must stay as they were.
  return {randomFloats(na + 7, 1), randomFloats(na + 7, 2), randomFloats(ns + 7, 3), randomFloats(ns + 7, 4)};
}

TEST(HorizontalFusion, BlockPartitionedRunsEachKernelOnItsOwnBlocks) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  auto launches = smallKernels(1000, 128, 3001, 64);  // different grids and blocks; n not a block multiple
  HorizontalFusion spec = specOf(launches, HorizontalLayout::kBlockPartitioned);
  FusionResult r = fuseAndCompare(m, spec, launches, smallKernelBuffers(1000, 3001));
  EXPECT_EQ(r.fused_name, "kfuse_horizontal_axpb_square");
  EXPECT_EQ(r.shape.grid, (core::Dim3{8 + 47, 1, 1}));
  EXPECT_EQ(r.shape.block, (core::Dim3{128, 1, 1}));
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_EQ(r.parts[0].first_block, 0u);
  EXPECT_EQ(r.parts[0].blocks, 8u);
  EXPECT_EQ(r.parts[1].first_block, 8u);
  EXPECT_EQ(r.parts[1].blocks, 47u);
  EXPECT_EQ(r.parts[1].threads, 64u);
  ASSERT_EQ(r.params.size(), 8u);  // 5 + 3, nothing merged
  EXPECT_EQ(r.params[5].sources, (std::vector<ArgRef>{{1, 0}}));
}

TEST(HorizontalFusion, ThreadPartitionedRunsEachKernelOnItsOwnThreadsAndMergesEqualArguments) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  auto launches = smallKernels(1000, 128, 2500, 64);
  launches[1].args[0] = buf(0);  // both read x
  HorizontalFusion spec = specOf(launches, HorizontalLayout::kThreadPartitioned);
  spec.equal_args = {{ArgRef{0, 0}, ArgRef{1, 0}}};
  FusionResult r = fuseAndCompare(m, spec, launches, smallKernelBuffers(2500, 2500));
  EXPECT_EQ(r.shape.block, (core::Dim3{192, 1, 1}));
  EXPECT_EQ(r.shape.grid, (core::Dim3{40, 1, 1}));  // max(8, 40)
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_EQ(r.parts[1].first_thread, 128u);
  EXPECT_EQ(r.parts[1].threads, 64u);
  ASSERT_EQ(r.params.size(), 7u);
  EXPECT_EQ(r.params[0].sources, (std::vector<ArgRef>{{0, 0}, {1, 0}}));
}

// reduce_sum twice (bar.sync + dynamic shared memory in both parts) on different sizes.
std::vector<Launch> twoReductions() {
  return {
      {"reduce_sum", shape1d(16, 256, 256 * 4), {buf(0), buf(1), scalar<int32_t>(5001)}},
      {"reduce_sum", shape1d(7, 128, 128 * 4), {buf(2), buf(3), scalar<int32_t>(3333)}},
  };
}
std::vector<std::vector<uint8_t>> twoReductionBuffers() {
  return {randomFloats(5001, 5), randomFloats(16, 6), randomFloats(3333, 7), randomFloats(7, 8)};
}

TEST(HorizontalFusion, BlockPartitionedReductionsCountOnlyTheirOwnThreadsAtBarriers) {
  ptx::Module m = moduleOf({examplePtx("reduction")});
  auto launches = twoReductions();
  FusionResult r =
      fuseAndCompare(m, specOf(launches, HorizontalLayout::kBlockPartitioned), launches, twoReductionBuffers());
  EXPECT_EQ(r.shape.dynamic_shared_bytes, 1024u);  // overlaid: the larger part's
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_EQ(r.parts[0].barrier_id, -1);  // the full block: bar.sync 0 stays
  EXPECT_EQ(r.parts[1].barrier_id, 0);   // 128 of 256 threads: bar.sync 0, 128
}

TEST(HorizontalFusion, BlockPartitionedBarriersOfASmallerPartCountItsThreads) {
  ptx::Module m = moduleOf({examplePtx("reduction")});
  auto launches = twoReductions();
  ASSERT_TRUE(fuseHorizontal(m, specOf(launches, HorizontalLayout::kBlockPartitioned)).ok());
  std::string fused = ptx::printFunction(*m.findFunction("kfuse_horizontal_reduce_sum_reduce_sum"));
  size_t first_part = fused.find("$kfuse_h_end0:");
  ASSERT_NE(first_part, std::string::npos);
  EXPECT_NE(fused.find("bar.sync\t0;"), std::string::npos);
  EXPECT_GT(fused.find("bar.sync\t0;"), 0u);
  EXPECT_LT(fused.find("bar.sync\t0;"), first_part);       // the 256-thread part: whole block
  EXPECT_GT(fused.find("bar.sync\t0, 128;"), first_part);  // the 128-thread part: its own threads
  EXPECT_NE(fused.find("bar.sync\t0, 128;"), std::string::npos);
}

TEST(HorizontalFusion, ThreadPartitionedReductionsGetDistinctNamedBarriersAndSharedMemory) {
  ptx::Module m = moduleOf({examplePtx("reduction")});
  auto launches = twoReductions();
  FusionResult r =
      fuseAndCompare(m, specOf(launches, HorizontalLayout::kThreadPartitioned), launches, twoReductionBuffers());
  EXPECT_EQ(r.shape.block, (core::Dim3{384, 1, 1}));
  EXPECT_EQ(r.shape.dynamic_shared_bytes, 1024u + 512u);  // side by side
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_EQ(r.parts[0].barrier_id, 0);
  EXPECT_EQ(r.parts[1].barrier_id, 1);
}

// histogram (static shared + bar.sync + atomics) and reduce_sum (dynamic shared + bar.sync + shuffles).
std::vector<Launch> histogramAndReduction() {
  return {
      {"histogram", shape1d(6, 256), {buf(0), buf(1), scalar<int32_t>(7777)}},
      {"reduce_sum", shape1d(9, 64, 64 * 4), {buf(2), buf(3), scalar<int32_t>(2049)}},
  };
}
std::vector<std::vector<uint8_t>> histogramAndReductionBuffers() {
  return {randomBytes(7777, 9), std::vector<uint8_t>(256 * 4, 0), randomFloats(2049, 10), randomFloats(9, 11)};
}

TEST(HorizontalFusion, HistogramAndReductionFuseInBothLayouts) {
  for (HorizontalLayout layout : {HorizontalLayout::kBlockPartitioned, HorizontalLayout::kThreadPartitioned}) {
    SCOPED_TRACE(horizontalLayoutName(layout));
    ptx::Module m = moduleOf({examplePtx("histogram"), examplePtx("reduction")});
    auto launches = histogramAndReduction();
    FusionResult r = fuseAndCompare(m, specOf(launches, layout), launches, histogramAndReductionBuffers());
    ASSERT_EQ(r.parts.size(), 2u);
    EXPECT_EQ(r.parts[1].barrier_id, layout == HorizontalLayout::kThreadPartitioned ? 1 : 0);
  }
}

// Moves `kernel`'s body-local .shared declarations to module scope (how other compilers, or separate
// compilation, declare static shared memory).
void hoistSharedToModule(ptx::Module& m, const std::string& kernel) {
  ptx::Function* f = m.findFunction(kernel);
  ASSERT_NE(f, nullptr);
  std::vector<ptx::Statement> kept;
  for (ptx::Statement& s : f->body) {
    if (s.kind == ptx::StatementKind::kDeclaration && s.decl->space == ptx::StateSpace::kShared) {
      m.variables.push_back(*s.decl);
      m.order.insert(m.order.begin(), {ptx::TopLevelKind::kVariable, m.variables.size() - 1});
    } else {
      kept.push_back(std::move(s));
    }
  }
  f->body = std::move(kept);
}

TEST(HorizontalFusion, ThreadPartitionedGivesEachPartItsOwnStaticSharedMemory) {
  std::vector<Launch> launches = {
      {"histogram", shape1d(5, 128), {buf(0), buf(1), scalar<int32_t>(4000)}},
      {"histogram", shape1d(3, 256), {buf(2), buf(3), scalar<int32_t>(1500)}},
  };
  std::vector<std::vector<uint8_t>> buffers = {randomBytes(4000, 12), std::vector<uint8_t>(1024, 0),
                                               randomBytes(1500, 13), std::vector<uint8_t>(1024, 0)};
  for (bool module_scope : {false, true}) {
    SCOPED_TRACE(module_scope ? "module-scope .shared" : "body-local .shared");
    ptx::Module m = moduleOf({examplePtx("histogram")});
    if (module_scope) hoistSharedToModule(m, "histogram");
    const size_t variables = m.variables.size();
    std::string printed;
    FusionResult r =
        fuseAndCompare(m, specOf(launches, HorizontalLayout::kThreadPartitioned), launches, buffers, &printed);
    ASSERT_EQ(r.parts.size(), 2u);
    auto reparsed = ptx::parseModule(printed);
    ASSERT_TRUE(reparsed.ok());
    const ptx::Function* fused = reparsed->findFunction(r.fused_name);
    ASSERT_NE(fused, nullptr);
    std::set<std::string> shared;
    for (const ptx::Statement& s : fused->body) {
      if (s.kind == ptx::StatementKind::kDeclaration && s.decl->space == ptx::StateSpace::kShared) {
        shared.insert(s.decl->name);
      }
    }
    if (module_scope) {
      // The second part reads a copy of the module variable.
      EXPECT_EQ(reparsed->variables.size(), variables + 1);
      EXPECT_TRUE(shared.empty());
    } else {
      // Body-local bins are renamed apart with the rest of each part's body.
      EXPECT_EQ(reparsed->variables.size(), variables);
      EXPECT_EQ(shared.size(), 2u);
    }
  }
}

using testing::testPtx;

// 2-D grids and blocks: scale2d (16x8 threads) and transpose (32x8 threads, bar.sync, static shared tile).
std::vector<Launch> twoDimensional(uint32_t w, uint32_t h) {
  core::LaunchShape s;
  s.grid = {blocksFor(w, 16), blocksFor(h, 8), 1};
  s.block = {16, 8, 1};
  core::LaunchShape t;
  t.grid = {blocksFor(w, 32), blocksFor(h, 32), 1};
  t.block = {32, 8, 1};
  return {
      {"scale2d", s, {buf(0), buf(1), scalar<int32_t>(w), scalar<int32_t>(h), scalar(0.75f)}},
      {"transpose", t, {buf(2), buf(3), scalar<int32_t>(w), scalar<int32_t>(h)}},
  };
}

TEST(HorizontalFusion, MultiDimensionalShapesAreRebuiltFromLinearIndicesInBothLayouts) {
  const uint32_t w = 70, h = 45;
  for (HorizontalLayout layout : {HorizontalLayout::kBlockPartitioned, HorizontalLayout::kThreadPartitioned}) {
    SCOPED_TRACE(horizontalLayoutName(layout));
    ptx::Module m = moduleOf({testPtx("kernels2d")});
    auto launches = twoDimensional(w, h);
    std::vector<std::vector<uint8_t>> buffers = {randomFloats(w * h, 14), randomFloats(w * h, 15),
                                                 randomFloats(w * h, 16), randomFloats(w * h, 17)};
    FusionResult r = fuseAndCompare(m, specOf(launches, layout), launches, buffers);
    if (layout == HorizontalLayout::kBlockPartitioned) {
      EXPECT_EQ(r.shape.block, (core::Dim3{32, 8, 1}));  // the larger block, kept 2-D
      EXPECT_EQ(r.shape.grid.x, 5u * 6u + 3u * 2u);
    } else {
      EXPECT_EQ(r.shape.block, (core::Dim3{128 + 256, 1, 1}));
      EXPECT_EQ(r.shape.grid.x, 30u);
    }
  }
}

// The .shared declarations of the fused kernel in `printed`: name -> bytes.
std::map<std::string, uint64_t> fusedSharedDeclarations(const std::string& printed, const std::string& fused) {
  std::map<std::string, uint64_t> out;
  auto m = ptx::parseModule(printed);
  EXPECT_TRUE(m.ok());
  if (!m.ok() || m->findFunction(fused) == nullptr) return out;
  for (const ptx::Statement& s : m->findFunction(fused)->body) {
    if (s.kind == ptx::StatementKind::kDeclaration && s.decl->space == ptx::StateSpace::kShared) {
      out[s.decl->name] = s.decl->byteSize();
    }
  }
  return out;
}

TEST(HorizontalFusion, BlockPartitionedOverlaysTheStaticSharedMemoryOfItsParts) {
  // histogram (256 threads, 1 KiB of bins) and transpose (32x8 threads, a 4224-byte tile).
  const uint32_t w = 50, h = 70;
  std::vector<Launch> launches = {{"histogram", shape1d(4, 256), {buf(0), buf(1), scalar<int32_t>(3000)}},
                                  twoDimensional(w, h)[1]};
  std::vector<std::vector<uint8_t>> buffers = {randomBytes(3000, 18), std::vector<uint8_t>(1024, 0),
                                               randomFloats(w * h, 19), randomFloats(w * h, 20)};
  ptx::Module m = moduleOf({examplePtx("histogram"), testPtx("kernels2d")});
  std::string printed;
  FusionResult r =
      fuseAndCompare(m, specOf(launches, HorizontalLayout::kBlockPartitioned), launches, buffers, &printed);
  EXPECT_EQ(r.shape.block, (core::Dim3{256, 1, 1}));  // the first of the largest blocks
  auto shared = fusedSharedDeclarations(printed, r.fused_name);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared.begin()->second, 4224u);  // max(1024, 4224), not the sum

  // Module-scope variables are overlaid too (here one variable that both parts read).
  std::vector<Launch> twice = {
      {"histogram", shape1d(5, 128), {buf(0), buf(1), scalar<int32_t>(4000)}},
      {"histogram", shape1d(3, 256), {buf(2), buf(3), scalar<int32_t>(1500)}},
  };
  ptx::Module hm = moduleOf({examplePtx("histogram")});
  hoistSharedToModule(hm, "histogram");
  r = fuseAndCompare(
      hm, specOf(twice, HorizontalLayout::kBlockPartitioned), twice,
      {randomBytes(4000, 21), std::vector<uint8_t>(1024, 0), randomBytes(1500, 22), std::vector<uint8_t>(1024, 0)},
      &printed);
  shared = fusedSharedDeclarations(printed, r.fused_name);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared.begin()->second, 1024u);
}

TEST(HorizontalFusion, NamesItsLayouts) {
  EXPECT_STREQ(horizontalLayoutName(HorizontalLayout::kBlockPartitioned), "block-partitioned");
  EXPECT_STREQ(horizontalLayoutName(HorizontalLayout::kThreadPartitioned), "thread-partitioned");
}

// The limit documented in horizontal.cpp: a part that exits some threads before a barrier the others reach runs
// alone (a whole-CTA barrier stops waiting for exited warps) but hangs fused (a counted barrier waits for them).
// Fusion cannot see it in the PTX; the emulator reports the deadlock, which is what makes validation refuse it.
TEST(HorizontalFusion, EarlyExitBeforeABarrierIsCaughtAsADeadlockOnTheEmulator) {
  ptx::Module m = moduleOf({testPtx("kernels2d")});
  std::vector<Launch> launches = {twoDimensional(40, 20)[0],
                                  {"early_exit_sync", shape1d(1, 128), {buf(2), buf(3), scalar<int32_t>(64)}}};
  auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kThreadPartitioned));
  ASSERT_TRUE(r.ok()) << r.status().message();
  emulator::Device dev(1);
  auto program = dev.loadPtx(ptx::printModule(m));
  ASSERT_TRUE(program.ok()) << program.status().message();
  std::vector<emulator::DevicePtr> ptrs;
  for (int i = 0; i < 4; ++i) {
    auto p = dev.memory().allocate(40 * 20 * sizeof(float));
    ASSERT_TRUE(p.ok());
    ptrs.push_back(p.value());
  }
  auto run = [&](const std::string& name, const core::LaunchShape& s, std::vector<std::vector<uint8_t>> values) {
    const emulator::Kernel* k = program.value()->findKernel(name);
    std::vector<void*> args;
    for (auto& v : values) args.push_back(v.data());
    return dev.launch(*k, s, emulator::Device::packParams(k->info(), args.data()));
  };
  auto bytes = [](auto v) { return scalar(v).bytes; };
  EXPECT_TRUE(run("early_exit_sync", launches[1].shape, {bytes(ptrs[2]), bytes(ptrs[3]), bytes(int32_t{64})}).ok());
  Status fused = run(r->fused_name, r->shape,
                     {bytes(ptrs[0]), bytes(ptrs[1]), bytes(int32_t{40}), bytes(int32_t{20}), bytes(0.75f),
                      bytes(ptrs[2]), bytes(ptrs[3]), bytes(int32_t{64})});
  EXPECT_FALSE(fused.ok());
  EXPECT_NE(fused.message().find("barrier deadlock"), std::string::npos) << fused.message();
  for (emulator::DevicePtr p : ptrs) EXPECT_TRUE(dev.memory().free(p).ok());
}

// ---- refusals ----

TEST(HorizontalFusion, RefusesThreadPartitionedPartsThatAreNotWholeWarps) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  auto launches = smallKernels(1000, 100, 1000, 64);
  auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kThreadPartitioned));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a multiple of 32"), std::string::npos) << r.status().message();
  EXPECT_EQ(m.findFunction("kfuse_horizontal_axpb_square"), nullptr);  // nothing half-written
}

TEST(HorizontalFusion, RefusesThreadPartitionedBlocksOverTheThreadLimit) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  auto launches = smallKernels(10000, 768, 10000, 512);
  auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kThreadPartitioned));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1280 threads per block, more than 1024"), std::string::npos)
      << r.status().message();
}

TEST(HorizontalFusion, RefusesBarriersOfASmallerBlockThatNamedBarriersCannotCount) {
  ptx::Module m = moduleOf({examplePtx("reduction")});
  std::vector<Launch> launches = {
      {"reduce_sum", shape1d(4, 256, 1024), {}},
      {"reduce_sum", shape1d(4, 100, 400), {}},
  };
  auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kBlockPartitioned));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("100 threads"), std::string::npos) << r.status().message();
}

TEST(HorizontalFusion, RefusesBadSpecifications) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  auto launches = smallKernels(1000, 128, 1000, 128);
  HorizontalFusion one = specOf({launches[0]}, HorizontalLayout::kBlockPartitioned);
  EXPECT_FALSE(fuseHorizontal(m, one).ok());
  HorizontalFusion missing = specOf(launches, HorizontalLayout::kBlockPartitioned);
  missing.kernels[1] = "no_such_kernel";
  auto r = fuseHorizontal(m, missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no_such_kernel"), std::string::npos);
  HorizontalFusion empty = specOf(launches, HorizontalLayout::kThreadPartitioned);
  empty.shapes[0].grid.x = 0;
  EXPECT_FALSE(fuseHorizontal(m, empty).ok());
  HorizontalFusion bad_equal = specOf(launches, HorizontalLayout::kBlockPartitioned);
  bad_equal.equal_args = {{ArgRef{0, 0}, ArgRef{1, 2}}};  // a pointer and an int
  EXPECT_FALSE(fuseHorizontal(m, bad_equal).ok());
}

TEST(HorizontalFusion, RefusesGridWideSynchronisation) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  // What cooperative groups' grid.sync() compiles to reads the grid workspace from %envreg1/%envreg2.
  ptx::Function* square = m.findFunction("square");
  ptx::Instruction in;
  in.opcode = ptx::Opcode::kMov;
  in.addModifier(".u32");
  in.operands = {ptx::Operand::reg("%r3"), ptx::Operand::reg("%envreg1")};
  ptx::Statement s;
  s.kind = ptx::StatementKind::kInstruction;
  s.inst = in;
  square->body.insert(square->body.begin() + static_cast<std::ptrdiff_t>(square->body.size() - 2), s);
  auto launches = smallKernels(1000, 128, 1000, 128);
  auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kBlockPartitioned));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("grid-wide"), std::string::npos) << r.status().message();
}

TEST(HorizontalFusion, RefusesAFusedBlockThatViolatesReqntidOrMaxntid) {
  auto launches = smallKernels(1000, 128, 1000, 64);
  for (const char* directive : {".reqntid", ".maxntid"}) {
    SCOPED_TRACE(directive);
    ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
    m.findFunction("axpb")->directives.push_back({directive, {128}});
    // Block-partitioned keeps axpb's 128 threads: allowed.
    ptx::Module copy = m;
    EXPECT_TRUE(fuseHorizontal(copy, specOf(launches, HorizontalLayout::kBlockPartitioned)).ok());
    // Thread-partitioned needs 192.
    auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kThreadPartitioned));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(std::string(directive) + " 128 but the fused block has 192 threads"),
              std::string::npos)
        << r.status().message();
  }
}

ptx::Statement barrierStatement(ptx::Operand id, std::vector<ptx::Operand> rest = {}) {
  ptx::Statement s;
  s.kind = ptx::StatementKind::kInstruction;
  s.inst.opcode = ptx::Opcode::kBar;
  s.inst.addModifier(".sync");
  s.inst.operands.push_back(std::move(id));
  for (ptx::Operand& o : rest) s.inst.operands.push_back(std::move(o));
  return s;
}

TEST(HorizontalFusion, RefusesThreadPartitionedBarriersItCannotRenumber) {
  auto launches = twoReductions();
  {
    // A barrier id held in a register cannot be given a per-part id.
    ptx::Module m = moduleOf({examplePtx("reduction")});
    ptx::Function* f = m.findFunction("reduce_sum");
    f->body.insert(f->body.end() - 2, barrierStatement(ptx::Operand::reg("%r3")));
    auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kThreadPartitioned));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("names a barrier by a register"), std::string::npos) << r.status().message();
    // Block-partitioned keeps the ids: allowed.
    EXPECT_TRUE(fuseHorizontal(m, specOf(launches, HorizontalLayout::kBlockPartitioned)).ok());
  }
  {
    // Each part uses barriers 0..8: 18 named barriers, more than 16.
    ptx::Module m = moduleOf({examplePtx("reduction")});
    ptx::Function* f = m.findFunction("reduce_sum");
    for (int id = 1; id <= 8; ++id) {
      f->body.insert(f->body.end() - 2, barrierStatement(ptx::Operand::imm(std::to_string(id))));
    }
    auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kThreadPartitioned));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("18 named barriers, more than 16"), std::string::npos) << r.status().message();
  }
}

TEST(HorizontalFusion, RefusesDynamicParallelism) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  ptx::Statement call;
  call.kind = ptx::StatementKind::kInstruction;
  call.inst.opcode = ptx::Opcode::kCall;
  call.inst.addModifier(".uni");
  ptx::Operand args;
  args.kind = ptx::OperandKind::kList;
  call.inst.operands = {ptx::Operand::sym("cudaLaunchDeviceV2"), args};
  ptx::Function* f = m.findFunction("square");
  f->body.insert(f->body.end() - 2, call);
  auto r = fuseHorizontal(m, specOf(smallKernels(1000, 128, 1000, 128), HorizontalLayout::kBlockPartitioned));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dynamic parallelism"), std::string::npos) << r.status().message();
}

// A device function in `m` whose body is `mov.u32 %r1, <source>; ret;`; `caller` (if given) calls it first thing.
void addDeviceFunction(ptx::Module& m, const std::string& name, ptx::Operand source, const std::string& caller) {
  ptx::Function f;
  f.name = name;
  f.has_param_list = true;
  f.has_body = true;
  ptx::Statement decl;
  decl.kind = ptx::StatementKind::kDeclaration;
  decl.decl.mut().space = ptx::StateSpace::kReg;
  decl.decl.mut().type = ptx::DataType::kB32;
  decl.decl.mut().name = "%r";
  decl.decl.mut().range = 2;
  ptx::Statement mov;
  mov.kind = ptx::StatementKind::kInstruction;
  mov.inst.opcode = ptx::Opcode::kMov;
  mov.inst.addModifier(".u32");
  mov.inst.operands = {ptx::Operand::reg("%r1"), std::move(source)};
  ptx::Statement ret;
  ret.kind = ptx::StatementKind::kInstruction;
  ret.inst.opcode = ptx::Opcode::kRet;
  f.body = {decl, mov, ret};
  m.functions.insert(m.functions.begin(), f);
  for (ptx::TopLevel& t : m.order) {
    if (t.kind == ptx::TopLevelKind::kFunction) ++t.index;
  }
  m.order.insert(m.order.begin(), {ptx::TopLevelKind::kFunction, 0});
  if (caller.empty()) return;
  ptx::Statement call;
  call.kind = ptx::StatementKind::kInstruction;
  call.inst.opcode = ptx::Opcode::kCall;
  call.inst.addModifier(".uni");
  ptx::Operand args;
  args.kind = ptx::OperandKind::kList;
  call.inst.operands = {ptx::Operand::sym(name), args};
  ptx::Function* c = m.findFunction(caller);
  c->body.insert(c->body.end() - 2, call);
}

TEST(HorizontalFusion, RefusesDeviceFunctionsThatWouldSeeTheFusedLaunch) {
  {
    // A callee reading %tid.x would see the fused block's thread index.
    ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
    addDeviceFunction(m, "where_am_i", ptx::Operand::reg("%tid.x"), "square");
    auto r = fuseHorizontal(m, specOf(smallKernels(1000, 128, 1000, 128), HorizontalLayout::kThreadPartitioned));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("calls .func where_am_i, which reads %tid.x"), std::string::npos)
        << r.status().message();
  }
  {
    // A module-scope shared buffer that a device function also uses cannot be copied per part...
    ptx::Module m = moduleOf({examplePtx("histogram")});
    hoistSharedToModule(m, "histogram");
    addDeviceFunction(m, "touch_bins", ptx::Operand::sym(m.variables.back().name), "");
    std::vector<Launch> twice = {{"histogram", shape1d(5, 128), {}}, {"histogram", shape1d(3, 256), {}}};
    auto r = fuseHorizontal(m, specOf(twice, HorizontalLayout::kThreadPartitioned));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("device functions use it as well"), std::string::npos) << r.status().message();
    // ...nor overlaid: block-partitioned keeps it where it is.
    auto b = fuseHorizontal(m, specOf(twice, HorizontalLayout::kBlockPartitioned));
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(ptx::printFunction(*m.findFunction(b->fused_name)).find("kfuse_h_shared"), std::string::npos);
  }
}

// Golden: the printed module with the block-partitioned axpb + square. Regenerate after an intended change with
//   KFUSE_UPDATE_GOLDEN=1 ./kfuse_rewriter_test --gtest_filter='HorizontalFusion.Golden*'
TEST(HorizontalFusion, GoldenBlockPartitionedSmallKernels) {
  ptx::Module m = moduleOf({examplePtx("many_small_kernels")});
  auto launches = smallKernels(1000, 128, 3001, 64);
  auto r = fuseHorizontal(m, specOf(launches, HorizontalLayout::kBlockPartitioned));
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string printed = ptx::printModule(m);
  const std::string golden = std::string(KFUSE_REWRITER_TESTDATA) + "/horizontal/block_axpb_square.golden.ptx";
  if (const char* update = std::getenv("KFUSE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << printed;
  }
  EXPECT_EQ(printed, readText(golden)) << "regenerate with KFUSE_UPDATE_GOLDEN=1 if the change is intended";
}

}  // namespace
}  // namespace kfuse::rewriter
