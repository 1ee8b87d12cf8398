// The registered passes: thin wrappers that read their options and call the transforms of fusion.h.
#include <algorithm>
#include <charconv>
#include <set>

#include "kfuse/rewriter/fusion.h"
#include "kfuse/rewriter/pass.h"
#include "rename.h"

namespace kfuse::rewriter {
namespace {

using ptx::Module;

Expected<int> parseIndex(std::string_view s, std::string_view what) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) {
    return invalidArgument("'" + std::string(s) + "' is not a " + std::string(what));
  }
  return v;
}

// "1.2" -> kernel 1, parameter 2.
Expected<ArgRef> parseArgRef(std::string_view s) {
  const size_t dot = s.find('.');
  if (dot == std::string_view::npos) {
    return invalidArgument("'" + std::string(s) + "': expected KERNEL.PARAM (0-based positions, e.g. 1.0)");
  }
  KFUSE_ASSIGN_OR_RETURN(int k, parseIndex(s.substr(0, dot), "kernel position"));
  KFUSE_ASSIGN_OR_RETURN(int p, parseIndex(s.substr(dot + 1), "parameter position"));
  return ArgRef{k, p};
}

// "0.1=1.0+0.3=1.2" -> pairs.
Expected<std::vector<std::pair<ArgRef, ArgRef>>> parseEqualities(const std::vector<std::string>& items) {
  std::vector<std::pair<ArgRef, ArgRef>> out;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return invalidArgument("equal=" + item + ": expected K.P=K.P");
    KFUSE_ASSIGN_OR_RETURN(ArgRef a, parseArgRef(std::string_view(item).substr(0, eq)));
    KFUSE_ASSIGN_OR_RETURN(ArgRef b, parseArgRef(std::string_view(item).substr(eq + 1)));
    out.emplace_back(a, b);
  }
  return out;
}

// "64x2/256" -> grid (64,2,1), block (256,1,1).
Expected<core::Dim3> parseDims(std::string_view s) {
  core::Dim3 d;
  size_t i = 0;
  for (size_t k = 0; k < 3 && !s.empty(); ++k) {
    const size_t x = s.find('x');
    const std::string_view part = s.substr(0, x);
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), d[k]);
    if (ec != std::errc() || end != part.data() + part.size() || d[k] == 0) {
      return invalidArgument("'" + std::string(part) + "' is not a positive dimension");
    }
    s = x == std::string_view::npos ? std::string_view{} : s.substr(x + 1);
    ++i;
  }
  if (!s.empty()) return invalidArgument("more than three dimensions");
  return d;
}

Expected<core::LaunchShape> parseShape(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return invalidArgument("shape '" + std::string(s) + "': expected GRID/BLOCK");
  core::LaunchShape shape;
  KFUSE_ASSIGN_OR_RETURN(shape.grid, parseDims(s.substr(0, slash)));
  KFUSE_ASSIGN_OR_RETURN(shape.block, parseDims(s.substr(slash + 1)));
  return shape;
}

std::string describeRef(ArgRef r) {
  return std::to_string(r.kernel) + "." + std::to_string(r.param);
}

void logResult(PassLog& log, std::string_view pass, const FusionResult& r) {
  std::string params;
  for (const FusedParam& p : r.params) {
    params += (params.empty() ? "" : ", ") + p.name + " <- ";
    for (size_t i = 0; i < p.sources.size(); ++i) params += (i ? "=" : "") + describeRef(p.sources[i]);
  }
  log.note(std::string(pass), "added '" + r.fused_name + "' (" + params + ")");
  for (const std::string& n : r.notes) log.note(std::string(pass), n);
}

// A pass that runs one fusion transform with a fixed spec, under the name it is registered as.
template <typename Spec, Expected<FusionResult> (*Fuse)(ptx::Module&, const Spec&)>
class SpecPass : public Pass {
 public:
  SpecPass(Spec spec, std::string_view name, std::vector<std::string_view> analyses)
      : spec_(std::move(spec)), name_(name), analyses_(std::move(analyses)) {}
  std::string_view name() const override { return name_; }
  std::vector<std::string_view> requiredAnalyses() const override { return analyses_; }
  Status run(Module& module, AnalysisManager&, PassLog& log) override {
    KFUSE_ASSIGN_OR_RETURN(FusionResult r, Fuse(module, spec_));
    logResult(log, name(), r);
    log.fusions.push_back(std::move(r));
    return {};
  }

 private:
  Spec spec_;
  std::string_view name_;
  std::vector<std::string_view> analyses_;
};
using VerticalPass = SpecPass<VerticalFusion, fuseVertical>;
using EpiloguePass = SpecPass<EpilogueFusion, fuseEpilogue>;
using ProloguePass = SpecPass<PrologueFusion, fusePrologue>;
const std::vector<std::string_view> kVerticalAnalyses = {ptx::FunctionAnalyses::kCfg, ptx::FunctionAnalyses::kDefUse,
                                                         ptx::FunctionAnalyses::kMemoryAccess};
const std::vector<std::string_view> kElementAnalyses = {ptx::FunctionAnalyses::kCfg,
                                                        ptx::FunctionAnalyses::kMemoryAccess};

class HorizontalPass : public Pass {
 public:
  explicit HorizontalPass(HorizontalFusion spec) : spec_(std::move(spec)) {}
  std::string_view name() const override { return "fuse-horizontal"; }
  std::vector<std::string_view> requiredAnalyses() const override { return {ptx::FunctionAnalyses::kUsage}; }
  Status run(Module& module, AnalysisManager&, PassLog& log) override {
    KFUSE_ASSIGN_OR_RETURN(FusionResult r, fuseHorizontal(module, spec_));
    logResult(log, name(), r);
    const core::LaunchShape& s = r.shape;
    log.note(std::string(name()), "launch '" + r.fused_name + "' with grid " + std::to_string(s.grid.x) + "x" +
                                      std::to_string(s.grid.y) + "x" + std::to_string(s.grid.z) + ", block " +
                                      std::to_string(s.block.x) + "x" + std::to_string(s.block.y) + "x" +
                                      std::to_string(s.block.z) + ", " + std::to_string(s.dynamic_shared_bytes) +
                                      " bytes of dynamic shared memory");
    log.fusions.push_back(std::move(r));
    return {};
  }

 private:
  HorizontalFusion spec_;
};

class CleanupPass : public Pass {
 public:
  CleanupPass(std::vector<std::string> kernels, bool params) : kernels_(std::move(kernels)), params_(params) {}
  std::string_view name() const override { return "cleanup"; }
  Status run(Module& module, AnalysisManager&, PassLog& log) override {
    std::vector<std::string> targets = kernels_;
    if (targets.empty()) {
      for (const ptx::Function& f : module.functions) {
        if (f.is_entry && f.has_body) targets.push_back(f.name);
      }
    }
    for (const std::string& k : targets) {
      std::vector<int> kept;
      KFUSE_ASSIGN_OR_RETURN(CleanupStats st, cleanupFunction(module, k, params_, &kept));
      if (params_) log.kept_params[k] = kept;
      log.note("cleanup", k + ": removed " + std::to_string(st.removed_instructions) + " instruction(s), " +
                              std::to_string(st.removed_declarations) + " declaration(s), " +
                              std::to_string(st.removed_params) + " parameter(s)");
    }
    return {};
  }

 private:
  std::vector<std::string> kernels_;
  bool params_;
};

// Names a function refers to.
void referencedNames(const ptx::Function& f, std::set<std::string, std::less<>>* out) {
  for (const ptx::Statement& s : f.body) {
    if (s.kind == ptx::StatementKind::kInstruction) detail::collectSymbols(s.inst, out);
  }
}

class KeepOnlyPass : public Pass {
 public:
  explicit KeepOnlyPass(std::vector<std::string> kernels) : kernels_(std::move(kernels)) {}
  std::string_view name() const override { return "keep-only"; }
  Status run(Module& module, AnalysisManager&, PassLog& log) override {
    std::set<std::string, std::less<>> live(kernels_.begin(), kernels_.end());
    for (const std::string& k : kernels_) {
      const ptx::Function* f = module.findFunction(k);
      if (!f || !f->is_entry) return notFound("no kernel named '" + k + "' in the module");
    }
    // Everything the kept kernels reach, through calls and variable initialisers.
    for (bool grew = true; grew;) {
      const size_t before = live.size();
      for (const ptx::Function& f : module.functions) {
        if (live.count(f.name)) referencedNames(f, &live);
      }
      for (const ptx::VariableDecl& v : module.variables) {
        if (!live.count(v.name)) continue;
        for (const ptx::Function& f : module.functions) {
          if (v.initializer.find(f.name) != std::string::npos) live.insert(f.name);
        }
        for (const ptx::VariableDecl& w : module.variables) {
          if (v.initializer.find(w.name) != std::string::npos) live.insert(w.name);
        }
      }
      grew = live.size() != before;
    }
    Module out;
    out.version = module.version;
    out.target = module.target;
    out.address_size = module.address_size;
    size_t removed = 0;
    for (const ptx::TopLevel& item : module.order) {
      if (item.kind == ptx::TopLevelKind::kFunction) {
        if (!live.count(module.functions[item.index].name)) {
          ++removed;
          continue;
        }
        out.functions.push_back(std::move(module.functions[item.index]));
        out.order.push_back({item.kind, out.functions.size() - 1});
      } else if (item.kind == ptx::TopLevelKind::kVariable) {
        if (!live.count(module.variables[item.index].name)) {
          ++removed;
          continue;
        }
        out.variables.push_back(std::move(module.variables[item.index]));
        out.order.push_back({item.kind, out.variables.size() - 1});
      } else {
        out.verbatim.push_back(std::move(module.verbatim[item.index]));
        out.order.push_back({item.kind, out.verbatim.size() - 1});
      }
    }
    module = std::move(out);
    log.note("keep-only", "removed " + std::to_string(removed) +
                              " function(s) and variable(s) the kept kernels do "
                              "not use");
    return {};
  }

 private:
  std::vector<std::string> kernels_;
};

Expected<std::unique_ptr<Pass>> makeVertical(const PassOptions& o) {
  KFUSE_RETURN_IF_ERROR(o.checkKnown("fuse-vertical", {"kernels", "name", "equal", "forward", "drop", "disjoint"}));
  VerticalFusion spec;
  spec.kernels = o.list("kernels");
  if (spec.kernels.size() < 2) return invalidArgument("kernels=A+B[+C...] names at least two kernels");
  spec.fused_name = o.get("name");
  KFUSE_ASSIGN_OR_RETURN(spec.equal_args, parseEqualities(o.list("equal")));
  KFUSE_ASSIGN_OR_RETURN(spec.forward_stores, o.flag("forward", true));
  KFUSE_ASSIGN_OR_RETURN(spec.params_disjoint, o.flag("disjoint", false));
  for (const std::string& d : o.list("drop")) {
    KFUSE_ASSIGN_OR_RETURN(ArgRef r, parseArgRef(d));
    spec.drop_stores.push_back(r);
  }
  return makeFusionPass(std::move(spec));
}

Expected<std::unique_ptr<Pass>> makeHorizontal(const PassOptions& o) {
  KFUSE_RETURN_IF_ERROR(o.checkKnown("fuse-horizontal", {"kernels", "name", "equal", "layout", "shapes"}));
  HorizontalFusion spec;
  spec.kernels = o.list("kernels");
  if (spec.kernels.size() < 2) return invalidArgument("kernels=A+B[+C...] names at least two kernels");
  spec.fused_name = o.get("name");
  KFUSE_ASSIGN_OR_RETURN(spec.equal_args, parseEqualities(o.list("equal")));
  const std::string layout = o.get("layout", "block");
  if (layout == "block") {
    spec.layout = HorizontalLayout::kBlockPartitioned;
  } else if (layout == "thread") {
    spec.layout = HorizontalLayout::kThreadPartitioned;
  } else {
    return invalidArgument("layout=" + layout + ": expected block or thread");
  }
  for (const std::string& s : o.list("shapes")) {
    KFUSE_ASSIGN_OR_RETURN(core::LaunchShape shape, parseShape(s));
    spec.shapes.push_back(shape);
  }
  if (spec.shapes.size() != spec.kernels.size()) {
    return invalidArgument("shapes=GRID/BLOCK+... gives one launch shape per kernel (e.g. shapes=64/256+32x2/128)");
  }
  return makeFusionPass(std::move(spec));
}

// The element map both element-remapped kinds share: where element e of the intermediate is.
struct ElementMapOptions {
  int producer_param = -1, consumer_param = -1;
  int64_t offset = 0;
  uint32_t element_bytes = 0;
};
Expected<ElementMapOptions> parseElementMap(const PassOptions& o) {
  ElementMapOptions m;
  if (o.get("producer-param").empty() || o.get("consumer-param").empty() || o.get("element-bytes").empty()) {
    return invalidArgument(
        "producer-param=N, consumer-param=N and element-bytes=N say where element e of the "
        "intermediate is (kfuse analyze --json gives them in the candidate's \"epilogue\")");
  }
  KFUSE_ASSIGN_OR_RETURN(m.producer_param, parseIndex(o.get("producer-param"), "parameter position"));
  KFUSE_ASSIGN_OR_RETURN(m.consumer_param, parseIndex(o.get("consumer-param"), "parameter position"));
  KFUSE_ASSIGN_OR_RETURN(int bytes, parseIndex(o.get("element-bytes"), "element size in bytes"));
  if (bytes == 0) return invalidArgument("element-bytes=0: expected the intermediate's element size");
  m.element_bytes = static_cast<uint32_t>(bytes);
  const std::string off = o.get("offset", "0");
  auto [end, ec] = std::from_chars(off.data(), off.data() + off.size(), m.offset);
  if (ec != std::errc() || end != off.data() + off.size()) return invalidArgument("offset=" + off + ": not a number");
  return m;
}

Expected<std::unique_ptr<Pass>> makeEpilogue(const PassOptions& o) {
  KFUSE_RETURN_IF_ERROR(o.checkKnown(
      "fuse-epilogue", {"producer", "consumers", "name", "equal", "producer-param", "consumer", "consumer-param",
                        "offset", "element-bytes", "shape", "element-per-thread", "producer-element-per-thread"}));
  EpilogueFusion spec;
  spec.producer = o.get("producer");
  spec.consumers = o.list("consumers");
  if (spec.producer.empty() || spec.consumers.empty()) {
    return invalidArgument("producer=P and consumers=C[+D...] name the kernels");
  }
  spec.fused_name = o.get("name");
  KFUSE_ASSIGN_OR_RETURN(spec.equal_args, parseEqualities(o.list("equal")));
  KFUSE_ASSIGN_OR_RETURN(ElementMapOptions m, parseElementMap(o));
  spec.producer_param = m.producer_param;
  spec.consumer_param = m.consumer_param;
  spec.consumer_offset = m.offset;
  spec.element_bytes = m.element_bytes;
  KFUSE_ASSIGN_OR_RETURN(spec.consumer, parseIndex(o.get("consumer", "1"), "kernel position"));
  if (o.get("shape").empty()) return invalidArgument("shape=GRID/BLOCK is the consumers' launch (e.g. 64/256)");
  KFUSE_ASSIGN_OR_RETURN(spec.consumer_shape, parseShape(o.get("shape")));
  KFUSE_ASSIGN_OR_RETURN(spec.element_per_thread, o.flag("element-per-thread", false));
  KFUSE_ASSIGN_OR_RETURN(spec.producer_element_per_thread, o.flag("producer-element-per-thread", false));
  return makeFusionPass(std::move(spec));
}

Expected<std::unique_ptr<Pass>> makePrologue(const PassOptions& o) {
  KFUSE_RETURN_IF_ERROR(o.checkKnown(
      "fuse-prologue",
      {"producer", "consumer", "name", "equal", "producer-param", "consumer-param", "offset", "element-bytes", "lanes",
       "producer-shape", "consumer-shape", "write-intermediate", "element-per-thread"}));
  PrologueFusion spec;
  spec.producer = o.get("producer");
  spec.consumer = o.get("consumer");
  if (spec.producer.empty() || spec.consumer.empty()) {
    return invalidArgument("producer=P and consumer=C name the kernels");
  }
  spec.fused_name = o.get("name");
  KFUSE_ASSIGN_OR_RETURN(spec.equal_args, parseEqualities(o.list("equal")));
  KFUSE_ASSIGN_OR_RETURN(ElementMapOptions m, parseElementMap(o));
  spec.producer_param = m.producer_param;
  spec.consumer_param = m.consumer_param;
  spec.consumer_offset = m.offset;
  spec.element_bytes = m.element_bytes;
  KFUSE_ASSIGN_OR_RETURN(int lanes, parseIndex(o.get("lanes", "1"), "lane count"));
  spec.producer_lanes = static_cast<uint32_t>(lanes);
  if (o.get("producer-shape").empty() || o.get("consumer-shape").empty()) {
    return invalidArgument("producer-shape=GRID/BLOCK and consumer-shape=GRID/BLOCK are the two launches");
  }
  KFUSE_ASSIGN_OR_RETURN(spec.producer_shape, parseShape(o.get("producer-shape")));
  KFUSE_ASSIGN_OR_RETURN(spec.consumer_shape, parseShape(o.get("consumer-shape")));
  KFUSE_ASSIGN_OR_RETURN(spec.write_intermediate, o.flag("write-intermediate", true));
  KFUSE_ASSIGN_OR_RETURN(spec.element_per_thread, o.flag("element-per-thread", false));
  return makeFusionPass(std::move(spec));
}

Expected<std::unique_ptr<Pass>> makeBlockLevel(const PassOptions& o) {
  KFUSE_RETURN_IF_ERROR(o.checkKnown("fuse-block-level", {"kernels", "name", "equal"}));
  VerticalFusion spec;
  spec.kernels = o.list("kernels");
  if (spec.kernels.size() != 2) return invalidArgument("kernels=P+C names the producer and the consumer");
  spec.fused_name = o.get("name");
  KFUSE_ASSIGN_OR_RETURN(spec.equal_args, parseEqualities(o.list("equal")));
  spec.block_barrier = true;
  spec.forward_stores = false;
  return makeFusionPass(std::move(spec));
}

Expected<std::unique_ptr<Pass>> makeCleanup(const PassOptions& o) {
  KFUSE_RETURN_IF_ERROR(o.checkKnown("cleanup", {"kernels", "params"}));
  KFUSE_ASSIGN_OR_RETURN(bool params, o.flag("params", false));
  return makeCleanupPass(o.list("kernels"), params);
}

Expected<std::unique_ptr<Pass>> makeKeepOnly(const PassOptions& o) {
  KFUSE_RETURN_IF_ERROR(o.checkKnown("keep-only", {"kernels"}));
  if (o.list("kernels").empty()) return invalidArgument("kernels=A[+B...] names the kernels to keep");
  return makeKeepOnlyPass(o.list("kernels"));
}

}  // namespace

std::unique_ptr<Pass> makeFusionPass(VerticalFusion spec) {
  const std::string_view name = spec.block_barrier ? "fuse-block-level" : "fuse-vertical";
  return std::make_unique<VerticalPass>(std::move(spec), name, kVerticalAnalyses);
}
std::unique_ptr<Pass> makeFusionPass(HorizontalFusion spec) {
  return std::make_unique<HorizontalPass>(std::move(spec));
}
std::unique_ptr<Pass> makeFusionPass(EpilogueFusion spec) {
  return std::make_unique<EpiloguePass>(std::move(spec), "fuse-epilogue", kElementAnalyses);
}
std::unique_ptr<Pass> makeFusionPass(PrologueFusion spec) {
  return std::make_unique<ProloguePass>(std::move(spec), "fuse-prologue", kElementAnalyses);
}
std::unique_ptr<Pass> makeCleanupPass(std::vector<std::string> kernels, bool remove_params) {
  return std::make_unique<CleanupPass>(std::move(kernels), remove_params);
}
std::unique_ptr<Pass> makeKeepOnlyPass(std::vector<std::string> kernels) {
  return std::make_unique<KeepOnlyPass>(std::move(kernels));
}

const std::vector<PassInfo>& passRegistry() {
  static const std::vector<PassInfo> kPasses = {
      {"fuse-vertical",
       "Fuse a chain of kernels into one entry that runs each kernel's body for the same thread, in order",
       "kernels=A+B[+C] (required), name=FUSED, equal=K.P=K.P[+...] (arguments equal at every launch: one "
       "parameter), forward=true|false (store-to-load forwarding, default true), disjoint=true|false (distinct "
       "pointer parameters never overlap), drop=K.P[+...] (intermediates whose stores are removed)",
       makeVertical},
      {"fuse-horizontal", "Fuse independent kernels into one launch, partitioned by blocks or by threads of each block",
       "kernels=A+B[+C] (required), shapes=GRID/BLOCK+... (required, e.g. 64/256+32x2/128), layout=block|thread, "
       "name=FUSED, equal=K.P=K.P[+...]",
       makeHorizontal},
      {"fuse-block-level",
       "Fuse a producer and a consumer of one launch shape per block: the producer's body, a block barrier, then "
       "the consumer's (each consumer block touches only what its own producer block touched)",
       "kernels=P+C (required), name=FUSED, equal=K.P=K.P[+...]", makeBlockLevel},
      {"fuse-epilogue",
       "Run element-wise consumers inside the producer's launch, each as the consumer thread of the element the "
       "producer's thread has just stored",
       "producer=P, consumers=C[+D] (required), producer-param=N, consumer-param=N, element-bytes=N, shape=GRID/BLOCK "
       "(the consumers' launch; required), consumer=K (the pattern position whose argument locates the "
       "intermediate, default 1), offset=BYTES (element 0's offset from that argument, default 0), "
       "element-per-thread=true|false (grid-stride consumers run once per element, shape= then the element view's "
       "launch; default false), producer-element-per-thread=true|false (a grid-stride producer runs once per "
       "element; the fused kernel is then launched as that view; default false), name=FUSED, equal=K.P=K.P[+...]",
       makeEpilogue},
      {"fuse-prologue",
       "Recompute an element-wise producer at each of the consumer's loads of its output, in the consumer's launch",
       "producer=P, consumer=C, producer-param=N, consumer-param=N, element-bytes=N, producer-shape=GRID/BLOCK, "
       "consumer-shape=GRID/BLOCK (required), offset=BYTES (default 0), lanes=1|2|4 (elements each producer thread "
       "stores, default 1), write-intermediate=true|false (default true), element-per-thread=true|false (a grid-stride "
       "producer runs once per element, producer-shape= then the element view's launch; default false), name=FUSED, "
       "equal=K.P=K.P[+...]",
       makePrologue},
      {"cleanup", "Remove dead code, branches to the next statement, unused declarations (and unused parameters)",
       "kernels=A[+B] (default: every kernel), params=true|false (also remove unused parameters; changes the "
       "signature, default false)",
       makeCleanup},
      {"keep-only", "Keep only the named kernels and the functions and variables they use", "kernels=A[+B] (required)",
       makeKeepOnly},
  };
  return kPasses;
}

const PassInfo* findPass(std::string_view name) {
  for (const PassInfo& p : passRegistry()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace kfuse::rewriter
