// Prologue fusion: an element-wise producer recomputed at the consumer's loads of what it wrote.
//
// Why this is sound for a pattern the analyzer proved (analyzer/src/legality/prologue.h): producer thread e writes
// element e of the intermediate X and nothing else, from inputs the consumer does not write, so running the producer's
// body as thread e anywhere computes the value element e holds after the producer's launch; every element the consumer
// may load is one the producer writes, so each replaced load gets the value it would have read. The consumer no
// longer reads X from memory, so the producer's own threads (kept so that X is still written) need no ordering
// against the consumer's: they run first in each fused thread, strided over the fused launch. The transform keeps:
//  - the element index from each load's own address, so any consumer index expression works (loops included);
//  - a fallback to the original load for an element outside the producer's threads (never taken when proven);
//  - the producer's own guards and index arithmetic, fed the thread and block indices it had (ntid, nctaid as the
//    recorded constants; y and z indices 0 for a 1-D producer).
#include <algorithm>
#include <bit>

#include "element_glue.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/rewriter/fusion.h"
#include "rename.h"

namespace kfuse::rewriter {

using ptx::Function;
using ptx::Opcode;
using ptx::Operand;
using ptx::OperandKind;
using ptx::Statement;
using ptx::StatementKind;

namespace {

using detail::walkBody;

bool through(const ptx::MemoryAccess& a, int param) {
  return a.base_param == param || (a.base_param < 0 && std::find(a.pointer_params.begin(), a.pointer_params.end(),
                                                                 param) != a.pointer_params.end());
}

}  // namespace

Expected<FusionResult> fusePrologue(ptx::Module& module, const PrologueFusion& spec) {
  const uint32_t s = spec.element_bytes, k = spec.producer_lanes;
  if (s != 2 && s != 4 && s != 8) return unsupported("a prologue's elements must be 2, 4 or 8 bytes");
  if (k != 1 && k != 2 && k != 4) return unsupported("a prologue's producer stores 1, 2 or 4 elements per thread");
  const core::LaunchShape& ps = spec.producer_shape;
  const core::LaunchShape& cs = spec.consumer_shape;
  if (ps.block.y != 1 || ps.block.z != 1 || ps.grid.y != 1 || ps.grid.z != 1) {
    return unsupported("the producer of a prologue fusion must run on a 1-D launch");
  }
  const uint64_t producer_threads = ps.blocks() * ps.threads(), fused_threads = cs.blocks() * cs.threads();
  if (producer_threads == 0 || fused_threads == 0 || producer_threads + fused_threads >= (uint64_t{1} << 32) ||
      producer_threads * k >= (uint64_t{1} << 32)) {
    return unsupported("a prologue fusion handles launches of fewer than 2^32 threads and elements");
  }
  const uint64_t elements = producer_threads * k;  // the elements the producer's threads may write
  KFUSE_ASSIGN_OR_RETURN(std::vector<const Function*> parts,
                         detail::kernelsNamed(module, {spec.producer, spec.consumer}));
  std::optional<Function> element_view;  // a grid-stride producer as one element per thread
  if (spec.element_per_thread) {
    parts[0] = detail::elementPerThread(module, *parts[0], element_view);
    if (!parts[0]) return unsupported("the producer of the prologue is not a grid-stride loop to run once per element");
  }
  const Function& producer = *parts[0];
  const Function& consumer = *parts[1];
  FusionResult result;
  result.fused_name =
      spec.fused_name.empty() ? "kfuse_prologue_" + spec.producer + "_" + spec.consumer : spec.fused_name;
  if (module.findFunction(result.fused_name)) {
    return unsupported("the module already has a function named '" + result.fused_name + "'");
  }
  if (spec.producer_param < 0 || static_cast<size_t>(spec.producer_param) >= producer.params.size()) {
    return unsupported("the producer has no parameter " + std::to_string(spec.producer_param));
  }
  if (spec.consumer_param < 0 || static_cast<size_t>(spec.consumer_param) >= consumer.params.size()) {
    return unsupported("the consumer has no parameter " + std::to_string(spec.consumer_param));
  }
  if (const std::string p = detail::elementBodyProblem(producer, "producer '" + producer.name + "'"); !p.empty()) {
    return unsupported(p);
  }

  // The producer's one store, through the intermediate's parameter and outside any loop; it writes nothing else.
  ptx::FunctionAnalyses pa(&module, producer);
  size_t store_stmt = SIZE_MAX;
  for (const ptx::MemoryAccess& a : pa.memoryAccesses()) {
    if (!a.is_write) continue;
    if (!through(a, spec.producer_param) || a.base_param < 0) {
      return unsupported("'" + producer.name + "' writes memory other than the intermediate (line " +
                         std::to_string(a.line) + ")");
    }
    if (a.in_loop) return unsupported("'" + producer.name + "' stores the intermediate inside a loop");
    if (a.is_read || a.bytes != s * k) {
      return unsupported("'" + producer.name + "' does not store the intermediate as " +
                         (k == 1 ? "one " : std::to_string(k) + " ") + std::to_string(s) + "-byte element" +
                         (k == 1 ? "" : "s") + " (line " + std::to_string(a.line) + ")");
    }
    if (store_stmt != SIZE_MAX) return unsupported("'" + producer.name + "' stores the intermediate more than once");
    store_stmt = a.stmt;
  }
  if (store_stmt == SIZE_MAX) return unsupported("'" + producer.name + "' has no store through its parameter");
  const ptx::Instruction& store = producer.body[store_stmt].inst;
  const bool vector_store = store.operands.size() == 2 && store.operands[1].kind == OperandKind::kVector;
  if (store.operands.size() != 2 || vector_store != (k > 1) ||
      (vector_store && store.operands[1].elements.size() != k)) {
    return unsupported("'" + producer.name + "' stores the intermediate in a form the pass does not rewrite (" +
                       std::to_string(k) + " element" + (k == 1 ? "" : "s") + " per thread expected)");
  }

  // The consumer's loads through its pointer into the intermediate: each becomes the producer's body.
  ptx::FunctionAnalyses ca(&module, consumer);
  struct Load {
    size_t stmt;
    uint32_t lanes;  // elements it loads (a vector load: 2 or 4)
  };
  std::vector<Load> loads;
  for (const ptx::MemoryAccess& a : ca.memoryAccesses()) {
    if (!through(a, spec.consumer_param)) continue;
    const std::string at = " (line " + std::to_string(a.line) + ")";
    // The address derives from this pointer alone (a loop's running pointer included): its distance from element
    // 0 is the element, whatever arithmetic led there.
    if (a.base_param != spec.consumer_param &&
        !(a.pointer_params.size() == 1 && a.pointer_params[0] == spec.consumer_param)) {
      return unsupported("'" + consumer.name +
                         "' reads the intermediate at an address that also derives from "
                         "another pointer" +
                         at);
    }
    if (a.is_write || a.op != ptx::Opcode::kLd) {
      return unsupported("'" + consumer.name + "' does more than load the intermediate" + at);
    }
    const ptx::Instruction& in = consumer.body[a.stmt].inst;
    const uint32_t lanes = in.has(ptx::Mod::kV2) ? 2 : in.has(ptx::Mod::kV4) ? 4 : in.has(ptx::Mod::kV8) ? 8 : 1;
    if (a.bytes != s * lanes || lanes > 4 || lanes > elements) {
      return unsupported("'" + consumer.name + "' loads " + std::to_string(a.bytes) +
                         " bytes of the intermediate at "
                         "a time, not one " +
                         std::to_string(s) + "-byte element or a vector of 2 or 4" + at);
    }
    const Operand& dest = in.operands.empty() ? Operand{} : in.operands[0];
    const bool dest_ok = lanes == 1 ? dest.kind == OperandKind::kRegister
                                    : dest.kind == OperandKind::kVector && dest.elements.size() == lanes &&
                                          std::all_of(dest.elements.begin(), dest.elements.end(), [](const Operand& o) {
                                            return o.kind == OperandKind::kRegister;
                                          });
    if (in.operands.size() != 2 || !dest_ok || in.operands[1].kind != OperandKind::kAddress ||
        in.operands[1].elements.empty() || in.operands[1].elements[0].kind != OperandKind::kRegister) {
      return unsupported("'" + consumer.name + "' loads the intermediate in a form the pass does not rewrite" + at);
    }
    loads.push_back({a.stmt, lanes});
  }
  if (loads.empty()) return unsupported("'" + consumer.name + "' has no load through its parameter");

  KFUSE_ASSIGN_OR_RETURN(detail::MergedParams merged,
                         detail::mergeParameters(parts, spec.equal_args, result.fused_name));
  Function fused = detail::fusedEntry(result.fused_name, std::move(merged.decls));
  result.params = std::move(merged.params);
  fused.directives = consumer.directives;  // the fused launch is the consumer's
  const std::string cparam = fused.params[merged.index[1][static_cast<size_t>(spec.consumer_param)]].name;

  // Renamers: the consumer once, the producer once per copy (its labels and registers apart in each): one per element
  // each load takes, and one for the producer's own threads.
  size_t copies = spec.write_intermediate ? 1 : 0;
  for (const Load& l : loads) copies += l.lanes;
  std::vector<detail::BodyRenaming> renamings;
  renamings.push_back({"k1_", merged.names[1]});
  for (size_t n = 0; n < copies; ++n) renamings.push_back({"k0c" + std::to_string(n) + "_", merged.names[0]});
  std::vector<detail::BodyRenamer> renamers;
  renamers.emplace_back(consumer, renamings[0]);
  for (size_t n = 0; n < copies; ++n) renamers.emplace_back(producer, renamings[n + 1]);
  auto declare = [&](const Function& f, const detail::BodyRenamer& r) {
    walkBody(f, [&](size_t, const Statement& st, bool hoisted) {
      if (!hoisted) return;
      fused.body.push_back(st);
      r.rename(fused.body.back());
    });
  };
  declare(consumer, renamers[0]);
  for (size_t n = 0; n < copies; ++n) declare(producer, renamers[n + 1]);
  // The glue's registers, declared at the top; its code goes straight into the fused body.
  std::vector<Statement> decls;
  ptx::Builder glue("%kfp_", &fused.body, &decls);
  const detail::ElementAddress at = detail::declareElementAddress(glue);
  const Operand& rel = at.rel;
  const Operand& e = at.e;
  const Operand p = glue.declare("p", ptx::DataType::kB32);
  const Operand ra = glue.declare("a", ptx::DataType::kB32);
  const Operand rb = glue.declare("b", ptx::DataType::kB32);
  const Operand rc = glue.declare("c", ptx::DataType::kB32);
  const Operand e32 = glue.declare("e32", ptx::DataType::kB32);
  detail::declareElementThread(glue);
  const Operand lane_reg = glue.declare("lane", ptx::DataType::kB32);
  const Operand skip = glue.declare("skip", ptx::DataType::kPred);
  const Operand pick = glue.declare("pick", ptx::DataType::kPred);
  fused.body.insert(fused.body.end(), decls.begin(), decls.end());

  const auto sregs = detail::elementSpecialRegisters("%kfp_");
  const auto imm = [](uint64_t v) { return ptx::integerOperand(static_cast<int64_t>(v)); };
  // Producer copy `n`, as the thread in %kfp_tid/%kfp_ctaid; its returns branch to `end`. `into`: the register its
  // store moves into (the store is kept when empty).
  auto producerCopy = [&](size_t n, const std::string& end, const std::string& into) {
    const detail::BodyRenamer& r = renamers[n + 1];
    walkBody(producer, [&](size_t i, const Statement& st, bool hoisted) {
      if (hoisted || detail::BodyRenamer::dropped(st)) return;
      Statement copy = st;
      r.rename(copy);
      detail::replaceReturn(copy, end);
      if (copy.kind == StatementKind::kInstruction) detail::useElementRegisters(copy.inst, sregs);
      if (i == store_stmt && !into.empty()) {
        // The stored value, or lane %kfp_lane of the stored vector, into the load's register.
        const std::string bits = ".b" + std::to_string(8 * s);
        const Operand& value = copy.inst.operands[1];
        if (!copy.inst.guard.empty()) glue.branch(end, copy.inst.guard, !copy.inst.guard_negated);
        glue.emit(Opcode::kMov, {bits}, {ptx::registerOperand(into), k == 1 ? value : value.elements[0]});
        for (uint32_t lane = 1; lane < k; ++lane) {
          glue.emit(Opcode::kSetp, {".eq", ".u32"}, {pick, lane_reg, imm(lane)});
          ptx::Instruction mov =
              ptx::makeInstruction(Opcode::kMov, {bits}, {ptx::registerOperand(into), value.elements[lane]});
          mov.guard = pick.name;
          glue.emit(std::move(mov));
        }
        return;
      }
      fused.body.push_back(std::move(copy));
    });
  };

  // Part 1: the producer's threads, strided over the fused launch's, so that the intermediate is still written.
  if (spec.write_intermediate) {
    // p = the fused thread's linear index: ((ctaid.z * grid.y + ctaid.y) * grid.x + ctaid.x) * threads + the
    // thread's linear index in its block.
    using R = ptx::SpecialRegister;
    glue.emit(Opcode::kMov, {".u32"}, {ra, ptx::specialOperand(R::kCtaidZ)});
    glue.emit(Opcode::kMov, {".u32"}, {rb, ptx::specialOperand(R::kCtaidY)});
    glue.emit(Opcode::kMad, {".lo", ".u32"}, {ra, ra, imm(cs.grid[1]), rb});
    glue.emit(Opcode::kMov, {".u32"}, {rb, ptx::specialOperand(R::kCtaidX)});
    glue.emit(Opcode::kMad, {".lo", ".u32"}, {ra, ra, imm(cs.grid[0]), rb});
    glue.emit(Opcode::kMov, {".u32"}, {rb, ptx::specialOperand(R::kTidZ)});
    glue.emit(Opcode::kMov, {".u32"}, {rc, ptx::specialOperand(R::kTidY)});
    glue.emit(Opcode::kMad, {".lo", ".u32"}, {rb, rb, imm(cs.block[1]), rc});
    glue.emit(Opcode::kMov, {".u32"}, {rc, ptx::specialOperand(R::kTidX)});
    glue.emit(Opcode::kMad, {".lo", ".u32"}, {rb, rb, imm(cs.block[0]), rc});
    glue.emit(Opcode::kMad, {".lo", ".u32"}, {p, ra, imm(cs.threads()), rb});
    glue.label("$kfuse_prologue_loop");
    glue.emit(Opcode::kSetp, {".ge", ".u32"}, {skip, p, imm(producer_threads)});
    glue.branch("$kfuse_prologue_loop_end", skip.name);
    glue.emit(Opcode::kMov, {".u32"}, {e32, p});
    detail::setElementThread(glue, e32, ps);
    producerCopy(copies - 1, "$kfuse_prologue_next", "");
    glue.label("$kfuse_prologue_next");
    glue.emit(Opcode::kAdd, {".u32"}, {p, p, imm(fused_threads)});
    glue.branch("$kfuse_prologue_loop");
    glue.label("$kfuse_prologue_loop_end");
  }

  // The consumer's body, each load of the intermediate computing its element instead.
  size_t site = 0, copy_index = 0;
  walkBody(consumer, [&](size_t i, const Statement& st, bool hoisted) {
    if (hoisted || detail::BodyRenamer::dropped(st)) return;
    Statement copy = st;
    renamers[0].rename(copy);
    const auto it = std::find_if(loads.begin(), loads.end(), [&](const Load& l) { return l.stmt == i; });
    if (it == loads.end()) {
      fused.body.push_back(std::move(copy));
      return;
    }
    const std::string n = std::to_string(site);
    const std::string end = "$kfuse_prologue_site" + n + "_end", load = "$kfuse_prologue_site" + n + "_load";
    ptx::Instruction in = copy.inst;
    const Operand& addr = in.operands[1];
    if (!in.guard.empty()) glue.branch(end, in.guard, !in.guard_negated);
    detail::emitDistanceFromElement0(glue, at, cparam, addr, spec.consumer_offset);
    glue.emit(Opcode::kShr, {".u64"}, {e, rel, imm(static_cast<uint64_t>(std::countr_zero(s)))});
    // Every element the load takes among the producer's (a negative element wraps above too).
    glue.emit(Opcode::kSetp, {".gt", ".u64"}, {skip, e, imm(elements - it->lanes)});
    glue.branch(load, skip.name);
    for (uint32_t lane = 0; lane < it->lanes; ++lane) {
      const std::string lane_end = "$kfuse_prologue_site" + n + "_lane" + std::to_string(lane);
      // Element e + lane is lane (e + lane) % k of producer thread (e + lane) / k.
      glue.emit(Opcode::kAdd, {".s64"}, {rel, e, imm(lane)});
      glue.emit(Opcode::kCvt, {".u32", ".u64"}, {e32, rel});
      if (k != 1) {
        glue.emit(Opcode::kRem, {".u32"}, {lane_reg, e32, imm(k)});
        glue.emit(Opcode::kDiv, {".u32"}, {e32, e32, imm(k)});
      }
      detail::setElementThread(glue, e32, ps);
      const Operand& dest = it->lanes == 1 ? in.operands[0] : in.operands[0].elements[lane];
      producerCopy(copy_index++, lane_end, dest.name);
      glue.label(lane_end);
    }
    glue.branch(end);
    glue.label(load);
    in.guard.clear();
    in.guard_negated = false;
    glue.emit(std::move(in));
    glue.label(end);
    ++site;
  });

  result.notes.push_back("prologue: " + std::to_string(loads.size()) + " load(s) of " + consumer.name +
                         " recompute their elements with " + producer.name + "'s body" +
                         (spec.write_intermediate ? "; its threads still write the intermediate, strided over the "
                                                    "fused launch"
                                                  : "; the intermediate is no longer written (--aggressive)"));
  module.functions.push_back(std::move(fused));
  module.order.push_back({ptx::TopLevelKind::kFunction, module.functions.size() - 1});
  return result;
}

}  // namespace kfuse::rewriter
