// Instruction decoding: the table that maps each ptx::Opcode to the decoder of its family (inst_*.cpp), the
// common decoding steps, and the type helpers of builder.h.
#include <array>

#include "inst_common.h"

namespace kfuse::emulator {

Ty tyOf(ptx::DataType t) {
  switch (t) {
    case ptx::DataType::kB8: return Ty::kB8;
    case ptx::DataType::kB16: return Ty::kB16;
    case ptx::DataType::kB32: return Ty::kB32;
    case ptx::DataType::kB64: return Ty::kB64;
    case ptx::DataType::kB128: return Ty::kB128;
    case ptx::DataType::kU8: return Ty::kU8;
    case ptx::DataType::kU16: return Ty::kU16;
    case ptx::DataType::kU32: return Ty::kU32;
    case ptx::DataType::kU64: return Ty::kU64;
    case ptx::DataType::kS8: return Ty::kS8;
    case ptx::DataType::kS16: return Ty::kS16;
    case ptx::DataType::kS32: return Ty::kS32;
    case ptx::DataType::kS64: return Ty::kS64;
    case ptx::DataType::kF16: return Ty::kF16;
    case ptx::DataType::kF16x2: return Ty::kF16x2;
    case ptx::DataType::kBF16: return Ty::kBF16;
    case ptx::DataType::kBF16x2: return Ty::kBF16x2;
    case ptx::DataType::kF32: return Ty::kF32;
    case ptx::DataType::kF64: return Ty::kF64;
    case ptx::DataType::kPred: return Ty::kPred;
    default: return Ty::kNone;
  }
}

uint32_t tySize(Ty t) {
  switch (t) {
    case Ty::kB8:
    case Ty::kU8:
    case Ty::kS8: return 1;
    case Ty::kB16:
    case Ty::kU16:
    case Ty::kS16:
    case Ty::kF16:
    case Ty::kBF16: return 2;
    case Ty::kB32:
    case Ty::kU32:
    case Ty::kS32:
    case Ty::kF32:
    case Ty::kF16x2:
    case Ty::kBF16x2: return 4;
    case Ty::kB64:
    case Ty::kU64:
    case Ty::kS64:
    case Ty::kF64: return 8;
    case Ty::kB128: return 16;
    case Ty::kPred: return 1;
    default: return 0;
  }
}

bool nop(Ctx&, const DInst&, uint32_t) {
  return true;
}

// The emulator's memory space of the first state-space modifier it models, `dflt` if none.
Space spaceOf(const ptx::Instruction& in, Space dflt) {
  for (const ptx::Modifier& m : in.modifiers) {
    switch (m.asSpace()) {
      case ptx::StateSpace::kGlobal: return Space::kGlobal;
      case ptx::StateSpace::kShared:
      case ptx::StateSpace::kSharedCta: return Space::kShared;
      case ptx::StateSpace::kLocal: return Space::kLocal;
      case ptx::StateSpace::kConst: return Space::kConst;
      case ptx::StateSpace::kParam:
      case ptx::StateSpace::kParamFunc:
      case ptx::StateSpace::kParamEntry: return Space::kFrameParam;
      default: break;
    }
  }
  return dflt;
}

namespace {

// Rounding mode of the first rounding modifier: 0 nearest, 1 zero, 2 down, 3 up.
int roundingOf(const ptx::Instruction& in) {
  for (const ptx::Modifier& m : in.modifiers) {
    switch (m.asMod()) {
      case Mod::kRn:
      case Mod::kRni: return 0;
      case Mod::kRz:
      case Mod::kRzi: return 1;
      case Mod::kRm:
      case Mod::kRmi: return 2;
      case Mod::kRp:
      case Mod::kRpi: return 3;
      default: break;
    }
  }
  return 0;
}

InstClass arithClass(Ty t) {
  switch (t) {
    case Ty::kF16:
    case Ty::kF16x2:
    case Ty::kBF16:
    case Ty::kBF16x2: return InstClass::kFp16;
    case Ty::kF32: return InstClass::kFp32;
    case Ty::kF64: return InstClass::kFp64;
    default: return InstClass::kInteger;
  }
}

// The decoder of each opcode; nullptr: not supported (addc, madc, vadd, tex, wmma, ... and kUnknown).
constexpr auto kDecoders = [] {
  std::array<DecodeFn, size_t(Opcode::kCount)> t{};
  auto set = [&t](std::initializer_list<Opcode> ops, DecodeFn fn) {
    for (Opcode o : ops) t[size_t(o)] = fn;
  };
  set({Opcode::kAdd, Opcode::kSub, Opcode::kMul, Opcode::kMin, Opcode::kMax, Opcode::kDiv, Opcode::kRem, Opcode::kAnd,
       Opcode::kOr, Opcode::kXor, Opcode::kCopysign},
      &decodeBinary);
  set({Opcode::kMul24, Opcode::kMad24}, &decodeMul24);
  set({Opcode::kMad, Opcode::kFma}, &decodeMad);
  set({Opcode::kSad}, &decodeSad);
  set({Opcode::kShf}, &decodeShf);
  set({Opcode::kShl, Opcode::kShr}, &decodeShift);
  set({Opcode::kNot, Opcode::kCnot, Opcode::kPopc, Opcode::kClz, Opcode::kBrev}, &decodeIntUnary);
  set({Opcode::kNeg, Opcode::kAbs}, &decodeNegAbs);
  set({Opcode::kBfe, Opcode::kBfi, Opcode::kLop3, Opcode::kPrmt}, &decodeBitfield);
  set({Opcode::kSqrt, Opcode::kRsqrt, Opcode::kRcp, Opcode::kEx2, Opcode::kLg2, Opcode::kSin, Opcode::kCos,
       Opcode::kTanh},
      &decodeFloatUnary);
  set({Opcode::kTestp}, &decodeTestp);
  set({Opcode::kSetp}, &decodeSetp);
  set({Opcode::kSelp}, &decodeSelp);
  set({Opcode::kSlct}, &decodeSlct);
  set({Opcode::kMov}, &decodeMov);
  set({Opcode::kCvta}, &decodeCvta);
  set({Opcode::kIsspacep}, &decodeIsspacep);
  set({Opcode::kCvt}, &decodeCvt);
  set({Opcode::kLd, Opcode::kLdu, Opcode::kSt}, &decodeLdSt);
  set({Opcode::kAtom, Opcode::kRed}, &decodeAtom);
  set({Opcode::kShfl}, &decodeShfl);
  set({Opcode::kVote}, &decodeVote);
  set({Opcode::kActivemask}, &decodeActivemask);
  set({Opcode::kMatch}, &decodeMatch);
  set({Opcode::kRedux}, &decodeRedux);
  set({Opcode::kBra}, &decodeBra);
  set({Opcode::kBrx}, &decodeBrx);
  set({Opcode::kRet, Opcode::kExit, Opcode::kTrap}, &decodeExit);
  set({Opcode::kCall}, &decodeCall);
  set({Opcode::kBar, Opcode::kBarrier}, &decodeBarrier);
  set({Opcode::kCp}, &decodeCp);
  set({Opcode::kMembar, Opcode::kFence, Opcode::kPrefetch, Opcode::kPrefetchu, Opcode::kNanosleep,
       Opcode::kGriddepcontrol, Opcode::kDiscard, Opcode::kApplypriority, Opcode::kPmevent},
      &decodeNop);
  set({Opcode::kCreatepolicy}, &decodeCreatepolicy);
  return t;
}();

}  // namespace

Status decodeInstruction(const ptx::Instruction& in, FnBuilder& b, DInst* d) {
  Decoding x{in, b, d, {}, 0, Ty::kNone};
  for (const ptx::Modifier& m : in.modifiers) {
    const Ty ty = tyOf(m.asType());
    if (ty != Ty::kNone) {
      x.types.push_back(ty);
    } else {
      ++x.rest;
    }
  }
  x.t = x.types.empty() ? Ty::kNone : x.types.back();
  d->flags |= (in.has(Mod::kFtz) ? kFtz : 0) | (in.has(Mod::kSat) ? kSat : 0);
  d->rnd = uint8_t(roundingOf(in));
  setClass(d, arithClass(x.t));
  const DecodeFn decode = kDecoders[size_t(in.opcode)];
  return decode ? decode(x) : unsupportedInst(in);
}

}  // namespace kfuse::emulator
