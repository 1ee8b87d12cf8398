// IR -> PTX text. The output parses back to the same IR and means the same to ptxas (same resources).
// Comments and the original spacing are not reproduced. Thread-safe (pure functions).
#pragma once

#include <string>

#include "kfuse/ptx/ir.h"

namespace kfuse::ptx {

std::string printModule(const Module& module);
std::string printFunction(const Function& function);
std::string printInstruction(const Instruction& inst);
std::string printOperand(const Operand& operand);
std::string printDecl(const VariableDecl& decl);

}  // namespace kfuse::ptx
