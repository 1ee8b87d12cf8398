#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/metrics_merge.h"
#include "kfuse/core/cancel.h"
#include "kfuse/core/trace_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace kfuse::analyzer {
namespace {

using core::Id;

std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  return {s.begin(), s.end()};
}

// Builds traces of the kernels in analyzer/testdata/fusion_cases.cu, as the collector would record them.
class TraceBuilder {
 public:
  TraceBuilder() {
    t_.devices.push_back(core::Device{1, 0, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85'520'809'984ull, 1'980'000, ""});
    t_.streams.push_back(core::Stream{1, 0, 0, 7, 0, true});
    t_.streams.push_back(core::Stream{2, 0, 0x1000, 8, 0, false});
    core::Module m;
    m.id = 1;
    m.kind = core::ImageKind::kPtx;
    m.image = readFile(KFUSE_ANALYZER_TEST_PTX);
    m.hash = core::sha256Hex(m.image);
    t_.modules.push_back(m);
    const char* names[] = {"_Z7producePKfPfi",   "_Z7consumePKfPfi",   "_Z4blurPKfPfi",
                           "_Z6gatherPKfPKiPfi", "_Z9histogramPKiPji", "_Z9normalizePKjPfi"};
    for (const char* n : names) t_.functions.push_back(core::KernelFunction{Id(t_.functions.size() + 1), 1, n, "", {}});
    for (Id a = 1; a <= 6; ++a) {
      t_.allocations.push_back(core::Allocation{a, 0, 0x7f0000000000ull + uint64_t(a) * 0x1000000, 4 << 20,
                                                core::AllocationKind::kDevice, 0, core::kNoTime});
    }
  }

  static constexpr Id kProduce = 1, kConsume = 2, kBlur = 3, kGather = 4, kHistogram = 5, kNormalize = 6;

  // A launch of `fn` with pointer arguments into `allocs` (in parameter order) and a trailing int n.
  TraceBuilder& launch(Id fn, std::vector<Id> allocs, int n, Id stream = 1, uint32_t grid = 4096,
                       int64_t duration_ns = 10'000) {
    core::Launch l;
    l.id = Id(t_.launches.size() + 1);
    l.stream_id = stream;
    l.function_id = fn;
    l.grid = {grid, 1, 1};
    l.block = {256, 1, 1};
    // Launches are issued ahead of the GPU, as asynchronous launches are; 1 us of launch latency between kernels.
    l.api_start_ns = api_clock_;
    l.api_end_ns = api_clock_ + 2'000;
    api_clock_ += 3'000;
    l.gpu_start_ns = std::max(gpu_clock_, l.api_start_ns + 5'000);
    l.gpu_end_ns = l.gpu_start_ns + duration_ns;
    gpu_clock_ = l.gpu_end_ns + 1'000;
    for (size_t p = 0; p < allocs.size(); ++p) {
      const uint64_t address = t_.allocations[size_t(allocs[p] - 1)].address;
      l.arg_bytes.resize(8 * (p + 1));
      std::memcpy(l.arg_bytes.data() + 8 * p, &address, 8);
      l.pointer_args.push_back(core::PointerArg{int(p), address, allocs[p], 0});
    }
    l.arg_bytes.resize(l.arg_bytes.size() + 4);
    std::memcpy(l.arg_bytes.data() + 8 * allocs.size(), &n, 4);
    t_.launches.push_back(l);
    return *this;
  }

  TraceBuilder& hostSync() {
    // The host waits until the GPU is done.
    const int64_t done = std::max(api_clock_, gpu_clock_);
    t_.syncs.push_back(core::Sync{Id(t_.syncs.size() + 1), 0, 0, core::SyncKind::kContext, core::kNoId, core::kNoId,
                                  api_clock_, done});
    api_clock_ = gpu_clock_ = done + 1'000;
    return *this;
  }

  ImportResult result() const {
    ImportResult r;
    r.trace = t_;
    r.format = "kfuse";
    return r;
  }

  core::Trace& trace() { return t_; }

 private:
  core::Trace t_;
  int64_t api_clock_ = 1'000'000;
  int64_t gpu_clock_ = 0;
};

Report run(const TraceBuilder& b, AnalysisOptions options = {}) {
  auto r = analyze(b.result(), "test.sqlite", options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Report{};
}

bool anyReasonContains(const Candidate& c, const std::string& text) {
  for (const std::string& r : c.reasons) {
    if (r.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(KernelCatalog, ReadsAccessModesFromPtx) {
  TraceBuilder b;
  const KernelCatalog catalog = KernelCatalog::build(b.trace());
  EXPECT_EQ(catalog.kernelsWithPtx(), 6);
  const KernelFacts* produce = catalog.find(TraceBuilder::kProduce);
  ASSERT_NE(produce, nullptr);
  EXPECT_EQ(produce->name, "produce(float const*, float*, int)");
  ASSERT_EQ(produce->params.size(), 3u);
  EXPECT_EQ(produce->params[0].mode, core::AccessMode::kRead);
  EXPECT_EQ(produce->params[0].source, AccessSource::kPtx);
  EXPECT_EQ(produce->params[1].mode, core::AccessMode::kWrite);
  EXPECT_EQ(produce->params[2].mode, core::AccessMode::kNone);
  EXPECT_EQ(produce->params[2].offset, 16);
  ASSERT_EQ(produce->params[1].accesses.size(), 1u);
  EXPECT_EQ(produce->params[1].accesses[0].offset, "4*ctaid.x*ntid.x + 4*tid.x");
  EXPECT_EQ(catalog.find(TraceBuilder::kHistogram)->atomics, 1);
  EXPECT_GT(produce->flops_per_thread.fp32, 0);
}

TEST(KernelCatalog, FallsBackToMangledNamesWithoutPtx) {
  TraceBuilder b;
  b.trace().modules[0].image.clear();
  const KernelCatalog catalog = KernelCatalog::build(b.trace());
  EXPECT_EQ(catalog.kernelsWithPtx(), 0);
  const KernelFacts* gather = catalog.find(TraceBuilder::kGather);
  ASSERT_EQ(gather->params.size(), 4u);
  EXPECT_EQ(gather->params[0].mode, core::AccessMode::kRead);  // const float*
  EXPECT_EQ(gather->params[0].source, AccessSource::kMangledName);
  EXPECT_EQ(gather->params[2].mode, core::AccessMode::kReadWrite);  // float*: assumed
  EXPECT_EQ(gather->params[2].source, AccessSource::kAssumed);
  EXPECT_FALSE(gather->ptx_problem.empty());
}

TEST(DependencyGraph, RecordsDataEdgesWithReasons) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000)
      .launch(TraceBuilder::kConsume, {2, 3}, 1000)
      .launch(TraceBuilder::kProduce, {3, 2}, 1000);
  const KernelCatalog catalog = KernelCatalog::build(b.trace());
  const DependencyGraph g = DependencyGraph::build(b.trace(), catalog);
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_TRUE(g.has_pointer_data);
  std::map<std::string, int> kinds;
  for (const Edge& e : g.edges) kinds[edgeKindName(e.kind)]++;
  EXPECT_EQ(kinds["stream-order"], 2);
  EXPECT_EQ(kinds["RAW"], 2);  // consume reads 2 from produce; the second produce reads 3 from consume
  EXPECT_EQ(kinds["WAR"], 1);  // the second produce overwrites 2 after consume read it
  const auto raw = g.edgesBetween(0, 1);
  ASSERT_FALSE(raw.empty());
  bool found = false;
  for (const Edge* e : raw) {
    if (e->kind == EdgeKind::kRaw) {
      found = true;
      EXPECT_EQ(e->allocation_id, 2);
      const std::string reason = g.describe(*e, b.trace(), catalog);
      // n = 1000 floats: the bytes both launches touch, from their access forms and guards.
      EXPECT_EQ(reason,
                "launch 2 (consume(float const*, float*, int)) reads allocation 2 bytes [0, 4000) (param 0) "
                "that launch 1 (produce(float const*, float*, int)) wrote (param 1)");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(g.reaches(0, 2));
}

TEST(Analysis, ProvesAnElementwiseChainAndGroupsItsOccurrences) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
    b.hostSync();
  }
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  const Candidate& c = r.candidates[0];
  EXPECT_EQ(c.kind, CandidateKind::kVertical);
  EXPECT_EQ(c.occurrences.size(), 3u);
  EXPECT_EQ(c.legality, Legality::kProven);
  EXPECT_EQ(c.confidence, Confidence::kHigh);
  // Bound for the launch (256 threads a block): element i of thread i, and no other thread's.
  EXPECT_TRUE(anyReasonContains(c, "allocation 2: every access of"));
  EXPECT_TRUE(anyReasonContains(c, "both at byte 1024*ctaid.x + 4*tid.x, which no two threads share"));
  EXPECT_TRUE(anyReasonContains(c, "legality checked on every one of its 3 occurrences (one set"));
  EXPECT_EQ(c.names,
            (std::vector<std::string>{"produce(float const*, float*, int)", "consume(float const*, float*, int)"}));
  // 2 x 10 us measured + 1 us of launch latency between them.
  EXPECT_DOUBLE_EQ(c.cost.measured_ns, 20'000);
  EXPECT_DOUBLE_EQ(c.cost.gap_ns, 1'000);
  EXPECT_EQ(c.cost.bytes_source, "ptx-estimate");
  // x, mid (written), mid (read), out: 4 MiB each, and the chain's 12 MiB fit the H100's 50 MiB of L2, so consume's
  // read of mid is an L2 hit: 12 MiB from DRAM.
  EXPECT_DOUBLE_EQ(c.cost.bytes_before, 3.0 * 4 * (1 << 20));
  EXPECT_LT(c.cost.bytes_after, c.cost.bytes_before);
  EXPECT_GT(c.cost.saving_ns, 0);
  EXPECT_NEAR(c.total_saving_ns, 3 * c.cost.saving_ns, 1e-6);
  EXPECT_TRUE(r.why_none.empty());
}

// produce(n = 1000) then consume(n = 999): the guards differ, but both kernels touch the buffer only at element i
// of thread i, which no other thread touches, so a thread whose guard is off in one kernel changes nothing the
// other reads. Legal, and now proven (it used to be left "likely" for textually different guards).
TEST(Analysis, BoundsThatDifferDoNotMatterWhenEachElementBelongsToOneThread) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kConsume, {2, 3}, 999);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].legality, Legality::kProven);
  EXPECT_TRUE(anyReasonContains(r.candidates[0], "thread-local for these arguments"));
  EXPECT_EQ(r.candidates[0].checked.occurrences_checked, 1u);
}

// gs_produce -> gs_consume, grid-stride loops over 64 x 256 threads: proven for any n. With one n the rewriter runs
// one merged loop, so the consumer's read of mid comes from a register; with two n it runs the loops one after the
// other and the read stays.
TEST(Analysis, GridStrideLoopsTakingTheSameStepsReadTheIntermediateOnce) {
  auto chain = [](int n2) {
    TraceBuilder b;
    b.trace().functions.push_back(core::KernelFunction{7, 1, "_Z10gs_producePKfPfi", "", {}});
    b.trace().functions.push_back(core::KernelFunction{8, 1, "_Z10gs_consumePKfPfi", "", {}});
    b.launch(7, {1, 2}, 1 << 20, 1, 64).launch(8, {2, 3}, n2, 1, 64);
    const Report r = run(b);
    EXPECT_EQ(r.candidates.size(), 1u);
    return r.candidates.empty() ? Candidate{} : r.candidates[0];
  };
  const Candidate same = chain(1 << 20), other = chain((1 << 20) - 1);
  EXPECT_EQ(same.legality, Legality::kProven) << ::testing::PrintToString(same.reasons);
  EXPECT_EQ(other.legality, Legality::kProven) << ::testing::PrintToString(other.reasons);
  // Merged: costed as the same chain with one element per thread (produce -> consume over 1M threads) is.
  TraceBuilder flat;
  flat.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  const Report r = run(flat);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_DOUBLE_EQ(same.cost.bytes_after, r.candidates[0].cost.bytes_after);
  // Two loops: every use's bytes (in, mid written, mid read again, out), each up to its footprint's end.
  EXPECT_GT(other.cost.bytes_after, same.cost.bytes_after);
  EXPECT_NEAR(other.cost.bytes_after, 4.0 * 4 * (1 << 20), 16);
}

// A grid-stride consumer of another launch shape than its producer: an epilogue, the consumer run as one element
// per thread on ceil(n / 256) blocks, when its iterations are independent and its index cannot wrap.
TEST(Analysis, GridStrideConsumersAreEpiloguesAsOneElementPerThread) {
  auto pair = [](const char* consumer, int n) {
    TraceBuilder b;
    b.trace().functions.push_back(core::KernelFunction{7, 1, consumer, "", {}});
    b.launch(TraceBuilder::kProduce, {1, 2}, n).launch(7, {2, 3}, n, 1, 16);
    const Report r = run(b);
    EXPECT_EQ(r.candidates.size(), 1u);
    return r.candidates.empty() ? Candidate{} : r.candidates[0];
  };
  const Candidate ok = pair("_Z10gs_consumePKfPfi", 100000);
  EXPECT_EQ(ok.legality, Legality::kProven) << ::testing::PrintToString(ok.reasons);
  EXPECT_EQ(ok.fusion, FusionKind::kEpilogue);
  ASSERT_TRUE(ok.epilogue);
  EXPECT_EQ(ok.epilogue->element_grid, (100000u + 255) / 256);
  // Costed as the same epilogue with a consumer of one element per thread: the intermediate is not read again.
  TraceBuilder flat;
  flat.launch(TraceBuilder::kProduce, {1, 2}, 100000).launch(TraceBuilder::kConsume, {2, 3}, 100000, 1, 391);
  const Report fr = run(flat);
  ASSERT_EQ(fr.candidates.size(), 1u);
  EXPECT_EQ(fr.candidates[0].fusion, FusionKind::kEpilogue);
  EXPECT_DOUBLE_EQ(ok.cost.bytes_after, fr.candidates[0].cost.bytes_after);
  EXPECT_LT(ok.cost.bytes_after, ok.cost.bytes_before);
  // Iteration i reads what iteration i + 1 writes: no epilogue (the producer may still be recomputed at the
  // consumer's loads, the consumer's loop left as it is: a prologue).
  const Candidate shift = pair("_Z8gs_shiftPKfPfi", 100000);
  EXPECT_NE(shift.fusion, FusionKind::kEpilogue);
  EXPECT_NE(::testing::PrintToString(shift.reasons)
                .find("epilogue fusion does not apply: gs_shift(float const*, float*, int) is a grid-stride loop, and "
                      "two of its iterations may touch a common byte of allocation 3"),
            std::string::npos)
      << ::testing::PrintToString(shift.reasons);
  // A bound that, with the launch's 4,096 threads, passes 2^31: the index could wrap.
  const Candidate wrap = pair("_Z10gs_consumePKfPfi", 2147483647 - 100);
  EXPECT_NE(wrap.legality, Legality::kProven);
  EXPECT_NE(::testing::PrintToString(wrap.reasons).find("could wrap"), std::string::npos)
      << ::testing::PrintToString(wrap.reasons);
}

// A grid-stride producer on 16 blocks and a one-element-per-thread consumer: an epilogue launched as the producer's
// element view (epilogue.producer_grid). The producer runs one element per thread in the fused kernel, so its uses
// are costed like the consumer's: the intermediate is not read back (costed as the loop's footprint instead, every
// byte of it was kept and the fusion saved nothing; on a GPT-2 forward pass it came out above the unfused bytes).
TEST(Analysis, AGridStrideProducersEpilogueIsCostedOnItsElementView) {
  const int n = 100000;
  TraceBuilder b;
  b.trace().functions.push_back(core::KernelFunction{7, 1, "_Z10gs_producePKfPfi", "", {}});
  b.launch(7, {1, 2}, n, 1, 16).launch(TraceBuilder::kConsume, {2, 3}, n, 1, (n + 255) / 256);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  const Candidate& c = r.candidates[0];
  EXPECT_EQ(c.legality, Legality::kProven) << ::testing::PrintToString(c.reasons);
  EXPECT_EQ(c.fusion, FusionKind::kEpilogue);
  ASSERT_TRUE(c.epilogue);
  EXPECT_EQ(c.epilogue->producer_grid, uint32_t((n + 255) / 256));
  EXPECT_LT(c.cost.bytes_after, c.cost.bytes_before);
}

TEST(Analysis, StopsWithACancelledStatusWhenAskedTo) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kConsume, {2, 3}, 1000);
  std::atomic<bool> flag{true};
  const core::CancelScope scope(&flag);
  auto r = analyze(b.result(), "test.sqlite", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCancelled);
  flag = false;
  EXPECT_TRUE(analyze(b.result(), "test.sqlite", {}).ok());
}

TEST(Analysis, ChecksEveryDistinctArgumentTupleAndSaysSo) {
  // The same chain three times with n = 1000 and once with n = 2000: two tuples, all four occurrences checked.
  TraceBuilder b;
  for (int n : {1000, 1000, 2000, 1000})
    b.launch(TraceBuilder::kProduce, {1, 2}, n).launch(TraceBuilder::kConsume, {2, 3}, n);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  const Candidate& c = r.candidates[0];
  EXPECT_EQ(c.legality, Legality::kProven);
  EXPECT_EQ(c.checked.occurrences_checked, 4u);
  EXPECT_EQ(c.checked.argument_tuples, 2u);
  ASSERT_EQ(c.checked.tuples.size(), 2u);
  // The proof reads each kernel's n (param 2: it bounds the guard) and where each pointer points.
  const ProofArgument n_of_produce{0, 2, ProofValue::kScalar, 1000};
  EXPECT_NE(std::find(c.checked.tuples[0].begin(), c.checked.tuples[0].end(), n_of_produce), c.checked.tuples[0].end());
  // ... and which pointers share an allocation: produce(in, mid, n) and consume(mid, out, n) on buffers 1, 2, 3.
  auto allocationOf = [&](int kernel, int param) -> int64_t {
    for (const ProofArgument& a : c.checked.tuples[0]) {
      if (a.kernel == kernel && a.param == param && a.what == ProofValue::kAllocation) return a.value;
    }
    return -1;
  };
  EXPECT_EQ(allocationOf(0, 0), 0);
  EXPECT_EQ(allocationOf(0, 1), 1);
  EXPECT_EQ(allocationOf(1, 0), 1);  // consume reads the allocation produce writes
  EXPECT_EQ(allocationOf(1, 1), 2);
  EXPECT_TRUE(anyReasonContains(c, "legality checked on every one of its 4 occurrences (2 sets"));
}

TEST(Analysis, BlocksAStencilConsumer) {
  // blur reads mid[1000] (its thread 999), which produce (n = 1000) never writes: no thread-local fusion, and no
  // prologue either (the element a load recomputes must be one the producer writes).
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kBlur, {2, 3}, 1001);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  const Candidate& c = r.candidates[0];
  EXPECT_EQ(c.legality, Legality::kBlocked);
  EXPECT_NE(c.verdict.find("stencil"), std::string::npos) << c.verdict;
  EXPECT_TRUE(anyReasonContains(c,
                                "prologue fusion does not apply: blur(float const*, float*, int) may read element "
                                "1000"));
  EXPECT_DOUBLE_EQ(c.total_saving_ns, 0);
  EXPECT_FALSE(r.why_none.empty());  // nothing qualified: the report says why
}

TEST(Analysis, ProvesAStencilConsumerOnlyAsAPrologue) {
  // Every element blur reads (mid[0..999]) is one produce writes: not thread-local (a neighbour's element), but
  // each of blur's three loads can recompute its element with produce's body.
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kBlur, {2, 3}, 1000);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  const Candidate& c = r.candidates[0];
  EXPECT_EQ(c.legality, Legality::kProven);
  EXPECT_EQ(c.fusion, FusionKind::kPrologue);
  EXPECT_TRUE(anyReasonContains(c, "thread-local fusion does not apply"));
  EXPECT_TRUE(anyReasonContains(c, "stencil"));
  ASSERT_TRUE(c.epilogue.has_value());
  EXPECT_EQ(c.epilogue->producer_param, 1);
  EXPECT_EQ(c.epilogue->consumer_param, 0);
  EXPECT_EQ(c.epilogue->element_bytes, 4u);
}

const Candidate* findChain(const Report& r, const std::vector<Id>& functions) {
  for (const Candidate& c : r.candidates) {
    if (c.kind == CandidateKind::kVertical && c.function_ids == functions) return &c;
  }
  return nullptr;
}

TEST(Analysis, FindsTheLegalChainInsideABlockedOne) {
  // produce -> consume is thread-local; consume -> blur reads its neighbours' elements. The chain of three is
  // blocked as a whole, and its legal part produce -> consume is a candidate of its own; the blocked part
  // consume -> blur is not listed again.
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.launch(TraceBuilder::kProduce, {1, 2}, 1000)
        .launch(TraceBuilder::kConsume, {2, 3}, 1000)
        .launch(TraceBuilder::kBlur, {3, 4}, 1001);
  }
  AnalysisOptions options;
  options.keep_no_gain = true;
  const Report r = run(b, options);
  const Candidate* chain = findChain(r, {TraceBuilder::kProduce, TraceBuilder::kConsume, TraceBuilder::kBlur});
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->legality, Legality::kBlocked);
  const Candidate* part = findChain(r, {TraceBuilder::kProduce, TraceBuilder::kConsume});
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->legality, Legality::kProven);
  EXPECT_EQ(part->occurrences.size(), 3u);
  EXPECT_TRUE(anyReasonContains(*part, "a legal part of a longer chain"));
  EXPECT_EQ(findChain(r, {TraceBuilder::kConsume, TraceBuilder::kBlur}), nullptr);
  // The two compete for the same launches.
  EXPECT_FALSE(part->conflicts_with.empty());
  std::set<std::string> ids;
  for (const Candidate& c : r.candidates) EXPECT_TRUE(ids.insert(c.id).second) << "duplicate id " << c.id;
}

TEST(Analysis, ASubChainIsJudgedLikeAnyChain) {
  // The illegal twin: consume (2 -> 1) overwrites element i of allocation 1, which blur's threads i - 1 and i + 1
  // read. Fused, one thread would overwrite what a neighbour has yet to read: blur -> consume stays refused, and
  // only the thread-local consume (2 -> 1) -> consume (1 -> 3) is offered.
  TraceBuilder b;
  b.launch(TraceBuilder::kBlur, {1, 2}, 1001)
      .launch(TraceBuilder::kConsume, {2, 1}, 1000)
      .launch(TraceBuilder::kConsume, {1, 3}, 1000);
  AnalysisOptions options;
  options.keep_no_gain = true;
  const Report r = run(b, options);
  const Candidate* chain = findChain(r, {TraceBuilder::kBlur, TraceBuilder::kConsume, TraceBuilder::kConsume});
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->legality, Legality::kBlocked);
  EXPECT_EQ(findChain(r, {TraceBuilder::kBlur, TraceBuilder::kConsume}), nullptr);
  const Candidate* part = findChain(r, {TraceBuilder::kConsume, TraceBuilder::kConsume});
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->legality, Legality::kProven);
}

TEST(Analysis, DoesNotProveADataDependentGather) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kGather, {2, 4, 3}, 1000);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  // mid[idx[i]]: the PTX analysis cannot follow the address back to a parameter; a consumer whose reads cannot be
  // followed is never called likely.
  EXPECT_EQ(r.candidates[0].legality, Legality::kBlocked);
  EXPECT_EQ(r.candidates[0].confidence, Confidence::kMedium);
  EXPECT_TRUE(anyReasonContains(r.candidates[0],
                                "gather(float const*, int const*, float*, int) accesses allocation 2 "
                                "at an address the PTX analysis could not follow"))
      << r.candidates[0].reasons.front();
  // mid is written by produce and read by gather where the analysis cannot follow: both keep their bytes. The
  // gather's read of mid through idx may touch the whole allocation (4096 x 256 threads x 4 B = 4 MiB); every
  // other use touches the n = 1000 elements its footprint bounds (4000 B). Before: x, mid (write), mid (read, 4 MiB,
  // of which the 4000 B produce wrote are still in L2), idx, out. After: x, mid twice (kept), idx; out is read by
  // nothing later, so not written back.
  const double mib4 = 4.0 * (1 << 20), n4 = 4000;
  EXPECT_DOUBLE_EQ(r.candidates[0].cost.bytes_before, mib4 + 3 * n4);
  EXPECT_DOUBLE_EQ(r.candidates[0].cost.bytes_after, mib4 + 3 * n4);
}

TEST(Analysis, BlocksConsumersOfAtomicResults) {
  TraceBuilder b;
  b.launch(TraceBuilder::kHistogram, {4, 5}, 1000).launch(TraceBuilder::kNormalize, {5, 3}, 256);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].legality, Legality::kBlocked);
  EXPECT_TRUE(anyReasonContains(r.candidates[0], "atomics"));
}

TEST(Analysis, NoCostFigureExceedsWhatTheMembersFootprintsAndTimesAllow) {
  // The blocked histogram of issue 31 ("49.9 us measured -> 3.59 ms fused; DRAM 1.72e+10 -> 1.72e+10 bytes" for a
  // 64 MB program): a footprint that runs past its allocation's end. Here the launches cover 262,144 x 256 threads
  // and n = 2^26, so histogram's keys[i] (i < n) bound 256 MiB of a 4 MiB allocation. Counted as DRAM bytes that
  // was 2.7e8 B per occurrence, 80 us at the H100's roof against the kernels' 20 us measured.
  TraceBuilder b;
  const uint32_t grid = 262'144;
  b.launch(TraceBuilder::kHistogram, {4, 5}, 1 << 26, 1, grid).launch(TraceBuilder::kNormalize, {5, 3}, 256, 1, grid);
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  const Candidate& c = r.candidates[0];
  EXPECT_EQ(c.legality, Legality::kBlocked);
  // Bytes: no use beyond its allocation (4 MiB each): keys read, bins read and written by the atomics, bins read
  // and out written by normalize: at most 5 x 4 MiB before, and no more after.
  const double mib4 = 4.0 * (1 << 20);
  EXPECT_LE(c.cost.bytes_before, 5 * mib4);
  EXPECT_LE(c.cost.bytes_after, c.cost.bytes_before);
  // Times: the fused kernel is never slower than the two kernels' 20 us (no recomputation here).
  EXPECT_NEAR(c.cost.measured_ns, 20'000, 1e-6);
  EXPECT_LE(c.cost.fused_ns, c.cost.measured_ns);
  EXPECT_GE(c.cost.saving_ns, 0);
}

TEST(Analysis, AProvenCandidatePredictedToSaveNothingGetsALineSayingWhy) {
  // Two independent produce kernels on two streams, 8 blocks each (one wave together), that ran side by side:
  // both [0, 10 us]. Busy 10 us; fused, the longer kernel x one wave = 10 us: nothing saved.
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000, 1, 8).launch(TraceBuilder::kProduce, {3, 4}, 1000, 2, 8);
  for (core::Launch& l : b.trace().launches) {
    l.gpu_start_ns = 2'000'000;
    l.gpu_end_ns = 2'010'000;
  }
  Report r = run(b);
  EXPECT_TRUE(std::none_of(r.candidates.begin(), r.candidates.end(),
                           [](const Candidate& c) { return c.kind == CandidateKind::kHorizontal; }));
  ASSERT_EQ(r.proven_no_gain.size(), 1u);
  EXPECT_NE(r.proven_no_gain[0].find("horizontal produce + produce (1 occurrence): proven, predicted to save "
                                     "nothing: the fused kernel (10.0 us) takes as long as the originals kept "
                                     "the GPU busy"),
            std::string::npos)
      << r.proven_no_gain[0];
  EXPECT_NE(reportToText(r, 10, false).find("proven, but predicted to save nothing"), std::string::npos);
  // --all lists it among the candidates instead.
  AnalysisOptions all;
  all.keep_no_gain = true;
  r = run(b, all);
  EXPECT_TRUE(r.proven_no_gain.empty());
  EXPECT_TRUE(std::any_of(r.candidates.begin(), r.candidates.end(),
                          [](const Candidate& c) { return c.kind == CandidateKind::kHorizontal; }));
}

TEST(Analysis, DifferentShapesMakeAnEpilogueAndHostSyncSeparates) {
  TraceBuilder b;
  // produce on 4096 blocks, consume on 2048: consumer thread i runs after producer thread i stores element i.
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000, 1, 4096).launch(TraceBuilder::kConsume, {2, 3}, 1000, 1, 2048);
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).hostSync().launch(TraceBuilder::kConsume, {2, 3}, 1000);
  const Report r = run(b);
  std::vector<const Candidate*> vertical;
  for (const Candidate& c : r.candidates) {
    if (c.kind == CandidateKind::kVertical) vertical.push_back(&c);
  }
  ASSERT_EQ(vertical.size(), 1u);
  EXPECT_EQ(vertical[0]->fusion, FusionKind::kEpilogue);
  EXPECT_EQ(vertical[0]->legality, Legality::kProven) << vertical[0]->verdict;
  ASSERT_EQ(vertical[0]->occurrences.size(), 1u);  // the pair with a host synchronization between is not one
  EXPECT_EQ(vertical[0]->occurrence_launches[0], (std::vector<core::Id>{1, 2}));
}

TEST(Analysis, NeedsTheSameLaunchShapeWithoutPointerData) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000, 1, 4096).launch(TraceBuilder::kConsume, {2, 3}, 1000, 1, 2048);
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).hostSync().launch(TraceBuilder::kConsume, {2, 3}, 1000);
  for (core::Launch& l : b.trace().launches) l.pointer_args.clear();
  const Report r = run(b);
  for (const Candidate& c : r.candidates) EXPECT_NE(c.kind, CandidateKind::kVertical);
  ASSERT_FALSE(r.why_none.empty());
  std::string all;
  for (const std::string& w : r.why_none) all += w + "\n";
  EXPECT_NE(all.find("differ in grid or block shape"), std::string::npos) << all;
  EXPECT_NE(all.find("host synchronization"), std::string::npos) << all;
}

TEST(Analysis, FindsSmallIndependentKernelsOnTwoStreamsForHorizontalFusion) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.launch(TraceBuilder::kProduce, {1, 2}, 1000, /*stream=*/1, /*grid=*/4)
        .launch(TraceBuilder::kConsume, {3, 4}, 1000, /*stream=*/2, /*grid=*/4);
  }
  const Report r = run(b);
  const Candidate* h = nullptr;
  for (const Candidate& c : r.candidates) {
    if (c.kind == CandidateKind::kHorizontal) h = &c;
  }
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->occurrences.size(), 4u);
  EXPECT_EQ(h->legality, Legality::kProven);
  EXPECT_GT(h->cost.saving_ns, 0);
}

// produce -> consume on stream 1 (a vertical chain), and beside consume an independent small produce on stream 2
// (a horizontal pair consume + produce), three times: both candidates want the same launches of consume.
struct ConflictingCandidates {
  Report report;
  const Candidate* chain = nullptr;
  const Candidate* pair = nullptr;
};
ConflictingCandidates conflictingCandidates() {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.launch(TraceBuilder::kProduce, {1, 2}, 1000, /*stream=*/1, /*grid=*/4)
        .launch(TraceBuilder::kConsume, {2, 3}, 1000, /*stream=*/1, /*grid=*/4)
        .launch(TraceBuilder::kProduce, {4, 5}, 1000, /*stream=*/2, /*grid=*/4);
  }
  AnalysisOptions options;
  options.keep_no_gain = true;
  ConflictingCandidates out{run(b, options)};
  for (const Candidate& c : out.report.candidates) {
    if (c.kind == CandidateKind::kVertical) out.chain = &c;
    if (c.kind == CandidateKind::kHorizontal) out.pair = &c;
  }
  return out;
}

TEST(Analysis, MarksCandidatesThatShareALaunchAsConflicting) {
  const ConflictingCandidates found = conflictingCandidates();
  const Report& r = found.report;
  const Candidate* chain = found.chain;
  const Candidate* pair = found.pair;
  ASSERT_NE(chain, nullptr);
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ(chain->mangled_names, (std::vector<std::string>{"_Z7producePKfPfi", "_Z7consumePKfPfi"}));
  EXPECT_EQ(pair->mangled_names, (std::vector<std::string>{"_Z7consumePKfPfi", "_Z7producePKfPfi"}));
  EXPECT_EQ(chain->conflicts_with, (std::vector<int>{pair->rank}));
  EXPECT_EQ(pair->conflicts_with, (std::vector<int>{chain->rank}));
  const nlohmann::json j = reportToJson(r);
  for (const nlohmann::json& c : j["candidates"]) {
    if (c["rank"] == chain->rank) {
      EXPECT_EQ(c["conflicts_with"], nlohmann::json::array({pair->rank}));
    }
    if (c["rank"] == pair->rank) {
      EXPECT_EQ(c["conflicts_with"], nlohmann::json::array({chain->rank}));
    }
  }
  EXPECT_NE(reportToText(r, 10).find("shares a launch with #"), std::string::npos);
}

TEST(Analysis, ConflictTextNamesTheSharedLaunchesAndTheirKernel) {
  const ConflictingCandidates found = conflictingCandidates();
  const Candidate* chain = found.chain;
  const Candidate* pair = found.pair;
  ASSERT_NE(chain, nullptr);
  ASSERT_NE(pair, nullptr);
  // The consume launch of each occurrence of the chain (its second member) is the one both want.
  std::vector<core::Id> consumes;
  for (const auto& occurrence : chain->occurrence_launches) consumes.push_back(occurrence.at(1));
  std::sort(consumes.begin(), consumes.end());
  EXPECT_EQ(sharedLaunches(*chain, *pair), consumes);
  EXPECT_EQ(sharedLaunches(*pair, *chain), consumes);
  std::string ids;
  for (core::Id id : consumes) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  EXPECT_EQ(candidateConflictText(*chain, *pair), "shares " + std::to_string(consumes.size()) +
                                                      " launches of `consume` with #" + std::to_string(pair->rank) +
                                                      " (launch ids " + ids + "): only one of them can be applied");
  EXPECT_EQ(candidateConflictText(*chain, *chain), "");  // a candidate does not conflict with itself
}

TEST(Analysis, KernelsSharingAWrittenBufferAreNotHorizontal) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000, 1, 4).launch(TraceBuilder::kConsume, {2, 3}, 1000, 2, 8);
  const Report r = run(b);
  for (const Candidate& c : r.candidates) EXPECT_NE(c.kind, CandidateKind::kHorizontal);
}

TEST(Analysis, WithoutPointerDataCandidatesAreOnlyLikely) {
  TraceBuilder b;
  for (int i = 0; i < 2; ++i) b.launch(TraceBuilder::kProduce, {}, 1000).launch(TraceBuilder::kConsume, {}, 1000);
  const Report r = run(b);
  ASSERT_FALSE(r.candidates.empty());
  EXPECT_FALSE(r.has_pointer_data);
  EXPECT_EQ(r.candidates[0].legality, Legality::kLikely);
  EXPECT_EQ(r.candidates[0].confidence, Confidence::kLow);
  EXPECT_TRUE(anyReasonContains(r.candidates[0], "no pointer arguments"));
}

// A kfuse trace of a PyTorch program: pointer data (found inside the kernels' struct arguments) but no PTX (library
// cubins). The kernel families still refuse work feeding a GEMM, and link the GEMM to the elementwise kernel after it.
TEST(Analysis, KernelFamiliesRefuseWorkFeedingAGemmWhenThereIsNoPtx) {
  TraceBuilder b;
  const Id gemm = Id(b.trace().functions.size() + 1), add = gemm + 1;
  b.trace().functions.push_back(
      core::KernelFunction{gemm,
                           core::kNoId,
                           "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
                           "alignc4_execute_kernel__5x_cublas",
                           "",
                           {}});
  b.trace().functions.push_back(core::KernelFunction{
      add,
      core::kNoId,
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
      "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
      {}});
  for (int i = 0; i < 2; ++i) b.launch(add, {1, 2}, 1000).launch(gemm, {2, 3}, 1000).launch(add, {3, 4}, 1000);
  for (core::Launch& l : b.trace().launches) {
    for (core::PointerArg& p : l.pointer_args) p.field_offset = 8 * p.param_index;
  }
  AnalysisOptions o;
  o.keep_no_gain = true;
  const Report r = run(b, o);
  EXPECT_TRUE(r.has_pointer_data);
  const std::string gemm_name = b.trace().functions[size_t(gemm - 1)].mangled_name;
  bool gemm_then_add = false;
  for (const Candidate& c : r.candidates) {
    ASSERT_FALSE(c.mangled_names.empty());
    for (size_t i = 1; i < c.mangled_names.size(); ++i) {
      EXPECT_NE(c.mangled_names[i], gemm_name) << "an elementwise kernel feeding a GEMM was made a candidate";
    }
    if (c.kind == CandidateKind::kVertical && c.mangled_names.front() == gemm_name) gemm_then_add = true;
    EXPECT_NE(c.legality, Legality::kProven);
  }
  EXPECT_TRUE(gemm_then_add);
}

TEST(Analysis, ChoosesTheGpuFromTheTraceOptionOrDefault) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000);
  EXPECT_EQ(run(b).gpu.short_name, "h100-sxm");
  EXPECT_EQ(run(b).gpu_source, "trace");
  AnalysisOptions o;
  o.gpu = "a100-sxm-80gb";
  EXPECT_EQ(run(b, o).gpu_source, "option");
  o.gpu = "no-such-gpu";
  auto bad = analyze(b.result(), "x", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kfuse gpus"), std::string::npos);
  b.trace().devices[0].name = "AMD Instinct MI250X";
  const Report d = run(b);
  EXPECT_EQ(d.gpu_source, "default");
  ASSERT_FALSE(d.stats.empty());
  EXPECT_EQ(d.stats.back().name, "gpu_not_in_spec_table");
}

TEST(Analysis, IgnoresGpuTimesMeasuredOnTheEmulator) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  const Report on_gpu = run(b);
  EXPECT_FALSE(on_gpu.gpu_busy_estimated);
  EXPECT_EQ(on_gpu.gpu_busy_ns, 20'000);
  b.trace().devices[0].name = "kfuse CPU emulator (not a GPU, sm_90 PTX)";
  const Report on_emulator = run(b);
  EXPECT_TRUE(on_emulator.gpu_busy_estimated);
  ASSERT_EQ(on_emulator.candidates.size(), 1u);
  EXPECT_NE(on_emulator.candidates[0].cost.note.find("roofline estimates"), std::string::npos);
  // Without GPU times the critical path is weighed with the roofline estimates: produce -> consume (RAW), each
  // reading and writing 4 MiB (4096 x 256 threads x 4 B) at 3.35e12 B/s on 4096 blocks (the whole GPU):
  // 2 x 8,388,608 / 3.35e12 s = 5,008.1 ns. The chain lies on it.
  EXPECT_EQ(on_emulator.critical_path_ns, static_cast<int64_t>(2 * 8'388'608 / 3.35e12 * 1e9));
  EXPECT_TRUE(on_emulator.candidates[0].on_critical_path);
  bool noted = false;
  for (const core::Stat& s : on_emulator.stats)
    noted = noted || (s.name == "emulator_gpu_times_ignored" && s.value == 2);
  EXPECT_TRUE(noted);
}

TEST(KernelCatalog, CountsFlopsByThePrecisionThePtxSays) {
  core::Trace t;
  core::Module m;
  m.id = 1;
  m.kind = core::ImageKind::kPtx;
  m.image = readFile(KFUSE_SOURCE_DIR "/analyzer/testdata/flops_by_precision.ptx");
  m.hash = core::sha256Hex(m.image);
  t.modules.push_back(m);
  t.functions.push_back(core::KernelFunction{1, 1, "mixed", "", {}});
  const KernelCatalog catalog = KernelCatalog::build(t);
  const KernelFacts* k = catalog.find(1);
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->has_ptx) << k->ptx_problem;
  EXPECT_DOUBLE_EQ(k->flops_per_thread.fp32, 2);  // fma.rn.f32: 2
  EXPECT_DOUBLE_EQ(k->flops_per_thread.fp64, 2);  // add.f64 + mul.f64
  EXPECT_DOUBLE_EQ(k->flops_per_thread.fp16, 2);  // add.rn.f16x2: two lanes
  EXPECT_DOUBLE_EQ(k->flops_per_thread.bf16, 0);
}

TEST(KernelCatalog, FindsTheModuleByNameWhenTheTraceDoesNotNameIt) {
  TraceBuilder b;
  for (auto& f : b.trace().functions) f.module_id = core::kNoId;  // e.g. a CUlibrary kernel
  const KernelCatalog catalog = KernelCatalog::build(b.trace());
  EXPECT_EQ(catalog.kernelsWithPtx(), 6);
  EXPECT_TRUE(catalog.find(TraceBuilder::kProduce)->module_by_name);
  EXPECT_EQ(catalog.find(TraceBuilder::kProduce)->params[1].mode, core::AccessMode::kWrite);
  // Two images defining the same kernel: ambiguous, so no PTX, and the problem says why.
  core::Module copy = b.trace().modules[0];
  copy.id = 2;
  copy.image.push_back('\n');
  b.trace().modules.push_back(copy);
  const KernelCatalog ambiguous = KernelCatalog::build(b.trace());
  EXPECT_EQ(ambiguous.kernelsWithPtx(), 0);
  EXPECT_NE(ambiguous.find(TraceBuilder::kProduce)->ptx_problem.find("2 module images define"), std::string::npos)
      << ambiguous.find(TraceBuilder::kProduce)->ptx_problem;
}

TEST(Analysis, UsesMeasuredMetricsAndFlagsAMetricsRun) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  for (Id launch : {Id(1), Id(2)}) {
    b.trace().metrics.push_back({launch, "dram_bytes_read", 4.0 * (1 << 20), "bytes", core::MetricSource::kMeasured});
    b.trace().metrics.push_back(
        {launch, "dram_bytes_written", 4.0 * (1 << 20), "bytes", core::MetricSource::kMeasured});
    b.trace().metrics.push_back({launch, "flops_fp32", 2.0 * (1 << 20), "flop", core::MetricSource::kMeasured});
    b.trace().metrics.push_back(
        {launch, "tensor_instructions", launch == 2 ? 64.0 : 0.0, "inst", core::MetricSource::kMeasured});
  }
  b.trace().metadata.extra["metrics"] = "range-profiler kernel-replay";
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  // Measured bytes win: before, the two kernels' 8 MiB each; after, the share of them the per-buffer estimate
  // keeps: x read (4 MiB) of produce's x, mid, consume's mid, out (4 x 4 MiB; mid and out are read by nothing
  // later), a quarter: 4 MiB. The FLOPs are the measured ones.
  EXPECT_EQ(r.candidates[0].cost.bytes_source, "measured");
  EXPECT_DOUBLE_EQ(r.candidates[0].cost.bytes_before, 16.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(r.candidates[0].cost.bytes_after, 4.0 * (1 << 20));
  EXPECT_EQ(r.candidates[0].cost.flops_source, "measured");
  EXPECT_DOUBLE_EQ(r.candidates[0].cost.flops, 4.0 * (1 << 20));
  // The per-kernel table sets the model's prediction beside the measurement: produce's measured 8 MiB against its
  // PTX estimate (x read, mid written: 2 x 4 MiB), and the roofline time of those bytes on the H100 (3.35 TB/s;
  // its 2 Mi FLOPs and 8 MiB of coalesced L1 requests take less): 8,388,608 / 3,350 B/ns = 2,504.1 ns.
  const auto row = std::find_if(r.kernel_table.begin(), r.kernel_table.end(),
                                [](const KernelRow& k) { return k.name.rfind("produce", 0) == 0; });
  ASSERT_NE(row, r.kernel_table.end());
  EXPECT_EQ(row->bytes_source, "measured");
  EXPECT_DOUBLE_EQ(row->bytes, 8.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(row->predicted_bytes, 8.0 * (1 << 20));
  EXPECT_NEAR(row->predicted_ns, 8.0 * (1 << 20) / 3'350, 1e-6);
  std::map<std::string, int64_t> stats;
  for (const core::Stat& s : r.stats) stats[s.name] = s.value;
  EXPECT_EQ(stats["metrics_run_serialised"], 1);
  EXPECT_EQ(stats["tensor_core_flops_not_counted"], 1);
}

TEST(Analysis, CostsEachPrecisionsFlopsAtItsOwnPeak) {
  // No GPU times (recorded on the emulator, so costed on h100-sxm): each kernel's time is its roofline estimate.
  // 1e9 FP64 FLOP a launch on H100 SXM (33.5 TFLOP/s FP64) take 29,850.7 ns, far above its memory time (8 MiB at
  // 3.35e12 B/s: 2,504 ns): the GPU busy time is 2 x 29,850.7 ns. At the FP32 peak (66.9 TFLOP/s) it was half.
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  b.trace().devices[0].name = "kfuse CPU emulator (not a GPU, sm_90 PTX)";
  for (Id launch : {Id(1), Id(2)}) {
    b.trace().metrics.push_back({launch, "flops_fp64", 1e9, "flop", core::MetricSource::kEmulated});
  }
  const Report r = run(b);
  EXPECT_TRUE(r.gpu_busy_estimated);
  EXPECT_EQ(r.gpu.short_name, "h100-sxm");
  EXPECT_EQ(r.gpu_busy_ns, static_cast<int64_t>(2 * (1e9 / 33.5e12 * 1e9)));
}

TEST(MetricsMerge, JoinsAMetricsRunByKernelPositionAndShape) {
  TraceBuilder timing;
  timing.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  timing.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  // The metrics run: the same launches (ids differ), the last one with another grid.
  TraceBuilder metrics_run;
  metrics_run.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  metrics_run.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20, 1, 8192);
  for (Id launch = 1; launch <= 4; ++launch) {
    metrics_run.trace().metrics.push_back(
        {launch, "dram_bytes_read", 1000.0 * double(launch), "bytes", core::MetricSource::kMeasured});
    metrics_run.trace().metrics.push_back({launch, "thread_instructions", 5, "inst", core::MetricSource::kEmulated});
  }
  core::Trace target = timing.trace();
  target.metrics.push_back({1, "dram_bytes_read", 1, "bytes", core::MetricSource::kEstimated});
  auto merged = mergeMeasuredMetrics(target, metrics_run.trace(), "metrics.sqlite");
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->launches_matched, 3);
  EXPECT_EQ(merged->launches_unmatched, 1);
  EXPECT_EQ(merged->metrics_copied, 3);  // measured ones only
  std::map<Id, double> read;
  for (const core::Metric& m : target.metrics) {
    if (m.name == "dram_bytes_read") read[m.launch_id] = m.value;
  }
  EXPECT_EQ(read, (std::map<Id, double>{{1, 1000}, {2, 2000}, {3, 3000}}));  // launch 1's estimate replaced
  std::map<std::string, int64_t> stats;
  for (const core::Stat& s : target.stats) stats[s.name] = s.value;
  EXPECT_EQ(stats["metrics_merged_launches"], 3);
  EXPECT_EQ(stats["metrics_unmatched_launches"], 1);

  // A run without measured metrics is refused, naming the file.
  auto refused = mergeMeasuredMetrics(target, timing.trace(), "timing.sqlite");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("timing.sqlite"), std::string::npos);
}

TEST(Analysis, UnseenGraphLaunchesKeepCandidatesFromBeingProven) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  ASSERT_EQ(run(b).candidates.at(0).legality, Legality::kProven);
  b.trace().stats.push_back({"graph_launches_not_recorded", 3, core::StatSeverity::kWarning, "..."});
  const Report r = run(b);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].legality, Legality::kLikely);
  EXPECT_TRUE(anyReasonContains(r.candidates[0], "3 CUDA graph launches"));
}

TEST(Reports, WritersAgreeWithTheReport) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  const Report r = run(b);
  const nlohmann::json j = reportToJson(r);
  EXPECT_EQ(j["format"], "kfuse-report");
  EXPECT_EQ(j["candidates"].size(), 1u);
  EXPECT_EQ(j["candidates"][0]["legality"], "proven");
  EXPECT_EQ(j["summary"]["candidates"], 1);
  const std::string text = reportToText(r, 10);
  EXPECT_NE(text.find("thread-local proven"), std::string::npos) << text;
  const std::string md = reportToMarkdown(r);
  EXPECT_NE(md.find("| 1 | `" + r.candidates[0].id + "` | thread-local |"), std::string::npos) << md;
  const std::string html = reportToHtml(r);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("produce(float const*, float*, int) -&gt; consume"), std::string::npos);
}

TEST(Reports, ReadBackGivesTheSameReport) {
  TraceBuilder b;
  for (int n : {1000, 2000}) b.launch(TraceBuilder::kProduce, {1, 2}, n).launch(TraceBuilder::kConsume, {2, 3}, n);
  const Report r = run(b);
  const nlohmann::json j = reportToJson(r);
  auto back = reportFromJson(j, "test report");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(reportToJson(*back), j);
  ASSERT_EQ(back->candidates.size(), r.candidates.size());
  const Candidate& c = back->candidates[0];
  EXPECT_EQ(c.id, r.candidates[0].id);
  EXPECT_EQ(c.function_ids, r.candidates[0].function_ids);
  EXPECT_EQ(c.occurrence_launches, r.candidates[0].occurrence_launches);
  EXPECT_EQ(c.checked.tuples, r.candidates[0].checked.tuples);
  EXPECT_EQ(back->gpu.short_name, r.gpu.short_name);
}

TEST(Reports, IdsAreStableAndUniqueAndRanksAreNot) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kConsume, {2, 3}, 1000);
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kBlur, {2, 3}, 1001);
  const Report first = run(b), second = run(b);
  ASSERT_GE(first.candidates.size(), 2u);
  std::set<std::string> ids;
  for (size_t i = 0; i < first.candidates.size(); ++i) {
    EXPECT_EQ(first.candidates[i].id, second.candidates[i].id);
    EXPECT_EQ(first.candidates[i].id.size(), 11u);
    EXPECT_EQ(first.candidates[i].id[0], 'k');
    ids.insert(first.candidates[i].id);
  }
  EXPECT_EQ(ids.size(), first.candidates.size());
}

TEST(Reports, ReadBackRefusesMalformedReportsNamingTheField) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kConsume, {2, 3}, 1000);
  const nlohmann::json good = reportToJson(run(b));
  auto message = [](const nlohmann::json& j) {
    auto r = reportFromJson(j, "r.json");
    return r.ok() ? std::string("accepted") : r.status().message();
  };
  nlohmann::json j = good;
  j["version"] = 1;
  EXPECT_EQ(message(j), "r.json: report version 1 (this kfuse reads version 2); run `kfuse analyze` again");
  j = good;
  j["candidates"][0].erase("occurrence_launches");
  EXPECT_EQ(message(j), "r.json: candidates[0].occurrence_launches: missing required field");
  j = good;
  j["candidates"][0]["occurrence_launches"][0] = nlohmann::json::array({1});
  EXPECT_EQ(message(j), "r.json: candidates[0].occurrence_launches[0]: expected one launch id per kernel");
  j = good;
  j["candidates"][0]["legality"] = "surely";
  EXPECT_EQ(message(j), "r.json: candidates[0].legality: unknown value 'surely'");
  j = good;
  j["candidates"][0]["checked"]["tuples"][0][0]["kernel"] = 7;
  EXPECT_EQ(message(j), "r.json: candidates[0].checked.tuples[0][0]: names no argument of the candidate's kernels");
  j = good;
  j["gpu"]["short_name"] = "abacus";
  EXPECT_EQ(message(j), "r.json: gpu.short_name: 'abacus' is not in kfuse's GPU table");
  j = good;
  j["candidates"].push_back(j["candidates"][0]);
  EXPECT_EQ(message(j), "r.json: candidates[1] repeats the id or rank of candidates[0]");
  EXPECT_EQ(message(nlohmann::json::array()), "r.json: expected an object (a `kfuse analyze --json` report)");
}

// The reader follows the same field lists as the schema: it takes the schema's example report and refuses the
// examples the schema refuses (tests/schemas/examples, validated against schemas/report.schema.json by
// check_schemas.py).
TEST(Reports, ReaderAgreesWithTheSchemaExamples) {
  auto read = [](const char* name) {
    std::ifstream in(std::string(KFUSE_SOURCE_DIR) + "/tests/schemas/examples/" + name);
    auto r = reportFromJson(nlohmann::json::parse(in), name);
    return r.ok() ? std::string("accepted") : r.status().message();
  };
  EXPECT_EQ(read("report.vertical_chain.json"), "accepted");
  EXPECT_EQ(read("report.single_kernel.invalid.json"),
            "report.single_kernel.invalid.json: candidates[0].kernels: expected at least 2 kernels");
  EXPECT_EQ(read("report.unknown_legality.invalid.json"),
            "report.unknown_legality.invalid.json: candidates[0].legality: unknown value 'probably'");
}

TEST(Reports, JsonSaysEveryFieldTheSchemaRequires) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1000).launch(TraceBuilder::kConsume, {2, 3}, 1000);
  const nlohmann::json j = reportToJson(run(b));
  const nlohmann::json schema = nlohmann::json::parse(reportJsonSchema());
  for (const auto& name : schema["required"]) EXPECT_TRUE(j.contains(name.get<std::string>())) << name;
  for (const auto& name : schema["$defs"]["candidate"]["required"]) {
    EXPECT_TRUE(j["candidates"][0].contains(name.get<std::string>())) << name;
  }
  EXPECT_EQ(schema["properties"]["version"]["const"], kReportVersion);
}

TEST(Reports, ShortKernelNamesDropReturnTypeParametersAndNamespaces) {
  EXPECT_EQ(shortKernelName("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<double>, "
                            "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<double>, "
                            "at::detail::Array<char*, 3>)",
                            200),
            "vectorized_elementwise_kernel<4, CUDAFunctor_add<double>, Array<char*, 3> >");
  EXPECT_EQ(shortKernelName("produce(float const*, float*, int)"), "produce");
  EXPECT_EQ(shortKernelName("scale"), "scale");
  EXPECT_EQ(shortKernelName("void ns::a_very_long_kernel_name_indeed(int)", 12), "a_very_lo...");
}

TEST(Reports, TextSaysInOneSentenceWhatDecidedTheVerdictAndMoreWhenVerbose) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  const Report r = run(b);
  const std::string text = reportToText(r, 10);
  EXPECT_NE(text.find("\n  proven: each thread reads only what the same thread wrote"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n  - same launch configuration"), std::string::npos) << "details only with --verbose";
  const std::string verbose = reportToText(r, 10, /*verbose=*/true);
  EXPECT_NE(verbose.find("\n  - same launch configuration"), std::string::npos) << verbose;
  ASSERT_EQ(r.kernel_table.size(), 2u);
  EXPECT_EQ(r.kernel_table[0].launches, 1u);
  EXPECT_GT(r.kernel_table[0].ns, 0);
  EXPECT_NE(verbose.find("kernels by GPU time"), std::string::npos) << verbose;
}

// ---- CUDA graphs: nodes of replayed graphs, written through the trace writer and read back ----

// A graph snapshot built node by node, with an exec and its replays.
class GraphBuilder {
 public:
  GraphBuilder(core::Trace& t, Id graph_id) : t_(t), graph_id_(graph_id) {
    t_.graphs.push_back(core::Graph{graph_id, 0x100u + uint64_t(graph_id), core::GraphOrigin::kExplicit, core::kNoId,
                                    core::kNoId, 1'000});
  }
  // A kernel node of `fn` over `allocs` (as TraceBuilder::launch) after `deps`; returns its id.
  Id kernel(Id fn, std::vector<Id> allocs, std::vector<Id> deps = {}, uint32_t grid = 4096, int n = 1 << 20) {
    core::GraphNode node = base(core::GraphNodeType::kKernel);
    node.function_id = fn;
    node.grid = {grid, 1, 1};
    node.block = {256, 1, 1};
    for (size_t p = 0; p < allocs.size(); ++p) {
      const uint64_t address = t_.allocations[size_t(allocs[p] - 1)].address;
      node.arg_bytes.resize(8 * (p + 1));
      std::memcpy(node.arg_bytes.data() + 8 * p, &address, 8);
      node.pointer_args.push_back(core::PointerArg{int(p), address, allocs[p], 0});
    }
    node.arg_bytes.resize(node.arg_bytes.size() + 4);
    std::memcpy(node.arg_bytes.data() + 8 * allocs.size(), &n, 4);
    return add(std::move(node), deps);
  }
  // A device-to-device copy of the whole of `src` into `dst`.
  Id copy(Id src, Id dst, std::vector<Id> deps) {
    core::GraphNode node = base(core::GraphNodeType::kMemcpy);
    node.memcpy_kind = core::MemcpyKind::kDeviceToDevice;
    node.src_address = t_.allocations[size_t(src - 1)].address;
    node.dst_address = t_.allocations[size_t(dst - 1)].address;
    node.src_allocation_id = src;
    node.dst_allocation_id = dst;
    node.bytes = t_.allocations[size_t(src - 1)].size;
    return add(std::move(node), deps);
  }
  Id empty(std::vector<Id> deps) { return add(base(core::GraphNodeType::kEmpty), deps); }
  Id child(Id child_graph, std::vector<Id> deps) {
    core::GraphNode node = base(core::GraphNodeType::kChildGraph);
    node.child_graph_id = child_graph;
    return add(std::move(node), deps);
  }
  // A node whose work the trace does not describe (a semaphore, a conditional body).
  Id other(std::vector<Id> deps) { return add(base(core::GraphNodeType::kOther), deps); }
  // Instantiates the graph and launches it `replays` times on `stream`, issued after everything before.
  void replay(int replays, Id stream = 1) {
    const Id exec = Id(t_.graph_execs.size() + 1);
    t_.graph_execs.push_back(core::GraphExec{exec, 0x900u + uint64_t(exec), graph_id_, core::kNoId, 0, 1'100, 1'200});
    for (int r = 0; r < replays; ++r) {
      const Id id = Id(t_.graph_launches.size() + 1);
      const int64_t at = 10'000'000 + 10'000 * int64_t(id);
      t_.graph_launches.push_back(core::GraphLaunch{id, 0, 0, exec, stream, at, at + 1'000});
    }
  }

 private:
  core::GraphNode base(core::GraphNodeType type) {
    core::GraphNode node;
    node.id = Id(t_.graph_nodes.size() + 1);
    node.graph_id = graph_id_;
    node.index = index_++;
    node.handle = 0x5000u + uint64_t(node.id);
    node.type = type;
    return node;
  }
  Id add(core::GraphNode node, const std::vector<Id>& deps) {
    for (Id d : deps) t_.graph_edges.push_back(core::GraphEdge{graph_id_, d, node.id, 0});
    t_.graph_nodes.push_back(std::move(node));
    return t_.graph_nodes.back().id;
  }
  core::Trace& t_;
  Id graph_id_;
  int index_ = 0;
};

// Writes the trace with core::TraceWriter, imports the file as `kfuse analyze` does and analyses it.
Report runThroughSqlite(const TraceBuilder& b) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/kfuse_graph_analysis_test_" +
                           std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite";
  std::remove(path.c_str());
  {
    auto writer = core::TraceWriter::create(path);
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    if (!writer.ok()) return {};
    const Status written = (*writer)->write(b.result().trace);
    EXPECT_TRUE(written.ok()) << written.message();
    EXPECT_TRUE((*writer)->close().ok());
  }
  auto in = importTrace(path);
  std::remove(path.c_str());
  EXPECT_TRUE(in.ok()) << in.status().message();
  if (!in.ok()) return {};
  EXPECT_EQ(in->trace.graph_launches.size(), b.result().trace.graph_launches.size());
  auto r = analyze(*in, path, {});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Report{};
}

const Candidate* findCandidate(const Report& r, CandidateKind kind, std::vector<Id> functions) {
  for (const Candidate& c : r.candidates) {
    if (c.kind == kind && c.function_ids == functions) return &c;
  }
  return nullptr;
}

// Three small independent kernels on three streams, the middle one without PTX: the group of all three could be
// likely at best; the other two make a proven group (a member the analysis cannot see into does not hide it).
TEST(Analysis, AHorizontalGroupLeavesOutAMemberItCannotSeeInto) {
  TraceBuilder b;
  const Id opaque = Id(b.trace().functions.size() + 1);
  b.trace().functions.push_back(core::KernelFunction{opaque, core::kNoId, "_Z6opaquePKfPfi", "", {}});
  for (int i = 0; i < 3; ++i) {
    b.launch(TraceBuilder::kProduce, {1, 2}, 1000, /*stream=*/1, /*grid=*/4)
        .launch(opaque, {3, 4}, 1000, /*stream=*/2, /*grid=*/4)
        .launch(TraceBuilder::kConsume, {5, 6}, 1000, /*stream=*/3, /*grid=*/4);
  }
  AnalysisOptions o;
  o.keep_no_gain = true;
  const Report r = run(b, o);
  const Candidate* h = findCandidate(r, CandidateKind::kHorizontal, {TraceBuilder::kProduce, TraceBuilder::kConsume});
  ASSERT_NE(h, nullptr) << reportToText(r, 10);
  EXPECT_EQ(h->legality, Legality::kProven) << h->verdict;
  EXPECT_EQ(h->occurrences.size(), 3u);
  for (const Candidate& c : r.candidates) {
    if (std::find(c.function_ids.begin(), c.function_ids.end(), opaque) != c.function_ids.end()) {
      EXPECT_NE(c.legality, Legality::kProven) << reportToText(r, 10);
    }
  }
  // On produce's stream, between it and consume in stream order, opaque is not left out: fused, produce and consume
  // would run as one kernel on one side of it, and what it accesses is not known.
  TraceBuilder same;
  same.trace().functions.push_back(core::KernelFunction{opaque, core::kNoId, "_Z6opaquePKfPfi", "", {}});
  same.launch(TraceBuilder::kProduce, {1, 2}, 1000, /*stream=*/1, /*grid=*/4)
      .launch(opaque, {3, 4}, 1000, /*stream=*/1, /*grid=*/4)
      .launch(TraceBuilder::kConsume, {5, 6}, 1000, /*stream=*/3, /*grid=*/4);
  const Report rs = run(same, o);
  const Candidate* hs = findCandidate(rs, CandidateKind::kHorizontal, {TraceBuilder::kProduce, TraceBuilder::kConsume});
  EXPECT_TRUE(hs == nullptr || hs->legality != Legality::kProven) << reportToText(rs, 10);
  // The group with opaque in it claims no more independence than the trace shows.
  bool with_opaque = false;
  for (const Candidate& c : rs.candidates) {
    if (c.kind != CandidateKind::kHorizontal ||
        std::find(c.function_ids.begin(), c.function_ids.end(), opaque) == c.function_ids.end()) {
      continue;
    }
    with_opaque = true;
    EXPECT_NE(c.legality, Legality::kProven);
    const bool qualified = std::any_of(c.reasons.begin(), c.reasons.end(), [](const std::string& why) {
      return why.find("no data dependence that the trace shows") != std::string::npos ||
             why.find("no data dependence between them that the trace shows") != std::string::npos;
    });
    EXPECT_TRUE(qualified) << reportToText(rs, 10);
  }
  EXPECT_TRUE(with_opaque) << reportToText(rs, 10);
  // Where every member is visible, the reason stays unqualified.
  for (const std::string& why : h->reasons) EXPECT_EQ(why.find("that the trace shows"), std::string::npos) << why;
}

TEST(GraphAnalysis, ChainOfGraphNodesIsACandidateCountedOncePerReplay) {
  TraceBuilder b;
  GraphBuilder g(b.trace(), 7);
  const Id p = g.kernel(TraceBuilder::kProduce, {1, 2});
  const Id c = g.kernel(TraceBuilder::kConsume, {2, 3}, {p});
  g.replay(20);
  // The hook backend also counts every replay as not recorded: here each one is.
  b.trace().stats.push_back({"graph_launches_not_recorded", 20, core::StatSeverity::kWarning, "..."});
  const Report r = runThroughSqlite(b);
  const Candidate* v = findCandidate(r, CandidateKind::kVertical, {TraceBuilder::kProduce, TraceBuilder::kConsume});
  ASSERT_NE(v, nullptr) << reportToText(r, 10);
  EXPECT_EQ(v->legality, Legality::kProven) << v->verdict;
  EXPECT_EQ(v->occurrence_graphs, std::vector<Id>{7});
  EXPECT_EQ(v->occurrence_replays, std::vector<int64_t>{20});
  EXPECT_EQ(v->occurrence_launches, (std::vector<std::vector<Id>>{{p, c}}));
  EXPECT_EQ(v->runs(), 20);
  EXPECT_TRUE(v->in_cuda_graph);
  // kfuse rewrite makes a plan of the recorded nodes, which kfuse run applies when the graph is instantiated.
  const auto rewrite =
      std::find_if(v->remedies.begin(), v->remedies.end(), [](const Remedy& m) { return m.kind == "kfuse-rewrite"; });
  ASSERT_NE(rewrite, v->remedies.end());
  EXPECT_NE(rewrite->text.find("`kfuse rewrite TRACE --candidate " + v->id +
                               "` writes the fused kernel from the "
                               "recorded graph nodes"),
            std::string::npos)
      << rewrite->text;
  ASSERT_GT(v->cost.saving_ns, 0);
  EXPECT_NEAR(v->total_saving_ns, 20 * v->cost.saving_ns, 1e-6 * v->total_saving_ns);
  // Text and JSON say it is a graph candidate, and the JSON reads back.
  EXPECT_NE(reportToText(r, 10).find("in CUDA graph 7: node " + std::to_string(p) + " -> node " + std::to_string(c) +
                                     ", x20 replays"),
            std::string::npos);
  const nlohmann::json j = reportToJson(r);
  const nlohmann::json& jc = j["candidates"][size_t(v->rank - 1)];
  EXPECT_EQ(jc["occurrence_graphs"], nlohmann::json::array({7}));
  EXPECT_EQ(jc["occurrence_replays"], nlohmann::json::array({20}));
  EXPECT_EQ(jc["occurrences"], 20);
  auto back = reportFromJson(j, "report");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->candidates[size_t(v->rank - 1)].occurrence_replays, std::vector<int64_t>{20});
}

TEST(GraphAnalysis, ChildGraphsAreInlinedAndUndescribedNodesLeaveAGraphUnseen) {
  // Graph 1: produce -> child graph 2 (consume): the chain crosses into the child.
  TraceBuilder b;
  GraphBuilder child(b.trace(), 2);
  const Id c = child.kernel(TraceBuilder::kConsume, {2, 3});
  GraphBuilder g(b.trace(), 1);
  const Id p = g.kernel(TraceBuilder::kProduce, {1, 2});
  g.child(2, {p});
  g.replay(4);
  Report r = runThroughSqlite(b);
  const Candidate* v = findCandidate(r, CandidateKind::kVertical, {TraceBuilder::kProduce, TraceBuilder::kConsume});
  ASSERT_NE(v, nullptr) << reportToText(r, 10);
  EXPECT_EQ(v->occurrence_graphs, std::vector<Id>{1});
  EXPECT_EQ(v->occurrence_launches, (std::vector<std::vector<Id>>{{p, c}}));
  EXPECT_EQ(v->occurrence_replays, std::vector<int64_t>{4});
  // With a node the trace does not describe after the consumer, the graph is not analysed: no graph candidate, and
  // its launches stay unseen work.
  g.other({g.empty({})});
  b.trace().stats.push_back({"graph_launches_not_recorded", 4, core::StatSeverity::kWarning, "..."});
  b.launch(TraceBuilder::kProduce, {4, 5}, 1 << 20).launch(TraceBuilder::kConsume, {5, 6}, 1 << 20);
  r = runThroughSqlite(b);
  for (const Candidate& x : r.candidates) EXPECT_FALSE(x.inGraphs()) << reportToText(r, 10);
  v = findCandidate(r, CandidateKind::kVertical, {TraceBuilder::kProduce, TraceBuilder::kConsume});
  ASSERT_NE(v, nullptr) << reportToText(r, 10);
  EXPECT_EQ(v->legality, Legality::kLikely);
  EXPECT_TRUE(anyReasonContains(*v, "4 CUDA graph launches"));
}

TEST(GraphAnalysis, GraphKernelsJoinTheBusyTimeOfATimedTrace) {
  // One launch measured at 10 us; the graph's two kernels have no GPU times: their roofline estimates count, once
  // per replay.
  TraceBuilder b;
  b.launch(TraceBuilder::kBlur, {5, 6}, 1 << 20, /*stream=*/1, /*grid=*/4096, /*duration_ns=*/10'000);
  GraphBuilder g(b.trace(), 1);
  g.kernel(TraceBuilder::kConsume, {2, 3}, {g.kernel(TraceBuilder::kProduce, {1, 2})});
  g.replay(1);
  const int64_t once = runThroughSqlite(b).gpu_busy_ns;
  g.replay(4);  // a second exec of the same graph: 5 replays in all
  const Report r = runThroughSqlite(b);
  EXPECT_GT(once, 10'000);
  EXPECT_NEAR(double(r.gpu_busy_ns - 10'000), 5.0 * double(once - 10'000), 5.0);
  for (const Candidate& c : r.candidates) EXPECT_LT(c.share_of_gpu_busy, 1.0);
}

TEST(GraphAnalysis, PathThroughANodeThatWritesTheConsumersInputIsNoChain) {
  // produce -> copy (writes allocation 2, which consume reads) -> consume, with a direct edge from produce to
  // consume too (as stream capture makes them): not a chain.
  TraceBuilder b;
  GraphBuilder g(b.trace(), 1);
  const Id p = g.kernel(TraceBuilder::kProduce, {1, 2});
  const Id copy = g.copy(4, 2, {p});
  g.kernel(TraceBuilder::kConsume, {2, 3}, {copy, p});
  g.replay(3);
  Report r = runThroughSqlite(b);
  EXPECT_EQ(findCandidate(r, CandidateKind::kVertical, {TraceBuilder::kProduce, TraceBuilder::kConsume}), nullptr)
      << reportToText(r, 10);
  // A kernel between them that reads what produce wrote (gather, which also reads what an earlier kernel wrote):
  // consume reads produce's output, but gather must run after produce and before consume, so the two cannot
  // become one node.
  TraceBuilder rc;
  GraphBuilder rg(rc.trace(), 1);
  const Id z = rg.kernel(TraceBuilder::kProduce, {5, 6});
  const Id p1 = rg.kernel(TraceBuilder::kProduce, {1, 2});
  const Id reader = rg.kernel(TraceBuilder::kGather, {2, 6, 4}, {z, p1});
  rg.kernel(TraceBuilder::kConsume, {2, 3}, {reader, p1});
  rg.replay(3);
  r = runThroughSqlite(rc);
  EXPECT_EQ(findCandidate(r, CandidateKind::kVertical, {TraceBuilder::kProduce, TraceBuilder::kConsume}), nullptr)
      << reportToText(r, 10);
  // The same with a kernel between them that writes what the consumer reads: that kernel and the consumer may be
  // a chain, the producer and the consumer are not.
  TraceBuilder k;
  GraphBuilder h(k.trace(), 1);
  const Id p2 = h.kernel(TraceBuilder::kProduce, {1, 2});
  const Id mid = h.kernel(TraceBuilder::kProduce, {4, 2}, {p2});
  h.kernel(TraceBuilder::kConsume, {2, 3}, {mid, p2});
  h.replay(3);
  r = runThroughSqlite(k);
  for (const Candidate& c : r.candidates) {
    if (c.kind != CandidateKind::kVertical) continue;
    for (const auto& occ : c.occurrence_launches) EXPECT_NE(occ.front(), p2) << reportToText(r, 10);
  }
  // Their legal twin: an empty node between them is no node in between.
  TraceBuilder e;
  GraphBuilder eg(e.trace(), 1);
  const Id p3 = eg.kernel(TraceBuilder::kProduce, {1, 2});
  const Id join = eg.empty({p3});
  eg.kernel(TraceBuilder::kConsume, {2, 3}, {join});
  eg.replay(3);
  r = runThroughSqlite(e);
  EXPECT_NE(findCandidate(r, CandidateKind::kVertical, {TraceBuilder::kProduce, TraceBuilder::kConsume}), nullptr)
      << reportToText(r, 10);
}

TEST(GraphAnalysis, NodesWithoutAPathAreIndependentAndAPathOrdersThem) {
  // Two small kernels on separate data, no edge: independent, a horizontal candidate.
  TraceBuilder b;
  GraphBuilder g(b.trace(), 1);
  g.kernel(TraceBuilder::kProduce, {1, 2}, {}, /*grid=*/16, /*n=*/4096);
  g.kernel(TraceBuilder::kProduce, {3, 4}, {}, /*grid=*/16, /*n=*/4096);
  g.replay(5);
  Report r = runThroughSqlite(b);
  const Candidate* h = findCandidate(r, CandidateKind::kHorizontal, {TraceBuilder::kProduce, TraceBuilder::kProduce});
  ASSERT_NE(h, nullptr) << reportToText(r, 10);
  EXPECT_EQ(h->occurrence_replays, std::vector<int64_t>{5});
  EXPECT_TRUE(anyReasonContains(*h, "no path between them in the graph"));
  // The same kernels with an edge between them (through an empty node): ordered, not independent.
  TraceBuilder o;
  GraphBuilder og(o.trace(), 1);
  const Id first = og.kernel(TraceBuilder::kProduce, {1, 2}, {}, 16, 4096);
  og.kernel(TraceBuilder::kProduce, {3, 4}, {og.empty({first})}, 16, 4096);
  og.replay(5);
  r = runThroughSqlite(o);
  EXPECT_EQ(findCandidate(r, CandidateKind::kHorizontal, {TraceBuilder::kProduce, TraceBuilder::kProduce}), nullptr)
      << reportToText(r, 10);
}

TEST(GraphAnalysis, ReplayBetweenTwoLaunchesIsWorkOnTheirStream) {
  // produce, then a replay whose graph overwrites what consume reads, then consume, all on stream 1.
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20);
  GraphBuilder g(b.trace(), 1);
  g.kernel(TraceBuilder::kProduce, {4, 2});
  g.replay(1);
  b.launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  // The launches' API times surround the replay's.
  b.trace().launches[0].api_start_ns = 9'000'000;
  b.trace().launches[1].api_start_ns = 11'000'000;
  const Report r = runThroughSqlite(b);
  for (const Candidate& c : r.candidates) {
    EXPECT_TRUE(c.kind != CandidateKind::kVertical || c.inGraphs()) << reportToText(r, 10);
  }
}

TEST(GraphAnalysis, LaunchesOfGraphsNotInTheTraceStayUnseenWork) {
  TraceBuilder b;
  b.launch(TraceBuilder::kProduce, {1, 2}, 1 << 20).launch(TraceBuilder::kConsume, {2, 3}, 1 << 20);
  GraphBuilder g(b.trace(), 1);
  g.kernel(TraceBuilder::kBlur, {5, 6});
  g.replay(2, /*stream=*/2);
  b.trace().stats.push_back({"graph_launches_not_recorded", 5, core::StatSeverity::kWarning, "..."});
  const Report r = runThroughSqlite(b);
  const Candidate* v = findCandidate(r, CandidateKind::kVertical, {TraceBuilder::kProduce, TraceBuilder::kConsume});
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->legality, Legality::kLikely);
  EXPECT_TRUE(anyReasonContains(*v, "3 CUDA graph launches")) << reportToText(r, 10);
}

}  // namespace
}  // namespace kfuse::analyzer
