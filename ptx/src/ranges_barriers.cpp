// threadsExitAfterTheirLastBarrier (ranges.h): whether a kernel's threads may leave while others of their block
// still meet a barrier, from the CFG and a flow-insensitive set of thread-varying registers.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kfuse/ptx/ranges.h"

#include "kfuse/ptx/special_registers.h"
namespace kfuse::ptx {

namespace {

bool isBlockBarrier(const Instruction& in) {
  return (in.opcode == Opcode::kBar || in.opcode == Opcode::kBarrier) && !in.has(Mod::kWarp) && !in.has(Mod::kArrive);
}

// Registers whose value may differ between the threads of one block: from %tid/%laneid/%lanemask_*/%clock, memory,
// warp-level operations, or another such register. Flow-insensitive: a register is varying if any definition is.
std::set<std::string> varyingRegisters(const Function& f) {
  std::set<std::string> varying;
  auto isVaryingOperand = [&](const Operand& o, auto& self) -> bool {
    if (o.kind == OperandKind::kRegister) {
      if (auto r = specialRegister(o.name)) return variesWithinBlock(*r);  // %tid.x, %laneid, %clock...
      return varying.count(o.name) > 0;
    }
    for (const Operand& e : o.elements) {
      if (self(e, self)) return true;
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Statement& st : f.body) {
      if (st.kind != StatementKind::kInstruction || st.inst.operands.empty()) continue;
      const Instruction& in = st.inst;
      const Operand& dst = in.operands[0];
      std::vector<std::string> outs;
      if (dst.kind == OperandKind::kRegister) {
        outs.push_back(dst.name);
        if (!dst.pair->empty()) outs.push_back(*dst.pair);
      } else if (dst.kind == OperandKind::kVector) {
        for (const Operand& e : dst.elements) {
          if (e.kind == OperandKind::kRegister) outs.push_back(e.name);
        }
      }
      if (outs.empty() || in.opcode == Opcode::kSt || in.opcode == Opcode::kBra) continue;
      bool v = !in.guard.empty() && varying.count(in.guard) > 0;
      const bool memory_or_warp = in.opcode == Opcode::kLd || in.opcode == Opcode::kLdu || in.opcode == Opcode::kAtom ||
                                  in.opcode == Opcode::kShfl || in.opcode == Opcode::kVote ||
                                  in.opcode == Opcode::kMatch || in.opcode == Opcode::kActivemask ||
                                  in.opcode == Opcode::kRedux || in.opcode == Opcode::kCall ||
                                  in.opcode == Opcode::kTex || in.opcode == Opcode::kSuld;
      // ld.param of the kernel's own parameters is the same for every thread.
      const bool param_load = in.opcode == Opcode::kLd && in.hasBaseSpace(StateSpace::kParam);
      if (memory_or_warp && !param_load) v = true;
      for (size_t i = 1; i < in.operands.size() && !v; ++i) v = isVaryingOperand(in.operands[i], isVaryingOperand);
      if (!v) continue;
      for (const std::string& r : outs) changed = varying.insert(r).second || changed;
    }
  }
  return varying;
}

}  // namespace

bool threadsExitAfterTheirLastBarrier(const Function& f, const Cfg& cfg, std::string* why) {
  const std::vector<BasicBlock>& blocks = cfg.blocks();
  std::vector<char> barrier(blocks.size(), 0), exits(blocks.size(), 0);
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t i = blocks[b].begin; i < blocks[b].end; ++i) {
      const Statement& st = f.body[i];
      if (st.kind != StatementKind::kInstruction) continue;
      if (isBlockBarrier(st.inst)) barrier[b] = 1;
      if (st.inst.opcode == Opcode::kRet || st.inst.opcode == Opcode::kExit) exits[b] = 1;
    }
  }
  if (std::none_of(barrier.begin(), barrier.end(), [](char c) { return c != 0; })) return true;
  if (cfg.hasIndirectBranch()) {
    if (why) *why = "it has an indirect branch";
    return false;
  }
  // reaches_barrier[b]: a barrier can be executed from the start of b; free_exit[b]: a ret/exit can be reached from
  // the start of b without executing a barrier (b itself included).
  std::vector<char> reaches_barrier(barrier), free_exit(blocks.size(), 0);
  for (size_t b = 0; b < blocks.size(); ++b) free_exit[b] = exits[b] && !barrier[b];
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 0; b < blocks.size(); ++b) {
      for (int s : blocks[b].succs) {
        if (reaches_barrier[static_cast<size_t>(s)] && !reaches_barrier[b]) {
          reaches_barrier[b] = 1;
          changed = true;
        }
        if (free_exit[static_cast<size_t>(s)] && !barrier[b] && !free_exit[b]) {
          free_exit[b] = 1;
          changed = true;
        }
      }
    }
  }
  const std::set<std::string> varying = varyingRegisters(f);
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].end == blocks[b].begin) continue;
    // The block's last statement decides where its threads go: a guarded branch, or a guarded ret/exit.
    size_t last = blocks[b].end;
    while (last > blocks[b].begin && f.body[last - 1].kind != StatementKind::kInstruction) --last;
    if (last == blocks[b].begin) continue;
    const Instruction& in = f.body[last - 1].inst;
    const bool diverges =
        !in.guard.empty() && (in.opcode == Opcode::kBra || in.opcode == Opcode::kRet || in.opcode == Opcode::kExit);
    if (!diverges || barrier[b]) continue;
    bool to_barrier = false, to_exit = in.opcode != Opcode::kBra;
    for (int s : blocks[b].succs) {
      to_barrier = to_barrier || reaches_barrier[static_cast<size_t>(s)];
      to_exit = to_exit || free_exit[static_cast<size_t>(s)];
    }
    if (to_barrier && to_exit && varying.count(in.guard)) {
      if (why) {
        *why = "at line " + std::to_string(in.loc.line) +
               " some threads may leave the kernel while others of their "
               "block still meet a barrier (the branch depends on the thread)";
      }
      return false;
    }
  }
  return true;
}

}  // namespace kfuse::ptx
