// Private to the instruction files (instructions.cpp and inst_*.cpp): what the handlers of every instruction
// family share (lane loops, typed access to register slots) and what their decoders share (the Decoding of one
// instruction, modifier queries, the VAL/DST/PRED operand macros).
//
// Handlers work on one warp: they loop over the lanes in the active mask, reading and writing 64-bit register
// slots (values live in the low bits, as wide as the instruction type). Each inst_<family>.cpp holds the
// handlers of its family (internal linkage) and the decoders that pick them; instructions.cpp holds the table
// that maps each ptx::Opcode to its decoder.
#pragma once

#include <bit>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "builder.h"
#include "ctx.h"

namespace kfuse::emulator {

#define KF_INLINE __attribute__((always_inline)) inline

template <class F>
KF_INLINE void lanes(uint32_t m, F&& f) {
  if (m == 0xffffffffu) {
    for (int l = 0; l < 32; ++l) f(l);
  } else {
    while (m) {
      int l = __builtin_ctz(m);
      m &= m - 1;
      f(l);
    }
  }
}

KF_INLINE uint64_t* R(Ctx& c, uint16_t s) {
  return c.r + size_t(s) * 32;
}

template <class T>
KF_INLINE T get(uint64_t v) {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<float>(static_cast<uint32_t>(v));
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<double>(v);
  else
    return static_cast<T>(v);
}
template <class T>
KF_INLINE uint64_t put(T x) {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<uint32_t>(x);
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<uint64_t>(x);
  else
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(x));
}

KF_INLINE float ftz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
template <class T>
KF_INLINE T fz(T x, bool on) {
  if constexpr (std::is_same_v<T, float>)
    return on ? ftz(x) : x;
  else
    return x;
}
template <class T>
KF_INLINE T saturate(T x) {
  if (std::isnan(x)) return T(0);
  return x < T(0) ? T(0) : (x > T(1) ? T(1) : x);
}

template <class T>
using U = std::make_unsigned_t<T>;

template <int kFmt>
KF_INLINE float h2f(uint16_t h) {
  return kFmt == 0 ? halfToFloat(h) : bf16ToFloat(h);
}
template <int kFmt>
KF_INLINE uint16_t f2h(float f) {
  return kFmt == 0 ? floatToHalf(f) : floatToBf16(f);
}

// Handlers more than one family uses.
bool predop(Ctx& c, const DInst& d, uint32_t m);  // .pred and/or/xor/not/mov (inst_compare.cpp)
bool nop(Ctx& c, const DInst& d, uint32_t m);     // (instructions.cpp)

// The integer handler H<T>::run for type `t`; nullptr for types the family has no handler for.
template <template <class> class H>
Handler intFamily(Ty t) {
  switch (t) {
    case Ty::kS16: return &H<int16_t>::run;
    case Ty::kU16:
    case Ty::kB16: return &H<uint16_t>::run;
    case Ty::kS32: return &H<int32_t>::run;
    case Ty::kU32:
    case Ty::kB32: return &H<uint32_t>::run;
    case Ty::kS64: return &H<int64_t>::run;
    case Ty::kU64:
    case Ty::kB64: return &H<uint64_t>::run;
    default: return nullptr;
  }
}
#define KF_FAMILY(name, fn)                                                        \
  template <class T>                                                               \
  struct name {                                                                    \
    static bool run(Ctx& c, const DInst& d, uint32_t m) { return fn<T>(c, d, m); } \
  };

// ---------------------------------------------------------------------------------------------------------------
// Decoding

using ptx::Mod;
using ptx::Opcode;

// What every family decoder reads. `types` are the data types the emulator models, in the order written
// (`cvt.rn.f32.s32`: f32, s32) and `t` the last of them; `rest` counts the other modifiers.
struct Decoding {
  const ptx::Instruction& in;
  FnBuilder& b;
  DInst* d;
  std::vector<Ty> types;
  size_t rest = 0;
  Ty t = Ty::kNone;

  Status need(size_t n) const {
    if (in.operands.size() < n) return badFormat("'" + in.fullOpcode() + "' needs " + std::to_string(n) + " operands");
    return {};
  }
  // Counts `n` floating-point operations per lane (twice for packed halves) when `t` is a float type.
  void flopsFor(uint8_t n) const {
    d->fprec = fprecOf(t);
    if (d->fprec) d->flops = uint8_t(n * ((t == Ty::kF16x2 || t == Ty::kBF16x2) ? 2 : 1));
  }
  static uint8_t fprecOf(Ty ty) {
    switch (ty) {
      case Ty::kF16:
      case Ty::kF16x2:
      case Ty::kBF16:
      case Ty::kBF16x2: return 1;
      case Ty::kF32: return 2;
      case Ty::kF64: return 3;
      default: return 0;
    }
  }
};

using DecodeFn = Status (*)(const Decoding&);

inline Status unsupportedInst(const ptx::Instruction& in, const std::string& why = {}) {
  return unsupported("unsupported instruction '" + in.fullOpcode() + "'" + (why.empty() ? "" : " (" + why + ")"));
}

// The emulator's memory space of the first state-space modifier it models, `dflt` if none.
Space spaceOf(const ptx::Instruction& in, Space dflt);
inline void setClass(DInst* d, InstClass c) {
  d->cls = static_cast<uint8_t>(c);
}

// The names each family decoder works with (not every decoder uses all of them).
#define KF_DECODING(x)                                  \
  [[maybe_unused]] const ptx::Instruction& in = (x).in; \
  [[maybe_unused]] const Opcode op = (x).in.opcode;     \
  [[maybe_unused]] const auto& ops = (x).in.operands;   \
  [[maybe_unused]] FnBuilder& b = (x).b;                \
  [[maybe_unused]] DInst* const d = (x).d;              \
  [[maybe_unused]] const Ty t = (x).t
#define VAL(var, opnd, ty)            \
  do {                                \
    auto v_ = b.value(opnd, ty);      \
    if (!v_.ok()) return v_.status(); \
    var = *v_;                        \
  } while (false)
#define DST(var, opnd)                \
  do {                                \
    auto v_ = b.dest(opnd);           \
    if (!v_.ok()) return v_.status(); \
    var = *v_;                        \
  } while (false)
#define PRED(var, opnd, negvar)       \
  do {                                \
    bool n_ = false;                  \
    auto v_ = b.pred(opnd, &n_);      \
    if (!v_.ok()) return v_.status(); \
    var = *v_;                        \
    negvar = n_;                      \
    (void)negvar;                     \
  } while (false)

// The decoders of each family: set d's kind, handler and slots, or say why the form is not supported.
// inst_integer.cpp
Status decodeBinary(const Decoding& x);  // add sub mul min max div rem and or xor copysign
Status decodeMul24(const Decoding& x);   // mul24 mad24
Status decodeMad(const Decoding& x);     // mad fma
Status decodeSad(const Decoding& x);
Status decodeShf(const Decoding& x);
Status decodeShift(const Decoding& x);     // shl shr
Status decodeIntUnary(const Decoding& x);  // not cnot popc clz brev (neg abs on integers)
Status decodeNegAbs(const Decoding& x);    // neg abs: integer or float by the type
Status decodeBitfield(const Decoding& x);  // bfe bfi lop3 prmt
// inst_float.cpp
Status decodeFloatBinary(const Decoding& x);  // the float and half forms of decodeBinary, operands set up
Status decodeFloatMad(const Decoding& x);     // mad/fma on floats and halves, destination set up
Status decodeFloatUnary(const Decoding& x);   // neg abs sqrt rsqrt rcp ex2 lg2 sin cos tanh
Status decodeTestp(const Decoding& x);
// inst_compare.cpp
Status decodeSetp(const Decoding& x);
Status decodeSelp(const Decoding& x);
Status decodeSlct(const Decoding& x);
// inst_convert.cpp
Status decodeMov(const Decoding& x);
Status decodeCvta(const Decoding& x);
Status decodeIsspacep(const Decoding& x);
Status decodeCvt(const Decoding& x);
Status decodeCreatepolicy(const Decoding& x);
// inst_memory.cpp
Status decodeLdSt(const Decoding& x);  // ld ldu st
Status decodeAtom(const Decoding& x);  // atom red
Status decodeCp(const Decoding& x);    // cp.async
// inst_warp.cpp
Status decodeShfl(const Decoding& x);
Status decodeVote(const Decoding& x);
Status decodeActivemask(const Decoding& x);
Status decodeMatch(const Decoding& x);
Status decodeRedux(const Decoding& x);
Status decodeBra(const Decoding& x);
Status decodeBrx(const Decoding& x);
Status decodeExit(const Decoding& x);  // ret exit trap
Status decodeCall(const Decoding& x);
Status decodeBarrier(const Decoding& x);  // bar barrier
Status decodeNop(const Decoding& x);      // membar fence prefetch nanosleep ...

}  // namespace kfuse::emulator
