// Usage summary and the per-function analysis cache.
#include <algorithm>
#include <functional>

#include "kfuse/ptx/analysis.h"

namespace kfuse::ptx {

UsageSummary summarizeUsage(const Module* m, const Function& f) {
  UsageSummary u;
  auto addShared = [&](const VariableDecl& d) {
    if (d.space != ".shared") return;
    if (d.linkage == ".extern" || (!d.dims.empty() && d.dims[0] == 0)) {
      u.dynamic_shared = true;
    } else {
      u.static_shared_bytes += d.byteSize();
    }
  };
  // module-scope shared variables count only if this function names them
  std::vector<const VariableDecl*> module_shared;
  if (m) {
    for (const auto& v : m->variables) {
      if (v.space == ".shared") module_shared.push_back(&v);
    }
  }
  std::vector<char> used_module_shared(module_shared.size(), 0);
  std::function<void(const Operand&)> noteSymbols = [&](const Operand& o) {
    if (o.kind == OperandKind::kSymbol) {
      for (size_t k = 0; k < module_shared.size(); ++k) {
        if (module_shared[k]->name == o.name) used_module_shared[k] = 1;
      }
    }
    for (const auto& e : o.elements) noteSymbols(e);
  };
  for (const auto& st : f.body) {
    if (st.kind == StatementKind::kDeclaration) {
      addShared(st.decl);
      if (st.decl.space == ".local") u.local_bytes += st.decl.byteSize();
      continue;
    }
    if (st.kind != StatementKind::kInstruction) continue;
    const Instruction& in = st.inst;
    const std::string& op = in.opcode;
    ++u.instructions;
    if (!module_shared.empty()) {
      for (const auto& o : in.operands) noteSymbols(o);
    }
    if (op == "bar" || op == "barrier") {
      if (!in.hasModifier(".warp")) ++u.barriers;
    } else if (op == "atom" || op == "red") {
      ++u.atomics;
    } else if (op == "shfl") {
      ++u.shuffles;
    } else if (op == "vote" || op == "match" || op == "redux" || op == "activemask") {
      ++u.votes;
    } else if (op == "tex" || op == "tld4" || op == "txq" || op == "suld" || op == "sust" || op == "sured" ||
               op == "suq") {
      ++u.textures;
    } else if (op == "mma" || op == "wmma" || op == "wgmma") {
      ++u.tensor_ops;
    } else if (op == "cp" && in.hasModifier(".async")) {
      ++u.async_copies;
    } else if ((op == "ld" || op == "st") && in.hasModifier(".local")) {
      ++u.local_accesses;
    } else if (op == "call") {
      // call[.uni] [(ret),] target, [(args)] [, proto]
      for (const auto& o : in.operands) {
        if (o.kind == OperandKind::kList) continue;
        if (o.kind == OperandKind::kRegister) {
          u.indirect_calls = true;
        } else if (o.kind == OperandKind::kSymbol) {
          if (std::find(u.callees.begin(), u.callees.end(), o.name) == u.callees.end()) u.callees.push_back(o.name);
          if (o.name == "vprintf") u.printf = true;
        }
        break;
      }
    }
    for (const auto& o : in.operands) {
      if (o.kind == OperandKind::kRegister && (o.name == "%envreg1" || o.name == "%envreg2")) u.grid_sync = true;
    }
  }
  for (size_t k = 0; k < module_shared.size(); ++k) {
    if (used_module_shared[k]) addShared(*module_shared[k]);
  }
  return u;
}

const Cfg& FunctionAnalyses::cfg() {
  if (!cfg_) cfg_ = std::make_unique<Cfg>(Cfg::build(f_));
  return *cfg_;
}

const Dominators& FunctionAnalyses::dominators() {
  if (!dom_) dom_ = std::make_unique<Dominators>(Dominators::compute(cfg()));
  return *dom_;
}

const DefUse& FunctionAnalyses::defUse() {
  if (!du_) du_ = std::make_unique<DefUse>(DefUse::compute(f_, cfg()));
  return *du_;
}

const std::vector<ParamAccess>& FunctionAnalyses::paramAccess() {
  if (!access_) access_ = std::make_unique<std::vector<ParamAccess>>(analyzeParamAccess(f_, cfg(), defUse(), module_));
  return *access_;
}

const std::vector<MemoryAccess>& FunctionAnalyses::memoryAccesses() {
  if (!mem_) {
    mem_ = std::make_unique<std::vector<MemoryAccess>>(analyzeMemoryAccesses(f_, cfg(), dominators(), defUse()));
  }
  return *mem_;
}

const UsageSummary& FunctionAnalyses::usage() {
  if (!usage_) usage_ = std::make_unique<UsageSummary>(summarizeUsage(module_, f_));
  return *usage_;
}

void FunctionAnalyses::invalidate() {
  cfg_.reset();
  dom_.reset();
  du_.reset();
  access_.reset();
  mem_.reset();
  usage_.reset();
}

}  // namespace kfuse::ptx
