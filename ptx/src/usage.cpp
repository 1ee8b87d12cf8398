// Usage summary and the per-function analysis cache.
#include <algorithm>
#include <functional>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/special_registers.h"

namespace kfuse::ptx {

UsageSummary summarizeUsage(const Module* m, const Function& f) {
  UsageSummary u;
  auto addShared = [&](const VariableDecl& d) {
    if (d.space != StateSpace::kShared) return;
    if (d.linkage == Linkage::kExtern || (!d.dims.empty() && d.dims[0] == 0)) {
      u.dynamic_shared = true;
    } else {
      u.static_shared_bytes += d.byteSize();
    }
  };
  // module-scope shared variables count only if this function names them
  std::vector<const VariableDecl*> module_shared;
  if (m) {
    for (const auto& v : m->variables) {
      if (v.space == StateSpace::kShared) module_shared.push_back(&v);
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
      addShared(*st.decl);
      if (st.decl->space == StateSpace::kLocal) u.local_bytes += st.decl->byteSize();
      continue;
    }
    if (st.kind != StatementKind::kInstruction) continue;
    const Instruction& in = st.inst;
    ++u.instructions;
    if (!module_shared.empty()) {
      for (const auto& o : in.operands) noteSymbols(o);
    }
    switch (in.opcode) {
      case Opcode::kBar:
      case Opcode::kBarrier:
        if (!in.has(Mod::kWarp)) ++u.barriers;
        break;
      case Opcode::kAtom:
      case Opcode::kRed: ++u.atomics; break;
      case Opcode::kShfl: ++u.shuffles; break;
      case Opcode::kVote:
      case Opcode::kMatch:
      case Opcode::kRedux:
      case Opcode::kActivemask: ++u.votes; break;
      case Opcode::kTex:
      case Opcode::kTld4:
      case Opcode::kTxq:
      case Opcode::kSuld:
      case Opcode::kSust:
      case Opcode::kSured:
      case Opcode::kSuq: ++u.textures; break;
      case Opcode::kMma:
      case Opcode::kWmma:
      case Opcode::kWgmma: ++u.tensor_ops; break;
      case Opcode::kCp:
        if (in.has(Mod::kAsync)) ++u.async_copies;
        break;
      case Opcode::kLd:
      case Opcode::kSt:
        if (in.has(StateSpace::kLocal)) ++u.local_accesses;
        break;
      case Opcode::kCall: {
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
        break;
      }
      default: break;
    }
    for (const auto& o : in.operands) {
      // The driver passes a cooperative launch's grid-synchronisation workspace in %envreg1 and %envreg2.
      int number = 0;
      if (o.kind == OperandKind::kRegister && specialRegister(o.name, &number) == SpecialRegister::kEnvReg &&
          (number == 1 || number == 2)) {
        u.grid_sync = true;
      }
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
