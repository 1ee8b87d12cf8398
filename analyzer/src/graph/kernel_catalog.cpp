// KernelCatalog: what each kernel of a trace does with its parameters, from the best source available.
#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string_view>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/demangle.h"
#include "kfuse/ptx/fatbin.h"
#include "kfuse/ptx/loops.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/ranges.h"
#include "legality/thread_locality.h"

namespace kfuse::analyzer {

const char* accessSourceName(AccessSource s) {
  switch (s) {
    case AccessSource::kPtx: return "ptx";
    case AccessSource::kTrace: return "trace";
    case AccessSource::kMangledName: return "mangled-name";
    case AccessSource::kAssumed: return "assumed";
  }
  return "assumed";
}

namespace {

core::AccessMode fromPtx(ptx::AccessMode m) {
  switch (m) {
    case ptx::AccessMode::kNotAccessed: return core::AccessMode::kNone;
    case ptx::AccessMode::kRead: return core::AccessMode::kRead;
    case ptx::AccessMode::kWrite: return core::AccessMode::kWrite;
    case ptx::AccessMode::kReadWrite: return core::AccessMode::kReadWrite;
    case ptx::AccessMode::kUnknown: return core::AccessMode::kUnknown;
    case ptx::AccessMode::kNotPointer: return core::AccessMode::kNone;
  }
  return core::AccessMode::kUnknown;
}

// Floating-point work of one instruction: FMA/MAD count 2, other arithmetic 1, anything else 0.
double flopsPerOp(ptx::Opcode op) {
  switch (op) {
    case ptx::Opcode::kFma:
    case ptx::Opcode::kMad: return 2;
    case ptx::Opcode::kAdd:
    case ptx::Opcode::kSub:
    case ptx::Opcode::kMul:
    case ptx::Opcode::kDiv:
    case ptx::Opcode::kMin:
    case ptx::Opcode::kMax:
    case ptx::Opcode::kNeg:
    case ptx::Opcode::kAbs:
    case ptx::Opcode::kSqrt:
    case ptx::Opcode::kRsqrt:
    case ptx::Opcode::kRcp:
    case ptx::Opcode::kEx2:
    case ptx::Opcode::kLg2:
    case ptx::Opcode::kSin:
    case ptx::Opcode::kCos:
    case ptx::Opcode::kTanh:
    case ptx::Opcode::kSetp: return 1;
    default: return 0;
  }
}

// Floating-point work per thread of one straight pass over the body, by the precision the instruction's type
// says: FMA/MAD count 2, other arithmetic 1; packed f16x2/bf16x2 count twice.
FlopCounts countFlops(const ptx::Function& f) {
  FlopCounts flops;
  for (const ptx::Statement& s : f.body) {
    if (s.kind != ptx::StatementKind::kInstruction) continue;
    const double per_op = flopsPerOp(s.inst.opcode);
    if (per_op == 0) continue;
    // The instruction's floating-point type decides the precision; packed types do two operations.
    for (const ptx::Modifier& m : s.inst.modifiers) {
      double FlopCounts::*precision = nullptr;
      double lanes = 1;
      switch (m.asType()) {
        case ptx::DataType::kF32: precision = &FlopCounts::fp32; break;
        case ptx::DataType::kF64: precision = &FlopCounts::fp64; break;
        case ptx::DataType::kF16: precision = &FlopCounts::fp16; break;
        case ptx::DataType::kF16x2: precision = &FlopCounts::fp16, lanes = 2; break;
        case ptx::DataType::kBF16: precision = &FlopCounts::bf16; break;
        case ptx::DataType::kBF16x2: precision = &FlopCounts::bf16, lanes = 2; break;
        default: break;
      }
      if (!precision) continue;
      flops.*precision += per_op * lanes;
      break;
    }
  }
  return flops;
}

// Parsed PTX modules of a trace, by module image hash. A fatbin contributes every PTX entry it holds.
class PtxModules {
 public:
  // The parsed modules for `module`, parsing on first use; `problem` says why there are none.
  const std::vector<ptx::Module>& get(const core::Module& module, std::string& problem) {
    auto [it, inserted] = cache_.try_emplace(module.hash);
    Entry& e = it->second;
    if (inserted) load(module, e);
    problem = e.problem;
    return e.modules;
  }

 private:
  struct Entry {
    std::vector<ptx::Module> modules;
    std::string problem;
  };

  static void load(const core::Module& module, Entry& e) {
    if (module.image.empty()) {
      e.problem = "the trace holds no image of module " + std::to_string(module.id);
      return;
    }
    const std::string_view bytes(reinterpret_cast<const char*>(module.image.data()), module.image.size());
    if (module.kind == core::ImageKind::kPtx) {
      auto parsed = ptx::parseModule(bytes, "module " + std::to_string(module.id));
      if (parsed) {
        e.modules.push_back(std::move(parsed).value());
      } else {
        e.problem = parsed.status().message();
      }
      return;
    }
    if (module.kind == core::ImageKind::kFatbin) {
      const std::span<const uint8_t> span(module.image.data(), module.image.size());
      auto entries = ptx::listEntries(span);
      if (!entries) {
        e.problem = entries.status().message();
        return;
      }
      for (const ptx::FatbinEntry& entry : *entries) {
        if (entry.kind != ptx::EntryKind::kPtx) continue;
        auto text = ptx::extractEntry(span, entry);
        if (!text) continue;
        auto parsed = ptx::parseModule(*text, "fatbin entry");
        if (parsed) e.modules.push_back(std::move(parsed).value());
      }
      if (e.modules.empty()) e.problem = "module " + std::to_string(module.id) + " has no PTX entry (cubin only)";
      return;
    }
    e.problem = "module " + std::to_string(module.id) + " is a " + std::string(core::toString(module.kind)) +
                " image; only PTX is analysed";
  }

  std::map<std::string, Entry> cache_;
};

void completeParams(const core::KernelFunction& fn, KernelFacts& k);

// `fa`: the analyses of `f`, shared by every function row of the trace that names it. `element` (when not null)
// receives the kernel run as one element per thread when it is a grid-stride loop (its facts are the caller's).
void fillFromPtx(const ptx::Function& f, ptx::FunctionAnalyses& fa, KernelFacts& k, KernelFacts::ElementView* element) {
  const auto& access = fa.paramAccess();
  if (k.params.size() < f.params.size()) k.params.resize(f.params.size());
  for (size_t i = 0; i < k.params.size(); ++i) k.params[i].index = static_cast<int>(i);
  for (const ptx::ParamAccess& pa : access) {
    if (pa.index < 0 || static_cast<size_t>(pa.index) >= k.params.size()) continue;
    ParamFacts& p = k.params[static_cast<size_t>(pa.index)];
    p.mode = fromPtx(pa.mode);
    p.source = AccessSource::kPtx;
    p.note = pa.reason;
    p.ptx_reads = pa.reads;
    p.ptx_writes = pa.writes;
  }
  std::set<int> form_params;
  auto noteParams = [&](const ptx::AffineExpr& e) {
    for (const auto& [atoms, coef] : e.terms) {
      for (const std::string& atom : atoms) {
        int p = -1;
        if (atom.rfind("param", 0) == 0 &&
            std::from_chars(atom.data() + 5, atom.data() + atom.size(), p).ec == std::errc()) {
          form_params.insert(p);
        }
      }
    }
  };
  auto vectorOf = [&](const ptx::MemoryAccess& ma) -> uint32_t {
    if (ma.stmt >= f.body.size()) return 1;
    const ptx::Instruction& in = f.body[ma.stmt].inst;
    return in.has(ptx::Mod::kV2) ? 2 : in.has(ptx::Mod::kV4) ? 4 : in.has(ptx::Mod::kV8) ? 8 : 1;
  };
  for (const ptx::MemoryAccess& ma : fa.memoryAccesses()) {
    // An access whose base parameter is unknown may touch any buffer: counted, so that no proof relies on the
    // kernel's parameters alone (it also shows as a shortfall against ParamFacts::ptx_reads/writes).
    if (ma.base_param < 0 || static_cast<size_t>(ma.base_param) >= k.params.size()) {
      if (ma.pointer_params.empty() && k.unattributed_accesses++ == 0) k.unattributed_line = ma.line;
      continue;
    }
    ParamMemoryAccess a;
    a.is_read = ma.is_read;
    a.is_write = ma.is_write;
    a.atomic = ma.op == ptx::Opcode::kAtom || ma.op == ptx::Opcode::kRed;
    a.bytes = ma.bytes;
    a.affine = ma.offset.has_value();
    a.offset = ma.offset ? ma.offset->toString() : ma.not_affine_reason;
    a.guard = ma.guardText();
    a.line = ma.line;
    a.offset_form = ma.offset;
    a.loop_steps = ma.offset && locality::countsLoopSteps(*ma.offset);
    a.guard_conditions = ma.guard;
    a.guard_exact = ma.guard_exact;
    a.in_loop = ma.in_loop;
    a.vector = vectorOf(ma);
    if (ma.offset) noteParams(*ma.offset);
    for (const ptx::GuardCondition& g : ma.guard) {
      if (!g.structured) continue;
      noteParams(g.lhs);
      noteParams(g.rhs);
    }
    k.params[static_cast<size_t>(ma.base_param)].accesses.push_back(std::move(a));
  }
  k.form_params.assign(form_params.begin(), form_params.end());
  k.block_ranges = ptx::BlockRanges::prepare(f, fa.cfg(), fa.memoryAccesses(), &k.block_ranges_problem);
  if (!ptx::threadsExitAfterTheirLastBarrier(f, fa.cfg(), &k.barrier_exit_problem) && k.barrier_exit_problem.empty()) {
    k.barrier_exit_problem = "its barriers cannot be shown to be met by every thread";
  }
  for (const ptx::MemoryAccess& ma : fa.memoryAccesses()) {
    KernelFacts::BlockAccess ba{ma.is_read,  ma.is_write, ma.line,
                                -1,          ma.bytes,    ma.op == ptx::Opcode::kAtom || ma.op == ptx::Opcode::kRed,
                                vectorOf(ma)};
    std::set<int> via(ma.pointer_params.begin(), ma.pointer_params.end());
    if (ma.base_param >= 0) via.insert(ma.base_param);
    if (via.size() == 1) ba.via_param = *via.begin();
    k.block_accesses.push_back(ba);
  }
  // The affine forms' parameters are in the influence set by construction; the union keeps that so.
  const ptx::ParamInfluence influence = ptx::analyzeParamInfluence(f);
  std::set<int> influence_params(influence.params.begin(), influence.params.end());
  influence_params.insert(form_params.begin(), form_params.end());
  k.influence_params.assign(influence_params.begin(), influence_params.end());
  k.absolute_params = influence.absolute;
  k.dynamic_shared_influence = influence.dynamic_shared_size;
  k.reads_dynamic_shared_size = influence.reads_dynamic_shared_size;
  // Parameter layout from the declarations where the trace did not record it: each parameter aligned to its
  // .align (else its element size), in declaration order.
  int offset = 0;
  for (size_t i = 0; i < f.params.size() && i < k.params.size(); ++i) {
    const ptx::VariableDecl& d = f.params[i];
    const int size = static_cast<int>(d.byteSize() ? d.byteSize() : d.elementSize());
    const int align = static_cast<int>(d.align ? d.align : (d.elementSize() ? d.elementSize() : 1));
    offset = (offset + align - 1) / align * align;
    if (k.params[i].offset < 0) {
      k.params[i].offset = offset;
      k.params[i].size = size;
    }
    offset += size;
  }
  const ptx::UsageSummary& u = fa.usage();
  k.barriers = u.barriers;
  k.atomics = u.atomics;
  k.shuffles = u.shuffles;
  k.grid_sync = u.grid_sync;
  k.printf = u.printf;
  k.uses_shared = u.static_shared_bytes > 0 || u.dynamic_shared;
  k.flops_per_thread = countFlops(f);
  for (const std::string& callee : u.callees) {
    if (callee != "vprintf") k.callees.push_back(callee);
  }
  k.indirect_calls = u.indirect_calls;
  std::vector<std::string> unanalysed;
  if (u.textures > 0) unanalysed.push_back(std::to_string(u.textures) + " texture/surface instructions");
  if (u.async_copies > 0) unanalysed.push_back(std::to_string(u.async_copies) + " asynchronous copies (cp.async)");
  if (u.tensor_ops > 0) unanalysed.push_back(std::to_string(u.tensor_ops) + " tensor-core instructions");
  for (const std::string& s : unanalysed) k.unanalysed_memory += (k.unanalysed_memory.empty() ? "" : ", ") + s;
  auto byIndex = [&f](const std::string& param) {
    const int i = f.paramIndex(param);
    return i < 0 ? param : "param#" + std::to_string(i);
  };
  if (auto loop = ptx::findCountedLoop(f, fa.cfg(), fa.defUse(), byIndex, nullptr)) {
    k.loop_steps = loop->start + "|" + loop->step + "|" + loop->guard + "|" + loop->latch;
  }
  if (element) {
    const std::vector<char> in_loop = ptx::blocksInLoops(fa.cfg());
    if (std::find(in_loop.begin(), in_loop.end(), 1) != in_loop.end()) {
      if (auto v = ptx::gridStrideElementView(f, fa.cfg(), fa.defUse(), &k.element_view_problem)) {
        element->function = std::make_shared<const ptx::Function>(std::move(v->function));
        element->bound_params = std::move(v->bound_params);
        element->unrolled = v->unrolled;
        element->small_params = std::move(v->small_params);
      }
    }
  }
  k.has_ptx = true;
}

}  // namespace

constexpr int kMaxParams = 32768;

KernelCatalog KernelCatalog::build(const core::Trace& trace) {
  KernelCatalog catalog;
  PtxModules ptx_modules;
  // A trace can name one PTX function in many function rows (one per context, or a damaged trace's thousands):
  // each is analysed once.
  std::map<const ptx::Function*, std::unique_ptr<ptx::FunctionAnalyses>> analyses;
  std::map<core::Id, const core::Module*> modules;
  for (const core::Module& m : trace.modules) modules[m.id] = &m;
  // A function's analyses are dropped after the last row that names it: a huge kernel's take about as much memory
  // as its IR, and a trace of several such kernels would otherwise hold them all at once.
  std::map<std::string_view, size_t> rows_left;
  for (const core::KernelFunction& fn : trace.functions) ++rows_left[fn.mangled_name];

  for (const core::KernelFunction& fn : trace.functions) {
    KernelFacts k;
    k.function_id = fn.id;
    k.mangled_name = fn.mangled_name;
    k.name = !fn.demangled_name.empty() ? fn.demangled_name : ptx::demangle(fn.mangled_name);
    for (const core::KernelParam& p : fn.params) {
      ParamFacts pf;
      pf.index = p.index;
      pf.offset = p.offset;
      pf.size = p.size;
      if (p.access != core::AccessMode::kUnknown) {
        pf.mode = p.access;
        pf.source = AccessSource::kTrace;
      }
      // A kernel's parameters fit in 32,764 bytes (CUDA's limit), so no valid index reaches kMaxParams; a damaged
      // trace's -1 or 2^31 would index outside or allocate gigabytes.
      if (p.index < 0 || p.index >= kMaxParams) continue;
      if (static_cast<size_t>(p.index) >= k.params.size()) k.params.resize(static_cast<size_t>(p.index) + 1);
      k.params[static_cast<size_t>(p.index)] = pf;
    }

    const std::vector<ParamFacts> trace_params = k.params;
    KernelFacts::ElementView element;
    const ptx::Module* element_module = nullptr;

    // 1. PTX, when the kernel's module image is in the trace. A kernel whose module the trace does not name (a
    //    CUlibrary's kernel, whose handle is not the loaded module's; CUPTI's module callback) is looked for by
    //    its mangled name in every module image: one definition across the images is unambiguous.
    auto mit = modules.find(fn.module_id);
    if (mit == modules.end()) {
      k.ptx_problem = "the trace does not say which module the kernel came from";
      const core::Module* only = nullptr;
      int definitions = 0;
      for (const auto& [id, m] : modules) {
        std::string problem;
        for (const ptx::Module& pm : ptx_modules.get(*m, problem)) {
          if (const ptx::Function* f = pm.findFunction(fn.mangled_name); f && f->has_body) {
            if (only != m) ++definitions;
            only = m;
          }
        }
      }
      if (definitions == 1) {
        mit = modules.find(only->id);
        k.module_by_name = true;
      } else if (definitions > 1) {
        k.ptx_problem = "the trace does not say which module the kernel came from, and " + std::to_string(definitions) +
                        " module images define " + fn.mangled_name;
      }
    }
    if (mit != modules.end()) {
      std::string problem;
      const auto& parsed = ptx_modules.get(*mit->second, problem);
      k.ptx_problem = problem;
      for (const ptx::Module& m : parsed) {
        if (const ptx::Function* f = m.findFunction(fn.mangled_name); f && f->has_body) {
          auto& fa = analyses[f];
          if (!fa) fa = std::make_unique<ptx::FunctionAnalyses>(&m, *f);
          fillFromPtx(*f, *fa, k, &element);
          if (rows_left[fn.mangled_name] == 1) analyses.erase(f);
          element_module = &m;
          k.ptx_problem.clear();
          break;
        }
      }
      if (!k.has_ptx && k.ptx_problem.empty()) k.ptx_problem = "no PTX body for " + fn.mangled_name + " in its module";
    }

    completeParams(fn, k);
    // The element-per-thread view of a grid-stride kernel: the same steps on its loop body run once.
    if (element.function) {
      KernelFacts one;
      one.function_id = k.function_id;
      one.mangled_name = k.mangled_name;
      one.name = k.name;
      one.params = trace_params;
      ptx::FunctionAnalyses fa(element_module, *element.function);
      fillFromPtx(*element.function, fa, one, nullptr);
      completeParams(fn, one);
      element.facts = std::make_shared<const KernelFacts>(std::move(one));
      k.element_view = std::make_shared<const KernelFacts::ElementView>(std::move(element));
    }
    catalog.facts_[fn.id] = std::move(k);
    --rows_left[fn.mangled_name];
  }
  return catalog;
}

namespace {

// Steps 2 and 3 of KernelCatalog::build for one kernel's parameters.
void completeParams(const core::KernelFunction& fn, KernelFacts& k) {
  // 2. The mangled name's parameter types for parameters still unknown.
  if (auto sig = ptx::parseMangledSignature(fn.mangled_name); sig) {
    if (k.params.size() < sig->params.size()) k.params.resize(sig->params.size());
    for (size_t i = 0; i < sig->params.size(); ++i) {
      ParamFacts& p = k.params[i];
      p.index = static_cast<int>(i);
      if (p.source != AccessSource::kAssumed) continue;
      if (!sig->params[i].is_pointer && !sig->params[i].is_reference) {
        p.mode = core::AccessMode::kNone;
        p.source = AccessSource::kMangledName;
      } else if (auto hint = ptx::accessHint(sig->params[i]); hint && *hint == ptx::AccessMode::kRead) {
        p.mode = core::AccessMode::kRead;
        p.source = AccessSource::kMangledName;
        p.note = "pointer to const (" + sig->params[i].text + ")";
      }
    }
  }
  // 3. Whatever is left is assumed read-write: conservative for dependencies.
  for (ParamFacts& p : k.params) {
    if (p.source == AccessSource::kAssumed) p.mode = core::AccessMode::kReadWrite;
  }
}

}  // namespace

const KernelFacts* KernelCatalog::find(core::Id function_id) const {
  auto it = facts_.find(function_id);
  return it == facts_.end() ? nullptr : &it->second;
}

int KernelCatalog::kernelsWithPtx() const {
  int n = 0;
  for (const auto& [id, k] : facts_) n += k.has_ptx ? 1 : 0;
  return n;
}

}  // namespace kfuse::analyzer
