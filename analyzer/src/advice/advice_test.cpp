// Advice on real PyTorch traces (../shared/data, recorded by others): operator context, operator bytes, the
// Execution Trace join, kernel-family legality, remedies, and golden reports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "advice/advice.h"
#include "advice/op_context.h"
#include "advice/op_tensors.h"
#include "advice/remedies.h"
#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/analyzer/multi_rank.h"

namespace kfuse::analyzer {
namespace {

std::string shared(const std::string& rel) {
  return std::string(KFUSE_SHARED_DATA_DIR) + "/" + rel;
}

CpuOp op(std::string name, std::vector<std::vector<int64_t>> dims, std::vector<std::string> types) {
  CpuOp o;
  o.name = std::move(name);
  o.input_dims = std::move(dims);
  o.input_types = std::move(types);
  return o;
}

// ---- operator tensors ----

TEST(OperatorTensors, AddmmReadsBiasAndOperandsAndWritesTheProduct) {
  // BERT-small's intermediate dense layer, as the profiler recorded it.
  const OpTensors t = operatorTensors(op("aten::addmm", {{2048}, {141, 512}, {512, 2048}, {}, {}},
                                         {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"}));
  ASSERT_TRUE(t.output_known);
  EXPECT_EQ(t.output.dims, (std::vector<int64_t>{141, 2048}));
  EXPECT_DOUBLE_EQ(t.read_bytes, 2.0 * (2048 + 141 * 512 + 512 * 2048));
  EXPECT_DOUBLE_EQ(t.write_bytes, 2.0 * 141 * 2048);
  EXPECT_DOUBLE_EQ(t.flops.bf16, 2.0 * 141 * 2048 * 512);
  EXPECT_EQ(operatorLabel(op("aten::addmm", {{2048}, {141, 512}, {512, 2048}, {}, {}},
                             {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"})),
            "aten::addmm bf16[141,512]x[512,2048]");
}

TEST(OperatorTensors, IndexSelectReadsOnlyTheGatheredRows) {
  // The word-embedding lookup: a 30522 x 512 table, 141 indices.
  const OpTensors t =
      operatorTensors(op("aten::index_select", {{30522, 512}, {}, {141}}, {"c10::BFloat16", "Scalar", "long int"}));
  ASSERT_TRUE(t.output_known);
  EXPECT_EQ(t.output.dims, (std::vector<int64_t>{141, 512}));
  EXPECT_DOUBLE_EQ(t.read_bytes, 2.0 * 141 * 512 + 8.0 * 141);
  EXPECT_DOUBLE_EQ(t.write_bytes, 2.0 * 141 * 512);
}

TEST(OperatorTensors, ElementwiseOutputIsTheBroadcastShape) {
  const OpTensors t = operatorTensors(op("aten::add", {{1, 141, 512}, {512}, {}}, {"float", "float", "Scalar"}));
  ASSERT_TRUE(t.output_known);
  EXPECT_EQ(t.output.dims, (std::vector<int64_t>{1, 141, 512}));
  EXPECT_DOUBLE_EQ(t.write_bytes, 4.0 * 141 * 512);
  const OpTensors eq = operatorTensors(op("aten::eq", {{1, 141}, {}}, {"long int", "Scalar"}));
  EXPECT_EQ(eq.output.dtype, "bool");
  // fill_ writes its destination without reading it.
  const OpTensors fill = operatorTensors(op("aten::fill_", {{1024}, {}}, {"float", "Scalar"}));
  EXPECT_DOUBLE_EQ(fill.read_bytes, 0);
  EXPECT_DOUBLE_EQ(fill.write_bytes, 4096);
}

TEST(OperatorTensors, UnknownOperatorsGuessAnOutputAndSaySo) {
  const OpTensors t = operatorTensors(op("aten::frobnicate", {{10, 10}, {5}}, {"float", "float"}));
  EXPECT_FALSE(t.output_known);
  EXPECT_DOUBLE_EQ(t.read_bytes, 4.0 * 105);
  EXPECT_DOUBLE_EQ(t.write_bytes, 400);
  EXPECT_TRUE(operatorTensors(op("aten::add", {{}, {}}, {"Scalar", "Scalar"})).inputs.empty());
}

// ---- module paths ----

TEST(ModulePaths, PatternDropsInstanceNumbersAndCommonPathStopsAtComponents) {
  EXPECT_EQ(modulePattern("BertModel_0.BertEncoder_0.BertLayer_3.BertOutput_3"),
            "BertModel.BertEncoder.BertLayer.BertOutput");
  EXPECT_EQ(modulePattern("Net.fc_layer"), "Net.fc_layer");
  EXPECT_EQ(commonModulePath({"A_0.B_1.Linear_4", "A_0.B_1.GELU_0"}), "A_0.B_1");
  EXPECT_EQ(commonModulePath({"A_0.B_1", "A_0.B_1.GELU_0"}), "A_0.B_1");
  EXPECT_EQ(commonModulePath({"A_0.BC_1", "A_0.BD_1"}), "A_0");
  EXPECT_EQ(commonModulePath({"A_0", "X_0"}), "");
}

// ---- operator context on a real trace ----

TEST(OperatorContext, LinksEveryBertKernelToItsOperatorAndModule) {
  auto in = importTrace(shared("kineto/tracelens_bert_small_h100.json.gz"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  size_t modules = 0;
  for (const core::NvtxRange& r : in->trace.nvtx_ranges) modules += r.domain == "nn.Module" ? 1 : 0;
  EXPECT_EQ(modules, 84u);  // the trace's 84 nn.Module python-function events
  const OpContextTable ctx = OpContextTable::build(*in);
  EXPECT_EQ(ctx.records(), 61u);  // 60 kernels and 1 memcpy
  EXPECT_EQ(ctx.external_id_mismatches(), 0u);
  size_t kernels_linked = 0;
  for (const core::Launch& l : in->trace.launches) {
    const OpContext* c = ctx.find(OpKind::kKernel, l.id);
    ASSERT_NE(c, nullptr) << "launch " << l.id;
    ASSERT_NE(c->op, nullptr);
    kernels_linked++;
    EXPECT_GE(c->module, 0) << c->op->name;
  }
  EXPECT_EQ(kernels_linked, 60u);
  // The first kernel is the word-embedding lookup; the 9th the query projection of layer 0.
  const OpContext* first = ctx.find(OpKind::kKernel, 1);
  EXPECT_EQ(first->op->name, "aten::index_select");
  EXPECT_EQ(first->top_op->name, "aten::embedding");
  EXPECT_EQ(ctx.modulePath(first->module), "BertLMHeadModel_0.BertModel_0.BertEmbeddings_0.Embedding_0");
  const OpContext* q = ctx.find(OpKind::kKernel, 9);
  EXPECT_EQ(q->op->name, "aten::addmm");
  EXPECT_EQ(q->top_op->name, "aten::linear");
  EXPECT_EQ(ctx.modulePath(q->module),
            "BertLMHeadModel_0.BertModel_0.BertEncoder_0.BertLayer_0.BertAttention_0.BertSdpaSelfAttention_0.Linear_0");
}

// An old Kineto trace wrote each kernel's correlation id as its External id: the launch call's span decides.
TEST(OperatorContext, LaunchCallSpanWinsOverAMismatchedExternalId) {
  auto in = importTrace(shared("kineto/hta_simple_add.json.gz"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  const OpContextTable ctx = OpContextTable::build(*in);
  ASSERT_EQ(in->trace.launches.size(), 4u);
  std::vector<std::string> ops;
  for (const core::Launch& l : in->trace.launches) {
    const OpContext* c = ctx.find(OpKind::kKernel, l.id);
    ASSERT_NE(c, nullptr);
    ASSERT_NE(c->op, nullptr);
    ops.push_back(c->op->name);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::uniform_", "aten::uniform_", "aten::add", "aten::add"}));
  EXPECT_GE(ctx.external_id_mismatches(), 1u);  // kernel 1's External id 22 names the first aten::add
}

// Nsight Systems: NVTX push/pop ranges (NVTX_EVENTS) are the context of the kernels launched inside them. In
// pipit_saxpy_a100 the application wraps each of its 5 saxpy launches in an NVTX range "saxpy" (22 push/pop ranges
// in all, counted with sqlite3: 5 saxpy, 10 MPI_Send, 5 MPI_Recv, MPI_Init, MPI_Finalize).
TEST(OperatorContext, NsightNvtxRangesAnnotateTheKernelsInsideThem) {
  auto in = importTrace(shared("nsys/pipit_saxpy_a100.sqlite"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->trace.nvtx_ranges.size(), 22u);
  size_t saxpy = 0;
  for (const core::NvtxRange& r : in->trace.nvtx_ranges) saxpy += r.name == "saxpy" ? 1 : 0;
  EXPECT_EQ(saxpy, 5u);
  const OpContextTable ctx = OpContextTable::build(*in);
  ASSERT_EQ(in->trace.launches.size(), 5u);
  for (const core::Launch& l : in->trace.launches) {
    const OpContext* c = ctx.find(OpKind::kKernel, l.id);
    ASSERT_NE(c, nullptr) << "launch " << l.id;
    ASSERT_GE(c->annotation, 0);
    EXPECT_EQ(ctx.annotation(c->annotation), "saxpy");
  }
}

// ---- Execution Trace join ----

TEST(ExecutionTraceJoin, SimpleAddGivesTensorLevelEdgesPerStorage) {
  // By hand, from the two files: torch.rand fills storage 7 (aten::uniform_, kernel 1) and storage 12 (kernel 2);
  // each torch.add (kernels 3 and 4) reads storages 7 and 12 and writes a fresh output (38, then 59). So: RAW
  // 1->3, 2->3, 1->4, 2->4, and nothing else on the GPU (the CPU tensors of the cache-clearing multiplies are not
  // GPU work).
  auto in = importTrace(shared("kineto/hta_simple_add.json.gz"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  const KernelCatalog catalog = KernelCatalog::build(in->trace);
  const DependencyGraph graph = DependencyGraph::build(in->trace, catalog);
  Advisor advisor(*in, graph, catalog);
  ASSERT_TRUE(advisor.joinExecutionTrace(shared("kineto/hta_simple_add_et.json.gz")).ok());
  EXPECT_EQ(advisor.tensorEdgesSource(), "execution-trace");
  std::set<std::tuple<core::Id, core::Id, std::string, int64_t>> edges;
  for (const TensorEdge& e : advisor.tensorEdges()) {
    EXPECT_FALSE(e.inferred);
    EXPECT_DOUBLE_EQ(e.bytes, 65536.0 * 4);
    edges.insert({graph.ops[e.from].record_id, graph.ops[e.to].record_id, edgeKindName(e.kind), e.storage});
  }
  const std::set<std::tuple<core::Id, core::Id, std::string, int64_t>> expected = {
      {1, 3, "RAW", 7}, {2, 3, "RAW", 12}, {1, 4, "RAW", 7}, {2, 4, "RAW", 12}};
  EXPECT_EQ(edges, expected);
}

TEST(ExecutionTraceJoin, RefusesAFileThatIsNotAnExecutionTraceNamingIt) {
  auto in = importTrace(shared("kineto/hta_simple_add.json.gz"));
  ASSERT_TRUE(in.ok());
  AnalysisOptions options;
  options.execution_trace = shared("kineto/hta_simple_add.json.gz");  // a Kineto trace, not an ET
  auto r = analyze(*in, "hta_simple_add.json.gz", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hta_simple_add.json.gz"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("Execution Trace"), std::string::npos) << r.status().message();
}

TEST(ExecutionTraceJoin, RefusesAnExecutionTraceNestedTooDeepInsteadOfCrashing) {
  // A hostile ET whose node inputs nest 200,000 lists deep used to overflow the stack while its values were copied.
  std::string nested;
  for (int i = 0; i < 200000; ++i) nested += '[';
  for (int i = 0; i < 200000; ++i) nested += ']';
  const char* tmp = std::getenv("TMPDIR");
  std::string dir_pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kfuse_et_depth_XXXXXX";
  std::vector<char> dir_buf(dir_pattern.begin(), dir_pattern.end());
  dir_buf.push_back('\0');
  ASSERT_NE(mkdtemp(dir_buf.data()), nullptr);
  const std::string path = std::string(dir_buf.data()) + "/deep_et.json";
  {
    std::ofstream out(path);
    out << R"({"schema": "1.0.1", "nodes": [{"id": 1, "name": "aten::add", "inputs": )" << nested
        << R"(, "input_types": []}]})";
  }
  auto in = importTrace(shared("kineto/hta_simple_add.json.gz"));
  ASSERT_TRUE(in.ok());
  AnalysisOptions options;
  options.execution_trace = path;
  auto r = analyze(*in, "hta_simple_add.json.gz", options);
  std::remove(path.c_str());
  rmdir(dir_buf.data());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("deep_et.json"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("nested deeper than 512 levels"), std::string::npos) << r.status().message();
}

// ---- BERT-small: what a person finds by reading the trace ----
//
// tracelens_bert_small_h100.json.gz is one inference step of BERT-small (4 layers, hidden 512, 141 tokens, bf16)
// on an H100: 60 kernels, all on stream 7, each 1.6-10 us, 30-100 us apart (the CPU launches slower than the GPU
// runs). Read by hand, per layer (BertLayer_k):
//  1. Q, K, V projections: three addmm GEMMs [141,512]x[512,512] on the same input. Not a vertical fusion (no data
//     flows between them; GEMM -> GEMM); a person would concatenate the weights (one QKV GEMM), which is a model
//     change, not a kernel fusion kfuse proposes.
//  2. flash attention: already one fused kernel; nothing before or after it fuses with it.
//  3. attention output projection addmm -> residual aten::add -> LayerNorm (BertSelfOutput): the add reads the
//     GEMM's output: a GEMM-epilogue fusion (residual add in the epilogue); add -> LayerNorm: elementwise into a
//     normalisation's loads (prologue; fused add + norm kernels exist).
//  4. intermediate addmm [141,512]x[512,2048] -> GELU (BertIntermediate): the classic GEMM + bias + GELU epilogue.
//  5. output addmm [141,2048]x[2048,512] -> residual add -> LayerNorm (BertOutput): as 3.
//  6. LayerNorm -> next layer's Q GEMM: work before a GEMM (not fusable by a library option).
// Embeddings: three index_select gathers, two adds, a LayerNorm: index_select -> add_ and add -> LayerNorm fuse
// (gather + pointwise + norm: torch.compile); the gathers are independent of each other. The mask check eq -> all
// (elementwise -> reduction) fuses too. The head: addmm -> GELU -> LayerNorm (epilogue, then prologue) and the
// decoder GEMM.
// The whole step is launch-bound: the GPU is busy about 0.3 ms of a 3.9 ms window: a CUDA graph is the first remedy.
class BertSmall : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto in = importTrace(shared("kineto/tracelens_bert_small_h100.json.gz"));
    ASSERT_TRUE(in.ok()) << in.status().message();
    input_ = new ImportResult(std::move(*in));
    auto r = analyze(*input_, "tracelens_bert_small_h100.json.gz", {});
    ASSERT_TRUE(r.ok()) << r.status().message();
    report_ = new Report(std::move(*r));
  }
  static void TearDownTestSuite() {
    delete report_;
    delete input_;
  }
  static const Candidate* find(const std::vector<std::string>& ops) {
    for (const Candidate& c : report_->candidates) {
      std::vector<std::string> got;
      for (const MemberContext& m : c.members) got.push_back(m.op);
      if (got == ops) return &c;
    }
    return nullptr;
  }
  static ImportResult* input_;
  static Report* report_;
};
ImportResult* BertSmall::input_ = nullptr;
Report* BertSmall::report_ = nullptr;

TEST_F(BertSmall, FindsTheGemmGeluEpilogueInEveryLayer) {
  const Candidate* c = find({"aten::addmm", "aten::gelu"});
  ASSERT_NE(c, nullptr) << reportToText(*report_, 50, true);
  EXPECT_EQ(c->fusion_kind, "epilogue");
  EXPECT_EQ(c->legality, Legality::kLikely);
  EXPECT_EQ(c->data_flow, "inferred-from-shapes");
  EXPECT_EQ(c->module_pattern, "BertLMHeadModel.BertModel.BertEncoder.BertLayer.BertIntermediate");
  EXPECT_EQ(c->occurrences.size(), 4u);
  EXPECT_EQ(c->modules.size(), 4u);  // one per layer
  EXPECT_EQ(c->members[0].label, "aten::addmm bf16[141,512]x[512,2048]");
  EXPECT_EQ(c->members[0].family, "gemm");
  EXPECT_EQ(c->members[1].family, "elementwise");
  EXPECT_EQ(c->cost.bytes_source, "operator-estimate");
  // The GELU's re-read of the GEMM's [141, 2048] bf16 output (577,536 B, well inside the H100's 50 MiB of L2) was
  // an L2 hit, and the output is read later (it must still be written): fusing saves no DRAM bytes. It saves the
  // time the GELU took (its achieved fraction carried to the fused kernel).
  EXPECT_DOUBLE_EQ(c->cost.bytes_before, c->cost.bytes_after);
  EXPECT_GT(c->total_saving_ns, 0);
  ASSERT_FALSE(c->remedies.empty());
  EXPECT_EQ(c->remedies.front().kind, "gemm-epilogue");
}

TEST_F(BertSmall, FindsResidualAddEpilogueAndAddNormPrologue) {
  // addmm -> add -> native_layer_norm in BertSelfOutput ([141,512]x[512,512]) and in BertOutput
  // ([141,2048]x[2048,512]): two patterns (different GEMM shapes), one occurrence per layer each.
  for (const char* module : {"BertLMHeadModel.BertModel.BertEncoder.BertLayer.BertAttention.BertSelfOutput",
                             "BertLMHeadModel.BertModel.BertEncoder.BertLayer.BertOutput"}) {
    const Candidate* c = nullptr;
    for (const Candidate& k : report_->candidates) {
      if (k.module_pattern == module && k.members.size() == 3 && k.members[0].op == "aten::addmm" &&
          k.members[1].op == "aten::add" && k.members[2].op == "aten::native_layer_norm") {
        c = &k;
      }
    }
    ASSERT_NE(c, nullptr) << module << "\n" << reportToText(*report_, 50, true);
    EXPECT_EQ(c->fusion_kind, "epilogue");
    EXPECT_EQ(c->occurrences.size(), 4u);
    EXPECT_GT(c->total_saving_ns, 0);
    bool epilogue = false, torch_compile = false;
    for (const Remedy& m : c->remedies) {
      epilogue = epilogue || m.kind == "gemm-epilogue";
      torch_compile = torch_compile || m.kind == "torch-compile";
    }
    EXPECT_TRUE(epilogue);
    EXPECT_TRUE(torch_compile);
  }
}

TEST_F(BertSmall, FindsPointwiseAndPrologueFusionsInTheEmbeddingsAndMask) {
  EXPECT_TRUE(find({"aten::index_select", "aten::add_"}) ||
              find({"aten::index_select", "aten::add_", "aten::native_layer_norm"}))
      << reportToText(*report_, 50, true);
  EXPECT_NE(find({"aten::eq", "aten::all"}), nullptr) << reportToText(*report_, 50, true);
}

TEST_F(BertSmall, ProposesNothingAcrossGemmsOrAttention) {
  for (const Candidate& c : report_->candidates) {
    for (size_t i = 0; i + 1 < c.members.size(); ++i) {
      EXPECT_FALSE(c.members[i + 1].family == "gemm") << "work fused into a GEMM's operands: " << c.members[i].label;
      EXPECT_NE(c.members[i].family, "attention");
      EXPECT_NE(c.members[i + 1].family, "attention");
    }
  }
}

TEST_F(BertSmall, EveryRecommendationHasOperatorsBytesAndARemedy) {
  ASSERT_FALSE(report_->candidates.empty());
  for (const Candidate& c : report_->candidates) {
    ASSERT_EQ(c.members.size(), c.names.size());
    for (const MemberContext& m : c.members) {
      EXPECT_FALSE(m.op.empty());
      EXPECT_FALSE(m.module.empty());
    }
    EXPECT_GT(c.cost.bytes_before, 0) << c.rank;
    EXPECT_FALSE(c.remedies.empty()) << c.rank;
  }
  EXPECT_EQ(report_->records_with_operator, 61u);
  EXPECT_EQ(report_->tensor_edges_source, "inferred-from-shapes");
}

TEST_F(BertSmall, SaysTheStepIsLaunchBound) {
  ASSERT_FALSE(report_->advice.empty());
  const Advice& a = report_->advice.front();
  EXPECT_EQ(a.kind, "cuda-graph");
  EXPECT_EQ(a.where, "BertLMHeadModel_0");
  EXPECT_GT(a.idle_ns / a.window_ns, 0.8);
  EXPECT_EQ(a.launches, 60u);
  EXPECT_TRUE(report_->notices.empty());  // the H100 is in the table
}

// ---- the GPU the trace ran on ----

TEST(GpuNotice, ADeviceTheTableLacksIsSaidFirst) {
  auto in = importTrace(shared("kineto/hta_amd_mi250.json.gz"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  auto r = analyze(*in, "hta_amd_mi250.json.gz", {});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->notices.empty());
  EXPECT_NE(r->notices.front().find("AMD Radeon Graphics"), std::string::npos) << r->notices.front();
  const std::string text = reportToText(*r, 10);
  EXPECT_EQ(text.rfind("NOTE ", 0), 0u) << text.substr(0, 200);
}

// ---- CUDA graphs ----

// hta_six_streams_rank0 has 135 kernels whose launch call is cudaGraphLaunch, in 70 replays (counted
// independently with a script over the JSON: kernels whose correlation id's runtime event is cudaGraphLaunch).
TEST(CudaGraphs, GraphNodesAreGroupedByReplayAndGetNoLaunchOverheadAdvice) {
  auto in = importTrace(shared("kineto/hta_six_streams_rank0.json.gz"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->launch_graph_ids.size(), 135u);
  std::set<int64_t> replays;
  for (const auto& [launch, corr] : in->launch_graph_ids) replays.insert(corr);
  EXPECT_EQ(replays.size(), 70u);
  auto r = analyze(*in, "hta_six_streams_rank0.json.gz", {});
  ASSERT_TRUE(r.ok());
  bool graphed = false;
  for (const Advice& a : r->advice) {
    EXPECT_NE(a.kind, "cuda-graph") << a.text;
    if (a.kind == "graphed") {
      graphed = true;
      EXPECT_EQ(a.launches, 135u);
      EXPECT_NE(a.text.find("70 CUDA graph launches"), std::string::npos) << a.text;
    }
  }
  EXPECT_TRUE(graphed);
  for (const Candidate& c : r->candidates) {
    if (!c.in_cuda_graph) continue;
    ASSERT_FALSE(c.remedies.empty());
    EXPECT_EQ(c.remedies.back().kind, "note");
  }
}

// ---- multi-rank ----

TEST(MultiRank, MergesTheSamePatternAcrossRanksWithPerRankShares) {
  const std::string bert = shared("kineto/tracelens_bert_small_h100.json.gz");
  const std::string vit = shared("kineto/tracelens_vit_h100.json.gz");
  auto merged = analyzeRanks({bert, vit, bert}, {}, 2);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  ASSERT_EQ(merged->ranks.size(), 3u);
  auto single = analyze(*importTrace(bert), bert, {});
  ASSERT_TRUE(single.ok());
  const MergedRecommendation* gelu = nullptr;
  for (const MergedRecommendation& m : merged->recommendations) {
    if (m.representative.members.size() == 2 && m.representative.members[1].op == "aten::gelu" &&
        m.representative.members[0].label == "aten::addmm bf16[141,512]x[512,2048]") {
      gelu = &m;
    }
  }
  ASSERT_NE(gelu, nullptr) << multiRankToText(*merged, 20);
  ASSERT_EQ(gelu->ranks.size(), 2u);  // the two BERT ranks, not the ViT one
  EXPECT_EQ(gelu->ranks[0].rank, 0);
  EXPECT_EQ(gelu->ranks[1].rank, 2);
  EXPECT_EQ(gelu->ranks[0].occurrences, 4u);
  double one = 0;
  for (const Candidate& c : single->candidates) {
    if (c.members.size() == 2 && c.members[1].op == "aten::gelu" &&
        c.members[0].label == gelu->representative.members[0].label) {
      one = c.total_saving_ns;
    }
  }
  EXPECT_GT(one, 0);
  EXPECT_DOUBLE_EQ(gelu->total_saving_ns, 2 * one);
  const std::string text = multiRankToText(*merged, 20);
  EXPECT_NE(text.find("2 of 3 ranks"), std::string::npos) << text;
}

TEST(MultiRank, ADirectoryIsItsTraceFilesAndABadRankNamesItsFile) {
  auto files = expandRankInputs({std::string(KFUSE_SHARED_DATA_DIR) + "/kineto"});
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(files->size(), 9u);
  EXPECT_TRUE(std::is_sorted(files->begin(), files->end()));
  // hta_cpu_only has no GPU kernels: the whole analysis fails and says which file.
  auto merged = analyzeRanks(*files, {}, 2);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("hta_cpu_only"), std::string::npos) << merged.status().message();
  EXPECT_FALSE(expandRankInputs({"/nonexistent/rank0.json"}).ok());
}

TEST(MultiRank, TheMergerLeavesOutAnotherCostModelAndNamesTheSlowRank) {
  const std::string bert = shared("kineto/tracelens_bert_small_h100.json.gz");
  auto single = analyze(*importTrace(bert), bert, {});
  ASSERT_TRUE(single.ok());
  ASSERT_FALSE(single->candidates.empty());
  RankMerger merger;
  // Four ranks of the same report; rank 3's kernels took twice as long (its GPU busy time and every pattern's time
  // per occurrence doubled): above 1.25x the median of the four.
  for (int rank = 0; rank < 4; ++rank) {
    Report r = *single;
    if (rank == 3) {
      r.gpu_busy_ns *= 2;
      for (Candidate& c : r.candidates) c.cost.measured_ns *= 2;
    }
    EXPECT_TRUE(merger.add("rank" + std::to_string(rank), rank, std::move(r)));
  }
  Report other = *single;
  other.cost_model_version += 1;
  EXPECT_FALSE(merger.add("other", 4, std::move(other)));
  merger.leaveOut("missing", "no such file");
  const MultiRankReport m = merger.finish();
  EXPECT_EQ(m.ranks.size(), 4u);
  ASSERT_EQ(m.left_out.size(), 2u);
  EXPECT_EQ(m.left_out[0].path, "other");
  EXPECT_NE(m.left_out[0].why.find("cost model version"), std::string::npos) << m.left_out[0].why;
  EXPECT_EQ(m.stragglers, std::vector<int>{3});
  ASSERT_FALSE(m.recommendations.empty());
  for (const MergedRecommendation& r : m.recommendations) {
    EXPECT_EQ(r.ranks.size(), 4u);
    EXPECT_EQ(r.stragglers, std::vector<int>{3});
  }
  const std::string text = multiRankToText(m, 3);
  EXPECT_NE(text.find("4 merged, 2 left out"), std::string::npos) << text;
  EXPECT_NE(text.find("stragglers rank 3"), std::string::npos) << text;
}

// ---- remedies ----

TEST(Remedies, FollowFusionKindOperatorsAndGraphs) {
  RemedyInput in;
  in.fusion = FamilyFusion::kEpilogue;
  in.families = {KernelFamily::kGemm, KernelFamily::kElementwise};
  in.ops = {"aten::addmm", "aten::gelu"};
  in.module = "BertLayer_0.BertIntermediate_0";
  std::vector<Remedy> r = remediesFor(in);
  ASSERT_GE(r.size(), 2u);
  EXPECT_EQ(r[0].kind, "gemm-epilogue");
  EXPECT_NE(r[0].text.find("GELU"), std::string::npos);
  EXPECT_EQ(r.back().kind, "torch-compile");
  EXPECT_NE(r.back().text.find("BertLayer_0.BertIntermediate_0"), std::string::npos);

  in.kfuse_trace_with_ptx = true;
  in.proven = true;
  in.rank = 3;
  r = remediesFor(in);
  EXPECT_EQ(r[0].kind, "kfuse-rewrite");
  EXPECT_NE(r[0].text.find("--candidate 3"), std::string::npos);
  EXPECT_EQ(r[0].text.find("graph"), std::string::npos);
  // Kernels the trace recorded as a graph's nodes: the plan is made from them and put in at instantiate.
  in.graph_nodes = in.in_cuda_graph = true;
  r = remediesFor(in);
  EXPECT_EQ(r[0].kind, "kfuse-rewrite");
  EXPECT_NE(r[0].text.find("from the recorded graph nodes"), std::string::npos);
  EXPECT_NE(r[0].text.find("instantiates the graph"), std::string::npos);
  EXPECT_EQ(r.back().kind, "note");

  // Independent kernels of a CUDA program kfuse recorded with PTX: kfuse rewrite, not PyTorch advice.
  RemedyInput side;
  side.kind = CandidateKind::kHorizontal;
  side.kfuse_trace_with_ptx = true;
  side.proven = true;
  r = remediesFor(side);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, "kfuse-rewrite");
  side.kfuse_trace_with_ptx = false;  // a profiler trace: the PyTorch remedy
  EXPECT_EQ(remediesFor(side).at(0).kind, "torch-compile");

  RemedyInput pw;
  pw.fusion = FamilyFusion::kPointwise;
  pw.ops = {"aten::mul", "aten::add"};
  pw.in_cuda_graph = true;
  r = remediesFor(pw);
  EXPECT_EQ(r[0].kind, "torch-compile");
  EXPECT_EQ(r.back().kind, "note");
  EXPECT_NE(r.back().text.find("CUDA graph"), std::string::npos);

  RemedyInput opt;
  opt.fusion = FamilyFusion::kPointwise;
  opt.ops = {"aten::_foreach_add_", "aten::_foreach_mul_"};
  EXPECT_EQ(remediesFor(opt)[0].kind, "fused-operator");
}

// ---- golden reports of the shared real traces ----

// The text report of each real trace, pinned. Regenerate with KFUSE_UPDATE_GOLDEN=1 after a deliberate change,
// and read the diff.
class GoldenReport : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenReport, MatchesPinnedText) {
  const std::string name = GetParam();
  auto in = importTrace(shared("kineto/" + name + ".json.gz"));
  ASSERT_TRUE(in.ok()) << in.status().message();
  auto r = analyze(*in, name + ".json.gz", {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string text = reportToText(*r, 10);
  // A report of a real trace reads back as itself (what `kfuse rewrite --report` relies on).
  const nlohmann::json j = reportToJson(*r);
  auto back = reportFromJson(j, name);
  ASSERT_TRUE(back.ok()) << back.status().message();
  const nlohmann::json patch = nlohmann::json::diff(j, reportToJson(*back));
  EXPECT_TRUE(patch.empty()) << "read back differs: " << patch.dump().substr(0, 600);
  const std::string golden = std::string(KFUSE_SOURCE_DIR) + "/analyzer/testdata/golden/" + name + ".txt";
  if (std::getenv("KFUSE_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << text;
  }
  std::ifstream f(golden, std::ios::binary);
  ASSERT_TRUE(f) << golden << " missing: run with KFUSE_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(text, want.str()) << "golden " << golden;
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, GoldenReport,
                         ::testing::Values("tracelens_bert_small_h100", "tracelens_vit_h100", "hta_alexnet_a100",
                                           "hta_amd_mi250", "hta_simple_add", "hta_event_sync_multi_stream",
                                           "hta_six_streams_rank0"));

}  // namespace
}  // namespace kfuse::analyzer
