// Epilogue (element-remapped) fusion: the kernels of analyzer/testdata/epilogue_cases.cu (real nvcc PTX) in traces
// built as the collector records them, analysed end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <variant>

#include "kfuse/analyzer/analysis.h"

namespace kfuse::analyzer {
namespace {

using core::Id;

struct Ptr {
  Id allocation;
  uint64_t offset = 0;
};
using Arg = std::variant<Ptr, int>;

class Builder {
 public:
  Builder() {
    t_.devices.push_back(core::Device{1, 0, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984ull, 1'980'000, ""});
    t_.streams.push_back(core::Stream{1, 0, 0, 7, 0, true});
    core::Module m;
    m.id = 1;
    m.kind = core::ImageKind::kPtx;
    std::ifstream in(KFUSE_EPILOGUE_TEST_PTX, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    m.image.assign(text.begin(), text.end());
    m.hash = core::sha256Hex(m.image);
    t_.modules.push_back(m);
  }

  Id function(const std::string& name) {
    for (const core::KernelFunction& f : t_.functions) {
      if (f.mangled_name == name) return f.id;
    }
    t_.functions.push_back(core::KernelFunction{Id(t_.functions.size() + 1), 1, name, "", {}});
    return t_.functions.back().id;
  }

  Id allocation(uint64_t bytes) {
    const Id id = Id(t_.allocations.size() + 1);
    t_.allocations.push_back(core::Allocation{id, 0, 0x7f0000000000ull + uint64_t(id) * 0x10000000, bytes,
                                              core::AllocationKind::kDevice, 0, core::kNoTime});
    return id;
  }

  Builder& launch(const std::string& kernel, core::Dim3 grid, core::Dim3 block, const std::vector<Arg>& args) {
    core::Launch l;
    l.id = Id(t_.launches.size() + 1);
    l.stream_id = 1;
    l.function_id = function(kernel);
    l.grid = grid;
    l.block = block;
    l.api_start_ns = clock_;
    l.api_end_ns = clock_ + 2'000;
    l.gpu_start_ns = clock_ + 5'000;
    l.gpu_end_ns = clock_ + 15'000;
    clock_ += 20'000;
    for (size_t p = 0; p < args.size(); ++p) {
      if (const Ptr* ptr = std::get_if<Ptr>(&args[p])) {
        l.arg_bytes.resize((l.arg_bytes.size() + 7) / 8 * 8);
        const uint64_t address = t_.allocations[size_t(ptr->allocation - 1)].address + ptr->offset;
        const size_t at = l.arg_bytes.size();
        l.arg_bytes.resize(at + 8);
        std::memcpy(l.arg_bytes.data() + at, &address, 8);
        l.pointer_args.push_back(core::PointerArg{int(p), address, ptr->allocation, ptr->offset});
      } else {
        const int v = std::get<int>(args[p]);
        const size_t at = l.arg_bytes.size();
        l.arg_bytes.resize(at + 4);
        std::memcpy(l.arg_bytes.data() + at, &v, 4);
      }
    }
    t_.launches.push_back(l);
    return *this;
  }

  Report analyze() const {
    ImportResult r;
    r.trace = t_;
    r.format = "kfuse";
    auto report = kfuse::analyzer::analyze(r, "epilogue.sqlite", {});
    EXPECT_TRUE(report.ok()) << report.status().message();
    return report.ok() ? *report : Report{};
  }

 private:
  core::Trace t_;
  int64_t clock_ = 1'000'000;
};

constexpr int kM = 32, kN = 64, kK = 16;

// The candidate whose kernels are exactly `names` (short names), or null.
const Candidate* find(const Report& r, const std::vector<std::string>& names) {
  for (const Candidate& c : r.candidates) {
    if (c.names.size() != names.size()) continue;
    bool same = true;
    for (size_t i = 0; i < names.size(); ++i) same = same && c.names[i].rfind(names[i], 0) == 0;
    if (same) return &c;
  }
  return nullptr;
}

std::string describe(const Report& r) {
  std::string s;
  for (const Candidate& c : r.candidates) {
    s += std::string(legalityName(c.legality)) + " " + fusionKindName(c.fusion) + ":";
    for (const std::string& n : c.names) s += " " + n;
    s += " -- " + c.verdict + "\n";
  }
  return s;
}

// rowsum2d on a (kN/16 x kM/16) grid of 16x16 blocks, then `consumers` as 1-D launches of 256 threads.
struct Chain {
  Builder b;
  Id a, c, bias_v, y;
  Chain() {
    a = b.allocation(4 * kM * kK);
    c = b.allocation(4 * kM * kN);
    bias_v = b.allocation(4 * kN);
    y = b.allocation(4 * kM * kN);
  }
};

TEST(EpilogueFusion, ProvesMatmulShapedProducerWithBiasAndActivation) {
  Chain ch;
  const int mn = kM * kN;
  ch.b.launch("rowsum2d", {kN / 16, kM / 16, 1}, {16, 16, 1}, {Ptr{ch.a}, Ptr{ch.c}, kM, kN, kK})
      .launch("bias", {mn / 256, 1, 1}, {256, 1, 1}, {Ptr{ch.c}, Ptr{ch.bias_v}, kM, kN})
      .launch("act", {mn / 256, 1, 1}, {256, 1, 1}, {Ptr{ch.c}, Ptr{ch.y}, mn});
  const Report r = ch.b.analyze();
  const Candidate* c = find(r, {"rowsum2d", "bias", "act"});
  ASSERT_NE(c, nullptr) << describe(r);
  EXPECT_EQ(c->fusion, FusionKind::kEpilogue);
  EXPECT_EQ(c->legality, Legality::kProven) << describe(r);
  ASSERT_TRUE(c->epilogue.has_value());
  EXPECT_EQ(c->epilogue->producer_param, 1);
  EXPECT_EQ(c->epilogue->consumer, 1);
  EXPECT_EQ(c->epilogue->consumer_param, 0);
  EXPECT_EQ(c->epilogue->element_bytes, 4u);
  EXPECT_EQ(c->epilogue->consumer_offset, 0);
}

// Tensors of the given sizes (bytes): one allocation each, or all carved out of one arena, each 256 bytes after the
// previous one's end.
std::vector<Ptr> tensors(Builder& b, bool arena, const std::vector<uint64_t>& bytes) {
  std::vector<Ptr> t;
  const Id a = arena ? b.allocation(1 << 20) : core::kNoId;
  uint64_t at = 0;
  for (uint64_t n : bytes) {
    t.push_back(arena ? Ptr{a, at} : Ptr{b.allocation(n)});
    at += n + 256;
  }
  return t;
}

// The same chain with one allocation per tensor and inside one arena: same candidate, same proof, same edges.
void expectSameInAnArena(const Report& separate, const Report& arena, const std::vector<std::string>& kernels) {
  const Candidate* s = find(separate, kernels);
  const Candidate* a = find(arena, kernels);
  ASSERT_NE(s, nullptr) << describe(separate);
  ASSERT_NE(a, nullptr) << describe(arena);
  EXPECT_EQ(s->legality, Legality::kProven) << describe(separate);
  EXPECT_EQ(a->legality, Legality::kProven) << describe(arena);
  EXPECT_EQ(a->epilogue, s->epilogue);
  EXPECT_EQ(describe(arena), describe(separate));
  // Edges only between overlapping byte ranges: the chain's RAW edges, none between other tensors.
  EXPECT_EQ(arena.edges_by_kind.at("RAW"), separate.edges_by_kind.at("RAW"));
  EXPECT_EQ(arena.edges_by_kind.count("WAR"), separate.edges_by_kind.count("WAR"));
  EXPECT_EQ(arena.edges_by_kind.count("WAW"), separate.edges_by_kind.count("WAW"));
}

// An affine producer -> two element-wise consumers.
Report scaleAct(bool arena) {
  Builder b;
  const int mn = kM * kN;
  const std::vector<Ptr> t = tensors(b, arena, {4 * mn, 4 * mn, 4 * mn, 4 * mn});
  b.launch("scale2d", {kN / 16, kM / 16, 1}, {16, 16, 1}, {t[0], t[1], kM, kN})
      .launch("act", {mn / 256, 1, 1}, {256, 1, 1}, {t[1], t[3], mn})
      .launch("act", {mn / 256, 1, 1}, {256, 1, 1}, {t[3], t[2], mn});
  return b.analyze();
}

TEST(EpilogueFusion, ProvesTensorsAtOffsetsInsideOneArena) {
  expectSameInAnArena(scaleAct(false), scaleAct(true), {"scale2d", "act", "act"});
}

// GEMM-like producer (a k loop) -> bias (b[i % n], not affine) -> activation: loop and non-affine footprints come
// from the per-block interval analysis.
Report gemmBiasAct(bool arena) {
  Builder b;
  const int mn = kM * kN;
  const std::vector<Ptr> t = tensors(b, arena, {4 * kM * kK, 4 * mn, 4 * kN, 4 * mn});  // a, c, bias, y
  b.launch("rowsum2d", {kN / 16, kM / 16, 1}, {16, 16, 1}, {t[0], t[1], kM, kN, kK})
      .launch("bias", {mn / 256, 1, 1}, {256, 1, 1}, {t[1], t[2], kM, kN})
      .launch("act", {mn / 256, 1, 1}, {256, 1, 1}, {t[1], t[3], mn});
  return b.analyze();
}

TEST(EpilogueFusion, LoopsAndModuloIndicesInsideOneArenaGetTheSameProofs) {
  expectSameInAnArena(gemmBiasAct(false), gemmBiasAct(true), {"rowsum2d", "bias", "act"});
}

TEST(EpilogueFusion, OverlappingTensorsInOneArenaAreNotProven) {
  Builder b;
  const int mn = kM * kN;
  const Id arena = b.allocation(1 << 20);
  // The bias vector sits inside the matrix the producer writes: a consumer thread would read a bias element that
  // another producer thread has not stored yet.
  const uint64_t c = 4 * kM * kK + 256;
  b.launch("rowsum2d", {kN / 16, kM / 16, 1}, {16, 16, 1}, {Ptr{arena, 0}, Ptr{arena, c}, kM, kN, kK})
      .launch("bias", {mn / 256, 1, 1}, {256, 1, 1}, {Ptr{arena, c}, Ptr{arena, c + 4 * 100}, kM, kN});
  const Report r = b.analyze();
  const Candidate* cand = find(r, {"rowsum2d", "bias"});
  ASSERT_NE(cand, nullptr) << describe(r);
  EXPECT_NE(cand->legality, Legality::kProven) << describe(r);
}

struct NearMiss {
  const char* name;
  std::function<void(Chain&)> launches;
  std::vector<std::string> kernels;
  const char* reason;  // a phrase the deciding sentence must contain
};

class EpilogueNearMiss : public testing::TestWithParam<int> {};

std::vector<NearMiss> nearMisses() {
  const int mn = kM * kN;
  const core::Dim3 pgrid{kN / 16, kM / 16, 1}, pblock{16, 16, 1}, cgrid{uint32_t(mn / 256), 1, 1}, cblock{256, 1, 1};
  return {
      {"off by one",
       [=](Chain& c) {
         c.b.launch("rowsum2d", pgrid, pblock, {Ptr{c.a}, Ptr{c.c}, kM, kN, kK})
             .launch("act_next", cgrid, cblock, {Ptr{c.c}, Ptr{c.y}, mn});
       },
       {"rowsum2d", "act_next"},
       "never writes element"},
      {"transposed consumer",
       [=](Chain& c) {
         c.b.launch("rowsum2d", pgrid, pblock, {Ptr{c.a}, Ptr{c.c}, kM, kN, kK})
             .launch("transpose_read", cgrid, cblock, {Ptr{c.c}, Ptr{c.y}, kM, kN});
       },
       {"rowsum2d", "transpose_read"},
       "could not follow"},
      {"neighbour reads",
       [=](Chain& c) {
         c.b.launch("rowsum2d", pgrid, pblock, {Ptr{c.a}, Ptr{c.c}, kM, kN, kK})
             .launch("smooth", cgrid, cblock, {Ptr{c.c}, Ptr{c.y}, mn});
       },
       {"rowsum2d", "smooth"},
       "must touch only element e"},
      {"row loop",
       [=](Chain& c) {
         c.b.launch("rowsum2d", pgrid, pblock, {Ptr{c.a}, Ptr{c.c}, kM, kN, kK})
             .launch("row_total", {1, 1, 1}, {kM, 1, 1}, {Ptr{c.c}, Ptr{c.y}, kM, kN});
       },
       {"rowsum2d", "row_total"},
       "inside a loop"},
      {"row loop on the same launch shape",
       [=](Chain& c) {
         // Thread-local, not epilogue: both launches have one shape, and the consumer reads a whole row in a loop.
         // (A prologue would be legal, but act writes only the first mn - 1 elements of the rows row_total reads.)
         c.b.launch("act", cgrid, cblock, {Ptr{c.c}, Ptr{c.y}, mn - 1})
             .launch("row_total", cgrid, cblock, {Ptr{c.y}, Ptr{c.a}, kM, kN});
       },
       {"act", "row_total"},
       "inside a loop"},
      {"element written twice",
       [=](Chain& c) {
         c.b.launch("colfill2d", pgrid, pblock, {Ptr{c.a}, Ptr{c.c}, kM, kN})
             .launch("act", cgrid, cblock, {Ptr{c.c}, Ptr{c.y}, mn});
       },
       {"colfill2d", "act"},
       "from two threads"},
      {"stored twice",
       [=](Chain& c) {
         c.b.launch("store_twice2d", pgrid, pblock, {Ptr{c.a}, Ptr{c.c}, kM, kN})
             .launch("act", cgrid, cblock, {Ptr{c.c}, Ptr{c.y}, mn});
       },
       {"store_twice2d", "act"},
       "more than once"},
      {"unwritten elements",
       [=](Chain& c) {
         c.b.launch("skip_last_row2d", pgrid, pblock, {Ptr{c.a}, Ptr{c.c}, kM, kN})
             .launch("act", cgrid, cblock, {Ptr{c.c}, Ptr{c.y}, mn});
       },
       {"skip_last_row2d", "act"},
       "never writes element"},
  };
}

TEST_P(EpilogueNearMiss, IsBlockedWithItsReason) {
  const NearMiss m = nearMisses()[static_cast<size_t>(GetParam())];
  Chain ch;
  m.launches(ch);
  const Report r = ch.b.analyze();
  const Candidate* c = find(r, m.kernels);
  ASSERT_NE(c, nullptr) << m.name << "\n" << describe(r);
  EXPECT_EQ(c->legality, Legality::kBlocked) << m.name << "\n" << describe(r);
  EXPECT_NE(c->verdict.find(m.reason), std::string::npos) << m.name << ": " << c->verdict;
  EXPECT_FALSE(c->epilogue.has_value());
}

INSTANTIATE_TEST_SUITE_P(All, EpilogueNearMiss, testing::Range(0, 8), [](const testing::TestParamInfo<int>& i) {
  std::string n = nearMisses()[static_cast<size_t>(i.param)].name;
  for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n;
});

// ---- prologue fusion: an element-wise producer recomputed at the loads of rowsum2d (2-D, a row in a loop) ----

// act over the kM x kK input of rowsum2d (`n` elements written, of kM * kK), then rowsum2d reading its output.
struct Prologue {
  Builder b;
  std::vector<Ptr> t;  // x, y (act's output, rowsum2d's a), c (rowsum2d's output)
  explicit Prologue(bool arena) { t = tensors(b, arena, {4 * kM * kK, 4 * kM * kK, 4 * kM * kN}); }
  Prologue& act(int n, const char* kernel = "act") {
    b.launch(kernel, {uint32_t(n + 255) / 256, 1, 1}, {256, 1, 1}, {t[0], t[1], n});
    return *this;
  }
  Prologue& rowsum(Ptr a, Ptr c) {
    b.launch("rowsum2d", {kN / 16, kM / 16, 1}, {16, 16, 1}, {a, c, kM, kN, kK});
    return *this;
  }
};

TEST(PrologueFusion, ProvesAnActivationFoldedIntoARowLoop) {
  for (bool arena : {false, true}) {
    Prologue p(arena);
    p.act(kM * kK).rowsum(p.t[1], p.t[2]);
    const Report r = p.b.analyze();
    const Candidate* c = find(r, {"act", "rowsum2d"});
    ASSERT_NE(c, nullptr) << describe(r);
    EXPECT_EQ(c->fusion, FusionKind::kPrologue) << describe(r);
    EXPECT_EQ(c->legality, Legality::kProven) << describe(r);
    ASSERT_TRUE(c->epilogue.has_value());
    EXPECT_EQ(c->epilogue->producer_param, 1);
    EXPECT_EQ(c->epilogue->consumer, 1);
    EXPECT_EQ(c->epilogue->consumer_param, 0);
    EXPECT_EQ(c->epilogue->consumer_offset, 0);
    EXPECT_EQ(c->epilogue->element_bytes, 4u);
    // The fused kernel redoes act at each of rowsum2d's kN loads of an element: the FLOPs say so.
    EXPECT_GT(c->cost.fused_ns, 0);
  }
}

TEST(PrologueFusion, ProvesARowLoopAfterAnElementWiseProducerOfTheSameShape) {
  // Not thread-local (each row_total thread reads a whole row that other act threads wrote); every element it
  // reads is one act writes, so each load can recompute it.
  Chain ch;
  const int mn = kM * kN;
  ch.b.launch("act", {mn / 256, 1, 1}, {256, 1, 1}, {Ptr{ch.c}, Ptr{ch.y}, mn})
      .launch("row_total", {mn / 256, 1, 1}, {256, 1, 1}, {Ptr{ch.y}, Ptr{ch.a}, kM, kN});
  const Report r = ch.b.analyze();
  const Candidate* c = find(r, {"act", "row_total"});
  ASSERT_NE(c, nullptr) << describe(r);
  EXPECT_EQ(c->legality, Legality::kProven) << describe(r);
  EXPECT_EQ(c->fusion, FusionKind::kPrologue) << describe(r);
  EXPECT_TRUE(std::any_of(c->reasons.begin(), c->reasons.end(), [](const std::string& s) {
    return s.rfind("thread-local fusion does not apply: ", 0) == 0 && s.find("inside a loop") != std::string::npos;
  }));
}

TEST(PrologueFusion, ProvesAProducerStoringVectors) {
  // act_vec4's thread p writes elements 4p to 4p + 3; with one vector fewer, the last four elements stay unwritten.
  for (int n4 : {kM * kK / 4, kM * kK / 4 - 1}) {
    Prologue p(false);
    p.b.launch("act_vec4", {uint32_t(kM * kK / 4 + 63) / 64, 1, 1}, {64, 1, 1}, {p.t[0], p.t[1], n4});
    p.rowsum(p.t[1], p.t[2]);
    const Report r = p.b.analyze();
    const Candidate* c = find(r, {"act_vec4", "rowsum2d"});
    ASSERT_NE(c, nullptr) << describe(r);
    EXPECT_EQ(c->fusion, FusionKind::kPrologue) << describe(r);
    if (n4 == kM * kK / 4) {
      EXPECT_EQ(c->legality, Legality::kProven) << describe(r);
      ASSERT_TRUE(c->epilogue.has_value());
      EXPECT_EQ(c->epilogue->element_bytes, 4u);
      EXPECT_EQ(c->epilogue->producer_lanes, 4u);
    } else {
      EXPECT_EQ(c->legality, Legality::kBlocked) << describe(r);
      EXPECT_NE(c->verdict.find("may read element " + std::to_string(kM * kK - 4)), std::string::npos) << c->verdict;
    }
  }
}

TEST(PrologueFusion, RefusesTheNearMisses) {
  struct Case {
    const char* name;
    std::function<void(Prologue&)> launches;
    std::vector<std::string> kernels;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"a guard that leaves elements unwritten",
       [](Prologue& p) { p.act(kM * kK - 1).rowsum(p.t[1], p.t[2]); },
       {"act", "rowsum2d"},
       "never writes"},
      {"the consumer overwrites the producer's input",
       [](Prologue& p) { p.act(kM * kK).rowsum(p.t[1], p.t[0]); },
       {"act", "rowsum2d"},
       "which act reads"},
      {"a producer writing two outputs",
       [](Prologue& p) {
         p.b.launch("act_both", {(kM * kK + 255) / 256, 1, 1}, {256, 1, 1}, {p.t[0], p.t[1], p.t[2], kM * kK});
         p.rowsum(p.t[1], p.t[0]);
       },
       {"act_both", "rowsum2d"},
       "writes two buffers"},
      {"a producer writing another thread's element",
       [](Prologue& p) {
         p.b.launch("act_strided", {(kM * kK / 2 + 255) / 256, 1, 1}, {256, 1, 1}, {p.t[0], p.t[1], kM * kK / 2});
         p.rowsum(p.t[1], p.t[2]);
       },
       {"act_strided", "rowsum2d"},
       "not at its own element"},
      {"a read-modify-write producer",
       [](Prologue& p) {
         p.b.launch("bias", {kM * kK / 256, 1, 1}, {256, 1, 1}, {p.t[1], p.t[0], kM, kK});
         p.rowsum(p.t[1], p.t[2]);
       },
       {"bias", "rowsum2d"},
       "only an element-wise producer"},
  };
  for (const Case& k : cases) {
    Prologue p(false);
    k.launches(p);
    const Report r = p.b.analyze();
    const Candidate* c = find(r, k.kernels);
    ASSERT_NE(c, nullptr) << k.name << "\n" << describe(r);
    EXPECT_EQ(c->legality, Legality::kBlocked) << k.name << "\n" << describe(r);
    EXPECT_NE(c->verdict.find(k.reason), std::string::npos) << k.name << ": " << c->verdict;
    EXPECT_FALSE(c->epilogue.has_value()) << k.name;
  }
}

}  // namespace
}  // namespace kfuse::analyzer
