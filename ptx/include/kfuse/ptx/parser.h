// PTX text -> IR.
//
// Accepts PTX as nvcc 12.x/13.x emits it (ISA 7.x-9.x). Instructions are parsed generically (opcode,
// modifiers, operands) and typed once here: the opcode and each modifier become the enums of opcodes.h, and
// spellings those do not know are kept verbatim, so new instructions parse without changes here. Errors name
// `filename:line:column` and what was expected. Never crashes or throws on malformed input; nesting and sizes
// are bounded. Thread-safe: parse calls share no state (the spelling tables are built once, thread-safely).
#pragma once

#include <string_view>

#include "kfuse/core/status.h"
#include "kfuse/ptx/ir.h"

namespace kfuse::ptx {

// `filename` is only used in error messages.
Expected<Module> parseModule(std::string_view text, std::string_view filename = "<ptx>");

// Reads a file and parses it.
Expected<Module> parseFile(const std::string& path);

}  // namespace kfuse::ptx
