// Corpus tests: every PTX file nvcc produced at build time round-trips through parse -> print -> ptxas with an
// identical resource report, and extraction from the executables returns byte-identical PTX.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/fatbin.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/ptx/ptxas.h"

namespace kfuse::ptx {
namespace {

struct Entry {
  std::string kind;  // ptx | exe
  std::string path;
  std::vector<std::string> fields;
};

void PrintTo(const Entry& e, std::ostream* os) {
  *os << e.kind << " " << e.path;
}

std::vector<Entry> manifest() {
  std::vector<Entry> out;
  std::ifstream in(std::string(KFUSE_PTX_CORPUS_DIR) + "/manifest.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    Entry e;
    ls >> e.kind >> e.path;
    std::string f;
    while (ls >> f) e.fields.push_back(f);
    if (!e.path.empty()) out.push_back(e);
  }
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> ptxFiles() {
  std::vector<std::string> out;
  for (const auto& e : manifest()) {
    if (e.kind == "ptx") out.push_back(e.path);
  }
  return out;
}

std::string baseName(const std::string& p) {
  return p.substr(p.rfind('/') + 1);
}

class CorpusPtx : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusPtx, RoundTripsThroughPtxasWithIdenticalResources) {
  const std::string text = readFile(GetParam());
  ASSERT_FALSE(text.empty()) << GetParam();
  ::setenv("KFUSE_PTXAS", KFUSE_PTXAS, /*overwrite=*/0);
  auto r = roundTrip(text, "", GetParam());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->holds) << r->difference;
  EXPECT_FALSE(r->original.resources.empty());
  // printing is a fixed point
  auto again = parseModule(r->printed, "printed");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(printModule(*again), r->printed);
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusPtx, ::testing::ValuesIn(ptxFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = baseName(param.param);
                           for (char& c : n) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace kfuse::ptx

// ---------------------------------------------------------------------------------------------------------------
// Analyses on real nvcc output, with exact expected results.

namespace kfuse::ptx {
namespace {

struct Loaded {
  Module module;
  const Function* fn(const std::string& needle) const {
    for (const auto& f : module.functions) {
      if (f.has_body && f.name.find(needle) != std::string::npos) return &f;
    }
    return nullptr;
  }
};

Loaded load(const std::string& file) {
  const std::string path = std::string(KFUSE_PTX_CORPUS_DIR) + "/" + file;
  auto m = parseFile(path);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return Loaded{m.ok() ? std::move(m).value() : Module{}};
}

std::vector<std::string> modes(FunctionAnalyses& fa) {
  std::vector<std::string> out;
  for (const auto& a : fa.paramAccess()) out.push_back(accessModeName(a.mode));
  return out;
}

using V = std::vector<std::string>;

TEST(CorpusAnalysis, ElementwiseAccessModes) {
  Loaded l = load("elementwise.sm_90.plain.ptx");
  struct Case {
    const char* kernel;
    V expected;
  };
  const Case cases[] = {
      {"5scale", {"read", "write", "not-pointer"}},
      {"5saxpy", {"not-pointer", "read", "read-write", "not-pointer"}},
      {"10add_offset", {"read", "write", "not-pointer", "not-pointer"}},
      {"12unused_param", {"read", "write", "not-accessed", "not-pointer"}},
      {"6gather", {"read", "read", "write", "not-pointer"}},
      {"11grid_stride", {"read", "write", "not-pointer"}},
      {"14pointer_escape", {"write", "unknown"}},
  };
  for (const auto& c : cases) {
    const Function* f = l.fn(c.kernel);
    ASSERT_NE(f, nullptr) << c.kernel;
    FunctionAnalyses fa(&l.module, *f);
    EXPECT_EQ(modes(fa), c.expected) << c.kernel;
  }
}

TEST(CorpusAnalysis, ScaleStoreIsParam1Plus4TimesGlobalIndexUnderGuard) {
  Loaded l = load("elementwise.sm_90.plain.ptx");
  const Function* f = l.fn("5scale");
  ASSERT_NE(f, nullptr);
  FunctionAnalyses fa(&l.module, *f);
  const auto& mem = fa.memoryAccesses();
  ASSERT_EQ(mem.size(), 2u);
  const MemoryAccess& st = mem[1];
  EXPECT_TRUE(st.is_write);
  ASSERT_TRUE(st.address.has_value()) << st.not_affine_reason;
  EXPECT_EQ(st.address->toString(), "param1 + 4*ctaid.x*ntid.x + 4*tid.x");
  EXPECT_EQ(st.base_param, 1);
  EXPECT_EQ(st.guardText(), "ctaid.x*ntid.x + tid.x < param2");
  EXPECT_EQ(mem[0].address->toString(), "param0 + 4*ctaid.x*ntid.x + 4*tid.x");
}

TEST(CorpusAnalysis, DebugBuildsGiveTheSameResultsThroughGenericAccesses) {
  // -G keeps generic ld/st (no cvta.to.global) and spills to the stack; the answers must not change
  Loaded l = load("elementwise.sm_80.debug.ptx");
  FunctionAnalyses fa(&l.module, *l.fn("5scale"));
  EXPECT_EQ(modes(fa), (V{"read", "write", "not-pointer"}));
  const MemoryAccess* store = nullptr;
  for (const auto& a : fa.memoryAccesses()) {
    if (a.is_write && a.base_param == 1) store = &a;
  }
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->address->toString(), "param1 + 4*ctaid.x*ntid.x + 4*tid.x");
  EXPECT_EQ(store->guardText(), "ctaid.x*ntid.x + tid.x < param2");
}

TEST(CorpusAnalysis, OffsetAndStencilAddresses) {
  Loaded l = load("elementwise.sm_90.plain.ptx");
  FunctionAnalyses fa(&l.module, *l.fn("10add_offset"));
  const auto& mem = fa.memoryAccesses();
  ASSERT_EQ(mem.size(), 2u);
  EXPECT_EQ(mem[1].address->toString(), "param1 + 4*ctaid.x*ntid.x + 4*tid.x + 4");
  EXPECT_EQ(mem[1].guardText(), "ctaid.x*ntid.x + tid.x + 1 < param2");
  Loaded c = load("calls.sm_90.plain.ptx");
  FunctionAnalyses st(&c.module, *c.fn("stencilIfLi1E"));
  V addrs;
  for (const auto& a : st.memoryAccesses()) addrs.push_back(a.address ? a.address->toString() : "?");
  EXPECT_EQ(addrs, (V{"param0 + 4*ctaid.x*ntid.x + 4*tid.x - 4", "param0 + 4*ctaid.x*ntid.x + 4*tid.x",
                      "param0 + 4*ctaid.x*ntid.x + 4*tid.x + 4", "param1 + 4*ctaid.x*ntid.x + 4*tid.x"}));
  EXPECT_EQ(st.memoryAccesses()[3].guardText(), "ctaid.x*ntid.x + tid.x >= 1 && ctaid.x*ntid.x + tid.x < param2 - 1");
}

TEST(CorpusAnalysis, GatherThroughLoadedIndexIsNotAffine) {
  Loaded l = load("elementwise.sm_90.plain.ptx");
  FunctionAnalyses fa(&l.module, *l.fn("6gather"));
  int not_affine = 0;
  for (const auto& a : fa.memoryAccesses()) not_affine += !a.address.has_value();
  EXPECT_EQ(not_affine, 1);
}

TEST(CorpusAnalysis, UsageSummaries) {
  Loaded r = load("reduce.sm_90.plain.ptx");
  {
    FunctionAnalyses fa(&r.module, *r.fn("10reduce_sum"));
    EXPECT_EQ(fa.usage().static_shared_bytes, 1024u);
    EXPECT_GE(fa.usage().barriers, 2);
    EXPECT_EQ(fa.usage().atomics, 0);
  }
  {
    FunctionAnalyses fa(&r.module, *r.fn("11reduce_shfl"));
    EXPECT_EQ(fa.usage().shuffles, 5);
    EXPECT_EQ(fa.usage().atomics, 1);
    EXPECT_EQ(modes(fa), (V{"read", "read-write", "not-pointer"}));
  }
  {
    FunctionAnalyses fa(&r.module, *r.fn("10vote_count"));
    EXPECT_EQ(fa.usage().votes, 1);
  }
  Loaded c = load("calls.sm_90.plain.ptx");
  {
    FunctionAnalyses fa(&c.module, *c.fn("9say_hello"));
    EXPECT_TRUE(fa.usage().printf);
    EXPECT_EQ(fa.usage().callees, V{"vprintf"});
  }
  {
    FunctionAnalyses fa(&c.module, *c.fn("10struct_arg"));
    EXPECT_EQ(modes(fa), (V{"not-pointer", "read", "write"}));
    EXPECT_EQ(fa.usage().callees, V{"_Z7combinefff"});
  }
  {
    FunctionAnalyses fa(&c.module, *c.fn("11local_array"));
    EXPECT_EQ(fa.usage().local_bytes, 128u);
  }
  Loaded a = load("async.sm_90.plain.ptx");
  {
    FunctionAnalyses fa(&a.module, *a.fn("9grid_sync"));
    EXPECT_TRUE(fa.usage().grid_sync);
  }
  {
    FunctionAnalyses fa(&a.module, *a.fn("10wmma_16x16"));
    EXPECT_EQ(fa.usage().tensor_ops, 4);
    EXPECT_EQ(modes(fa), (V{"read", "read", "write"}));
  }
  {
    FunctionAnalyses fa(&a.module, *a.fn("10copy_async"));
    EXPECT_EQ(fa.usage().async_copies, 3);
    EXPECT_EQ(modes(fa), (V{"read", "write", "not-pointer"}));
  }
  Loaded t = load("texture.sm_90.plain.ptx");
  {
    FunctionAnalyses fa(&t.module, *t.fn("10tex_sample"));
    EXPECT_EQ(fa.usage().textures, 1);
  }
  Loaded mm = load("matmul.sm_90.plain.ptx");
  {
    FunctionAnalyses fa(&mm.module, *mm.fn("12matmul_tiled"));
    EXPECT_EQ(fa.usage().static_shared_bytes, 2048u);
    EXPECT_EQ(modes(fa), (V{"read", "read", "write", "not-pointer"}));
  }
  Loaded misc = load("misc.sm_90.plain.ptx");
  {
    FunctionAnalyses fa(&misc.module, *misc.fn("8mma_bf16"));
    EXPECT_EQ(fa.usage().tensor_ops, 1);
    EXPECT_EQ(modes(fa), (V{"read", "read", "write"}));
  }
  {
    FunctionAnalyses fa(&misc.module, *misc.fn("13indirect_call"));
    EXPECT_TRUE(fa.usage().indirect_calls);
    EXPECT_EQ(modes(fa), (V{"read", "write", "not-pointer", "not-pointer"}));
  }
  {
    FunctionAnalyses fa(&misc.module, *misc.fn("13mbarrier_wait"));
    EXPECT_EQ(fa.usage().static_shared_bytes, 8u);
    EXPECT_EQ(modes(fa), (V{"read-write"}));
    V addrs;
    for (const auto& acc : fa.memoryAccesses()) addrs.push_back(acc.address ? acc.address->toString() : "?");
    EXPECT_EQ(addrs, (V{"param0 + 4*tid.x", "param0 + 4*tid.x", "param0 + 4*tid.x", "param0 + 4*tid.x"}));
  }
  {
    const Function* f = misc.fn("12limited_regs");
    ASSERT_NE(f, nullptr);
    bool maxnreg = false;
    for (const auto& d : f->directives)
      maxnreg = maxnreg || (d.name == ".maxnreg" && d.values == std::vector<int64_t>{32});
    EXPECT_TRUE(maxnreg);
  }
  Loaded s = load("scan.sm_90.plain.ptx");
  {
    FunctionAnalyses fa(&s.module, *s.fn("10scan_block"));
    EXPECT_TRUE(fa.usage().dynamic_shared);
  }
}

}  // namespace
}  // namespace kfuse::ptx

// ---------------------------------------------------------------------------------------------------------------
// Extraction from the executables nvcc built.

namespace kfuse::ptx {
namespace {

std::vector<Entry> executables() {
  std::vector<Entry> out;
  for (const auto& e : manifest()) {
    if (e.kind == "exe") out.push_back(e);
  }
  return out;
}

class CorpusExe : public ::testing::TestWithParam<Entry> {};

uint32_t archFromName(const std::string& path) {
  const std::string b = baseName(path);
  const size_t p = b.find(".sm_");
  return p == std::string::npos ? 0 : static_cast<uint32_t>(std::atoi(b.c_str() + p + 4));
}

TEST_P(CorpusExe, ExtractedPtxIsByteIdenticalToCompactedNvccOutput) {
  const Entry& exe = GetParam();
  auto bytes = readBinaryFile(exe.path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto list = listEntries(*bytes);
  ASSERT_TRUE(list.ok()) << list.status().message();
  const std::string compression = exe.fields.at(0);
  std::vector<const FatbinEntry*> ptx;
  size_t cubins = 0;
  for (const auto& e : *list) {
    if (e.kind == EntryKind::kPtx) ptx.push_back(&e);
    if (e.kind == EntryKind::kCubin) {
      ++cubins;
      // nvcc decides per cubin unless told: -compress-all forces zstd, -compress=false forces raw
      if (compression == "zstd-all") {
        EXPECT_EQ(e.compression, Compression::kZstd);
      }
      if (compression == "none") {
        EXPECT_EQ(e.compression, Compression::kNone);
      }
    }
  }
  EXPECT_GE(cubins, 1u);
  ASSERT_EQ(ptx.size(), exe.fields.size() - 1) << exe.path;
  for (size_t i = 1; i < exe.fields.size(); ++i) {
    const std::string& expected_path = exe.fields[i];
    const uint32_t arch = archFromName(expected_path);
    const FatbinEntry* e = nullptr;
    for (const auto* p : ptx) {
      if (p->arch == arch) e = p;
    }
    ASSERT_NE(e, nullptr) << "no PTX entry for sm_" << arch << " in " << exe.path;
    const Compression want = compression == "lz4"    ? Compression::kLz4
                             : compression == "none" ? Compression::kNone
                                                     : Compression::kZstd;
    EXPECT_EQ(e->compression, want);
    auto text = extractEntry(*bytes, *e);
    ASSERT_TRUE(text.ok()) << text.status().message();
    const std::string nvcc = readFile(expected_path);
    const std::string compact = fatbinaryCompactPtx(nvcc);
    // compare without dumping megabytes on failure: report the first differing offset
    size_t diff = 0;
    while (diff < text->size() && diff < compact.size() && (*text)[diff] == compact[diff]) ++diff;
    EXPECT_TRUE(*text == compact) << expected_path << ": first difference at byte " << diff << ": extracted '"
                                  << text->substr(diff, 60) << "' vs nvcc '" << compact.substr(diff, 60) << "'";
    // and the same program: identical IR
    auto a = parseModule(*text, "extracted");
    auto b = parseModule(nvcc, expected_path);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok());
    // the same program (verbatim .section blocks keep their own spacing, hence the compaction on both sides)
    EXPECT_TRUE(fatbinaryCompactPtx(printModule(*a)) == fatbinaryCompactPtx(printModule(*b))) << expected_path;
    EXPECT_FALSE(e->kernels.empty());
  }
}

TEST_P(CorpusExe, TruncatedExecutablesGiveErrorsNotCrashes) {
  auto bytes = readBinaryFile(GetParam().path);
  ASSERT_TRUE(bytes.ok());
  // cut inside the fatbin section: find where the first PTX payload lives and cut in its middle
  auto list = listEntries(*bytes);
  ASSERT_TRUE(list.ok());
  const FatbinEntry& last = list->back();
  std::vector<uint8_t> cut(bytes->begin(), bytes->begin() + static_cast<long>(last.offset + last.stored_size / 2));
  auto r = listEntries(cut);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("past the end"), std::string::npos) << r.status().message();
  // flip bytes in every payload: errors or different bytes, never a crash
  for (const auto& e : *list) {
    auto bad = *bytes;
    for (uint64_t k = 0; k < std::min<uint64_t>(e.stored_size, 64); ++k) bad[e.offset + k] ^= 0xa5;
    auto x = extractEntry(bad, e);
    if (x.ok() && e.compression != Compression::kNone) {
      auto good = extractEntry(*bytes, e);
      EXPECT_NE(*x, *good);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusExe, ::testing::ValuesIn(executables()),
                         [](const ::testing::TestParamInfo<Entry>& param) {
                           std::string n = baseName(param.param.path);
                           for (char& c : n) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

TEST(CorpusCubin, NvInfoGivesParameterLayoutOfScale) {
  auto bytes = readBinaryFile(std::string(KFUSE_PTX_CORPUS_DIR) + "/elementwise.sm90_default.exe");
  ASSERT_TRUE(bytes.ok());
  auto list = listEntries(*bytes);
  ASSERT_TRUE(list.ok());
  const FatbinEntry* cubin = nullptr;
  for (const auto& e : *list) {
    if (e.kind == EntryKind::kCubin && !e.kernels.empty()) cubin = &e;
  }
  ASSERT_NE(cubin, nullptr);
  EXPECT_EQ(cubin->arch, 90u);
  auto payload = extractEntry(*bytes, *cubin);
  ASSERT_TRUE(payload.ok());
  auto info = readCubin(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload->data()), payload->size()));
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->sm, 90u);
  const CubinKernel* scale = nullptr;
  const CubinKernel* saxpy = nullptr;
  for (const auto& k : info->kernels) {
    if (k.name == "_Z5scalePKfPfi") scale = &k;
    if (k.name == "_Z5saxpyfPKfPfi") saxpy = &k;
  }
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->param_bytes, 20u);
  ASSERT_EQ(scale->params.size(), 3u);
  EXPECT_EQ(scale->params[0].offset, 0u);
  EXPECT_EQ(scale->params[0].size, 8u);
  EXPECT_EQ(scale->params[1].offset, 8u);
  EXPECT_EQ(scale->params[2].offset, 16u);
  EXPECT_EQ(scale->params[2].size, 4u);
  ASSERT_NE(saxpy, nullptr);
  ASSERT_EQ(saxpy->params.size(), 4u);
  EXPECT_EQ(saxpy->params[0].size, 4u);    // float a
  EXPECT_EQ(saxpy->params[1].offset, 8u);  // aligned pointer
  EXPECT_EQ(saxpy->param_bytes, 28u);
  // truncated cubin
  auto cut = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload->data()), payload->size() / 3);
  auto bad = readCubin(cut);
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace kfuse::ptx

// ---------------------------------------------------------------------------------------------------------------
// Robustness: deterministic random mutations of real inputs never crash the parser, analyses or extractor.

namespace kfuse::ptx {
namespace {

TEST(CorpusRobustness, MutatedPtxNeverCrashesParserOrAnalyses) {
  std::mt19937 rng(12345);
  const char kAlphabet[] = "{}[]();,.%@!<>-+|=_ \n\t0123456789abcdefxrpd\"/";
  int parsed = 0, total = 0;
  for (const char* file :
       {"elementwise.sm_90.plain.ptx", "calls.sm_80.debug.ptx", "async.sm_90.plain.ptx", "misc.sm_90.plain.ptx"}) {
    const std::string original = readFile(std::string(KFUSE_PTX_CORPUS_DIR) + "/" + file);
    ASSERT_FALSE(original.empty()) << file;
    for (int round = 0; round < 150; ++round) {
      std::string text = original;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits && !text.empty(); ++k) {
        const size_t pos = rng() % text.size();
        switch (rng() % 4) {
          case 0: text[pos] = kAlphabet[rng() % (sizeof kAlphabet - 1)]; break;
          case 1: text.erase(pos, 1 + rng() % 16); break;
          case 2: text.insert(pos, 1, kAlphabet[rng() % (sizeof kAlphabet - 1)]); break;
          default: text.resize(pos); break;
        }
      }
      ++total;
      auto m = parseModule(text, "mutated.ptx");
      if (!m.ok()) {
        EXPECT_FALSE(m.status().message().empty());
        continue;
      }
      ++parsed;
      (void)verify(*m);
      (void)printModule(*m);
      for (const auto& f : m->functions) {
        if (!f.has_body) continue;
        FunctionAnalyses fa(&*m, f);
        (void)fa.paramAccess();
        (void)fa.memoryAccesses();
        (void)fa.usage();
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, total);
}

TEST(CorpusRobustness, MutatedFatbinsNeverCrashTheExtractor) {
  std::mt19937 rng(777);
  for (const char* file : {"elementwise.sm90_default.exe", "calls.sm80_lz4.exe", "reduce.sm90_all.exe"}) {
    auto bytes = readBinaryFile(std::string(KFUSE_PTX_CORPUS_DIR) + "/" + file);
    ASSERT_TRUE(bytes.ok());
    auto list = listEntries(*bytes);
    ASSERT_TRUE(list.ok());
    // the region holding the fatbins: from the first entry header to the end of the last payload
    const uint64_t lo = list->front().offset - 96;
    const uint64_t hi = list->back().offset + list->back().stored_size;
    for (int round = 0; round < 200; ++round) {
      auto bad = *bytes;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) bad[lo + rng() % (hi - lo)] = static_cast<uint8_t>(rng());
      auto l = listEntries(bad);
      if (!l.ok()) continue;
      for (const auto& e : *l) (void)extractEntry(bad, e);
    }
  }
  SUCCEED();
}

}  // namespace
}  // namespace kfuse::ptx
