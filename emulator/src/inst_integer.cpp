// Integer arithmetic: add/sub/mul/div/rem/min/max and bitwise operations, mul24/mad, sad, shifts,
// funnel shifts, unary integer operations and bit fields (bfe/bfi/lop3/prmt).
#include <bit>
#include <limits>

#include "inst_common.h"

namespace kfuse::emulator {
namespace {

struct IAdd {
  template <class T>
  static T f(T a, T b) {
    return T(U<T>(a) + U<T>(b));
  }
};
struct ISub {
  template <class T>
  static T f(T a, T b) {
    return T(U<T>(a) - U<T>(b));
  }
};
struct IMulLo {
  template <class T>
  static T f(T a, T b) {
    return T(U<T>(a) * U<T>(b));
  }
};
struct IMulHi {
  template <class T>
  static T f(T a, T b) {
    if constexpr (sizeof(T) == 8) {
      __extension__ typedef __int128 I128;
      __extension__ typedef unsigned __int128 U128;
      using W = std::conditional_t<std::is_signed_v<T>, I128, U128>;
      return T(static_cast<W>(a) * static_cast<W>(b) >> 64);
    } else {
      using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      return T(static_cast<W>(a) * static_cast<W>(b) >> (8 * sizeof(T)));
    }
  }
};
struct IMin {
  template <class T>
  static T f(T a, T b) {
    return a < b ? a : b;
  }
};
struct IMax {
  template <class T>
  static T f(T a, T b) {
    return a < b ? b : a;
  }
};
struct IAnd {
  template <class T>
  static T f(T a, T b) {
    return a & b;
  }
};
struct IOr {
  template <class T>
  static T f(T a, T b) {
    return a | b;
  }
};
struct IXor {
  template <class T>
  static T f(T a, T b) {
    return a ^ b;
  }
};
struct IDiv {
  template <class T>
  static T f(T a, T b) {
    if (b == 0) return T(-1);
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
    return a / b;
  }
};
struct IRem {
  template <class T>
  static T f(T a, T b) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return 0;
    return a % b;
  }
};

template <class T, class Op>
bool ibin(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  lanes(m, [&](int l) { D[l] = put<T>(Op::template f<T>(get<T>(A[l]), get<T>(B[l]))); });
  return true;
}

template <class T>
bool iaddsat(Ctx& c, const DInst& d, uint32_t m) {  // add.sat.s32 / sub.sat.s32 (aux8: 1 = sub)
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  lanes(m, [&](int l) {
    int64_t a = get<T>(A[l]), b = get<T>(B[l]);
    int64_t r = d.aux8 ? a - b : a + b;
    r = std::clamp<int64_t>(r, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    D[l] = put<T>(T(r));
  });
  return true;
}

template <class T>
bool ishl(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  lanes(m, [&](int l) {
    uint32_t s = static_cast<uint32_t>(B[l]);
    D[l] = put<T>(s >= 8 * sizeof(T) ? T(0) : T(U<T>(get<T>(A[l])) << s));
  });
  return true;
}
template <class T>
bool ishr(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  lanes(m, [&](int l) {
    uint32_t s = static_cast<uint32_t>(B[l]);
    T a = get<T>(A[l]);
    if (s >= 8 * sizeof(T)) s = 8 * sizeof(T) - 1, a = std::is_signed_v<T> ? (a < 0 ? T(-1) : T(0)) : T(0);
    D[l] = put<T>(T(a >> s));
  });
  return true;
}

template <class T, class W>
bool imulwide(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  lanes(m, [&](int l) { D[l] = put<W>(W(U<W>(W(get<T>(A[l]))) * U<W>(W(get<T>(B[l]))))); });
  return true;
}
template <class T, class W>
bool imadwide(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  lanes(m, [&](int l) { D[l] = put<W>(W(U<W>(W(get<T>(A[l]))) * U<W>(W(get<T>(B[l]))) + U<W>(get<W>(C[l])))); });
  return true;
}
template <class T, class Op>
bool imad(Ctx& c, const DInst& d, uint32_t m) {  // mad.lo / mad.hi
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  lanes(m, [&](int l) { D[l] = put<T>(IAdd::f<T>(Op::template f<T>(get<T>(A[l]), get<T>(B[l])), get<T>(C[l]))); });
  return true;
}
template <class T>
bool imul24(Ctx& c, const DInst& d, uint32_t m) {  // mul24.lo / mad24.lo (kHasC)
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  bool has_c = d.flags & kHasC;
  lanes(m, [&](int l) {
    int64_t a = int64_t(uint32_t(A[l]) & 0xffffff), b = int64_t(uint32_t(B[l]) & 0xffffff);
    if constexpr (std::is_signed_v<T>) {
      a = (a ^ 0x800000) - 0x800000;
      b = (b ^ 0x800000) - 0x800000;
    }
    uint32_t r = uint32_t(uint64_t(a * b));
    if (has_c) r += uint32_t(C[l]);
    D[l] = r;
  });
  return true;
}

enum IUnOp : uint8_t { kNot, kNeg, kAbs, kPopc, kClz, kBrev, kCnot };
template <class T>
bool iun(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  lanes(m, [&](int l) {
    T a = get<T>(A[l]);
    using UT = U<T>;
    switch (d.aux8) {
      case kNot: D[l] = put<T>(T(~a)); break;
      case kNeg: D[l] = put<T>(T(UT(0) - UT(a))); break;
      case kAbs: D[l] = put<T>(a < 0 ? T(UT(0) - UT(a)) : a); break;
      case kPopc: D[l] = uint32_t(std::popcount(UT(a))); break;
      case kClz: D[l] = uint32_t(std::countl_zero(UT(a))); break;
      case kBrev: {
        UT x = UT(a), r = 0;
        for (unsigned i = 0; i < 8 * sizeof(T); ++i) r |= UT((x >> i) & 1) << (8 * sizeof(T) - 1 - i);
        D[l] = put<T>(T(r));
        break;
      }
      case kCnot: D[l] = put<T>(T(a == 0 ? 1 : 0)); break;
    }
  });
  return true;
}

template <class T>
bool ibfe(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  constexpr unsigned kBits = 8 * sizeof(T);
  lanes(m, [&](int l) {
    unsigned pos = uint32_t(B[l]) & 0xff, len = uint32_t(C[l]) & 0xff;
    U<T> a = U<T>(get<T>(A[l]));
    bool sbit;
    if constexpr (std::is_signed_v<T>) {
      unsigned msb = (len == 0) ? 0 : std::min(pos + len - 1, kBits - 1);
      sbit = len != 0 && ((a >> msb) & 1);
    } else {
      sbit = false;
    }
    U<T> r = 0;
    for (unsigned i = 0; i < kBits; ++i) {
      bool bit = (i < len && pos + i < kBits) ? ((a >> (pos + i)) & 1) : sbit;
      r |= U<T>(bit) << i;
    }
    D[l] = put<T>(T(r));
  });
  return true;
}
template <class T>
bool ibfi(Ctx& c, const DInst& d, uint32_t m) {  // bfi d, f(a), b, pos(c), len(e)
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  const uint64_t* E = R(c, d.e);
  constexpr unsigned kBits = 8 * sizeof(T);
  lanes(m, [&](int l) {
    unsigned pos = uint32_t(C[l]) & 0xff, len = uint32_t(E[l]) & 0xff;
    U<T> f = U<T>(A[l]), r = U<T>(B[l]);
    for (unsigned i = 0; i < len && pos + i < kBits; ++i) {
      U<T> bit = U<T>(1) << (pos + i);
      r = (r & ~bit) | (((f >> i) & 1) ? bit : U<T>(0));
    }
    D[l] = put<T>(T(r));
  });
  return true;
}
bool iprmt(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  lanes(m, [&](int l) {
    uint64_t x = (uint64_t(uint32_t(B[l])) << 32) | uint32_t(A[l]);
    uint32_t s = uint32_t(C[l]), r = 0;
    for (int i = 0; i < 4; ++i) {
      uint32_t sel = (s >> (4 * i)) & 0xf;
      uint32_t byte = (x >> (8 * (sel & 7))) & 0xff;
      if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * i);
    }
    D[l] = r;
  });
  return true;
}
template <class T>
bool ilop3(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  uint32_t lut = uint32_t(d.imm);
  lanes(m, [&](int l) {
    U<T> a = U<T>(A[l]), b = U<T>(B[l]), cc = U<T>(C[l]), r = 0;
    for (int i = 0; i < 8; ++i)
      if ((lut >> i) & 1) r |= ((i & 4) ? a : U<T>(~a)) & ((i & 2) ? b : U<T>(~b)) & ((i & 1) ? cc : U<T>(~cc));
    D[l] = put<T>(T(r));
  });
  return true;
}
bool ishf(Ctx& c, const DInst& d, uint32_t m) {  // shf.{l,r}.{wrap,clamp}.b32 d, a(lo), b(hi), c
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  bool left = d.aux8 & 1, wrap = d.aux8 & 2;
  lanes(m, [&](int l) {
    uint32_t n = uint32_t(C[l]);
    n = wrap ? (n & 31) : std::min(n, 32u);
    uint64_t x = (uint64_t(uint32_t(B[l])) << 32) | uint32_t(A[l]);
    D[l] = left ? uint32_t((x << n) >> 32) : uint32_t(x >> n);
  });
  return true;
}
template <class T>
bool isad(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  lanes(m, [&](int l) {
    T a = get<T>(A[l]), b = get<T>(B[l]);
    U<T> diff = a < b ? U<T>(b) - U<T>(a) : U<T>(a) - U<T>(b);
    D[l] = put<T>(T(diff + U<T>(get<T>(C[l]))));
  });
  return true;
}

template <class Op>
Handler intBin(Ty t) {
  switch (t) {
    case Ty::kS16: return &ibin<int16_t, Op>;
    case Ty::kU16:
    case Ty::kB16: return &ibin<uint16_t, Op>;
    case Ty::kS32: return &ibin<int32_t, Op>;
    case Ty::kU32:
    case Ty::kB32: return &ibin<uint32_t, Op>;
    case Ty::kS64: return &ibin<int64_t, Op>;
    case Ty::kU64:
    case Ty::kB64: return &ibin<uint64_t, Op>;
    case Ty::kS8: return &ibin<int8_t, Op>;
    case Ty::kU8:
    case Ty::kB8: return &ibin<uint8_t, Op>;
    default: return nullptr;
  }
}
KF_FAMILY(HShl, ishl)
KF_FAMILY(HShr, ishr)
KF_FAMILY(HUn, iun)
KF_FAMILY(HBfe, ibfe)
KF_FAMILY(HBfi, ibfi)
KF_FAMILY(HLop3, ilop3)
KF_FAMILY(HSad, isad)
template <class T>
struct HMadLo {
  static bool run(Ctx& c, const DInst& d, uint32_t m) { return imad<T, IMulLo>(c, d, m); }
};
template <class T>
struct HMadHi {
  static bool run(Ctx& c, const DInst& d, uint32_t m) { return imad<T, IMulHi>(c, d, m); }
};

}  // namespace

// add sub mul min max div rem and or xor copysign
Status decodeBinary(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(3));
  if (t == Ty::kPred) {
    bool na = false, nb = false;
    PRED(d->d0, ops[0], na);
    PRED(d->a, ops[1], na);
    PRED(d->b, ops[2], nb);
    d->flags |= (na ? kNegA : 0) | (nb ? kNegB : 0);
    d->aux8 = op == Opcode::kAnd ? 0 : op == Opcode::kOr ? 1 : op == Opcode::kXor ? 2 : 9;
    if (d->aux8 == 9) return unsupportedInst(in);
    d->fn = &predop;
    setClass(d, InstClass::kInteger);
    return {};
  }
  if (in.has(Mod::kCc)) return unsupportedInst(in, "carry flag");
  DST(d->d0, ops[0]);
  if (op == Opcode::kMul && in.has(Mod::kWide)) {
    VAL(d->a, ops[1], t);
    VAL(d->b, ops[2], t);
    switch (t) {
      case Ty::kS16: d->fn = &imulwide<int16_t, int32_t>; break;
      case Ty::kU16: d->fn = &imulwide<uint16_t, uint32_t>; break;
      case Ty::kS32: d->fn = &imulwide<int32_t, int64_t>; break;
      case Ty::kU32: d->fn = &imulwide<uint32_t, uint64_t>; break;
      default: return unsupportedInst(in);
    }
    return {};
  }
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], t);
  if (tyFloat(t)) return decodeFloatBinary(x);
  if ((op == Opcode::kAdd || op == Opcode::kSub) && in.has(Mod::kSat)) {
    if (t != Ty::kS32) return unsupportedInst(in);
    d->aux8 = op == Opcode::kSub;
    d->fn = &iaddsat<int32_t>;
    return {};
  }
  switch (op) {
    case Opcode::kAdd: d->fn = intBin<IAdd>(t); break;
    case Opcode::kSub: d->fn = intBin<ISub>(t); break;
    case Opcode::kMul: d->fn = in.has(Mod::kHi) ? intBin<IMulHi>(t) : intBin<IMulLo>(t); break;
    case Opcode::kMin: d->fn = intBin<IMin>(t); break;
    case Opcode::kMax: d->fn = intBin<IMax>(t); break;
    case Opcode::kDiv: d->fn = intBin<IDiv>(t); break;
    case Opcode::kRem: d->fn = intBin<IRem>(t); break;
    case Opcode::kAnd: d->fn = intBin<IAnd>(t); break;
    case Opcode::kOr: d->fn = intBin<IOr>(t); break;
    case Opcode::kXor: d->fn = intBin<IXor>(t); break;
    default: break;
  }
  if (!d->fn) return unsupportedInst(in);
  return {};
}

// mul24 mad24
Status decodeMul24(const Decoding& x) {
  KF_DECODING(x);
  const bool mad = op == Opcode::kMad24;
  KFUSE_RETURN_IF_ERROR(x.need(mad ? 4 : 3));
  if (in.has(Mod::kHi)) return unsupportedInst(in);
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], t);
  if (mad) {
    VAL(d->c, ops[3], t);
    d->flags |= kHasC;
  }
  d->fn = tySigned(t) ? &imul24<int32_t> : &imul24<uint32_t>;
  return {};
}

// mad fma
Status decodeMad(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(4));
  if (in.has(Mod::kCc)) return unsupportedInst(in, "carry flag");
  DST(d->d0, ops[0]);
  if (tyFloat(t)) return decodeFloatMad(x);
  if (in.has(Mod::kWide)) {
    VAL(d->a, ops[1], t);
    VAL(d->b, ops[2], t);
    Ty wt = t == Ty::kS32 ? Ty::kS64 : t == Ty::kU32 ? Ty::kU64 : t == Ty::kS16 ? Ty::kS32 : Ty::kU32;
    VAL(d->c, ops[3], wt);
    switch (t) {
      case Ty::kS16: d->fn = &imadwide<int16_t, int32_t>; break;
      case Ty::kU16: d->fn = &imadwide<uint16_t, uint32_t>; break;
      case Ty::kS32: d->fn = &imadwide<int32_t, int64_t>; break;
      case Ty::kU32: d->fn = &imadwide<uint32_t, uint64_t>; break;
      default: return unsupportedInst(in);
    }
    return {};
  }
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], t);
  VAL(d->c, ops[3], t);
  if (in.has(Mod::kSat)) return unsupportedInst(in);
  d->fn = in.has(Mod::kHi) ? intFamily<HMadHi>(t) : intFamily<HMadLo>(t);
  if (!d->fn) return unsupportedInst(in);
  return {};
}

Status decodeSad(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(4));
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], t);
  VAL(d->c, ops[3], t);
  d->fn = intFamily<HSad>(t);
  return d->fn ? Status{} : unsupportedInst(in);
}

Status decodeShf(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(4));
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], Ty::kB32);
  VAL(d->b, ops[2], Ty::kB32);
  VAL(d->c, ops[3], Ty::kU32);
  d->aux8 = uint8_t((in.has(Mod::kL) ? 1 : 0) | (in.has(Mod::kWrap) ? 2 : 0));
  d->fn = &ishf;
  return {};
}

// shl shr
Status decodeShift(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(3));
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], Ty::kU32);
  d->fn = op == Opcode::kShl ? intFamily<HShl>(t == Ty::kS32 ? Ty::kU32 : t) : intFamily<HShr>(t);
  return d->fn ? Status{} : unsupportedInst(in);
}

// not cnot popc clz brev, and neg abs on integers
Status decodeIntUnary(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  if (t == Ty::kPred && op == Opcode::kNot) {
    bool na = false, nd = false;
    PRED(d->d0, ops[0], nd);
    PRED(d->a, ops[1], na);
    if (na) d->flags |= kNegA;
    d->b = 0xffff;
    d->aux8 = 3;
    d->fn = &predop;
    return {};
  }
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  switch (op) {
    case Opcode::kNot: d->aux8 = kNot; break;
    case Opcode::kNeg: d->aux8 = kNeg; break;
    case Opcode::kAbs: d->aux8 = kAbs; break;
    case Opcode::kPopc: d->aux8 = kPopc; break;
    case Opcode::kClz: d->aux8 = kClz; break;
    case Opcode::kBrev: d->aux8 = kBrev; break;
    default: d->aux8 = kCnot; break;
  }
  Ty ft = (d->aux8 == kAbs || d->aux8 == kNeg) ? t : (tySize(t) == 8 ? Ty::kU64 : tySize(t) == 4 ? Ty::kU32 : Ty::kU16);
  d->fn = intFamily<HUn>(ft);
  return d->fn ? Status{} : unsupportedInst(in);
}

// neg abs: integer or floating point by the type
Status decodeNegAbs(const Decoding& x) {
  return tyFloat(x.t) ? decodeFloatUnary(x) : decodeIntUnary(x);
}

// bfe bfi lop3 prmt
Status decodeBitfield(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(op == Opcode::kBfi ? 5 : 4));
  DST(d->d0, ops[0]);
  if (op == Opcode::kPrmt) {
    if (x.rest > 0) return unsupportedInst(in, "prmt modes other than the default");
    VAL(d->a, ops[1], Ty::kB32);
    VAL(d->b, ops[2], Ty::kB32);
    VAL(d->c, ops[3], Ty::kB32);
    d->fn = &iprmt;
    return {};
  }
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], op == Opcode::kBfe ? Ty::kU32 : t);
  if (op == Opcode::kLop3) {
    auto lut = ops.size() >= 5 ? ops[4].intValue() : std::nullopt;
    if (!lut) return unsupportedInst(in, "lop3 needs an immediate LUT");
    VAL(d->c, ops[3], t);
    d->imm = *lut;
    d->fn = intFamily<HLop3>(t);
  } else if (op == Opcode::kBfe) {
    VAL(d->c, ops[3], Ty::kU32);
    d->fn = intFamily<HBfe>(t);
  } else {
    VAL(d->c, ops[3], Ty::kU32);
    VAL(d->e, ops[4], Ty::kU32);
    d->fn = intFamily<HBfi>(t);
  }
  return d->fn ? Status{} : unsupportedInst(in);
}

}  // namespace kfuse::emulator
