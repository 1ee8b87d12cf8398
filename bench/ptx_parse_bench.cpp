// PTX parser throughput (README performance table: "PTX parse, MB/s on one core").
// Input: every .ptx file of the build's corpus (tests/ptx_corpus), concatenated module by module; if the corpus
// was not built, a synthetic module of elementwise kernels. Reports bytes/s (MB/s) per benchmark.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "huge_kernel.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/ptx/ranges.h"

namespace {

using kfuse::bench::hugeKernel;

std::vector<std::string> loadCorpus() {
  std::vector<std::string> out;
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("KFUSE_PTX_CORPUS")) dirs.emplace_back(d);
  dirs.emplace_back("tests/ptx_corpus");
  dirs.emplace_back("../tests/ptx_corpus");
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() != ".ptx") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      out.push_back(ss.str());
    }
    if (!out.empty()) return out;
  }
  // synthetic fallback: 200 copies of an elementwise kernel (built with append: GCC 12 -O3 warns falsely on
  // `"literal" + std::string&&`)
  std::string m = ".version 9.0\n.target sm_90\n.address_size 64\n";
  const std::string body_template =
      "(\n\t.param .u64 #_p0,\n\t.param .u64 #_p1,\n\t.param .u32 #_p2\n)\n{\n\t.reg .pred \t%p<2>;\n"
      "\t.reg .f32 \t%f<3>;\n\t.reg .b32 \t%r<6>;\n\t.reg .b64 \t%rd<8>;\n\n\tld.param.u64 \t%rd1, [#_p0];\n"
      "\tld.param.u64 \t%rd2, [#_p1];\n\tld.param.u32 \t%r2, [#_p2];\n\tmov.u32 \t%r3, %ctaid.x;\n"
      "\tmov.u32 \t%r4, %ntid.x;\n\tmov.u32 \t%r5, %tid.x;\n\tmad.lo.s32 \t%r1, %r3, %r4, %r5;\n"
      "\tsetp.ge.s32 \t%p1, %r1, %r2;\n\t@%p1 bra \t$L__BB0_2;\n\n\tcvta.to.global.u64 \t%rd3, %rd1;\n"
      "\tmul.wide.s32 \t%rd4, %r1, 4;\n\tadd.s64 \t%rd5, %rd3, %rd4;\n\tld.global.f32 \t%f1, [%rd5];\n"
      "\tadd.f32 \t%f2, %f1, %f1;\n\tcvta.to.global.u64 \t%rd6, %rd2;\n\tadd.s64 \t%rd7, %rd6, %rd4;\n"
      "\tst.global.f32 \t[%rd7], %f2;\n\n$L__BB0_2:\n\tret;\n\n}\n";
  for (int k = 0; k < 200; ++k) {
    std::string n = "k";
    n.append(std::to_string(k));
    m.append(".visible .entry ").append(n);
    for (char c : body_template) {
      if (c == '#') {
        m.append(n);
      } else {
        m.push_back(c);
      }
    }
  }
  out.push_back(m);
  return out;
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> c = loadCorpus();
  return c;
}

int64_t corpusBytes() {
  int64_t n = 0;
  for (const auto& s : corpus()) n += static_cast<int64_t>(s.size());
  return n;
}

void BM_ParsePtx(benchmark::State& state) {
  for (auto _ : state) {
    for (const auto& text : corpus()) {
      auto m = kfuse::ptx::parseModule(text);
      if (!m.ok()) state.SkipWithError(m.status().message().c_str());
      benchmark::DoNotOptimize(m);
    }
  }
  state.SetBytesProcessed(state.iterations() * corpusBytes());
  state.counters["files"] = static_cast<double>(corpus().size());
}
BENCHMARK(BM_ParsePtx)->Unit(benchmark::kMillisecond);

void BM_PrintPtx(benchmark::State& state) {
  std::vector<kfuse::ptx::Module> mods;
  for (const auto& text : corpus()) mods.push_back(std::move(kfuse::ptx::parseModule(text)).value());
  for (auto _ : state) {
    for (const auto& m : mods) benchmark::DoNotOptimize(kfuse::ptx::printModule(m));
  }
  state.SetBytesProcessed(state.iterations() * corpusBytes());
}
BENCHMARK(BM_PrintPtx)->Unit(benchmark::kMillisecond);

void BM_AnalyzeAllFunctions(benchmark::State& state) {
  std::vector<kfuse::ptx::Module> mods;
  for (const auto& text : corpus()) mods.push_back(std::move(kfuse::ptx::parseModule(text)).value());
  for (auto _ : state) {
    for (const auto& m : mods) {
      for (const auto& f : m.functions) {
        if (!f.has_body) continue;
        kfuse::ptx::FunctionAnalyses fa(&m, f);
        benchmark::DoNotOptimize(fa.paramAccess());
        benchmark::DoNotOptimize(fa.memoryAccesses());
        benchmark::DoNotOptimize(fa.usage());
      }
    }
  }
  state.SetBytesProcessed(state.iterations() * corpusBytes());
}
BENCHMARK(BM_AnalyzeAllFunctions)->Unit(benchmark::kMillisecond);

// Reaching definitions of a function that redefines one register N times in one block (a hostile input to
// `kfuse ptx check`): each redefinition kills all the others, which must cost O(N), not O(N^2).
void BM_DefUseOneRegisterRedefined(benchmark::State& state) {
  std::string text =
      ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
      "\t.reg .b32 %r<2>;\n";
  for (int64_t i = 0; i < state.range(0); ++i) text.append("\tmov.u32 %r1, ").append(std::to_string(i)).append(";\n");
  text.append("\tret;\n}\n");
  const kfuse::ptx::Module m = std::move(kfuse::ptx::parseModule(text)).value();
  for (auto _ : state) {
    kfuse::ptx::FunctionAnalyses fa(&m, m.functions[0]);
    benchmark::DoNotOptimize(fa.defUse());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_DefUseOneRegisterRedefined)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

// Every analysis of `kfuse ptx check` on a kernel of N guarded stores, 2N basic blocks and no loop (a hostile or
// generated input): linear or n log n in blocks, not quadratic (blocksInLoops once took 37 s for 50,000 blocks).
std::string manyBlocks(int64_t n) {
  std::string text =
      ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p, .param .u32 n)\n{\n"
      "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [p];\n"
      "\tld.param.u32 %r1, [n];\n\tmov.u32 %r2, %tid.x;\n\tcvta.to.global.u64 %rd2, %rd1;\n"
      "\tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd2, %rd2, %rd3;\n";
  for (int64_t i = 0; i < n; ++i) {
    const std::string k = std::to_string(i);
    text.append("\tsetp.eq.s32 %p1, %r1, ").append(k).append(";\n\t@%p1 bra $L_").append(k).append(";\n");
    text.append("\tst.global.u32 [%rd2], ").append(k).append(";\n$L_").append(k).append(":\n");
  }
  text.append("\tret;\n}\n");
  return text;
}

void BM_AnalyzeManyBlocks(benchmark::State& state) {
  const kfuse::ptx::Module m = std::move(kfuse::ptx::parseModule(manyBlocks(state.range(0) / 2))).value();
  for (auto _ : state) {
    kfuse::ptx::FunctionAnalyses fa(&m, m.functions[0]);
    benchmark::DoNotOptimize(fa.paramAccess());
    benchmark::DoNotOptimize(fa.memoryAccesses());
    benchmark::DoNotOptimize(fa.usage());
    benchmark::DoNotOptimize(kfuse::ptx::blocksInLoops(fa.cfg()));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_AnalyzeManyBlocks)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

double heapMiB() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1 << 20);
}

// `kfuse ptx check` of one huge kernel: time, and the heap the parsed module and its analyses hold (README
// performance table: "ptx check, 1M-instruction kernel"). Counters: module_MiB (the IR alone), analysed_MiB (the IR
// and every analysis of `ptx check`, held together), bytes_per_instruction (of the IR).
void BM_CheckHugeKernel(benchmark::State& state) {
  const std::string text = hugeKernel(state.range(0));
  double module_mib = 0, analysed_mib = 0;
  for (auto _ : state) {
    const double before = heapMiB();
    auto m = kfuse::ptx::parseModule(text);
    if (!m.ok()) {
      state.SkipWithError(m.status().message().c_str());
      return;
    }
    module_mib = heapMiB() - before;
    {
      kfuse::ptx::FunctionAnalyses fa(&*m, m->functions[0]);
      benchmark::DoNotOptimize(fa.paramAccess());
      benchmark::DoNotOptimize(fa.memoryAccesses());
      benchmark::DoNotOptimize(fa.usage());
      benchmark::DoNotOptimize(kfuse::ptx::blocksInLoops(fa.cfg()));
      analysed_mib = heapMiB() - before;
    }
  }
  state.counters["module_MiB"] = module_mib;
  state.counters["analysed_MiB"] = analysed_mib;
  state.counters["bytes_per_instruction"] = module_mib * (1 << 20) / static_cast<double>(state.range(0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CheckHugeKernel)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);

// The interval analysis the analyzer runs per launch (BlockRanges: prepare, then evaluate for one launch's values)
// on the same huge kernel: linear in its instructions although it has about as many registers (before, each
// register write scanned a predicate slot per register: 100,000 instructions took seconds, 1M minutes).
void BM_BlockRangesHugeKernel(benchmark::State& state) {
  auto m = kfuse::ptx::parseModule(hugeKernel(state.range(0)));
  if (!m.ok()) {
    state.SkipWithError(m.status().message().c_str());
    return;
  }
  kfuse::ptx::FunctionAnalyses fa(&*m, m->functions[0]);
  const auto& accesses = fa.memoryAccesses();
  kfuse::ptx::LaunchBinding lb;
  lb.ntid = {256, 1, 1};
  lb.nctaid = {64, 1, 1};
  lb.all_blocks = true;
  lb.params = {0x100000, 0x900000, 16384};
  for (auto _ : state) {
    std::string why;
    auto ranges = kfuse::ptx::BlockRanges::prepare(m->functions[0], fa.cfg(), accesses, &why);
    if (!ranges) {
      state.SkipWithError(why.c_str());
      return;
    }
    benchmark::DoNotOptimize(ranges->evaluate(lb));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_BlockRangesHugeKernel)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
