// What the element-remapped passes (epilogue.cpp, prologue.cpp) share: a kernel's body copied to run as the thread
// that owns one element of a 1-D launch, inside another kernel's thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/ir.h"

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
std::map<std::string, std::string, std::less<>> elementSpecialRegisters(const std::string& prefix);

// A special register (a '%' name the function does not declare, like %laneid) an element cannot stand for: any
// other than those elementSpecialRegisters() maps.
bool otherSpecialRegister(const std::string& name);

// Why `f`'s body cannot run as one element's thread inside another kernel (a barrier, exit, a call, another special
// register), naming the line; "" when it can. `role` names it in the message ("consumer 'gelu'").
std::string elementBodyProblem(const ptx::Function& f, const std::string& role);

// The statements of `text`, glue written by a pass, parsed by the PTX parser (so they are exactly what it makes of
// PTX text). `param` is declared so that `ld.param` of it parses.
Expected<std::vector<ptx::Statement>> parseGlue(const std::string& param, const std::string& text);

}  // namespace kfuse::rewriter::detail
