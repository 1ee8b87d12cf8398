// Epilogue fusion: the consumers run per element inside the producer, right after the store of that element.
//
// Why this is sound for a pattern the analyzer proved (analyzer/src/legality/epilogue.h): the producer writes each
// element of the intermediate exactly once, and consumer thread e touches only element e of it, so running consumer
// thread e right after that store reads what the separate launches would have read; every consumer thread with an
// effect owns an element the producer writes, so none is lost; the consumers share no written buffer with the
// producer's other accesses, so the order of threads does not matter. The transform keeps:
//  - the element index from the store's own address, so any producer shape and index expression works;
//  - a bound check (0 <= e < consumer threads), as elements beyond the consumers' launch had no consumer thread;
//  - each consumer's own guards and index arithmetic, fed the thread and block indices it had (ntid, nctaid as the
//    recorded constants; y and z indices 0 for 1-D consumers).
#include <algorithm>
#include <bit>
#include <functional>
#include <map>

#include "element_glue.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/rewriter/fusion.h"
#include "rename.h"

namespace kfuse::rewriter {

using ptx::Function;
using ptx::Opcode;
using ptx::Operand;
using ptx::OperandKind;
using ptx::Statement;
using ptx::StatementKind;

Expected<FusionResult> fuseEpilogue(ptx::Module& module, const EpilogueFusion& spec) {
  if (spec.consumers.empty()) return unsupported("an epilogue fusion needs at least one consumer");
  if (spec.element_bytes == 0) return unsupported("the epilogue's element size is not known");
  if (spec.consumer_shape.block.y != 1 || spec.consumer_shape.block.z != 1 || spec.consumer_shape.grid.y != 1 ||
      spec.consumer_shape.grid.z != 1) {
    return unsupported("the consumers of an epilogue fusion must run on a 1-D launch");
  }
  if (spec.consumer < 1 || static_cast<size_t>(spec.consumer) > spec.consumers.size()) {
    return unsupported("the epilogue's reference consumer is not one of its consumers");
  }
  std::vector<std::string> names{spec.producer};
  names.insert(names.end(), spec.consumers.begin(), spec.consumers.end());
  KFUSE_ASSIGN_OR_RETURN(std::vector<const Function*> parts, detail::kernelsNamed(module, names));
  // Grid-stride consumers as one element per thread.
  std::vector<std::optional<Function>> element_views(parts.size());
  if (spec.element_per_thread) {
    int views = 0;
    for (size_t k = 1; k < parts.size(); ++k) {
      if (const Function* one = detail::elementPerThread(module, *parts[k], element_views[k])) {
        parts[k] = one;
        ++views;
      }
    }
    if (views == 0) return unsupported("no consumer of the epilogue is a grid-stride loop to run once per element");
  }
  if (spec.producer_element_per_thread) {
    const Function* one = detail::elementPerThread(module, *parts[0], element_views[0]);
    if (!one) return unsupported("the epilogue's producer is not a grid-stride loop to run once per element");
    parts[0] = one;
  }
  FusionResult result;
  result.fused_name = spec.fused_name;
  if (result.fused_name.empty()) {
    result.fused_name = "kfuse_epilogue";
    for (const std::string& k : names) result.fused_name += "_" + k;
  }
  if (module.findFunction(result.fused_name)) {
    return unsupported("the module already has a function named '" + result.fused_name + "'");
  }
  const Function& producer = *parts[0];
  if (spec.producer_param < 0 || static_cast<size_t>(spec.producer_param) >= producer.params.size()) {
    return unsupported("the producer has no parameter " + std::to_string(spec.producer_param));
  }

  // The producer's one store through the intermediate's parameter, outside any loop.
  ptx::FunctionAnalyses fa(&module, producer);
  size_t store_stmt = SIZE_MAX;
  for (const ptx::MemoryAccess& a : fa.memoryAccesses()) {
    const bool through = a.base_param == spec.producer_param ||
                         (a.base_param < 0 && std::find(a.pointer_params.begin(), a.pointer_params.end(),
                                                        spec.producer_param) != a.pointer_params.end());
    if (!through || !a.is_write) continue;
    if (a.in_loop) return unsupported("'" + producer.name + "' stores the intermediate inside a loop");
    if (a.base_param < 0) {
      return unsupported("'" + producer.name +
                         "' stores the intermediate at an address the PTX analysis cannot "
                         "follow (line " +
                         std::to_string(a.line) + ")");
    }
    if (store_stmt != SIZE_MAX) {
      return unsupported("'" + producer.name + "' stores through parameter " + std::to_string(spec.producer_param) +
                         " more than once");
    }
    store_stmt = a.stmt;
  }
  if (store_stmt == SIZE_MAX) {
    return unsupported("'" + producer.name + "' has no store through parameter " + std::to_string(spec.producer_param));
  }
  for (size_t k = 1; k < parts.size(); ++k) {
    const std::string problem = detail::elementBodyProblem(*parts[k], "consumer '" + parts[k]->name + "'");
    if (!problem.empty()) return unsupported(problem);
  }

  KFUSE_ASSIGN_OR_RETURN(detail::MergedParams merged,
                         detail::mergeParameters(parts, spec.equal_args, result.fused_name));
  Function fused = detail::fusedEntry(result.fused_name, std::move(merged.decls));
  result.params = std::move(merged.params);
  fused.directives = producer.directives;  // the fused launch is the producer's

  std::vector<detail::BodyRenaming> renamings;
  for (size_t k = 0; k < parts.size(); ++k) renamings.push_back({"k" + std::to_string(k) + "_", merged.names[k]});
  std::vector<detail::BodyRenamer> renamers;
  for (size_t k = 0; k < parts.size(); ++k) renamers.emplace_back(*parts[k], renamings[k]);
  for (size_t k = 0; k < parts.size(); ++k) {
    detail::walkBody(*parts[k], [&](size_t, const Statement& s, bool h) {
      if (!h) return;
      fused.body.push_back(s);
      renamers[k].rename(fused.body.back());
    });
  }

  // The glue after the store: the element index from the store's address, the bound check, the consumer's
  // thread and block indices.
  const Statement& original_store = producer.body[store_stmt];
  Statement store = original_store;
  renamers[0].rename(store);
  const Operand* addr = nullptr;
  for (const Operand& o : store.inst.operands) {
    if (o.kind == OperandKind::kAddress) addr = &o;
  }
  if (!addr || addr->elements.empty() || addr->elements[0].kind != OperandKind::kRegister) {
    return unsupported("the producer's store does not address memory through a register");
  }
  const ArgRef ref{spec.consumer, spec.consumer_param};
  const auto& consumer_params = merged.index[static_cast<size_t>(ref.kernel)];
  if (ref.param < 0 || static_cast<size_t>(ref.param) >= consumer_params.size()) {
    return unsupported("the reference consumer has no parameter " + std::to_string(ref.param));
  }
  const std::string param_name = fused.params[consumer_params[static_cast<size_t>(ref.param)]].name;
  const uint64_t total = spec.consumer_shape.threads() * spec.consumer_shape.blocks();
  const std::string end = "$kfuse_epilogue_end";
  // Registers first (declared at the top of the fused kernel), then the code that runs after the store.
  std::vector<Statement> glue_decls, glue_code;
  ptx::Builder glue("%kfe_", &glue_code, &glue_decls);
  const detail::ElementAddress at = detail::declareElementAddress(glue);
  const Operand& rel = at.rel;
  const Operand& e = at.e;
  const Operand e32 = glue.declare("e32", ptx::DataType::kB32);
  detail::declareElementThread(glue);
  const Operand skip = glue.declare("skip", ptx::DataType::kPred);
  if (!store.inst.guard.empty()) glue.branch(end, store.inst.guard, !store.inst.guard_negated);  // no store, no element
  detail::emitDistanceFromElement0(glue, at, param_name, *addr, spec.consumer_offset);
  if (std::has_single_bit(spec.element_bytes)) {
    glue.emit(Opcode::kShr, {".u64"}, {e, rel, ptx::integerOperand(std::countr_zero(spec.element_bytes))});
  } else {
    glue.emit(Opcode::kDiv, {".u64"}, {e, rel, ptx::integerOperand(spec.element_bytes)});
  }
  // Negative offsets wrap above the total too.
  glue.emit(Opcode::kSetp, {".ge", ".u64"}, {skip, e, ptx::integerOperand(static_cast<int64_t>(total))});
  glue.branch(end, skip.name);
  glue.emit(Opcode::kCvt, {".u32", ".u64"}, {e32, e});
  detail::setElementThread(glue, e32, spec.consumer_shape);
  fused.body.insert(fused.body.end(), glue_decls.begin(), glue_decls.end());

  // The producer's body with the consumers after its store.
  const auto sregs = detail::elementSpecialRegisters("%kfe_");
  detail::walkBody(producer, [&](size_t i, const Statement& s, bool h) {
    if (h || detail::BodyRenamer::dropped(s)) return;
    fused.body.push_back(s);
    renamers[0].rename(fused.body.back());
    if (i != store_stmt) return;
    fused.body.insert(fused.body.end(), glue_code.begin(), glue_code.end());
    for (size_t k = 1; k < parts.size(); ++k) {
      const std::string part_end = k + 1 == parts.size() ? end : "$kfuse_epilogue_part" + std::to_string(k) + "_end";
      detail::walkBody(*parts[k], [&](size_t, const Statement& cs, bool ch) {
        if (ch || detail::BodyRenamer::dropped(cs)) return;
        fused.body.push_back(cs);
        Statement& copy = fused.body.back();
        renamers[k].rename(copy);
        detail::replaceReturn(copy, part_end);
        if (copy.kind == StatementKind::kInstruction) detail::useElementRegisters(copy.inst, sregs);
      });
      fused.body.push_back(ptx::labelStatement(part_end));
    }
  });
  result.notes.push_back("epilogue: " + std::to_string(spec.consumers.size()) + " consumer(s) run per element after " +
                         producer.name + "'s store (line " + std::to_string(original_store.loc.line) + ")");
  module.functions.push_back(std::move(fused));
  module.order.push_back({ptx::TopLevelKind::kFunction, module.functions.size() - 1});
  return result;
}

}  // namespace kfuse::rewriter
