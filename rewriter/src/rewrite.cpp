// The rewrite driver: a proven candidate of a report becomes a plan directory. See rewrite.h for the steps.
#include "kfuse/rewriter/rewrite.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "kfuse/core/files.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/fatbin.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/ptx/ptxas.h"
#include "kfuse/rewriter/fusion.h"
#include "kfuse/rewriter/pass.h"
#include "kfuse/rewriter/resources.h"

namespace kfuse::rewriter {
namespace {

namespace fs = std::filesystem;
using analyzer::Candidate;
using analyzer::CandidateKind;

// One kernel of the pattern, as the trace and the PTX describe it.
struct PatternKernel {
  const core::KernelFunction* function = nullptr;
  const core::Module* module = nullptr;
  std::string ptx_text;                             // the whole module the kernel is defined in
  size_t source_module = 0;                         // index among the distinct modules (merge input)
  std::string entry;                                // the kernel's name in the merged module
  const ptx::Function* original = nullptr;          // in the parsed source module
  std::shared_ptr<ptx::FunctionAnalyses> analyses;  // of `original`, computed once, shared by every question
};

void progress(const RewriteOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

std::string imageText(const core::Module& m) {
  return std::string(reinterpret_cast<const char*>(m.image.data()), m.image.size());
}

// The PTX text of the module defining `mangled`: the trace's image (PTX, or a PTX entry of a fatbin), else the
// application's fatbin when `binary` is given.
Expected<std::string> ptxForKernel(const core::Module& m, const std::string& mangled, const std::string& binary) {
  auto fromFatbin = [&](std::span<const uint8_t> bytes, const std::string& what) -> Expected<std::string> {
    auto entries = ptx::listEntries(bytes);
    if (!entries.ok()) return entries.status().withContext(what);
    const ptx::FatbinEntry* best = nullptr;
    for (const ptx::FatbinEntry& e : *entries) {
      if (e.kind != ptx::EntryKind::kPtx) continue;
      if (std::find(e.kernels.begin(), e.kernels.end(), mangled) == e.kernels.end()) continue;
      if (!best || e.arch > best->arch) best = &e;
    }
    if (!best) return notFound(what + " holds no PTX for kernel '" + mangled + "'");
    return ptx::extractEntry(bytes, *best);
  };
  if (!m.image.empty() && m.kind == core::ImageKind::kPtx) return imageText(m);
  if (!m.image.empty() && m.kind == core::ImageKind::kFatbin) {
    auto text = fromFatbin(std::span<const uint8_t>(m.image.data(), m.image.size()), "module " + std::to_string(m.id));
    if (text.ok() || binary.empty()) return text;
  }
  if (binary.empty()) {
    return notFound("the trace holds no PTX for kernel '" + mangled + "' (module " + std::to_string(m.id) + " is " +
                    (m.image.empty() ? std::string("not captured") : "a " + std::string(core::toString(m.kind))) +
                    "); pass --binary APP to take it from the application's fatbin");
  }
  auto bytes = ptx::readBinaryFile(binary);
  if (!bytes.ok()) return bytes.status();
  return fromFatbin(std::span<const uint8_t>(bytes->data(), bytes->size()), binary);
}

std::vector<uint8_t> argBytes(const core::Launch& l, const core::KernelParam& p) {
  const size_t off = static_cast<size_t>(std::max(0, p.offset));
  const size_t size = static_cast<size_t>(std::max(0, p.size));
  if (off + size > l.arg_bytes.size()) return {};
  return {l.arg_bytes.begin() + static_cast<std::ptrdiff_t>(off),
          l.arg_bytes.begin() + static_cast<std::ptrdiff_t>(off + size)};
}

const core::PointerArg* pointerArg(const core::Launch& l, int param) {
  for (const core::PointerArg& p : l.pointer_args) {
    if (p.param_index == param && p.field_offset < 0) return &p;
  }
  return nullptr;
}

std::string archOf(const core::GpuSpec& gpu) {
  return "sm_" + std::to_string(gpu.cc_major) + std::to_string(gpu.cc_minor);
}

Status writeText(const fs::path& path, const std::string& text) {
  return core::writeFileAtomically(path.string(), text);
}

// The element type of the accesses through each pointer parameter of `f`: "f32", "u32"...; "" when unknown.
std::vector<std::string> elementTypes(ptx::FunctionAnalyses& fa) {
  const ptx::Function& f = fa.function();
  std::vector<std::string> out(f.params.size());
  for (const ptx::MemoryAccess& a : fa.memoryAccesses()) {
    if (a.base_param < 0 || static_cast<size_t>(a.base_param) >= out.size() || !out[a.base_param].empty()) continue;
    const ptx::DataType t = f.body[a.stmt].inst.type();
    std::string_view name = ptx::typeName(t);
    if (!name.empty()) out[static_cast<size_t>(a.base_param)] = std::string(name.substr(1));
  }
  return out;
}

class Rewriter {
 public:
  Rewriter(const analyzer::ImportResult& input, const analyzer::Report& report, const Candidate& c,
           const RewriteOptions& options, RewriteDiagnostics* diagnostics)
      : trace_(input.trace), report_(report), c_(c), options_(options), diagnostics_(diagnostics) {}

  Expected<Plan> run(const std::string& plan_dir) {
    if (c_.legality != analyzer::Legality::kProven) {
      std::string why = c_.reasons.empty() ? std::string("no reason recorded") : c_.reasons.front();
      // Without PTX nothing can be proven: say how to get it.
      for (core::Id fid : c_.function_ids) {
        for (const core::KernelFunction& f : trace_.functions) {
          if (f.id != fid) continue;
          for (const core::Module& m : trace_.modules) {
            if (m.id != f.module_id || (!m.image.empty() && m.kind != core::ImageKind::kCubin)) continue;
            why += " (the trace holds no PTX for '" + f.mangled_name +
                   "': pass --binary APP to take it from the application's fatbin)";
            break;
          }
          break;
        }
        if (why.find("--binary") != std::string::npos) break;
      }
      return unsupported("candidate " + std::to_string(c_.rank) + " is " + analyzer::legalityName(c_.legality) +
                         ", not proven: " + why + " — kfuse rewrites proven candidates only");
    }
    if (c_.occurrence_launches.empty() || c_.occurrence_launches.front().size() != c_.function_ids.size()) {
      return invalidArgument("candidate " + std::to_string(c_.rank) + " lists no launches to rewrite");
    }
    KFUSE_RETURN_IF_ERROR(loadKernels());
    KFUSE_RETURN_IF_ERROR(collectArguments());
    KFUSE_RETURN_IF_ERROR(fuse());
    KFUSE_RETURN_IF_ERROR(compileAll(plan_dir));
    KFUSE_RETURN_IF_ERROR(repredict());
    buildPlan();
    return writeAndValidate(plan_dir);
  }

 private:
  const core::Launch& launch(size_t occurrence, size_t k) const {
    return *launches_.at(c_.occurrence_launches[occurrence][k]);
  }

  // What a record of the pattern is called in messages: a launch, or a kernel node of a graph.
  std::string recordName(const core::Launch& l) const {
    return (c_.inGraphs() ? "graph node " : "launch ") + std::to_string(l.id);
  }

  // The records the pattern's kernels are read from: the trace's launches, or for a candidate over CUDA graph nodes
  // (occurrence_launches then hold graph node ids) a launch per kernel node, so that everything after this reads
  // both alike.
  Status indexOccurrences() {
    if (!c_.inGraphs()) {
      for (const core::Launch& l : trace_.launches) launches_[l.id] = &l;
      for (const auto& occ : c_.occurrence_launches) {
        for (core::Id id : occ) {
          if (!launches_.count(id)) return badFormat("the trace has no launch " + std::to_string(id));
        }
      }
      return {};
    }
    std::map<core::Id, const core::GraphNode*> nodes;
    for (const core::GraphNode& n : trace_.graph_nodes) nodes[n.id] = &n;
    for (const auto& occ : c_.occurrence_launches) {
      for (core::Id id : occ) {
        auto it = nodes.find(id);
        if (it == nodes.end()) return badFormat("the trace has no graph node " + std::to_string(id));
        if (it->second->type != core::GraphNodeType::kKernel || it->second->function_id == core::kNoId) {
          return badFormat("graph node " + std::to_string(id) + " of candidate " + std::to_string(c_.rank) +
                           " is not a kernel node with a recorded function");
        }
        if (!launches_.count(id)) node_launches_.push_back(it->second->launch(id));
        launches_[id] = nullptr;
      }
    }
    for (const core::Launch& l : node_launches_) launches_[l.id] = &l;  // node_launches_ has stopped growing
    return {};
  }

  Status loadKernels() {
    KFUSE_RETURN_IF_ERROR(indexOccurrences());
    std::map<std::string, size_t> module_index;  // hash -> distinct module
    for (size_t k = 0; k < c_.function_ids.size(); ++k) {
      PatternKernel pk;
      for (const core::KernelFunction& f : trace_.functions) {
        if (f.id == c_.function_ids[k]) pk.function = &f;
      }
      if (!pk.function) return badFormat("the trace has no function " + std::to_string(c_.function_ids[k]));
      for (const core::Module& m : trace_.modules) {
        if (m.id == pk.function->module_id) pk.module = &m;
      }
      if (!pk.module) return notFound("the trace names no module for kernel '" + pk.function->mangled_name + "'");
      auto [it, added] = module_index.emplace(pk.module->hash, sources_.size());
      if (added) {
        progress(options_, "reading the PTX of module " + pk.module->hash.substr(0, 12));
        auto text = ptxForKernel(*pk.module, pk.function->mangled_name, options_.binary);
        if (!text.ok()) return text.status();
        auto parsed = ptx::parseModule(*text, "module " + pk.module->hash.substr(0, 12));
        if (!parsed.ok()) return parsed.status();
        source_texts_.push_back(std::move(text).value());
        sources_.push_back(std::move(parsed).value());
      }
      pk.source_module = it->second;
      pk.ptx_text = source_texts_[pk.source_module];
      pk.original = sources_[pk.source_module].findFunction(pk.function->mangled_name);
      if (!pk.original) {
        return notFound("module " + pk.module->hash.substr(0, 12) + " does not define kernel '" +
                        pk.function->mangled_name + "'");
      }
      kernels_.push_back(pk);
    }
    // Only now: the analyses keep a pointer to their module, and sources_ has stopped growing.
    for (PatternKernel& k : kernels_) {
      k.analyses = std::make_shared<ptx::FunctionAnalyses>(&sources_[k.source_module], *k.original);
    }
    return {};
  }

  // Equal arguments, buffers and argument sets from the recorded launches.
  Status collectArguments() {
    const size_t n = kernels_.size();
    struct Ref {
      ArgRef ref;
      size_t size;
    };
    std::vector<Ref> refs;
    for (size_t k = 0; k < n; ++k) {
      for (const core::KernelParam& p : kernels_[k].function->params) {
        refs.push_back({{static_cast<int>(k), p.index}, static_cast<size_t>(p.size)});
      }
    }
    for (size_t occ = 0; occ < c_.occurrence_launches.size(); ++occ) {
      for (size_t k = 0; k < n; ++k) {
        const core::Launch& l = launch(occ, k);
        if (l.arg_bytes.empty() && !kernels_[k].function->params.empty()) {
          return unsupported(recordName(l) + " of '" + kernels_[k].function->mangled_name +
                             "' has no recorded argument values; re-record the application with `kfuse record`");
        }
      }
    }
    auto value = [&](size_t occ, ArgRef r) {
      const core::Launch& l = launch(occ, static_cast<size_t>(r.kernel));
      return argBytes(l, kernels_[static_cast<size_t>(r.kernel)].function->params[static_cast<size_t>(r.param)]);
    };
    // Two arguments are one parameter of the fused kernel when they are equal at every occurrence. Horizontal
    // parts share nothing but buffers: merging scalars that merely happened to be equal in the recorded launches
    // (two kernels' float factors, say) would pin them with an arg_equal predicate the program need not keep.
    // Pointers are merged for every kind: the no-overlap guard is built on the merged classes.
    auto is_pointer = [&](const Ref& r) {
      return pointerArg(launch(0, static_cast<size_t>(r.ref.kernel)), r.ref.param) != nullptr;
    };
    const bool merge_pointers_only = c_.kind == CandidateKind::kHorizontal;
    std::vector<int> cls(refs.size(), -1);
    for (size_t i = 0; i < refs.size(); ++i) {
      if (cls[i] >= 0) continue;
      cls[i] = static_cast<int>(i);
      if (merge_pointers_only && !is_pointer(refs[i])) continue;
      for (size_t j = i + 1; j < refs.size(); ++j) {
        if (cls[j] >= 0 || refs[j].size != refs[i].size || refs[j].ref.kernel == refs[i].ref.kernel) continue;
        if (merge_pointers_only && !is_pointer(refs[j])) continue;
        bool equal = true;
        for (size_t occ = 0; occ < c_.occurrence_launches.size() && equal; ++occ) {
          equal = value(occ, refs[i].ref) == value(occ, refs[j].ref);
        }
        if (equal) {
          cls[j] = static_cast<int>(i);
          equal_args_.emplace_back(refs[i].ref, refs[j].ref);
        }
      }
    }
    // Pointer classes in distinct allocations at every occurrence: then stores through one never alias another.
    disjoint_ = true;
    for (size_t occ = 0; occ < c_.occurrence_launches.size(); ++occ) {
      std::map<core::Id, int> owner;  // allocation -> class
      for (size_t i = 0; i < refs.size(); ++i) {
        const core::PointerArg* p = pointerArg(launch(occ, static_cast<size_t>(refs[i].ref.kernel)), refs[i].ref.param);
        if (!p || p->allocation_id == core::kNoId) continue;
        auto [it, added] = owner.emplace(p->allocation_id, cls[i]);
        if (!added && it->second != cls[i]) disjoint_ = false;
      }
    }

    // Argument sets: occurrences with distinct argument values.
    std::set<std::vector<std::vector<uint8_t>>> seen;
    for (size_t occ = 0; occ < c_.occurrence_launches.size() && sets_.size() < options_.max_argument_sets; ++occ) {
      std::vector<std::vector<uint8_t>> key;
      for (const Ref& r : refs) key.push_back(value(occ, r.ref));
      if (!seen.insert(key).second) continue;
      KFUSE_ASSIGN_OR_RETURN(ArgumentSet set, argumentSet(occ));
      sets_.push_back(std::move(set));
    }
    // Only recorded argument sets: a proof holds for the values it was checked on, which the plan pins (every
    // argument that influences an access, sizes included), so other sizes would test launches the injector never
    // makes.
    return {};
  }

  Expected<ArgumentSet> argumentSet(size_t occ) {
    ArgumentSet set;
    set.origin = c_.inGraphs() ? "graph nodes" : "launches";
    std::map<core::Id, int> buffer_of;
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const core::Launch& l = launch(occ, k);
      set.origin += (k ? ", " : " ") + std::to_string(l.id);
      set.shapes.push_back(l.shape());
      std::vector<ArgValue>& args = set.args.emplace_back();
      for (const core::KernelParam& p : kernels_[k].function->params) {
        ArgValue v;
        const core::PointerArg* ptr = pointerArg(l, p.index);
        if (ptr && ptr->allocation_id != core::kNoId) {
          const core::Allocation* a = nullptr;
          for (const core::Allocation& x : trace_.allocations) {
            if (x.id == ptr->allocation_id) a = &x;
          }
          if (!a)
            return badFormat(recordName(l) + " points into allocation " + std::to_string(ptr->allocation_id) +
                             ", which the trace does not have");
          auto [it, added] = buffer_of.emplace(a->id, static_cast<int>(set.buffer_bytes.size()));
          if (added) set.buffer_bytes.push_back(a->size);
          v.pointer = true;
          v.buffer = it->second;
          v.offset = ptr->offset;
        } else {
          v.bytes = argBytes(l, p);
          if (ptr && ptr->address != 0) {
            return unsupported("argument " + std::to_string(p.index) + " of " + recordName(l) +
                               " points outside every recorded allocation: its buffer cannot be recreated for "
                               "validation");
          }
        }
        args.push_back(std::move(v));
      }
    }
    return set;
  }

  // Whether the buffer behind argument `r` is dead after every occurrence: the next thing that touches its
  // allocation overwrites it without reading (or nothing touches it again).
  // Per allocation: the launches that pass a pointer into it (in id order) and the start times of copies out of it
  // (sorted; kNoTime first). Built once: a trace can have millions of launches and many occurrences.
  void indexAllocationUses() {
    if (indexed_) return;
    indexed_ = true;
    for (const core::Launch& x : trace_.launches) {
      for (const core::PointerArg& a : x.pointer_args) {
        if (a.allocation_id == core::kNoId) continue;
        auto& v = touching_[a.allocation_id];
        if (v.empty() || v.back() != &x) v.push_back(&x);
      }
    }
    for (auto& [id, v] : touching_) {
      std::sort(v.begin(), v.end(), [](const core::Launch* a, const core::Launch* b) { return a->id < b->id; });
    }
    for (const core::Memcpy& m : trace_.memcpys) {
      if (m.src_allocation_id != core::kNoId) copied_out_[m.src_allocation_id].push_back(m.api_start_ns);
    }
    for (auto& [id, v] : copied_out_) std::sort(v.begin(), v.end());
  }

  bool deadAfterEveryOccurrence(ArgRef r) {
    // A graph's next replay, and what the program does between replays, are not in the launch order this reads:
    // a buffer a graph node writes is kept.
    if (c_.inGraphs()) return false;
    indexAllocationUses();
    for (size_t occ = 0; occ < c_.occurrence_launches.size(); ++occ) {
      const core::Launch& producer = launch(occ, static_cast<size_t>(r.kernel));
      const core::PointerArg* p = pointerArg(producer, r.param);
      if (!p || p->allocation_id == core::kNoId) return false;
      const core::Launch& first = launch(occ, 0);
      const core::Launch& last = launch(occ, kernels_.size() - 1);
      // The first later launch touching the allocation decides.
      const auto& uses = touching_[p->allocation_id];
      auto it = std::upper_bound(uses.begin(), uses.end(), last.id,
                                 [](core::Id id, const core::Launch* x) { return id < x->id; });
      const core::Launch* next = it == uses.end() ? nullptr : *it;
      // A copy out of the allocation from the pattern's start until that launch reads what is no longer stored.
      if (auto c = copied_out_.find(p->allocation_id); c != copied_out_.end()) {
        if (first.api_start_ns == core::kNoTime || c->second.front() == core::kNoTime) return false;
        const int64_t until = next && next->api_start_ns != core::kNoTime ? next->api_start_ns : INT64_MAX;
        auto copy = std::upper_bound(c->second.begin(), c->second.end(), first.api_start_ns);
        if (copy != c->second.end() && *copy < until) return false;
        if (next && next->api_start_ns == core::kNoTime) return false;
      }
      if (!next) continue;
      // Only the producer launched again with the very same arguments counts as a whole overwrite: it writes every
      // element it wrote before (a smaller size, say, would leave stale elements a later kernel might read).
      if (next->function_id != producer.function_id || next->arg_bytes != producer.arg_bytes ||
          next->grid != producer.grid || next->block != producer.block) {
        return false;
      }
    }
    return true;
  }

  Status fuse() {
    std::vector<Rename> renames;
    auto merged = mergeModules(sources_, &renames);
    if (!merged.ok()) return merged.status();
    merged_ = std::move(merged).value();
    for (PatternKernel& k : kernels_) {
      k.entry = k.function->mangled_name;
      for (const Rename& r : renames) {
        if (r.module == k.source_module && r.from == k.entry) k.entry = r.to;
      }
    }
    std::vector<std::string> entries;
    std::string joined;
    for (const PatternKernel& k : kernels_) {
      entries.push_back(k.entry);
      joined += k.function->mangled_name + ";";
    }
    const bool epilogue = c_.fusion == analyzer::FusionKind::kEpilogue;
    const bool prologue = c_.fusion == analyzer::FusionKind::kPrologue;
    const char* kind = epilogue                              ? "epilogue"
                       : prologue                            ? "prologue"
                       : c_.kind == CandidateKind::kVertical ? "vertical"
                                                             : "horizontal";
    fused_name_ = "kfuse_" + std::string(kind) + "_" +
                  core::sha256Hex(reinterpret_cast<const uint8_t*>(joined.data()), joined.size()).substr(0, 12);
    if (prologue) {
      if (!c_.epilogue || kernels_.size() != 2)
        return unsupported("the prologue candidate carries no proven element map");
      PrologueFusion spec;
      spec.producer = entries[0];
      spec.consumer = entries[1];
      spec.fused_name = fused_name_;
      spec.equal_args = equal_args_;
      spec.producer_param = c_.epilogue->producer_param;
      spec.consumer_param = c_.epilogue->consumer_param;
      spec.consumer_offset = c_.epilogue->consumer_offset;
      spec.element_bytes = c_.epilogue->element_bytes;
      spec.producer_lanes = c_.epilogue->producer_lanes;
      spec.producer_shape = launch(0, 0).shape();
      spec.consumer_shape = launch(0, 1).shape();
      if (c_.epilogue->element_grid != 0) {
        spec.element_per_thread = true;
        spec.producer_shape.grid.x = c_.epilogue->element_grid;
      }
      const ArgRef intermediate{0, spec.producer_param};
      spec.write_intermediate = !(options_.aggressive && deadAfterEveryOccurrence(intermediate));
      progress(options_, "recomputing the producer at the consumer's loads (prologue fusion)");
      KFUSE_RETURN_IF_ERROR(runPipeline(makeFusionPass(spec)));
      if (!spec.write_intermediate) {
        result_.dropped_buffers.push_back(intermediate);
        result_.dropped_stores = 1;
      }
      result_.shape = spec.consumer_shape;  // the consumer's launch
    } else if (epilogue) {
      if (!c_.epilogue) return unsupported("the epilogue candidate carries no proven element map");
      EpilogueFusion spec;
      spec.producer = entries.front();
      spec.consumers.assign(entries.begin() + 1, entries.end());
      spec.fused_name = fused_name_;
      spec.equal_args = equal_args_;
      spec.producer_param = c_.epilogue->producer_param;
      spec.consumer = c_.epilogue->consumer;
      spec.consumer_param = c_.epilogue->consumer_param;
      spec.consumer_offset = c_.epilogue->consumer_offset;
      spec.element_bytes = c_.epilogue->element_bytes;
      spec.consumer_shape = launch(0, 1).shape();
      if (c_.epilogue->element_grid != 0) {
        spec.element_per_thread = true;
        spec.consumer_shape.grid.x = c_.epilogue->element_grid;
      }
      spec.producer_element_per_thread = c_.epilogue->producer_grid != 0;
      progress(options_, "fusing " + std::to_string(entries.size() - 1) + " consumer(s) into the producer's epilogue");
      KFUSE_RETURN_IF_ERROR(runPipeline(makeFusionPass(spec)));
      result_.shape = launch(0, 0).shape();  // the producer's launch, or its element view's
      if (c_.epilogue->producer_grid != 0) result_.shape.grid.x = c_.epilogue->producer_grid;
    } else if (c_.kind == CandidateKind::kVertical) {
      VerticalFusion spec;
      spec.kernels = entries;
      spec.fused_name = fused_name_;
      spec.equal_args = equal_args_;
      spec.params_disjoint = disjoint_;
      spec.block_barrier = c_.fusion == analyzer::FusionKind::kBlockLevel;
      if (options_.aggressive && !spec.block_barrier) spec.drop_stores = deadIntermediates();
      progress(options_, "fusing " + std::to_string(entries.size()) + " kernels vertically" +
                             (spec.block_barrier ? " with a block barrier between them" : ""));
      KFUSE_RETURN_IF_ERROR(runPipeline(makeFusionPass(spec)));
      result_.shape = launch(0, 0).shape();  // every part runs in the launch shape they all share
      // ... with the dynamic shared memory of the hungriest part (the parts use it one after another).
      for (size_t k = 1; k < kernels_.size(); ++k) {
        result_.shape.dynamic_shared_bytes =
            std::max(result_.shape.dynamic_shared_bytes, launch(0, k).dynamic_shared_bytes);
      }
      // A part that reads the size of its dynamic shared memory would see the fused launch's instead of its own.
      for (size_t k = 0; k < kernels_.size(); ++k) {
        const uint32_t own = launch(0, k).dynamic_shared_bytes;
        if (own != result_.shape.dynamic_shared_bytes &&
            ptx::analyzeParamInfluence(*kernels_[k].original).reads_dynamic_shared_size) {
          return unsupported("'" + kernels_[k].function->mangled_name +
                             "' reads the size of its dynamic shared memory "
                             "(%dynamic_smem_size or %total_smem_size): launched with " +
                             std::to_string(own) + " bytes, it would see the fused launch's " +
                             std::to_string(result_.shape.dynamic_shared_bytes));
        }
      }
    } else {
      KFUSE_RETURN_IF_ERROR(fuseHorizontally(entries));
    }
    fused_ptx_ = "// Fused by kfuse: " + std::string(analyzer::candidateKindName(c_.kind)) + " fusion of candidate " +
                 std::to_string(c_.rank) + " (" + joinNames() + ")\n" + ptx::printModule(fused_module_);
    return {};
  }

  // The rewrite's pipeline over the merged module: the fusion pass (none when `fusion` is null: horizontal fusion
  // has run it while choosing a layout), the fused kernel's cleanup (dead code, parameters it no longer reads), and
  // then only the fused kernel and what it uses. Sets result_ (with the parameters kept) and fused_module_.
  Status runPipeline(std::unique_ptr<Pass> fusion) {
    PassManager pm;
    const bool fuses = fusion != nullptr;
    if (fusion) pm.add(std::move(fusion));
    pm.add(makeCleanupPass({fused_name_}, /*remove_params=*/true));
    pm.add(makeKeepOnlyPass({fused_name_}));
    KFUSE_RETURN_IF_ERROR(pm.run(merged_));
    if (fuses) result_ = pm.log().fusions.front();
    const std::vector<int>& kept = pm.log().kept_params.at(fused_name_);
    const size_t removed = result_.params.size() - kept.size();
    std::vector<FusedParam> params;
    for (int p : kept) params.push_back(result_.params[static_cast<size_t>(p)]);
    result_.params = std::move(params);
    if (removed > 0) {
      result_.notes.push_back("removed " + std::to_string(removed) + " parameter(s) the fused kernel no longer reads");
    }
    fused_module_ = std::move(merged_);
    return {};
  }

  std::vector<ArgRef> deadIntermediates() {
    // Buffers an earlier kernel writes that a later kernel reads: candidates for dropping.
    std::vector<ArgRef> out;
    for (size_t k = 0; k + 1 < kernels_.size(); ++k) {
      // Only pointers the kernel writes and never reads (the PTX says so): their old contents do not matter.
      for (const ptx::ParamAccess& a : kernels_[k].analyses->paramAccess()) {
        if (a.mode != ptx::AccessMode::kWrite) continue;
        const ArgRef r{static_cast<int>(k), a.index};
        const core::PointerArg* ptr = pointerArg(launch(0, k), a.index);
        if (!ptr || ptr->allocation_id == core::kNoId) continue;
        if (deadAfterEveryOccurrence(r)) out.push_back(r);
      }
    }
    return out;
  }

  Status fuseHorizontally(const std::vector<std::string>& entries) {
    HorizontalFusion spec;
    spec.kernels = entries;
    spec.fused_name = fused_name_;
    spec.equal_args = equal_args_;
    for (size_t k = 0; k < kernels_.size(); ++k) spec.shapes.push_back(launch(0, k).shape());
    std::vector<HorizontalLayout> layouts = {HorizontalLayout::kBlockPartitioned, HorizontalLayout::kThreadPartitioned};
    if (options_.layout) layouts = {*options_.layout};
    const std::string arch = archOf(report_.gpu);
    std::optional<double> best_waves;
    std::string refusals;
    for (HorizontalLayout layout : layouts) {
      ptx::Module trial = merged_;
      spec.layout = layout;
      PassManager pm;
      pm.add(makeFusionPass(spec));
      if (Status st = pm.run(trial); !st.ok()) {
        refusals += std::string(refusals.empty() ? "" : "; ") + horizontalLayoutName(layout) + ": " + st.message();
        continue;
      }
      FusionResult r = pm.log().fusions.front();
      // The layout with fewer waves of blocks on the GPU is predicted faster (the work per thread is the same).
      double waves = 0;
      auto res = compileResources(ptx::printForArch(trial, arch), arch);
      if (res.ok()) {
        for (KernelResources& kr : *res) {
          if (kr.kernel != fused_name_) continue;
          if (computeOccupancy(kr, static_cast<uint32_t>(r.shape.threads()), r.shape.dynamic_shared_bytes).ok() &&
              kr.occupancy > 0) {
            const double blocks_per_sm = kr.occupancy * 64.0 * 32.0 / static_cast<double>(r.shape.threads());
            waves = std::ceil(static_cast<double>(r.shape.blocks()) /
                              std::max(1.0, std::floor(blocks_per_sm) * std::max(1, report_.gpu.sm_count)));
          }
        }
      }
      r.notes.push_back(std::string(horizontalLayoutName(layout)) + ": " + std::to_string(r.shape.blocks()) +
                        " blocks of " + std::to_string(r.shape.threads()) + " threads, " +
                        std::to_string(static_cast<int64_t>(waves)) + " wave(s) on " + report_.gpu.short_name);
      if (!best_waves || waves < *best_waves) {
        best_waves = waves;
        result_ = std::move(r);
        layout_ = layout;
        chosen_ = std::move(trial);
      }
    }
    if (!best_waves) return unsupported("no horizontal layout applies: " + refusals);
    merged_ = std::move(chosen_);
    return runPipeline(nullptr);
  }

  std::string joinNames() const {
    std::string s;
    for (const PatternKernel& k : kernels_) {
      const std::string& name =
          k.function->demangled_name.empty() ? k.function->mangled_name : k.function->demangled_name;
      s += (s.empty() ? "" : c_.kind == CandidateKind::kVertical ? " -> " : " + ") + name;
    }
    return s;
  }

  Status compileAll(const std::string& plan_dir) {
    targets_ = {archOf(report_.gpu)};
    for (const std::string& a : options_.archs) {
      if (std::find(targets_.begin(), targets_.end(), a) == targets_.end()) targets_.push_back(a);
    }
    std::vector<std::string> compiled;
    for (const std::string& arch : targets_) {
      progress(options_, "ptxas -v -arch=" + arch);
      // The originals first: an architecture they cannot be built for is not one the fusion can be judged on.
      std::vector<KernelResources> originals;
      std::string original_problem;
      for (size_t m = 0; m < sources_.size() && original_problem.empty(); ++m) {
        auto orig = compileResources(ptx::printForArch(sources_[m], arch), arch);
        if (!orig.ok()) {
          original_problem = orig.status().message();
          break;
        }
        for (KernelResources& r : *orig) {
          for (size_t k = 0; k < kernels_.size(); ++k) {
            if (kernels_[k].source_module != m || r.kernel != kernels_[k].function->mangled_name) continue;
            const core::LaunchShape s = launch(0, k).shape();
            (void)computeOccupancy(r, static_cast<uint32_t>(s.threads()), s.dynamic_shared_bytes);
            originals.push_back(r);
            break;
          }
        }
      }
      if (!original_problem.empty()) {
        result_.notes.push_back("not compiled for " + arch + ": the original kernels do not build for it either (" +
                                original_problem.substr(0, 200) + ")");
        continue;
      }
      auto fused = compileResources(ptx::printForArch(fused_module_, arch), arch);
      if (!fused.ok()) {
        // Keep what ptxas rejected for inspection, outside the plan directory (which stays untouched).
        const fs::path kept =
            fs::path(plan_dir).parent_path() / (fs::path(plan_dir).filename().string() + ".rejected.ptx");
        (void)writeText(kept, ptx::printForArch(fused_module_, arch));
        if (diagnostics_) {
          diagnostics_->ptxas_log = fused.status().message();
          diagnostics_->kept_ptx = kept.string();
        }
        return unsupported("ptxas rejected the fused kernel for " + arch + " (the fused PTX is kept in " +
                           kept.string() + "): " + fused.status().message());
      }
      for (KernelResources& r : *fused) {
        if (r.kernel != fused_name_) continue;
        (void)computeOccupancy(r, static_cast<uint32_t>(result_.shape.threads()), result_.shape.dynamic_shared_bytes);
        resources_.push_back(r);
      }
      resources_.insert(resources_.end(), originals.begin(), originals.end());
      compiled.push_back(arch);
    }
    if (compiled.empty()) {
      return unsupported("the kernels compile for none of the target architectures (" +
                         (result_.notes.empty() ? std::string() : result_.notes.back()) + ")");
    }
    targets_ = compiled;
    return {};
  }

  // The analyzer predicted the saving before the fused kernel existed; with its occupancy on the trace's GPU known,
  // the prediction is redone (docs/analyzer.md, cost model rule 11) and a fusion predicted to lose is refused.
  Status repredict() {
    const std::string& arch = targets_.front();
    double fused = 0;
    std::vector<double> originals, times;
    for (const KernelResources& r : resources_) {
      if (r.arch != arch) continue;
      if (r.kernel == fused_name_) fused = r.occupancy;
    }
    for (size_t k = 0; k < kernels_.size(); ++k) {
      for (const KernelResources& r : resources_) {
        if (r.arch != arch || r.kernel != kernels_[k].function->mangled_name) continue;
        originals.push_back(r.occupancy);
        const int64_t d = launch(0, k).gpuDurationNs();
        times.push_back(d == core::kNoTime ? 0.0 : static_cast<double>(d));
        break;
      }
    }
    candidate_ = c_;
    const double before = analyzer::meanOccupancy(originals, times);
    if (fused <= 0 || before <= 0 || originals.size() != kernels_.size()) {
      result_.notes.push_back("occupancy on " + arch + " unknown: the analyzer's prediction is kept as it was");
      return {};
    }
    auto adjusted = analyzer::candidateWithOccupancy(c_, std::min(1.0, fused), std::min(1.0, before));
    if (!adjusted.ok()) return adjusted.status();
    candidate_ = std::move(adjusted).value();
    char line[256];
    std::snprintf(line, sizeof line,
                  "occupancy on %s: fused %.0f%%, originals %.0f%%; predicted saving %.0f ns per "
                  "occurrence (analyzer: %.0f ns)",
                  arch.c_str(), fused * 100, before * 100, candidate_.cost.saving_ns, c_.cost.saving_ns);
    result_.notes.push_back(line);
    // A candidate the analyzer already predicted to save nothing (listed with `--all`, rewritten on request with
    // --no-gain) is not made worse by occupancy: it stays a no-gain fusion, said so in the notes.
    if (candidate_.cost.saving_ns <= 0 && c_.cost.saving_ns <= 0 && candidate_.cost.fused_ns <= c_.cost.fused_ns) {
      result_.notes.push_back("predicted to save no time (as the analyzer said): rewritten because it was asked for");
      return {};
    }
    if (candidate_.cost.saving_ns <= 0) {
      return unsupported("the fused kernel is predicted to lose: " + std::string(line) +
                         "; kfuse does not rewrite fusions that make the application slower");
    }
    return {};
  }

  void buildPlan() {
    plan_.source_trace = report_.input_path;
    plan_.candidate_rank = c_.rank;
    // The candidate's kind decides horizontal or vertical; its fusion kind, which vertical fusion was built.
    if (c_.kind == CandidateKind::kHorizontal) {
      plan_.fusion = core::FusionKind::kHorizontal;
      plan_.layout = layout_;
    } else {
      plan_.fusion = c_.fusion == core::FusionKind::kHorizontal ? core::FusionKind::kThreadLocal : c_.fusion;
    }
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const PatternKernel& pk = kernels_[k];
      PlanKernel p;
      p.mangled_name = pk.function->mangled_name;
      p.module_hash = pk.module->hash;
      p.ptx_file = "originals/" + pk.module->hash.substr(0, 16) + ".ptx";
      p.shape = launch(0, k).shape();
      const std::vector<std::string> types = elementTypes(*pk.analyses);
      for (const core::KernelParam& kp : pk.function->params) {
        PlanParam pp;
        pp.index = kp.index;
        pp.offset = static_cast<uint32_t>(std::max(0, kp.offset));
        pp.size = static_cast<uint32_t>(std::max(0, kp.size));
        const core::PointerArg* ptr = pointerArg(launch(0, k), kp.index);
        pp.pointer = (ptr && ptr->allocation_id != core::kNoId) || kp.type == "ptr";
        if (pp.pointer) pp.access = kp.access;
        if (static_cast<size_t>(kp.index) < types.size()) pp.element_type = types[static_cast<size_t>(kp.index)];
        p.params.push_back(pp);
      }
      plan_.kernels.push_back(std::move(p));
    }
    Predicate same;
    same.kind = Predicate::Kind::kSameLaunchConfig;
    plan_.predicates.push_back(same);
    for (const auto& [a, b] : equal_args_) {
      Predicate p;
      p.kind = Predicate::Kind::kArgEqual;
      p.a = a;
      p.b = b;
      plan_.predicates.push_back(p);
    }
    // Distinct pointer parameters in distinct allocations: the injector checks they still do not overlap.
    if (disjoint_) {
      Predicate p;
      p.kind = Predicate::Kind::kNoOverlap;
      // Bytes: to the end of its allocation at the occurrence where that is least (layers of one weight tensor
      // sit at growing offsets). The injector uses them only where it does not know the allocation itself.
      for (const FusedParam& fp : result_.params) {
        const ArgRef r = fp.sources.front();
        const core::PointerArg* first = pointerArg(launch(0, static_cast<size_t>(r.kernel)), r.param);
        if (!first || first->allocation_id == core::kNoId) continue;
        std::optional<uint64_t> bytes;
        for (size_t occ = 0; occ < c_.occurrence_launches.size(); ++occ) {
          const core::PointerArg* ptr = pointerArg(launch(occ, static_cast<size_t>(r.kernel)), r.param);
          if (!ptr || ptr->allocation_id == core::kNoId) continue;
          for (const core::Allocation& a : trace_.allocations) {
            if (a.id != ptr->allocation_id) continue;
            const uint64_t to_end = a.size - std::min(a.size, ptr->offset);
            bytes = bytes ? std::min(*bytes, to_end) : to_end;
          }
        }
        if (!bytes) continue;
        p.buffers.push_back(r);
        p.bytes.push_back(*bytes);
      }
      if (p.buffers.size() >= 2) plan_.predicates.push_back(p);
    }
    if (!c_.checked.tuples.empty() && !c_.checked.tuples.front().empty()) {
      Predicate p;
      p.kind = Predicate::Kind::kProvenValues;
      for (const analyzer::ProofArgument& a : c_.checked.tuples.front()) {
        p.proof_args.push_back({{a.kernel, a.param},
                                a.what == analyzer::ProofValue::kPointerOffset,
                                a.what == analyzer::ProofValue::kAllocation});
      }
      for (const auto& tuple : c_.checked.tuples) {
        std::vector<int64_t>& values = p.tuples.emplace_back();
        for (const analyzer::ProofArgument& a : tuple) values.push_back(a.value);
      }
      plan_.predicates.push_back(p);
    }
    plan_.fused.name = fused_name_;
    plan_.fused.arch = targets_.front();
    plan_.fused.params = result_.params;
    plan_.fused.shape = result_.shape;
    plan_.fused.parts = result_.parts;
    plan_.targets = targets_;
    plan_.resources = resources_;
    plan_.aggressive = options_.aggressive;
    plan_.dropped_buffers = result_.dropped_buffers;
    plan_.prediction.gpu = report_.gpu.short_name;
    plan_.prediction.cost_model_version = report_.cost_model_version;
    plan_.prediction.measured_ns = candidate_.cost.measured_ns;
    plan_.prediction.fused_ns = candidate_.cost.fused_ns;
    plan_.prediction.saving_ns = candidate_.cost.saving_ns;
    plan_.prediction.occurrences = candidate_.occurrence_launches.size();
    plan_.prediction.total_saving_ns = candidate_.total_saving_ns;
    plan_.prediction.note = candidate_.cost.note;
    plan_.argument_sets = sets_;
    plan_.notes = result_.notes;
    if (c_.inGraphs()) {
      std::set<core::Id> graphs(c_.occurrence_graphs.begin(), c_.occurrence_graphs.end());
      std::string ids;
      for (core::Id g : graphs) ids += (ids.empty() ? "" : ", ") + std::to_string(g);
      plan_.notes.push_back("made from kernel nodes of CUDA graph" + std::string(graphs.size() == 1 ? " " : "s ") +
                            ids + " (" + std::to_string(c_.runs()) +
                            " replays): `kfuse run` fuses each matching node chain when a graph is instantiated");
    }
  }

  Expected<Plan> writeAndValidate(const std::string& plan_dir) {
    const fs::path dir(plan_dir);
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_empty(dir, ec) && !fs::exists(dir / "plan.json", ec)) {
      return invalidArgument(plan_dir + " exists and is not a kfuse plan directory; choose another -o");
    }
    const fs::path tmp = dir.parent_path() / (dir.filename().string() + ".kfuse-partial");
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp / "originals", ec);
    if (ec) return ioError("cannot create " + tmp.string() + ": " + ec.message());
    auto cleanupOnError = [&](Status s) {
      std::error_code ignored;
      fs::remove_all(tmp, ignored);
      return s;
    };
    for (const PatternKernel& k : kernels_) {
      Status s = writeText(tmp / ("originals/" + k.module->hash.substr(0, 16) + ".ptx"), k.ptx_text);
      if (!s.ok()) return cleanupOnError(s);
    }
    Status s = writeText(tmp / plan_.fused.ptx_file, fused_ptx_);
    if (!s.ok()) return cleanupOnError(s);
    if (options_.validate) {
      progress(options_,
               "validating on the " + std::string(options_.validation.backend == Backend::kGpu ? "GPU" : "emulator"));
      auto v = validatePlan(plan_, tmp.string(), options_.validation);
      if (!v.ok()) return cleanupOnError(v.status());
      recordValidation(plan_.validation, options_.validation, *v);
    }
    plan_.validation.ptxas_ok = true;
    plan_.validation.ptxas_archs = targets_;
    s = writePlan(tmp.string(), plan_);
    if (!s.ok()) return cleanupOnError(s);
    s = writeText(tmp / "README.md", planReadme(plan_));
    if (!s.ok()) return cleanupOnError(s);
    fs::remove_all(dir, ec);
    fs::rename(tmp, dir, ec);
    if (ec) return cleanupOnError(ioError("cannot move " + tmp.string() + " to " + plan_dir + ": " + ec.message()));
    if (options_.validate) {
      // The trace keeps the history of what was validated; a trace that cannot be written only loses that.
      auto recorded = recordValidationInTrace(report_.input_path, plan_, plan_dir, options_.validation.backend);
      if (!recorded.ok()) progress(options_, "note: " + recorded.status().message());
    }
    return plan_;
  }

  const core::Trace& trace_;
  const analyzer::Report& report_;
  const Candidate& c_;
  const RewriteOptions& options_;
  RewriteDiagnostics* diagnostics_;
  std::map<core::Id, const core::Launch*> launches_;
  std::vector<core::Launch> node_launches_;  // a candidate over graph nodes: its kernel nodes as launches
  std::vector<PatternKernel> kernels_;
  std::vector<ptx::Module> sources_;
  std::vector<std::string> source_texts_;
  std::vector<std::pair<ArgRef, ArgRef>> equal_args_;
  bool disjoint_ = false;
  bool indexed_ = false;
  std::map<core::Id, std::vector<const core::Launch*>> touching_;
  std::map<core::Id, std::vector<int64_t>> copied_out_;
  std::vector<ArgumentSet> sets_;
  ptx::Module merged_, chosen_, fused_module_;
  std::string fused_name_;
  FusionResult result_;
  HorizontalLayout layout_ = HorizontalLayout::kBlockPartitioned;
  std::string fused_ptx_;
  std::vector<std::string> targets_;
  std::vector<KernelResources> resources_;
  Plan plan_;
  analyzer::Candidate candidate_;  // the candidate with the cost re-predicted for the fused kernel's occupancy
};

}  // namespace

Expected<Plan> rewriteCandidate(const analyzer::ImportResult& input, const analyzer::Report& report,
                                const analyzer::Candidate& candidate, const RewriteOptions& options,
                                const std::string& plan_dir, RewriteDiagnostics* diagnostics) {
  Rewriter r(input, report, candidate, options, diagnostics);
  return r.run(plan_dir);
}

}  // namespace kfuse::rewriter
