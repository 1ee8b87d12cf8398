// Private to the parser: PTX spelling -> enum lookups (the inverse of the *Name() functions in
// kfuse/ptx/opcodes.h). Thread-safe: the tables are built once, on first use.
#pragma once

#include <optional>
#include <string_view>

#include "kfuse/ptx/opcodes.h"

namespace kfuse::ptx::detail {

Opcode lookupOpcode(std::string_view name);  // "ld" -> kLd; kUnknown otherwise
StateSpace lookupSpace(std::string_view name);
Linkage lookupLinkage(std::string_view name);  // ".shared::cta" -> kSharedCta; kNone otherwise
DataType lookupType(std::string_view name);    // ".f32" -> kF32; kNone otherwise
// A dotted instruction modifier as a space, a type or a Mod; nullopt for spellings the enums do not model.
std::optional<Modifier> lookupModifier(std::string_view name);

}  // namespace kfuse::ptx::detail
