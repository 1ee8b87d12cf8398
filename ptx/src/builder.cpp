#include "kfuse/ptx/builder.h"

#include <algorithm>

namespace kfuse::ptx {

Operand registerOperand(std::string name) {
  return Operand::reg(std::move(name));
}

Operand specialOperand(SpecialRegister r) {
  return Operand::reg(specialRegisterName(r));
}

Operand integerOperand(int64_t value) {
  return Operand::imm(std::to_string(value));
}

Operand symbolOperand(std::string name) {
  return Operand::sym(std::move(name));
}

Operand addressOperand(Operand base, int64_t offset) {
  Operand o;
  o.kind = OperandKind::kAddress;
  o.offset = offset;
  o.elements.push_back(std::move(base));
  return o;
}

Instruction makeInstruction(Opcode opcode, std::initializer_list<std::string_view> modifiers,
                            std::vector<Operand> operands) {
  Instruction in;
  in.opcode = opcode;
  for (std::string_view m : modifiers) in.addModifier(m);
  in.operands = std::move(operands);
  return in;
}

Instruction branchTo(std::string target, std::string guard, bool negated) {
  Instruction in;
  in.opcode = Opcode::kBra;
  in.guard = std::move(guard);
  in.guard_negated = negated;
  if (in.guard.empty()) in.addModifier(".uni");
  in.operands.push_back(Operand::sym(std::move(target)));
  return in;
}

Statement instructionStatement(Instruction in) {
  Statement s;
  s.kind = StatementKind::kInstruction;
  s.loc = in.loc;
  s.inst = std::move(in);
  return s;
}

Statement labelStatement(std::string name) {
  Statement s;
  s.kind = StatementKind::kLabel;
  s.text = std::move(name);
  return s;
}

Statement declarationStatement(VariableDecl decl) {
  Statement s;
  s.kind = StatementKind::kDeclaration;
  s.loc = decl.loc;
  s.decl = std::move(decl);
  return s;
}

VariableDecl registerDecl(std::string name, DataType type) {
  VariableDecl d;
  d.space = StateSpace::kReg;
  d.type = type;
  d.name = std::move(name);
  return d;
}

Operand Builder::declare(std::string_view name, DataType type) {
  std::string full = prefix_ + std::string(name);
  if (std::find(declared_.begin(), declared_.end(), full) == declared_.end()) {
    declared_.push_back(full);
    declarations_->push_back(declarationStatement(registerDecl(full, type)));
  }
  return registerOperand(std::move(full));
}

}  // namespace kfuse::ptx
