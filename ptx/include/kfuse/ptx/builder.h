// Building PTX by code: the instructions, labels, declarations and operands that passes add to a function, made
// as IR directly (never as PTX text for the parser). The one place rewriter code constructs statements.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/special_registers.h"

namespace kfuse::ptx {

// Operands.
Operand registerOperand(std::string name);                 // %r1
Operand specialOperand(SpecialRegister r);                 // %tid.x
Operand integerOperand(int64_t value);                     // 42, -4
Operand symbolOperand(std::string name);                   // a label, parameter or variable
Operand addressOperand(Operand base, int64_t offset = 0);  // [base], [base+offset]

// `opcode.modifiers operands`, unguarded; modifiers by their spellings (".global", ".u32", ".rn").
Instruction makeInstruction(Opcode opcode, std::initializer_list<std::string_view> modifiers,
                            std::vector<Operand> operands);
// `@guard bra target` (`@!guard` when negated); unguarded it is `bra.uni`: every active thread takes it.
Instruction branchTo(std::string target, std::string guard = "", bool negated = false);

// Statements.
Statement instructionStatement(Instruction in);
Statement labelStatement(std::string name);
Statement declarationStatement(VariableDecl decl);
VariableDecl registerDecl(std::string name, DataType type);  // .reg .type name

// Appends code to one statement list and the declarations of the registers it makes to another (which passes
// place at the top of a kernel). Register names are `prefix + name`; a name is declared once.
class Builder {
 public:
  Builder(std::string prefix, std::vector<Statement>* code, std::vector<Statement>* declarations)
      : prefix_(std::move(prefix)), code_(code), declarations_(declarations) {}

  // Declares register `prefix + name` of `type` (the first time) and returns its operand.
  Operand declare(std::string_view name, DataType type);
  // The operand of a register declared before, without declaring it.
  Operand named(std::string_view name) const { return registerOperand(prefix_ + std::string(name)); }

  void emit(Instruction in) { code_->push_back(instructionStatement(std::move(in))); }
  void emit(Opcode opcode, std::initializer_list<std::string_view> modifiers, std::vector<Operand> operands) {
    emit(makeInstruction(opcode, modifiers, std::move(operands)));
  }
  void branch(std::string target, std::string guard = "", bool negated = false) {
    emit(branchTo(std::move(target), std::move(guard), negated));
  }
  void label(std::string name) { code_->push_back(labelStatement(std::move(name))); }

 private:
  std::string prefix_;
  std::vector<Statement>* code_;
  std::vector<Statement>* declarations_;
  std::vector<std::string> declared_;
};

}  // namespace kfuse::ptx
