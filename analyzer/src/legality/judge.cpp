// Analysis: the legality of each candidate, judged on every distinct tuple of the values its proof reads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "kfuse/core/cancel.h"
#include "pattern_analysis.h"

namespace kfuse::analyzer {
namespace {

// Element maps (epilogue.h, prologue.h) enumerate their launches' threads, up to 16M per launch, once per distinct
// tuple of argument values (a candidate may have a thousand): a damaged or hostile trace could keep one analysis
// at it for hours. Over one analysis they enumerate at most this many threads (some seconds); the checks after
// that are not made (likely, saying so).
constexpr uint64_t kMaxElementMapThreads = uint64_t{1} << 28;

// Runs `check(&enumerated)` (an epilogue::check or prologue::check) within the analysis's budget `spent`.
template <class R, class Check>
R elementMap(uint64_t& spent, Check&& check) {
  if (spent >= kMaxElementMapThreads) {
    R r;
    r.legality = Legality::kLikely;
    r.why = "not checked: this analysis has spent its budget of " + std::to_string(kMaxElementMapThreads) +
            " launch threads enumerated for element maps (epilogue and prologue checks) on earlier occurrences";
    return r;
  }
  uint64_t enumerated = 0;
  R r = check(&enumerated);
  spent += enumerated;
  return r;
}

}  // namespace

locality::AtomValues Analysis::atomValues(size_t op) const {
  const core::Launch& l = launch(op);
  const KernelFacts* k = cat_.find(l.function_id);
  return k ? launchValues(*k, l) : locality::AtomValues{};
}

bool Analysis::validParam(const KernelFacts& k, int index) {
  return index >= 0 && static_cast<size_t>(index) < k.params.size();
}

// What a proof about one launch of a kernel needs beyond its shared buffers: every global access attributed to
// a pointer parameter, no device-function calls, and every pointer it accesses resolved to an allocation (an
// access through anything else could reach another kernel's buffer unseen).
void Analysis::checkVisibility(size_t op, Verdict& v) const {
  const KernelFacts* k = cat_.find(g_.ops[op].function_id);
  if (!k || !k->has_ptx) {
    v.weaken(Legality::kLikely, "no PTX for " + (k ? k->name : std::string("a kernel")) +
                                    (k && !k->ptx_problem.empty() ? " (" + k->ptx_problem + ")" : std::string()) +
                                    ": what it accesses beyond its pointer arguments cannot be ruled out");
    return;
  }
  for (const BufferUse& u : g_.ops[op].uses) {
    if (!u.in_struct) continue;
    v.weaken(Legality::kLikely, k->name + " receives pointers inside argument " + std::to_string(u.param_index) +
                                    ", a struct passed by value: its accesses through them are not analysed");
    break;
  }
  if (!k->unanalysed_memory.empty()) {
    v.weaken(Legality::kLikely,
             k->name + " has " + k->unanalysed_memory + ", whose memory accesses the analysis does not follow");
  }
  if (k->unattributed_accesses > 0) {
    v.weaken(Legality::kLikely, k->name + " accesses global memory at line " + std::to_string(k->unattributed_line) +
                                    " through an address that is not based on one of its pointer parameters (a "
                                    "module variable or a loaded pointer): its data flow cannot be proven");
  }
  if (!k->callees.empty() || k->indirect_calls) {
    v.weaken(Legality::kLikely, k->name + " calls " +
                                    (k->callees.empty() ? "a function indirectly" : k->callees.front()) +
                                    ": accesses inside device functions are not analysed");
  }
  std::set<int> resolved;
  for (const BufferUse& u : g_.ops[op].uses) resolved.insert(u.param_index);
  for (const core::PointerArg& p : launch(op).pointer_args) {
    if (p.allocation_id != core::kNoId) resolved.insert(p.param_index);
  }
  for (const ParamFacts& p : k->params) {
    if (p.source != AccessSource::kPtx || p.mode == core::AccessMode::kNone || resolved.count(p.index)) continue;
    // An optional pointer (null here) whose every access its guards rule out for these arguments (`if (bias)`):
    // nothing is accessed through it. The plan pins its value, since the guard reads it.
    if (const RelativeRange none = footprint(k, launch(op), p.index, launchValues(*k, launch(op)));
        none.bounded && none.lo == none.hi) {
      continue;
    }
    // The collector leaves pointers into memory mapped more than once unresolved (pointer_into_shared_mapping).
    const bool shared = std::any_of(t_.stats.begin(), t_.stats.end(), [](const core::Stat& s) {
      return s.name == core::statName(core::StatId::kPointerIntoSharedMapping) && s.value > 0;
    });
    v.weaken(Legality::kLikely, k->name + " accesses memory through argument " + std::to_string(p.index) +
                                    ", which does not point into any allocation the trace recorded" +
                                    (shared ? " as one buffer (the trace has pointers into memory mapped more than "
                                              "once, which addresses cannot tell apart)"
                                            : ""));
  }
}

// Thread-locality of every buffer two kernels of a vertical chain share with a write, for this occurrence's
// argument values: no two different threads may touch a common byte with one of them writing.
void Analysis::checkPair(size_t a, size_t b, Verdict& v) const {
  const KernelFacts* ka = cat_.find(g_.ops[a].function_id);
  const KernelFacts* kb = cat_.find(g_.ops[b].function_id);
  const core::Launch& la = launch(a);
  const core::Launch& lb = launch(b);
  const locality::Shape shape{la.grid, la.block};
  std::optional<locality::AtomValues> va, vb;
  for (const BufferUse& ua : g_.ops[a].uses) {
    for (const BufferUse& ub : g_.ops[b].uses) {
      if (!ua.overlaps(ub)) continue;  // other tensors, or other bytes of one allocation
      if (!writesMode(ua.mode) && !writesMode(ub.mode)) continue;
      if (ua.in_struct || ub.in_struct) continue;  // checkVisibility said so
      const std::string buf = "allocation " + std::to_string(ua.allocation_id);
      // A kernel without PTX: checkVisibility, run on every kernel of the occurrence, already said so.
      if (!ka || !kb || !ka->has_ptx || !kb->has_ptx) continue;
      if (!(la.grid == lb.grid) || !(la.block == lb.block)) {
        v.weaken(Legality::kLikely, "the kernels sharing " + buf + " have different launch shapes");
        continue;
      }
      if ((ka->atomics > 0 && writesMode(ua.mode)) || (kb->atomics > 0 && writesMode(ub.mode))) {
        v.weaken(Legality::kBlocked, "atomics in " + (ka->atomics > 0 ? ka->name : kb->name) + " update " + buf +
                                         ": every producer thread must finish before any consumer reads");
        continue;
      }
      // A damaged trace can name a parameter the kernel does not have: nothing is known of that access.
      if (!validParam(*ka, ua.param_index) || !validParam(*kb, ub.param_index)) {
        const bool a_bad = !validParam(*ka, ua.param_index);
        v.weaken(Legality::kLikely, (a_bad ? ka->name : kb->name) + " uses " + buf + " through argument " +
                                        std::to_string(a_bad ? ua.param_index : ub.param_index) +
                                        ", which the kernel does not have (a damaged trace?): not proven");
        continue;
      }
      // Every access through the two parameters must have been followed to an address; one that was not could
      // touch any element of the buffer.
      const ParamFacts& pa = ka->params[static_cast<size_t>(ua.param_index)];
      const ParamFacts& pb = kb->params[static_cast<size_t>(ub.param_index)];
      if (!fullyFollowed(pa) || !fullyFollowed(pb)) {
        const KernelFacts* k = fullyFollowed(pa) ? kb : ka;
        // Typically an index that changes in a loop (a row or grid-stride loop): such a thread touches many
        // elements, so calling the pair likely thread-local would be a guess against the evidence.
        v.weaken(Legality::kBlocked, k->name + " accesses " + buf +
                                         " at an address the PTX analysis could not "
                                         "follow (inside a loop, or not derived from its thread index): it "
                                         "may touch elements other threads write, so thread locality cannot "
                                         "be shown");
        continue;
      }
      bool affine = true, atomic = false;
      for (const auto* list : {&pa.accesses, &pb.accesses}) {
        for (const ParamMemoryAccess& m : *list) {
          affine = affine && m.offset_form.has_value();
          atomic = atomic || m.atomic;
        }
      }
      if (atomic) {
        v.weaken(Legality::kBlocked,
                 "atomics on " + buf + ": every producer thread must finish before any consumer reads");
        continue;
      }
      if (!affine) {
        v.weaken(Legality::kLikely, "an address into " + buf + " is not affine in thread/block indices: not proven");
        continue;
      }
      // Every pair is bound and compared: two kernels of tens of thousands of accesses each to one buffer would take
      // hours, so past a budget the buffer is left unproven (never proven unchecked).
      if (const uint64_t pairs = uint64_t{pa.accesses.size()} * pb.accesses.size(); pairs > locality::kMaxAccessPairs) {
        v.weaken(Legality::kLikely, buf + ": " + std::to_string(pa.accesses.size()) + " accesses in " + ka->name +
                                        " x " + std::to_string(pb.accesses.size()) + " in " + kb->name +
                                        " are more pairs than the " + std::to_string(locality::kMaxAccessPairs) +
                                        " a thread-locality check compares: not proven");
        continue;
      }
      if (!va) va = atomValues(a);
      if (!vb) vb = atomValues(b);
      // Accesses in a loop (a grid-stride or row loop's induction variable) count its steps: the interval
      // analysis bounds them for this launch, computed once per kernel.
      std::optional<std::vector<ptx::AccessRange>> ranges_a, ranges_b;
      auto steps = [](const KernelFacts& k, const core::Launch& l, int param, const ParamMemoryAccess& m,
                      const locality::AtomValues& values, std::optional<std::vector<ptx::AccessRange>>& ranges) {
        if (!m.loop_steps) return std::optional<int64_t>(1);
        if (!ranges) ranges = launchRanges(k, l);
        return iterationBound(k, l, param, m, values, *ranges);
      };
      // Each pair of accesses with a write among them, bound to this occurrence's values. One reason per
      // buffer: the first pair that crosses threads, else the first that could not be decided.
      std::string local_why, cross_why, cross_sentence, unknown_why, loop_why;
      int crossing = 0, unknown = 0, in_loops = 0;
      for (const ParamMemoryAccess& ma : pa.accesses) {
        for (const ParamMemoryAccess& mb : pb.accesses) {
          if (!ma.is_write && !mb.is_write) continue;
          const std::string where = " (" + ka->name + " line " + std::to_string(ma.line) + ", " + kb->name + " line " +
                                    std::to_string(mb.line) + ")";
          const bool loops = ma.loop_steps || mb.loop_steps;
          const auto sa = steps(*ka, la, ua.param_index, ma, *va, ranges_a);
          const auto sb = steps(*kb, lb, ub.param_index, mb, *vb, ranges_b);
          if (!sa || !sb) {
            if (in_loops++ == 0) loop_why = buf + where + ": the steps of its loop could not be bounded";
            continue;
          }
          locality::Shape bound = shape;
          bound.iterations = std::max(*sa, *sb);
          std::string why_a, why_b;
          const auto fa = locality::bind(*ma.offset_form, bound, *va, &why_a);
          const auto fb = locality::bind(*mb.offset_form, bound, *vb, &why_b);
          if (!fa || !fb) {
            if (unknown++ == 0)
              unknown_why = "an offset into " + buf + where + " cannot be evaluated: " + (fa ? why_b : why_a);
            continue;
          }
          const locality::Access xa{*fa, static_cast<int64_t>(ua.offset), ma.bytes,
                                    locality::bindGuard(ma.guard_conditions, bound, *va)};
          const locality::Access xb{*fb, static_cast<int64_t>(ub.offset), mb.bytes,
                                    locality::bindGuard(mb.guard_conditions, bound, *vb)};
          const locality::PairVerdict pv = locality::checkPair(xa, xb, bound);
          if (pv.verdict == locality::Verdict::kThreadLocal) {
            if (local_why.empty()) local_why = pv.why;
          } else if (pv.verdict == locality::Verdict::kCrossThread) {
            if (crossing++ == 0) {
              cross_why = buf + " is accessed" + where + " " + pv.why;
              cross_sentence = crossingSentence(*ka, ma, *fa, ua, *kb, mb, *fb, ub, buf);
            }
          } else if (loops) {
            if (in_loops++ == 0) loop_why = buf + " is accessed" + where + " " + pv.why;
          } else if (unknown++ == 0) {
            unknown_why = buf + " is accessed" + where + " " + pv.why;
          }
        }
      }
      auto more = [](int n) {
        return n > 1 ? " (and " + std::to_string(n - 1) + " more access pairs)" : std::string();
      };
      if (crossing > 0) {
        // One readable sentence decides the verdict; the affine forms behind it are a reason for --verbose.
        v.weaken(Legality::kBlocked, cross_sentence);
        v.reasons.push_back(cross_why + more(crossing) + ": threads read neighbours' data (stencil-like)");
      } else if (in_loops > 0) {
        // A thread that steps through a loop touches many elements: unless the steps were shown to keep threads
        // apart, calling the pair likely thread-local would be a guess against the evidence.
        v.weaken(Legality::kBlocked, (in_loops > 1 ? loop_why + more(in_loops) : loop_why) +
                                         ": inside a loop, its threads may touch elements other threads write, so "
                                         "thread locality cannot be shown");
      } else if (unknown > 0) {
        v.weaken(Legality::kLikely, unknown_why + more(unknown) + ": thread locality not proven");
      } else {
        v.noteLocal(buf, local_why, ka->name, kb->name);
      }
    }
  }
  for (const KernelFacts* k : {ka, kb}) {
    if (k && k->grid_sync) v.weaken(Legality::kBlocked, k->name + " synchronizes the whole grid");
  }
}

bool Analysis::hasPtx(size_t op) const {
  const KernelFacts* k = cat_.find(g_.ops[op].function_id);
  return k && k->has_ptx;
}

bool Analysis::sameShape(size_t a, size_t b) const {
  const core::Launch& la = launch(a);
  const core::Launch& lb = launch(b);
  return la.grid == lb.grid && la.block == lb.block;
}

// Block-level fusion of a same-shape pair that is not thread-local (block_level.h). Only verdicts that rest on
// thread locality are reconsidered: what checkVisibility found (no PTX, unfollowed pointers, calls) still holds.
// `visible`: checkVisibility found nothing for either launch.
void Analysis::checkBlockLevel(const std::vector<size_t>& occ, bool visible, Verdict& v) const {
  const KernelFacts* kp = cat_.find(g_.ops[occ[0]].function_id);
  const KernelFacts* kc = cat_.find(g_.ops[occ[1]].function_id);
  if (!visible || !kp || !kc) return;
  for (const KernelFacts* k : {kp, kc}) {
    if (k->grid_sync) return;  // checkPair's verdict stands
  }
  const block_level::Result r = block_level::check(*kp, launch(occ[0]), *kc, launch(occ[1]));
  if (r.legality != Legality::kProven) {
    v.reasons.push_back(r.why);
    return;
  }
  Verdict proven;
  proven.block_level = true;
  proven.reasons.push_back(r.why);
  for (std::string& why : v.reasons) proven.reasons.push_back("thread-local fusion does not apply: " + why);
  v = std::move(proven);
}

// Prologue fusion of a same-shape pair that is neither thread-local nor block-level (prologue.h). As for
// block-level, only verdicts that rest on thread locality are reconsidered.
void Analysis::checkSameShapePrologue(const std::vector<size_t>& occ, bool visible, Verdict& v) const {
  if (!visible) return;
  std::vector<epilogue::Part> parts;
  for (size_t op : occ) {
    const KernelFacts* k = cat_.find(g_.ops[op].function_id);
    if (!k) return;
    const core::Launch& l = launch(op);
    parts.push_back(epilogue::Part{k, locality::Shape{l.grid, l.block}, atomValues(op), g_.ops[op].uses});
  }
  uint32_t element_grid = 0;
  const epilogue::Part original = parts[0];
  if (std::string why = elementWise(parts[0], element_grid); !why.empty()) {
    v.reasons.push_back("prologue fusion does not apply: " + why);
    return;
  }
  const prologue::Result r = elementMap<prologue::Result>(
      element_map_threads_, [&](uint64_t* n) { return prologue::check(parts[0], parts[1], n); });
  if (r.legality != Legality::kProven) {
    v.reasons.push_back("prologue fusion does not apply: " + r.why);
    return;
  }
  Verdict proven;
  if (element_grid != 0) proven.reasons.push_back(elementWiseSentence(original, parts[0]));
  proven.prologue = true;
  proven.epilogue = EpilogueMap{r.producer_param, 1,           r.consumer_param, r.consumer_offset, r.element_bytes,
                                r.producer_lanes, element_grid};
  proven.reasons.push_back(r.why);
  for (std::string& why : v.reasons) proven.reasons.push_back("thread-local fusion does not apply: " + why);
  v = std::move(proven);
}

void Analysis::checkSameShapeEpilogue(const std::vector<size_t>& occ, bool visible, Verdict& v) const {
  if (!visible || occ.size() != 2) return;
  const KernelFacts* producer = cat_.find(g_.ops[occ[0]].function_id);
  const KernelFacts* consumer = cat_.find(g_.ops[occ[1]].function_id);
  if (!producer || !consumer || (!producer->element_view && !consumer->element_view)) return;
  Verdict e;
  checkEpilogue(occ, e, /*prologue_fallback=*/false);  // a prologue is checkSameShapePrologue's, with its own kind
  if (e.legality != Legality::kProven || !e.epilogue) {
    for (const std::string& why : e.reasons) v.reasons.push_back("epilogue fusion does not apply: " + why);
    return;
  }
  for (std::string& why : v.reasons) e.reasons.push_back("thread-local fusion does not apply: " + why);
  e.epilogue_kind = true;
  v = std::move(e);
}

// An element-wise part of an element-remapped fusion that is a grid-stride kernel becomes its element-per-thread
// view (grid_stride.h), and `grid` that view's blocks; other parts stay as they are (grid 0). The refusal when the
// view does not hold for this launch.
std::string Analysis::elementWise(epilogue::Part& part, uint32_t& grid) {
  grid = 0;
  gridstride::ElementPart e = gridstride::elementPart(part);
  if (!e.part) return e.why;
  part = std::move(*e.part);
  grid = part.shape.grid.x;
  return {};
}

// What elementWise did to `part`, in words.
std::string Analysis::elementWiseSentence(const epilogue::Part& part, const epilogue::Part& view) {
  const KernelFacts::ElementView* ev = part.facts->element_view.get();
  const auto n = ev ? gridstride::boundValue(*ev, part.values) : std::nullopt;
  return part.facts->name + " is a grid-stride loop" +
         (ev && ev->unrolled > 1 ? " (unrolled " + std::to_string(ev->unrolled) + " times by nvcc)" : std::string()) +
         " over " + (n ? std::to_string(*n) : std::string("its bound")) +
         " elements whose iterations touch no common byte: judged as its loop body run once per element, on " +
         std::to_string(view.shape.grid.x) + " blocks of " + std::to_string(view.shape.block.x) +
         " threads (the plan pins its bound, " + (ev ? gridstride::boundArguments(*ev) : std::string("its bound")) +
         ")";
}

// Element-remapped fusion of a producer (occ[0]) with element-wise consumers (the rest): see epilogue.h.
void Analysis::checkEpilogue(const std::vector<size_t>& occ, Verdict& v, bool prologue_fallback) const {
  std::vector<epilogue::Part> parts;
  for (size_t op : occ) {
    const KernelFacts* k = cat_.find(g_.ops[op].function_id);
    if (!k || !k->has_ptx) return;  // checkVisibility said so
    const core::Launch& l = launch(op);
    parts.push_back(epilogue::Part{k, locality::Shape{l.grid, l.block}, atomValues(op), g_.ops[op].uses});
  }
  epilogue::Part producer = parts.front();
  const epilogue::Part parts_producer = producer;
  parts.erase(parts.begin());
  // Grid-stride consumers, judged as one element per thread (grid_stride.h).
  std::vector<epilogue::Part> consumers = parts;
  uint32_t consumer_grid = 0;
  std::string consumers_why;
  for (epilogue::Part& c : consumers) {
    uint32_t grid = 0;
    if (std::string why = elementWise(c, grid); !why.empty()) {
      if (consumers_why.empty()) consumers_why = why;
    } else if (grid != 0) {
      consumer_grid = grid;
    }
  }
  const epilogue::Result r =
      consumers_why.empty()
          ? elementMap<epilogue::Result>(element_map_threads_,
                                         [&](uint64_t* n) { return epilogue::check(producer, consumers, n); })
          : epilogue::Result{Legality::kBlocked, consumers_why};
  auto proven = [&](const epilogue::Result& e, uint32_t producer_grid, const epilogue::Part& producer_view) {
    v.reasons.push_back(e.why);
    v.epilogue = EpilogueMap{e.producer_param, e.consumer + 1, e.consumer_param, e.consumer_offset, e.element_bytes, 1,
                             consumer_grid,    producer_grid};
    if (producer_grid != 0) v.reasons.push_back(elementWiseSentence(parts_producer, producer_view));
    for (size_t j = 0; j < parts.size(); ++j) {
      if (consumers[j].facts != parts[j].facts) v.reasons.push_back(elementWiseSentence(parts[j], consumers[j]));
    }
  };
  if (r.legality == Legality::kProven) return proven(r, 0, producer);
  // A grid-stride producer (an in-place bias loop on a few blocks, then a GELU on its own launch) may still be the
  // producer of an epilogue as its element view, on the view's launch.
  if (consumers_why.empty() && producer.facts->element_view) {
    epilogue::Part view = producer;
    uint32_t producer_grid = 0;
    if (elementWise(view, producer_grid).empty() && producer_grid != 0) {
      const epilogue::Result rv = elementMap<epilogue::Result>(
          element_map_threads_, [&](uint64_t* n) { return epilogue::check(view, consumers, n); });
      if (rv.legality == Legality::kProven) return proven(rv, producer_grid, view);
    }
  }
  // Not an epilogue: a pair may still fuse the other way round, the producer recomputed at the consumer's loads.
  if (parts.size() == 1 && prologue_fallback) {
    uint32_t producer_grid = 0;
    std::string producer_why = elementWise(producer, producer_grid);
    const prologue::Result pr =
        producer_why.empty()
            ? elementMap<prologue::Result>(element_map_threads_,
                                           [&](uint64_t* n) { return prologue::check(producer, parts.front(), n); })
            : prologue::Result{Legality::kBlocked, producer_why};
    if (pr.legality == Legality::kProven) {
      v.reasons.push_back(pr.why);
      v.reasons.push_back("epilogue fusion does not apply: " + r.why);
      v.epilogue =
          EpilogueMap{pr.producer_param, 1, pr.consumer_param, pr.consumer_offset, pr.element_bytes, pr.producer_lanes,
                      producer_grid};
      if (producer_grid != 0) v.reasons.push_back(elementWiseSentence(parts_producer, producer));
      v.prologue = true;
      return;
    }
    // The refusal that says more: the better verdict, and among equals the prologue's when the consumer is not
    // 1-D (no epilogue could take it).
    const locality::Shape& cs = parts.front().shape;
    const bool consumer_1d = cs.grid.y == 1 && cs.grid.z == 1 && cs.block.y == 1 && cs.block.z == 1;
    const bool prologue_first =
        static_cast<int>(pr.legality) < static_cast<int>(r.legality) || (pr.legality == r.legality && !consumer_1d);
    v.weaken(prologue_first ? pr.legality : r.legality, prologue_first ? pr.why : r.why);
    v.prologue = prologue_first;  // the kind the deciding reason is about
    v.reasons.push_back(
        (prologue_first ? "epilogue fusion does not apply: " + r.why : "prologue fusion does not apply: " + pr.why));
    return;
  }
  v.weaken(r.legality, r.why);
}

// Which access breaks thread locality, in words: "jacobi (line 65) reads allocation 1 768 bytes after where
// jacobi (line 75) writes for the same thread: each thread touches data of a neighbouring thread (stencil-like)".
std::string Analysis::crossingSentence(const KernelFacts& ka, const ParamMemoryAccess& ma,
                                       const locality::LinearForm& fa, const BufferUse& ua, const KernelFacts& kb,
                                       const ParamMemoryAccess& mb, const locality::LinearForm& fb, const BufferUse& ub,
                                       const std::string& buf) {
  auto verb = [](const ParamMemoryAccess& m) { return m.is_write ? (m.is_read ? "updates" : "writes") : "reads"; };
  const std::string a = ka.name + " (line " + std::to_string(ma.line) + ")";
  const std::string b = kb.name + " (line " + std::to_string(mb.line) + ")";
  if (fa.sameLinearPart(fb)) {
    const int64_t d = (static_cast<int64_t>(ub.offset) + fb.constant) - (static_cast<int64_t>(ua.offset) + fa.constant);
    if (d != 0) {
      const uint64_t mag = d < 0 ? 0 - static_cast<uint64_t>(d) : static_cast<uint64_t>(d);
      const std::string elements = mb.bytes > 0 && mag % mb.bytes == 0 && mag / mb.bytes > 1
                                       ? " (" + std::to_string(mag / mb.bytes) + " elements)"
                                   : mb.bytes > 0 && mag == mb.bytes ? " (one element)"
                                                                     : "";
      return b + " " + verb(mb) + " " + buf + " " + std::to_string(mag) + " bytes" + elements + " " +
             (d > 0 ? "after" : "before") + " where " + a + " " + verb(ma) +
             " for the same thread: each thread touches data of a neighbouring "
             "thread (stencil-like)";
    }
    return b + " " + verb(mb) + " the bytes of " + buf + " that " + a + " " + verb(ma) +
           " for the same thread, but wider than a thread's own: neighbouring threads share bytes";
  }
  return b + " " + verb(mb) + " " + buf + " at another function of the thread index than " + a + " " + verb(ma) +
         " (a transpose or a gather): some thread touches another thread's data";
}

// The values a legality verdict for this occurrence depends on, beyond the pattern's identity (functions, launch
// shapes, which arguments share an allocation): every argument that influences the kernels' accesses
// (KernelFacts::influence_params) by its value, and every pointer into an allocation by its offset there and by
// which other pointers share that allocation. Occurrences with equal keys get equal verdicts, and a plan pins
// them all. `unpinned` says why some influencing argument cannot be pinned (empty when all can).
void Analysis::proofArguments(const std::vector<size_t>& occ, std::vector<ProofArgument>& args,
                              std::string* unpinned) const {
  args.clear();
  std::vector<core::Id> allocations;  // first-seen order over the tuple's pointers
  for (size_t i = 0; i < occ.size(); ++i) {
    const KernelFacts* k = cat_.find(g_.ops[occ[i]].function_id);
    const core::Launch& l = launch(occ[i]);
    std::vector<const core::PointerArg*> pointers;  // this kernel's, pinned after its scalars
    auto pin = [&](const core::PointerArg& a) {
      if (std::find(pointers.begin(), pointers.end(), &a) == pointers.end()) pointers.push_back(&a);
    };
    for (size_t n = 0; k && n < k->influence_params.size(); ++n) {
      const int p = k->influence_params[n];
      const bool absolute = std::binary_search(k->absolute_params.begin(), k->absolute_params.end(), p);
      if (const core::PointerArg* a = resolvedPointer(l, p)) {
        pin(*a);
        if (!absolute) continue;
        // Its value too, below: the kernel computes with the address itself. The proof then holds only at the
        // recorded addresses, which validation (fresh buffers) cannot reproduce: not a proof kfuse can act on.
        if (unpinned && unpinned->empty()) {
          *unpinned = k->name + " computes with the address in its argument " + std::to_string(p) +
                      " itself (its bits, or its distance to another pointer): the verdict holds only at the "
                      "recorded addresses, which a plan cannot validate elsewhere";
        }
      }
      std::optional<int64_t> v;
      if (static_cast<size_t>(p) < k->params.size()) v = pinnedValue(l, k->params[static_cast<size_t>(p)]);
      if (!v && unpinned && unpinned->empty()) {
        const int size = static_cast<size_t>(p) < k->params.size() ? k->params[static_cast<size_t>(p)].size : -1;
        *unpinned = k->name + " argument " + std::to_string(p) + " (" +
                    (size > 0 ? std::to_string(size) + " bytes" : std::string("of unknown size")) +
                    ") decides where its accesses fall, and kfuse pins only arguments of 1, 2, 4 or 8 bytes";
      }
      args.push_back(ProofArgument{static_cast<int>(i), p, ProofValue::kScalar, v.value_or(INT64_MIN)});
    }
    for (const BufferUse& u : g_.ops[occ[i]].uses) {
      if (u.in_struct) continue;  // not a parameter of its own: checkVisibility refuses proofs through it
      if (const core::PointerArg* a = resolvedPointer(l, u.param_index)) pin(*a);
    }
    std::sort(pointers.begin(), pointers.end(),
              [](const core::PointerArg* a, const core::PointerArg* b) { return a->param_index < b->param_index; });
    for (const core::PointerArg* a : pointers) {
      const auto at = std::find(allocations.begin(), allocations.end(), a->allocation_id);
      const int64_t cls = at - allocations.begin();
      if (at == allocations.end()) allocations.push_back(a->allocation_id);
      args.push_back(ProofArgument{static_cast<int>(i), a->param_index, ProofValue::kPointerOffset,
                                   static_cast<int64_t>(a->offset)});
      args.push_back(ProofArgument{static_cast<int>(i), a->param_index, ProofValue::kAllocation, cls});
    }
  }
}

// The values of a tuple that say something: scalar arguments, and pointer arguments not at their allocation's
// start (the JSON report lists them all).
std::string Analysis::argumentsText(const Candidate& c, const std::vector<ProofArgument>& args) {
  std::string s;
  for (const ProofArgument& a : args) {
    if (a.what == ProofValue::kAllocation || (a.what == ProofValue::kPointerOffset && a.value == 0)) continue;
    const bool offset = a.what == ProofValue::kPointerOffset;
    if (!s.empty()) s += ", ";
    s += c.names[static_cast<size_t>(a.kernel)] + (offset ? " arg " : " param") + std::to_string(a.param) +
         (offset ? " at +" + std::to_string(a.value) + " bytes" : "=" + std::to_string(a.value));
  }
  return s.empty() ? "pointers at their allocations' starts" : s;
}

// Legality of one occurrence (every pair of its kernels, for its argument values).
Analysis::Verdict Analysis::judgeOccurrence(CandidateKind kind, const std::vector<size_t>& occ) const {
  Verdict v;
  if (!g_.has_pointer_data) return v;
  for (size_t op : occ) checkVisibility(op, v);
  const bool visible = v.legality == Legality::kProven;  // what the kinds tried after thread locality need
  if (kind == CandidateKind::kVertical) {
    // A producer whose launch shape differs from its consumers' can only be an epilogue fusion (or, for a pair,
    // a prologue); the consumers, which share one shape, must still be thread-local among themselves.
    const bool remapped = !sameShape(occ[0], occ[1]);
    for (size_t i = remapped ? 1 : 0; i < occ.size(); ++i) {
      for (size_t j = i + 1; j < occ.size(); ++j) checkPair(occ[i], occ[j], v);
    }
    if (remapped) checkEpilogue(occ, v);
    // A grid-stride kernel in a pair of one shape: an epilogue on the consumer's (or the producer's) element view.
    if (!remapped && occ.size() == 2 && v.legality != Legality::kProven) checkSameShapeEpilogue(occ, visible, v);
    // Not thread-local: a producer and consumer of one launch shape may still fuse per block, with a barrier,
    // or with the producer recomputed at the consumer's loads (a stencil after an element-wise kernel).
    if (!remapped && occ.size() == 2 && v.legality != Legality::kProven) checkBlockLevel(occ, visible, v);
    if (!remapped && occ.size() == 2 && v.legality != Legality::kProven) checkSameShapePrologue(occ, visible, v);
  }
  for (const auto& [key, kernels] : v.local) {
    std::string names;
    for (size_t i = 0; i < kernels.size(); ++i) {
      names += (i == 0 ? "" : i + 1 == kernels.size() ? " and " : ", ") + kernels[i];
    }
    v.reasons.push_back(key.first + ": every access of " + names +
                        " with a write among them is thread-local for "
                        "these arguments (" +
                        key.second + "): each thread reads only what the same thread wrote");
  }
  return v;
}

// Judges a pattern on every distinct tuple of the values its proof reads. Occurrences whose tuples get different
// verdicts become separate candidates (proven, likely, blocked), each saying what it was checked on.
std::vector<Candidate> Analysis::judge(Candidate c) const {
  static constexpr size_t kMaxTuples = 1024;
  const std::vector<size_t>& first = c.occurrences.front();
  Verdict common;
  if (c.kind == CandidateKind::kVertical) {
    const core::Launch& l = launch(first.front());
    if (sameShape(first[0], first[1])) {
      c.fusion = FusionKind::kThreadLocal;
      common.reasons.push_back("same launch configuration (grid " + dimText(l.grid) + ", block " + dimText(l.block) +
                               ")");
    } else if (!g_.has_pointer_data) {
      c.fusion = FusionKind::kEpilogue;
      common.reasons.push_back("launch shapes differ (grid " + dimText(l.grid) + " then " +
                               dimText(launch(first[1]).grid) +
                               "): their kernel families allow a fusion that does "
                               "not need equal shapes");
    } else {
      c.fusion = FusionKind::kEpilogue;
      const core::Launch& lc = launch(first[1]);
      common.reasons.push_back("the producer runs on grid " + dimText(l.grid) + ", block " + dimText(l.block) +
                               ", its consumers on grid " + dimText(lc.grid) + ", block " + dimText(lc.block) +
                               ": only an element-remapped fusion applies (an epilogue, consumers per element in "
                               "the producer's launch" +
                               std::string(first.size() == 2 ? "; or a prologue, the "
                                                               "producer recomputed at the consumer's loads)"
                                                             : ")"));
    }
    if (g_.ops[first.front()].inGraph()) {
      common.reasons.push_back("a path in CUDA graph " + std::to_string(g_.ops[first.front()].graph_id) +
                               " with no other kernel, copy or set between each node and the next");
    } else {
      common.reasons.push_back("adjacent on stream " + std::to_string(g_.ops[first.front()].stream_id) +
                               " with no host synchronization between them");
    }
    if (!g_.has_pointer_data) {
      const std::string flow = adv_.tensorEdgesSource() == "execution-trace" ? "data flow from the Execution Trace"
                               : adv_.tensorEdgesSource().empty()            ? "data flow inferred from stream order"
                                                                  : "data flow inferred from operator shapes";
      common.weaken(Legality::kLikely, "no pointer arguments or PTX in this trace: " + flow +
                                           ", legality from the kernel families, thread locality not checked");
    }
    for (size_t i = 0; i + 1 < first.size(); ++i) {
      for (const Edge* e : g_.edgesBetween(first[i], first[i + 1])) {
        if (e->kind != EdgeKind::kStreamOrder) c.edges.push_back({e->kind, g_.describe(*e, t_, cat_)});
      }
    }
    for (auto& e : adv_.describeEdges(first)) c.edges.push_back(std::move(e));
  } else {
    c.fusion = FusionKind::kHorizontal;
    std::set<core::Id> streams;
    for (size_t op : first) streams.insert(g_.ops[op].stream_id);
    const std::string what = first.size() == 2 ? "" : std::to_string(first.size()) + " kernels ";
    // A member whose accesses the analysis cannot see (checkVisibility) may depend on another through them.
    const bool hidden =
        g_.has_pointer_data && !std::all_of(first.begin(), first.end(), [&](size_t op) { return seesInto(op); });
    const std::string shown = hidden ? " that the trace shows" : "";
    if (g_.ops[first.front()].inGraph()) {
      common.reasons.push_back(what + "nodes of CUDA graph " + std::to_string(g_.ops[first.front()].graph_id) +
                               " with no path between them in the graph");
    } else {
      common.reasons.push_back(
          streams.size() == 1 ? what + "adjacent on one stream with no data dependence between them" + shown
          : streams.size() == first.size()
              ? what + "on different streams with no event or synchronization ordering them"
              : what + "on " + std::to_string(streams.size()) + " streams, with no data dependence" + shown +
                    ", event or synchronization ordering any two of them");
    }
    common.reasons.push_back("together they fit in one wave on " + gpu_.short_name);
    if (!g_.has_pointer_data) {
      common.weaken(Legality::kLikely,
                    "no pointer arguments in this trace: independence assumes the program has "
                    "no unsynchronized cross-stream data race");
    }
  }
  // Work the trace cannot show may sit between these kernels: graph launches the hook backend could only count
  // (those whose graph the trace holds are in the dependency graph).
  for (const core::Stat& st : t_.stats) {
    if (st.name == core::statName(core::StatId::kGraphLaunchesNotRecorded) && st.value > g_.graph_launches_seen) {
      common.weaken(Legality::kLikely, "the trace has " + std::to_string(st.value - g_.graph_launches_seen) +
                                           " CUDA graph launches whose kernels were not recorded (hook backend): one "
                                           "may run between these kernels (record with --backend cupti to see them)");
    }
  }

  // Without pointer arguments nothing here depends on argument values: the common verdict is the whole story.
  if (!g_.has_pointer_data) {
    c.legality = common.legality;
    c.verdict = common.decider();
    if (c.verdict.empty() && c.legality == Legality::kLikely) {
      c.verdict = "the trace has no pointer arguments: which buffers the kernels share is not known";
    }
    c.reasons = std::move(common.reasons);
    // Medium: the Execution Trace shows the data flowing between every consecutive pair, and the kernel families
    // allow the fusion; otherwise low.
    c.confidence = c.kind == CandidateKind::kVertical && adv_.confirmedByExecutionTrace(first) ? Confidence::kMedium
                                                                                               : Confidence::kLow;
    return {std::move(c)};
  }

  // Distinct argument tuples, in order of first occurrence.
  struct Tuple {
    std::vector<ProofArgument> args;
    std::vector<size_t> occurrences;  // indices into c.occurrences
  };
  std::vector<Tuple> tuples;
  std::map<std::vector<int64_t>, size_t> index;
  std::vector<size_t> unchecked;
  std::vector<ProofArgument> args;
  std::vector<int64_t> key;
  std::string unpinned;
  for (size_t i = 0; i < c.occurrences.size(); ++i) {
    if (core::cancelRequested()) break;  // analyze() returns cancelled after the search
    proofArguments(c.occurrences[i], args, &unpinned);
    key.clear();
    for (const ProofArgument& a : args) {
      key.insert(key.end(), {a.kernel * 4 + static_cast<int64_t>(a.what), a.param, a.value});
    }
    // The size of dynamic shared memory, for kernels whose accesses depend on it (the plan pins launch shapes).
    for (size_t op : c.occurrences[i]) {
      const KernelFacts* k = cat_.find(g_.ops[op].function_id);
      if (k && k->reads_dynamic_shared_size) key.insert(key.end(), {-1, -1, launch(op).dynamic_shared_bytes});
    }
    auto it = index.find(key);
    if (it == index.end()) {
      if (tuples.size() == kMaxTuples) {
        unchecked.push_back(i);
        continue;
      }
      it = index.emplace(key, tuples.size()).first;
      tuples.push_back(Tuple{args, {}});
    }
    tuples[it->second].occurrences.push_back(i);
  }

  // One part per legality, in the order proven, likely, blocked.
  struct Part {
    Verdict verdict;
    std::vector<size_t> occurrences;
    std::set<std::string> seen;
    LegalityCheck checked;
  };
  std::map<std::tuple<Legality, bool, bool, bool>, Part> parts;
  std::optional<EpilogueMap> map;
  bool map_prologue = false;
  for (const Tuple& tuple : tuples) {
    Verdict v = judgeOccurrence(c.kind, c.occurrences[tuple.occurrences.front()]);
    if (!unpinned.empty()) v.weaken(Legality::kLikely, unpinned);
    if (v.legality == Legality::kProven && v.epilogue) {
      if (!map) {
        map = v.epilogue;
        map_prologue = v.prologue;
      }
      if (!(*map == *v.epilogue) || map_prologue != v.prologue) {
        v.weaken(Legality::kLikely,
                 "these arguments put the consumers' elements elsewhere than the first proven "
                 "occurrence's: one fused kernel cannot serve both");
      }
    }
    // Proven occurrences split by kind: a block-level proof yields another fused kernel than a thread-local one.
    Part& part = parts[{v.legality, v.block_level, v.prologue, v.epilogue_kind}];
    part.verdict.legality = v.legality;
    part.verdict.block_level = v.block_level;
    part.verdict.prologue = v.prologue;
    part.verdict.epilogue_kind = v.epilogue_kind;
    part.verdict.adoptDeciders(v);
    for (std::string& r : v.reasons) {
      if (part.seen.insert(r).second) part.verdict.reasons.push_back(std::move(r));
    }
    part.occurrences.insert(part.occurrences.end(), tuple.occurrences.begin(), tuple.occurrences.end());
    part.checked.occurrences_checked += tuple.occurrences.size();
    part.checked.argument_tuples++;
    if (part.checked.tuples.size() < LegalityCheck::kMaxListedTuples) part.checked.tuples.push_back(tuple.args);
  }
  if (!unchecked.empty()) {
    Part& part = parts[{Legality::kLikely, false, false, false}];
    part.verdict.weaken(Legality::kLikely, std::to_string(unchecked.size()) +
                                               " occurrences were not checked: their "
                                               "arguments form more than " +
                                               std::to_string(kMaxTuples) + " distinct tuples");
    part.occurrences.insert(part.occurrences.end(), unchecked.begin(), unchecked.end());
  }

  std::vector<Candidate> out;
  const size_t total = c.occurrences.size();
  std::vector<std::vector<size_t>> occurrences = std::move(c.occurrences);
  c.occurrences.clear();
  for (auto& [part_key, part] : parts) {
    Candidate p = c;
    if (part.verdict.block_level) p.fusion = FusionKind::kBlockLevel;
    if (part.verdict.prologue) p.fusion = FusionKind::kPrologue;
    if (part.verdict.epilogue_kind) p.fusion = FusionKind::kEpilogue;
    std::sort(part.occurrences.begin(), part.occurrences.end());
    p.occurrences.reserve(part.occurrences.size());
    for (size_t i : part.occurrences) p.occurrences.push_back(std::move(occurrences[i]));
    Verdict v = common;
    v.lower(part.verdict.legality);
    v.adoptDeciders(part.verdict);
    for (std::string& r : part.verdict.reasons) v.reasons.push_back(std::move(r));
    const std::string which =
        part.checked.argument_tuples == 1 ? "one set" : std::to_string(part.checked.argument_tuples) + " sets";
    const size_t n = part.checked.occurrences_checked;
    const bool all = parts.size() == 1 && unchecked.empty();
    std::string checked =
        "legality checked on " +
        (all && n == 1 ? std::string("its only occurrence")
                       : (all ? "every one of its " : "") + std::to_string(n) + " occurrence" + (n == 1 ? "" : "s")) +
        " (" + which + " of the argument values the proof reads: " +
        argumentsText(p, part.checked.tuples.empty() ? std::vector<ProofArgument>{} : part.checked.tuples.front()) +
        (part.checked.argument_tuples > 1 ? "; ..." : "") + ")";
    if (parts.size() > 1 || !unchecked.empty()) {
      checked += "; the pattern's other " + std::to_string(total - p.occurrences.size()) +
                 " occurrences, with other argument values, are listed separately";
    }
    if (part.checked.argument_tuples > 0) v.reasons.push_back(std::move(checked));
    p.legality = v.legality;
    p.verdict = v.decider();
    p.reasons = std::move(v.reasons);
    if (p.legality == Legality::kProven && (p.fusion == FusionKind::kEpilogue || p.fusion == FusionKind::kPrologue)) {
      p.epilogue = map;
    }
    p.checked = std::move(part.checked);
    const bool have_ptx = std::all_of(p.function_ids.begin(), p.function_ids.end(), [&](core::Id f) {
      const KernelFacts* k = cat_.find(f);
      return k && k->has_ptx;
    });
    if (p.legality == Legality::kProven) {
      p.confidence = Confidence::kHigh;
    } else if (g_.has_pointer_data && have_ptx) {
      p.confidence = Confidence::kMedium;
    } else {
      p.confidence = Confidence::kLow;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kfuse::analyzer
