// Private: what instruction decoding needs from the function being decoded (implemented in decode.cpp).
#pragma once

#include <string>

#include "interp.h"

namespace kfuse::emulator {

enum class Ty : uint8_t {
  kB8,
  kB16,
  kB32,
  kB64,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF16x2,
  kBF16,
  kBF16x2,
  kF32,
  kF64,
  kPred,
  kB128,
  kNone,
};
Ty tyOf(ptx::DataType t);  // kF32 -> Ty::kF32; kNone for types the emulator does not model
uint32_t tySize(Ty t);
inline bool tySigned(Ty t) {
  return t == Ty::kS8 || t == Ty::kS16 || t == Ty::kS32 || t == Ty::kS64;
}
inline bool tyFloat(Ty t) {
  return t == Ty::kF16 || t == Ty::kF16x2 || t == Ty::kBF16 || t == Ty::kBF16x2 || t == Ty::kF32 || t == Ty::kF64;
}

class FnBuilder {
 public:
  virtual ~FnBuilder() = default;
  // Slot holding the value of a register, immediate (interpreted as type `t`) or symbol address.
  virtual Expected<uint16_t> value(const ptx::Operand& o, Ty t) = 0;
  // Slot to write a destination register to (a scratch slot for `_`).
  virtual Expected<uint16_t> dest(const ptx::Operand& o) = 0;
  // Predicate index of a predicate register operand; sets *neg for `!%p`.
  virtual Expected<uint16_t> pred(const ptx::Operand& o, bool* neg) = 0;
  virtual bool isPred(const ptx::Operand& o) = 0;
  // Resolves `[base+off]`: base slot and constant offset; *space is updated for symbols whose space is known
  // (kernel parameters, frame parameters) when it was kGeneric/param.
  virtual Status address(const ptx::Operand& o, Space* space, uint16_t* base, int64_t* off) = 0;
  // Branch target: recorded and patched after the function is decoded.
  virtual Status branchTarget(const ptx::Operand& o, DInst* d) = 0;
  // `call`: builds the call site; returns its index.
  virtual Expected<int> callSite(const ptx::Instruction& in) = 0;
  virtual uint16_t scratch() = 0;
  virtual void noteBarrier() = 0;
  virtual bool isClockRegister(const ptx::Operand& o) = 0;
};

// Decodes one instruction into `d` (kind, handler, slots). Unsupported instructions return kUnsupported
// naming the instruction.
Status decodeInstruction(const ptx::Instruction& in, FnBuilder& b, DInst* d);

}  // namespace kfuse::emulator
