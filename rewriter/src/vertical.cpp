// Vertical fusion: one .entry whose body runs each kernel of a chain for the same thread, in order.
//
// Why this is sound for a chain the analyzer proved thread-local: every value a later kernel reads from memory
// was written by the same thread of an earlier kernel (or by nobody in the chain), so running the parts back to
// back in one thread reads the same values as running them as separate launches. What the transform must keep:
//  - each part runs to its end for every thread: a part's ret/exit becomes a branch to the next part, so a
//    guarded early return (`if (i >= n) return;`) cannot skip the later parts;
//  - barriers: a thread that returned early from a kernel with bar.sync no longer exits, so it would be waited for
//    at the barrier; barriers are therefore only kept in the last part (earlier ones refuse the fusion);
//  - read-only caching: `ld.global.nc` / `ldu` promise the data does not change during the kernel; a buffer one
//    part writes and another reads breaks that promise, so such loads become plain loads.
// Store-to-load forwarding replaces a later part's load by the register an earlier part stored, only where the
// address form, width and guard are identical, nothing in between may write that address, and neither access is
// inside a loop (each runs at most once per thread, under the same condition) or both are in the one loop of
// merged counted loops, in the same iteration.
//
// Counted loops (the grid-stride idiom, ptx/loops.h): when every part is one loop and all take the same steps
// for every thread (same start, step, guard and exit test, once the arguments the plan pins equal are merged),
// the fused kernel runs one loop whose iteration runs each part's iteration in turn, instead of each part's
// loop to its end. That reorders a later part's iteration k before an earlier part's iteration k' > k; it keeps
// the program's results when no such pair touches a common byte with one of them writing. Within one thread this
// is checked here: two parts' accesses to one buffer must be at the same address in every iteration (equal
// values) and move by at least their width from one iteration to the next; accesses to different buffers need
// the plan's no-overlap predicate. Across threads it is the analyzer's proof (a thread's accesses at one step
// touch no byte that another (thread, step) touches). Anything else runs the loops one after the other.
#include <algorithm>
#include <cctype>
#include <set>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/loops.h"
#include "kfuse/ptx/ranges.h"
#include "kfuse/rewriter/fusion.h"
#include "rename.h"

namespace kfuse::rewriter {

using ptx::Function;
using ptx::Instruction;
using ptx::Operand;
using ptx::OperandKind;
using ptx::Statement;
using ptx::StatementKind;

namespace {

// Whether `name` or a device function it calls (transitively) executes `exit`, which would end the thread
// before the later parts run.
bool callsExit(const ptx::Module& module, const Function& f) {
  std::set<std::string> seen;
  std::vector<const Function*> work{&f};
  while (!work.empty()) {
    const Function* g = work.back();
    work.pop_back();
    for (const Statement& s : g->body) {
      if (s.kind != StatementKind::kInstruction) continue;
      if (g != &f && s.inst.opcode == ptx::Opcode::kExit) return true;
      if (s.inst.opcode != ptx::Opcode::kCall) continue;
      for (const Operand& o : s.inst.operands) {
        if (o.kind != OperandKind::kSymbol || !seen.insert(o.name).second) continue;
        if (const Function* callee = module.findFunction(o.name); callee && callee->has_body) work.push_back(callee);
      }
    }
  }
  return false;
}

// Merges the performance directives of the parts: all parts run in one launch of the same shape, so the fused
// kernel takes the tightest of each bound.
Status mergeDirectives(const std::vector<const Function*>& parts, std::vector<ptx::PerfDirective>* out,
                       std::vector<std::string>* notes) {
  for (const Function* f : parts) {
    for (const ptx::PerfDirective& d : f->directives) {
      auto it = std::find_if(out->begin(), out->end(), [&](const auto& e) { return e.name == d.name; });
      if (it == out->end()) {
        out->push_back(d);
        continue;
      }
      if (it->values == d.values) continue;
      if (d.name == ".reqntid") {
        return unsupported("kernels '" + parts.front()->name + "' and '" + f->name +
                           "' require different block shapes (.reqntid): they cannot run in one launch");
      }
      if (d.name == ".maxntid" || d.name == ".maxnreg") {
        for (size_t i = 0; i < std::min(it->values.size(), d.values.size()); ++i) {
          it->values[i] = std::min(it->values[i], d.values[i]);
        }
      } else if (d.name == ".minnctapersm") {
        it->values = {std::max(it->values.empty() ? 0 : it->values[0], d.values.empty() ? 0 : d.values[0])};
      } else {
        notes->push_back("dropped " + d.name + " (the parts disagree on it)");
        out->erase(it);
      }
    }
  }
  return {};
}

// Declared bit width of each register of a function, from its .reg declarations (ranges included).
class RegisterWidths {
 public:
  explicit RegisterWidths(const Function& f) {
    for (const Statement& s : f.body) {
      if (s.kind != StatementKind::kDeclaration || s.decl->space != ptx::StateSpace::kReg) continue;
      const uint32_t bits = s.decl->type == ptx::DataType::kPred ? 1 : s.decl->elementSize() * 8;
      if (s.decl->range >= 0) {
        ranges_[s.decl->name] = {s.decl->range, bits};
      } else {
        exact_[s.decl->name] = bits;
      }
    }
  }
  uint32_t bits(const std::string& reg) const {
    if (auto it = exact_.find(reg); it != exact_.end()) return it->second;
    size_t end = reg.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(reg[end - 1]))) --end;
    if (end == reg.size()) return 0;
    auto it = ranges_.find(reg.substr(0, end));
    if (it == ranges_.end()) return 0;
    const int64_t index = std::stoll(reg.substr(end));
    return index < it->second.first ? it->second.second : 0;
  }

 private:
  std::map<std::string, uint32_t> exact_;
  std::map<std::string, std::pair<int64_t, uint32_t>> ranges_;
};

// The scalar registers (or immediates) an operand holds, element by element.
std::vector<Operand> elementsOf(const Operand& o) {
  if (o.kind == OperandKind::kVector) return o.elements;
  return {o};
}

struct Edit {
  size_t stmt = 0;
  enum class Kind { kReplace, kRemove, kStripNonCoherent } kind = Kind::kRemove;
  std::vector<Statement> replacement;
};

// The parts' counted loops merged into one (see the file comment).
struct MergedLoop {
  static constexpr const char* kLabel = "$kfuse_loop";
  static constexpr const char* kExitLabel = "$kfuse_loop_exit";
  std::vector<std::string> inductions;  // each part's induction register, renamed
  // Names every part's induction variable "<iv>" at the top of the merged loop, where they all hold one value;
  // returns the loop's block (-1 when there is none).
  int nameInductions(const ptx::Cfg& cfg, ptx::ValueNumbering& values) const {
    for (size_t b = 0; b < cfg.blocks().size(); ++b) {
      if (cfg.blocks()[b].label != kLabel) continue;
      for (const std::string& r : inductions) values.nameAtBlockEntry(static_cast<int>(b), r, "<iv>");
      return static_cast<int>(b);
    }
    return -1;
  }
};

// Each part's counted loop when every part is one and all take the same steps; else empty, with why (empty when
// no part has a loop at all).
std::vector<ptx::CountedLoop> sameStepLoops(const std::vector<const Function*>& parts,
                                            const detail::MergedParams& merged, std::string* why) {
  std::vector<ptx::CountedLoop> loops;
  bool any_loop = false;
  for (size_t k = 0; k < parts.size(); ++k) {
    const Function& f = *parts[k];
    const ptx::Cfg cfg = ptx::Cfg::build(f);
    const std::vector<char> cyclic = ptx::blocksInLoops(cfg);
    if (std::find(cyclic.begin(), cyclic.end(), 1) == cyclic.end()) {
      if (why->empty()) *why = "'" + f.name + "' has no loop";
      continue;
    }
    any_loop = true;
    if (!why->empty()) continue;  // only whether a later part has a loop is still of interest
    if (std::any_of(f.body.begin(), f.body.end(),
                    [](const Statement& s) { return s.kind == StatementKind::kBlockBegin; })) {
      *why = "'" + f.name + "' has nested scopes";
      continue;
    }
    const ptx::DefUse du = ptx::DefUse::compute(f, cfg);
    const auto& names = merged.names[k];
    auto fusedName = [&names](const std::string& p) {
      auto it = names.find(p);
      return it == names.end() ? p : it->second;
    };
    std::string not_loop;
    auto loop = ptx::findCountedLoop(f, cfg, du, fusedName, &not_loop);
    if (!loop) {
      *why = "'" + f.name + "' is not one counted loop: " + not_loop;
    } else if (k > 0 && !loop->sameSteps(loops.front())) {
      *why = "the loops of '" + parts.front()->name + "' and '" + f.name +
             "' do not take the same steps (start, step or bounds differ, or arguments the plan does not pin "
             "equal)";
    } else {
      loops.push_back(std::move(*loop));
    }
  }
  if (!why->empty()) {
    if (!any_loop) why->clear();
    return {};
  }
  return loops;
}

// Whether a form's step-count terms move an access by at least `bytes` per step: positive multiples of launch
// dimensions (each at least 1).
bool movesEveryStep(const ptx::AffineExpr& offset, uint32_t bytes) {
  int64_t least = 0;
  bool steps = false;
  for (const auto& [atoms, coef] : offset.terms) {
    const bool counts = std::any_of(atoms.begin(), atoms.end(),
                                    [](const std::string& a) { return a.rfind(ptx::kIterationPrefix, 0) == 0; });
    if (!counts) continue;
    steps = true;
    for (const std::string& a : atoms) {
      if (a.rfind(ptx::kIterationPrefix, 0) == 0) continue;
      if (a.rfind("ntid.", 0) != 0 && a.rfind("nctaid.", 0) != 0) return false;
    }
    if (coef <= 0) return false;
    least += coef;
  }
  return steps && least >= static_cast<int64_t>(bytes);
}

// Whether the merged loop keeps every pair of accesses of two parts in order (the file comment); else why not.
// `fa`: the analyses of the fused function `f`.
std::string interleavingProblem(ptx::FunctionAnalyses& fa, const Function& f, const std::vector<int>& part_of,
                                const MergedLoop& loop, const VerticalFusion& spec) {
  const ptx::Cfg& cfg = fa.cfg();
  ptx::ValueNumbering values(f, cfg, fa.defUse());
  if (loop.nameInductions(cfg, values) < 0) return "the merged loop was not found";
  const auto& accesses = fa.memoryAccesses();
  auto partOf = [&](size_t stmt) { return stmt < part_of.size() ? part_of[stmt] : -1; };
  for (const ptx::MemoryAccess& a : accesses) {
    for (const ptx::MemoryAccess& b : accesses) {
      if (partOf(a.stmt) >= partOf(b.stmt) || (!a.is_write && !b.is_write)) continue;
      const std::string pair = a.opcode + " (part " + std::to_string(partOf(a.stmt) + 1) + ") and " + b.opcode +
                               " (part " + std::to_string(partOf(b.stmt) + 1) + ")";
      if (a.base_param < 0 || b.base_param < 0) return pair + ": an address not followed to a parameter";
      const bool shared = std::any_of(a.pointer_params.begin(), a.pointer_params.end(), [&](int p) {
        return std::find(b.pointer_params.begin(), b.pointer_params.end(), p) != b.pointer_params.end();
      });
      if (!shared) {
        if (spec.params_disjoint) continue;
        return pair + ": two buffers the plan does not keep apart";
      }
      const auto va = values.addressValue(a.stmt), vb = values.addressValue(b.stmt);
      if (a.base_param != b.base_param || !va || !vb || *va != *vb || a.bytes != b.bytes) {
        return pair + ": not at the same address in every iteration";
      }
      if (!a.offset || !b.offset || !movesEveryStep(*a.offset, a.bytes) || !movesEveryStep(*b.offset, b.bytes)) {
        return pair + ": the address does not move past the access from one iteration to the next";
      }
    }
  }
  return {};
}

// Store-to-load forwarding, `.nc` stripping and (aggressive) intermediate store removal on the fused function `f`,
// whose analyses `fa` are (they hold until the edits at the end). `part_of`: the part each statement comes from
// (-1: hoisted declarations). `loop`: the merged counted loop, if the parts' loops were merged.
Status optimiseMemory(ptx::FunctionAnalyses& fa, Function& f, const std::vector<int>& part_of, const MergedLoop* loop,
                      const VerticalFusion& spec, const std::vector<int>& dropped_params, FusionResult* result) {
  const ptx::Cfg& cfg = fa.cfg();
  const auto& accesses = fa.memoryAccesses();
  const std::vector<char> in_loop = ptx::blocksInLoops(cfg);
  const RegisterWidths widths(f);
  auto partOf = [&](size_t stmt) { return stmt < part_of.size() ? part_of[stmt] : -1; };
  std::optional<ptx::ValueNumbering> numbering;
  int merged_block = -1;
  if (loop) {
    numbering.emplace(f, cfg, fa.defUse());
    merged_block = loop->nameInductions(cfg, *numbering);
  }
  auto inMergedLoop = [&](size_t stmt) { return merged_block >= 0 && cfg.blockOf(stmt) == merged_block; };
  auto loops = [&](size_t stmt) {
    const int b = cfg.blockOf(stmt);
    return b < 0 || in_loop[static_cast<size_t>(b)];
  };
  std::set<int> written;
  bool unknown_write = false;
  for (const ptx::MemoryAccess& a : accesses) {
    if (!a.is_write) continue;
    if (a.pointer_params.empty()) unknown_write = true;
    written.insert(a.pointer_params.begin(), a.pointer_params.end());
  }
  std::vector<size_t> calls;
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (f.body[i].kind == StatementKind::kInstruction && f.body[i].inst.opcode == ptx::Opcode::kCall)
      calls.push_back(i);
  }

  std::vector<Edit> edits;
  std::set<size_t> forwarded;
  for (const ptx::MemoryAccess& load : accesses) {
    if (!spec.forward_stores) break;
    if (!load.is_read || load.is_write || load.op != ptx::Opcode::kLd || load.base_param < 0 || !load.offset) continue;
    const int part = partOf(load.stmt);
    const bool merged = inMergedLoop(load.stmt);
    if (part <= 0 || (loops(load.stmt) && !merged)) continue;
    const std::string form = load.offset->toString();
    const std::optional<std::string> address = merged ? numbering->addressValue(load.stmt) : std::nullopt;
    if (merged && !address) continue;
    const std::string guard = load.guardText();
    // The last store before the load to the same address under the same guard.
    const ptx::MemoryAccess* store = nullptr;
    for (const ptx::MemoryAccess& s : accesses) {
      if (s.stmt >= load.stmt) continue;
      if (!s.is_write || s.is_read || s.op != ptx::Opcode::kSt || s.base_param != load.base_param || !s.offset)
        continue;
      if (partOf(s.stmt) >= part || s.bytes != load.bytes) continue;
      // In the merged loop, the store of the same iteration at the same address (its form names another part's
      // step count); else the same address form.
      if (merged ? !inMergedLoop(s.stmt) || numbering->addressValue(s.stmt) != address : s.offset->toString() != form)
        continue;
      if (s.guardText() != guard || std::any_of(s.guard.begin(), s.guard.end(), [](auto& g) { return !g.structured; }))
        continue;
      store = &s;
    }
    if (!store || (loops(store->stmt) && !merged)) continue;
    // Nothing in between may write the address: no other write through the same pointer (or through one that is
    // not known to be a different buffer), no call.
    bool clobbered =
        std::any_of(calls.begin(), calls.end(), [&](size_t c) { return c > store->stmt && c < load.stmt; });
    for (const ptx::MemoryAccess& w : accesses) {
      if (clobbered) break;
      if (!w.is_write || w.stmt <= store->stmt || w.stmt >= load.stmt) continue;
      const bool same =
          std::find(w.pointer_params.begin(), w.pointer_params.end(), load.base_param) != w.pointer_params.end();
      clobbered = same || w.base_param < 0 || !spec.params_disjoint;
    }
    if (clobbered) continue;
    const Instruction& st = f.body[store->stmt].inst;
    const Instruction& ld = f.body[load.stmt].inst;
    if (st.operands.size() < 2 || ld.operands.empty()) continue;
    const uint32_t bits = ptx::typeElementBits(st.type()) * std::max(1u, ptx::typeElements(st.type()));
    if (bits < 16 || bits != ptx::typeElementBits(ld.type()) * std::max(1u, ptx::typeElements(ld.type()))) continue;
    const std::vector<Operand> values = elementsOf(st.operands.back());
    const std::vector<Operand> dests = elementsOf(ld.operands.front());
    if (values.size() != dests.size()) continue;
    bool ok = true;
    for (size_t e = 0; e < values.size() && ok; ++e) {
      const Operand& v = values[e];
      const Operand& d = dests[e];
      if (d.kind == OperandKind::kSink) continue;
      ok = d.kind == OperandKind::kRegister && widths.bits(d.name) == bits &&
           (v.kind == OperandKind::kImmediate || (v.kind == OperandKind::kRegister && widths.bits(v.name) == bits));
      if (!ok || v.kind != OperandKind::kRegister) continue;
      // The stored register must still hold the stored value at the load.
      for (size_t i = store->stmt + 1; i < load.stmt && ok; ++i) {
        if (f.body[i].kind != StatementKind::kInstruction) continue;
        const auto defs = detail::registersWritten(f.body[i].inst);
        ok = std::find(defs.begin(), defs.end(), v.name) == defs.end();
      }
    }
    if (!ok) continue;
    Edit edit{load.stmt, Edit::Kind::kReplace, {}};
    for (size_t e = 0; e < values.size(); ++e) {
      if (dests[e].kind == OperandKind::kSink) continue;
      const std::string type = ".b" + std::to_string(bits);
      Instruction mov = ptx::makeInstruction(ptx::Opcode::kMov, {type}, {dests[e], values[e]});
      mov.guard = ld.guard;
      mov.guard_negated = ld.guard_negated;
      mov.loc = ld.loc;
      edit.replacement.push_back(ptx::instructionStatement(std::move(mov)));
    }
    edits.push_back(std::move(edit));
    forwarded.insert(load.stmt);
    ++result->forwarded_loads;
  }

  // Loads that remain: read-only caching is wrong for a buffer the fused kernel writes.
  for (const ptx::MemoryAccess& a : accesses) {
    if (!a.is_read || forwarded.count(a.stmt)) continue;
    const Instruction& in = f.body[a.stmt].inst;
    if (!in.has(ptx::Mod::kNc) && in.opcode != ptx::Opcode::kLdu) continue;
    const bool may_be_written =
        unknown_write || a.pointer_params.empty() ||
        std::any_of(a.pointer_params.begin(), a.pointer_params.end(), [&](int p) { return written.count(p) != 0; });
    if (may_be_written) edits.push_back({a.stmt, Edit::Kind::kStripNonCoherent, {}});
  }

  // --aggressive: stores of intermediates nobody reads after fusion.
  for (int q : dropped_params) {
    for (const ptx::MemoryAccess& a : accesses) {
      const bool through = std::find(a.pointer_params.begin(), a.pointer_params.end(), q) != a.pointer_params.end();
      if (!through) continue;
      if (a.is_read && !forwarded.count(a.stmt)) {
        return unsupported("cannot drop the stores of parameter " + f.params[static_cast<size_t>(q)].name +
                           ": the fused kernel still reads it (" + a.opcode + " at statement " +
                           std::to_string(a.stmt) + ") — its load could not be forwarded");
      }
      if (a.is_write && (a.base_param != q || a.pointer_params.size() != 1 || a.op != ptx::Opcode::kSt)) {
        return unsupported("cannot drop the stores of parameter " + f.params[static_cast<size_t>(q)].name + ": " +
                           a.opcode + " may write another buffer too");
      }
      if (a.is_write) {
        edits.push_back({a.stmt, Edit::Kind::kRemove, {}});
        ++result->dropped_stores;
      }
    }
  }

  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.stmt > b.stmt; });
  for (Edit& e : edits) {
    auto at = f.body.begin() + static_cast<std::ptrdiff_t>(e.stmt);
    switch (e.kind) {
      case Edit::Kind::kRemove: f.body.erase(at); break;
      case Edit::Kind::kReplace:
        // Overwriting the statement in place moves the rest of the (long) body only for extra statements.
        if (e.replacement.empty()) {
          f.body.erase(at);
        } else {
          *at = std::move(e.replacement.front());
          f.body.insert(at + 1, std::make_move_iterator(e.replacement.begin() + 1),
                        std::make_move_iterator(e.replacement.end()));
        }
        break;
      case Edit::Kind::kStripNonCoherent: {
        Instruction& in = at->inst;
        if (in.opcode == ptx::Opcode::kLdu) in.opcode = ptx::Opcode::kLd;
        std::erase(in.modifiers, ptx::Modifier::mod(ptx::Mod::kNc));
        break;
      }
    }
  }
  return {};
}

}  // namespace

Expected<FusionResult> fuseVertical(ptx::Module& module, const VerticalFusion& spec) {
  if (spec.kernels.size() < 2) return unsupported("vertical fusion needs at least two kernels");
  KFUSE_ASSIGN_OR_RETURN(const std::vector<const Function*> parts, detail::kernelsNamed(module, spec.kernels));
  FusionResult result;
  result.fused_name = spec.fused_name;
  if (result.fused_name.empty()) {
    result.fused_name = "kfuse_vertical";
    for (const std::string& k : spec.kernels) result.fused_name += "_" + k;
  }
  if (module.findFunction(result.fused_name)) {
    return unsupported("the module already has a function named '" + result.fused_name + "'");
  }
  for (size_t k = 0; k + 1 < parts.size(); ++k) {
    // Block-level: a part with barriers of its own may come first when every thread of a block meets them and then
    // reaches its end (a block reduction), so that the barrier between the parts sees every thread once.
    std::string exit_problem;
    if (spec.block_barrier &&
        ptx::threadsExitAfterTheirLastBarrier(*parts[k], ptx::Cfg::build(*parts[k]), &exit_problem)) {
      if (callsExit(module, *parts[k])) {
        return unsupported("kernel '" + parts[k]->name +
                           "' calls a device function that executes exit: the thread "
                           "would end before the later kernels' parts run");
      }
      continue;
    }
    for (const Statement& s : parts[k]->body) {
      if (s.kind == StatementKind::kInstruction && detail::isCtaBarrier(s.inst)) {
        return unsupported("kernel '" + parts[k]->name + "' (part " + std::to_string(k + 1) + " of " +
                           std::to_string(parts.size()) + ") synchronises its block (" + s.inst.fullOpcode() +
                           ", line " + std::to_string(s.loc.line) +
                           "): threads that return early would wait at the barrier in a fused kernel; vertical "
                           "fusion keeps barriers only in the last kernel");
      }
    }
    if (callsExit(module, *parts[k])) {
      return unsupported("kernel '" + parts[k]->name +
                         "' calls a device function that executes exit: the thread "
                         "would end before the later kernels' parts run");
    }
  }

  // Parameters: one per class of equal arguments, named after the fused kernel.
  KFUSE_ASSIGN_OR_RETURN(detail::MergedParams merged,
                         detail::mergeParameters(parts, spec.equal_args, result.fused_name));
  Function fused = detail::fusedEntry(result.fused_name, std::move(merged.decls));
  result.params = std::move(merged.params);
  KFUSE_RETURN_IF_ERROR(mergeDirectives(parts, &fused.directives, &result.notes));

  // Body: the parts' outermost declarations (hoisted), then each part; a part's returns branch to its end label.
  // Every statement is renamed straight into its place in one vector sized up front: the fused body of long
  // kernels is megabytes, and building a body per part to move it twice more cost as much as the renaming.
  std::vector<detail::BodyRenaming> renamings;
  std::vector<detail::BodyRenamer> renamers;
  size_t total = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    renamings.push_back({"k" + std::to_string(k) + "_", merged.names[k]});
    total += parts[k]->body.size() + 1;
  }
  for (size_t k = 0; k < parts.size(); ++k) renamers.emplace_back(*parts[k], renamings[k]);
  // Declarations outside every `{ }` scope are hoisted (`depth` is the scope depth at each statement).
  auto forEachStatement = [](const Function& f, auto&& fn) {
    int depth = 0;
    for (const Statement& s : f.body) {
      if (s.kind == StatementKind::kBlockBegin) ++depth;
      if (s.kind == StatementKind::kBlockEnd) --depth;
      fn(s, depth == 0 && s.kind == StatementKind::kDeclaration);
    }
  };
  fused.body.reserve(total);
  for (size_t k = 0; k < parts.size(); ++k) {
    forEachStatement(*parts[k], [&](const Statement& s, bool hoisted) {
      if (!hoisted) return;
      fused.body.push_back(s);
      renamers[k].rename(fused.body.back());
    });
  }
  const size_t hoisted_end = fused.body.size();
  std::vector<int> part_of(hoisted_end, -1);  // the part each statement of the fused body comes from
  auto copy = [&](size_t k, const Statement& s) {
    fused.body.push_back(s);
    renamers[k].rename(fused.body.back());
    part_of.push_back(static_cast<int>(k));
  };
  auto add = [&](int k, Statement s) {
    fused.body.push_back(std::move(s));
    part_of.push_back(k);
  };
  auto retarget = [](Statement& branch, const std::string& label) {
    for (Operand& o : branch.inst.operands) {
      if (o.kind == OperandKind::kSymbol) o.name = label;
    }
  };
  // One part after the other.
  auto sequential = [&] {
    for (size_t k = 0; k < parts.size(); ++k) {
      const bool last = k + 1 == parts.size();
      const std::string end = last ? "" : "$kfuse_part" + std::to_string(k) + "_end";
      forEachStatement(*parts[k], [&](const Statement& s, bool hoisted) {
        if (hoisted || detail::BodyRenamer::dropped(s)) return;
        copy(k, s);
        if (!last) detail::replaceReturn(fused.body.back(), end);
      });
      if (!last) add(static_cast<int>(k), ptx::labelStatement(end));
      if (!last && spec.block_barrier) {
        add(static_cast<int>(k),
            ptx::instructionStatement(ptx::makeInstruction(ptx::Opcode::kBar, {".sync"}, {ptx::integerOperand(0)})));
      }
    }
  };
  // Counted loops taking the same steps: every part's code before its loop (the first part's guard skips all of
  // it), one loop running every part's iteration in turn, one return.
  auto merged_loop = [&](const std::vector<ptx::CountedLoop>& loops, MergedLoop* out) {
    for (size_t k = 0; k < parts.size(); ++k) {
      for (size_t i = 0; i < loops[k].loop_begin; ++i) {
        const Statement& s = parts[k]->body[i];
        if (s.kind == StatementKind::kDeclaration || detail::BodyRenamer::dropped(s)) continue;
        if (i == loops[k].guard_stmt && k > 0) continue;  // the first part's guard is the same test
        copy(k, s);
        if (i == loops[k].guard_stmt) retarget(fused.body.back(), MergedLoop::kExitLabel);
      }
      out->inductions.push_back(detail::renamedRegister(loops[k].induction, renamings[k].tag));
    }
    add(-1, ptx::labelStatement(MergedLoop::kLabel));
    for (size_t k = 0; k < parts.size(); ++k) {
      for (size_t i = loops[k].loop_begin; i < loops[k].loop_end; ++i) {
        const Statement& s = parts[k]->body[i];
        if (s.kind == StatementKind::kLabel || i == loops[k].latch_stmt || detail::BodyRenamer::dropped(s)) continue;
        // A directive of a later part's loop (`.pragma "nounroll"`) belongs at a loop's head, not its middle.
        if (k > 0 && s.kind == StatementKind::kDirective) continue;
        copy(k, s);
      }
    }
    copy(parts.size() - 1, parts.back()->body[loops.back().latch_stmt]);
    retarget(fused.body.back(), MergedLoop::kLabel);
    add(-1, ptx::labelStatement(MergedLoop::kExitLabel));
    add(-1, ptx::instructionStatement(ptx::makeInstruction(ptx::Opcode::kRet, {}, {})));
  };

  std::optional<MergedLoop> loop;
  std::optional<ptx::FunctionAnalyses> analyses;  // of `fused` as built: the merge check and optimiseMemory share them
  if (!spec.block_barrier) {
    std::string why;
    const std::vector<ptx::CountedLoop> loops = sameStepLoops(parts, merged, &why);
    if (!loops.empty()) {
      loop.emplace();
      merged_loop(loops, &*loop);
      analyses.emplace(&module, fused);
      why = interleavingProblem(*analyses, fused, part_of, *loop, spec);
      if (why.empty()) {
        result.notes.push_back("the parts' loops take the same steps: one loop runs every part's iteration in turn");
      } else {
        why = "the parts' loops cannot be merged: " + why;
        loop.reset();
        analyses.reset();
        fused.body.resize(hoisted_end);
        part_of.resize(hoisted_end);
      }
    }
    if (!why.empty()) result.notes.push_back(why + "; each part's loop runs to its end in turn");
  }
  if (!loop) sequential();
  if (spec.block_barrier)
    result.notes.push_back("a block barrier (bar.sync 0) separates the parts: block-level fusion");

  std::vector<int> dropped;
  for (ArgRef r : spec.drop_stores) {
    if (r.kernel < 0 || static_cast<size_t>(r.kernel) >= parts.size() || r.param < 0 ||
        static_cast<size_t>(r.param) >= parts[static_cast<size_t>(r.kernel)]->params.size()) {
      return unsupported("an intermediate to drop refers to a parameter that does not exist");
    }
    dropped.push_back(static_cast<int>(merged.index[static_cast<size_t>(r.kernel)][static_cast<size_t>(r.param)]));
    result.dropped_buffers.push_back(r);
  }
  VerticalFusion memory_spec = spec;
  if (spec.block_barrier) memory_spec.forward_stores = false;
  if (!analyses) analyses.emplace(&module, fused);
  KFUSE_RETURN_IF_ERROR(
      optimiseMemory(*analyses, fused, part_of, loop ? &*loop : nullptr, memory_spec, dropped, &result));
  if (result.forwarded_loads > 0) {
    result.notes.push_back("forwarded " + std::to_string(result.forwarded_loads) +
                           " load(s) of values an earlier part stored");
  }
  if (result.dropped_stores > 0) {
    result.notes.push_back("dropped " + std::to_string(result.dropped_stores) + " store(s) of intermediates");
  }
  module.functions.push_back(std::move(fused));
  module.order.push_back({ptx::TopLevelKind::kFunction, module.functions.size() - 1});
  return result;
}

}  // namespace kfuse::rewriter
