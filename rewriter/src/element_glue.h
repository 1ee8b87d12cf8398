// What the element-remapped passes (epilogue.cpp, prologue.cpp) share: a kernel's body copied to run as the thread
// that owns one element of a 1-D launch, inside another kernel's thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/builder.h"
#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/special_registers.h"
#include "kfuse/rewriter/fusion.h"

namespace kfuse::rewriter::detail {

// Calls fn(index, statement, hoisted) over `f`'s body; `hoisted`: a declaration at the outermost level (which a
// pass moves to the top of the fused kernel).
template <typename Fn>
void walkBody(const ptx::Function& f, Fn&& fn) {
  int depth = 0;
  for (size_t i = 0; i < f.body.size(); ++i) {
    const ptx::Statement& s = f.body[i];
    if (s.kind == ptx::StatementKind::kBlockBegin) ++depth;
    if (s.kind == ptx::StatementKind::kBlockEnd) --depth;
    fn(i, s, depth == 0 && s.kind == ptx::StatementKind::kDeclaration);
  }
}

// Special registers a copied body may read, and the registers `<prefix>tid`, `<prefix>ctaid`, `<prefix>ntid`,
// `<prefix>nctaid`, `<prefix>zero` and `<prefix>one` that stand for them (a 1-D launch: y and z indices 0, sizes 1).
std::map<ptx::SpecialRegister, std::string> elementSpecialRegisters(const std::string& prefix);

// A special register an element cannot stand for: any other than the launch geometry's components (%laneid,
// %clock, %dynamic_smem_size, the vector %tid ...).
bool otherSpecialRegister(const std::string& name);

// Declares the element thread's registers (tid, ctaid, ntid, nctaid, zero, one: see elementSpecialRegisters) with
// `b`'s prefix, in that order.
void declareElementThread(ptx::Builder& b);
// Sets them for the thread that owns element `element` (a .u32 linear index) of a 1-D launch of `shape`.
void setElementThread(ptx::Builder& b, const ptx::Operand& element, const core::LaunchShape& shape);
// The registers that locate an element from an access's address: `ptr` (element 0's address, from a parameter),
// `rel` (the access's byte distance from it) and `e` (the element index), all .b64, declared in that order.
struct ElementAddress {
  ptx::Operand ptr, rel, e;
};
ElementAddress declareElementAddress(ptx::Builder& b);
// rel = the address of `access` (a register-based address operand) - (parameter `param` + `element0_offset`).
void emitDistanceFromElement0(ptx::Builder& b, const ElementAddress& r, const std::string& param,
                              const ptx::Operand& access, int64_t element0_offset);

// Replaces the special registers `in` reads by the element's registers.
void useElementRegisters(ptx::Instruction& in, const std::map<ptx::SpecialRegister, std::string>& registers);

// Why `f`'s body cannot run as one element's thread inside another kernel (a barrier, exit, a call, another special
// register), naming the line; "" when it can. `role` names it in the message ("consumer 'gelu'").
std::string elementBodyProblem(const ptx::Function& f, const std::string& role);

// `f` run as one element per thread when it is a grid-stride loop (ptx::gridStrideElementView: one loop, or nvcc's
// unrolled layout), kept in `storage`; null when it is not one.
const ptx::Function* elementPerThread(const ptx::Module& module, const ptx::Function& f,
                                      std::optional<ptx::Function>& storage);

}  // namespace kfuse::rewriter::detail
