// Copying one function's body into another with its local names renamed apart: the building block of every
// fusion transform. Private to the rewriter.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/builder.h"
#include "kfuse/ptx/ir.h"
#include "kfuse/rewriter/fusion.h"

namespace kfuse::rewriter::detail {

// Calls `fn(ptx::Operand&)` on every operand of `in`, nested ones (address bases, vector and list elements)
// included. A template: it runs for every operand of every statement a fusion copies.
template <typename F>
void visitOperand(ptx::Operand& o, F& fn) {
  fn(o);
  for (ptx::Operand& e : o.elements) visitOperand(e, fn);
}
template <typename F>
void forEachOperand(ptx::Instruction& in, F&& fn) {
  for (ptx::Operand& o : in.operands) visitOperand(o, fn);
}

// How the names local to one function are renamed in a copy of its body.
struct BodyRenaming {
  std::string tag;  // "k0_": %r5 -> %k0_r5, $L__BB0_2 -> $L__BB0_2_k0, __local_depot0 -> k0___local_depot0
  std::map<std::string, std::string, std::less<>> params;  // parameter name -> new name (fused parameter)
};

// The renamed names of `f`'s local items.
std::string renamedRegister(std::string_view reg, std::string_view tag);
std::string renamedLabel(std::string_view label, std::string_view tag);
std::string renamedVariable(std::string_view var, std::string_view tag);

// Renames the statements of one function's body one at a time, as renamedBody() does for all of them, so that a
// transform can put each copy straight where it belongs. `f` and `r` must outlive the renamer.
class BodyRenamer {
 public:
  BodyRenamer(const ptx::Function& f, const BodyRenaming& r);
  // Whether a copy leaves `s` out: `.loc` and `.file` directives (a fused kernel carries no line info: its lines
  // come from several sources).
  static bool dropped(const ptx::Statement& s);
  // Renames `copy`, a copy of a statement of `f`, in place (so a caller can copy it straight into its place).
  void rename(ptx::Statement& copy) const;

 private:
  void renameName(std::string& name) const;

  const BodyRenaming& r_;
  std::set<std::string, std::less<>> labels_, variables_;  // names the body defines (registers start with '%')
};

// A copy of `f.body` with every register, label and body-local variable (including call-site `.param`
// declarations) renamed with `r.tag`, and parameter references mapped by `r.params`. Special registers and
// module-scope names are kept. `.loc` directives are dropped (see BodyRenamer::dropped).
std::vector<ptx::Statement> renamedBody(const ptx::Function& f, const BodyRenaming& r);

// Replaces a `ret`/`exit` statement with a branch to `label` (keeping its guard); false for any other statement.
bool replaceReturn(ptx::Statement& s, const std::string& label);
// Replaces every `ret`/`exit` in `body` with a branch to `label`. Returns how many.
int replaceReturns(std::vector<ptx::Statement>& body, const std::string& label);

// Moves the declarations at the outermost level of `body` (not inside `{ }` scopes) to `decls`, in order.
void hoistDeclarations(std::vector<ptx::Statement>& body, std::vector<ptx::Statement>* decls);

// Registers written and read by `in` ("%r1"), like ptx::instructionDefsUses.
std::vector<std::string> registersRead(const ptx::Instruction& in);
std::vector<std::string> registersWritten(const ptx::Instruction& in);

// A name not yet used in `taken`, starting from `base` (base, base_1, base_2, ...); adds it to `taken`.
std::string uniqueName(const std::string& base, std::map<std::string, int, std::less<>>& taken);

// The parameters of a fused kernel: every part's parameters in order, each class of arguments known to be equal
// (`equal_args`) becoming one parameter named `<fused_name>_param_<n>` after the first of its class.
struct MergedParams {
  std::vector<ptx::VariableDecl> decls;    // the fused kernel's parameter declarations
  std::vector<FusedParam> params;          // the same, with the original arguments each takes
  std::vector<std::vector<size_t>> index;  // [part][parameter] -> fused parameter
  std::vector<std::map<std::string, std::string, std::less<>>> names;  // [part] original name -> fused name
};
// Errors name an equal argument that does not exist, or equal arguments whose declarations differ in size.
Expected<MergedParams> mergeParameters(const std::vector<const ptx::Function*>& parts,
                                       const std::vector<std::pair<ArgRef, ArgRef>>& equal_args,
                                       const std::string& fused_name);

// A visible .entry named `name` with these parameters and an empty body: what every fusion pass fills in.
ptx::Function fusedEntry(const std::string& name, std::vector<ptx::VariableDecl> params);

// The kernels (.entry functions with a body) named `names`, in order; an error names the first one missing.
Expected<std::vector<const ptx::Function*>> kernelsNamed(const ptx::Module& module,
                                                         const std::vector<std::string>& names);

// A barrier of the whole block (bar.sync / barrier.sync / bar.red / bar.arrive), not bar.warp.sync.
bool isCtaBarrier(const ptx::Instruction& in);

// The symbols `in` names (parameters, variables, labels, functions), nested operands included.
void collectSymbols(const ptx::Instruction& in, std::set<std::string, std::less<>>* out);

}  // namespace kfuse::rewriter::detail
