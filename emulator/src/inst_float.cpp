// Floating point: binary operations, fma, unary functions, testp, and the half/bfloat16 (x2) forms.
#include <cmath>
#include <limits>

#include "inst_common.h"

namespace kfuse::emulator {
namespace {

struct FAdd {
  static constexpr int kDir = 0;
  template <class T>
  static T f(T a, T b) {
    return a + b;
  }
};
struct FSub {
  static constexpr int kDir = 1;
  template <class T>
  static T f(T a, T b) {
    return a - b;
  }
};
struct FMul {
  static constexpr int kDir = 2;
  template <class T>
  static T f(T a, T b) {
    return a * b;
  }
};
struct FDiv {
  static constexpr int kDir = 4;
  template <class T>
  static T f(T a, T b) {
    return a / b;
  }
};
struct FMin {
  static constexpr int kDir = -1;
  template <class T>
  static T f(T a, T b) {
    return std::fmin(a, b);
  }
};
struct FMax {
  static constexpr int kDir = -1;
  template <class T>
  static T f(T a, T b) {
    return std::fmax(a, b);
  }
};
struct FCopysign {
  static constexpr int kDir = -1;
  template <class T>
  static T f(T a, T b) {
    return std::copysign(b, a);
  }
};
struct FDivApprox {  // div.approx.f32: a * (1/b), as the hardware computes it
  static constexpr int kDir = -1;
  template <class T>
  static T f(T a, T b) {
    return a * (T(1) / b);
  }
};

template <class T>
constexpr int precOf() {
  return std::is_same_v<T, float> ? 2 : 3;
}

template <class T, class Op>
bool fbin(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  bool z = d.flags & kFtz, sat = d.flags & kSat;
  if constexpr (Op::kDir >= 0) {
    if (d.rnd != 0) {
      directedRound(d.rnd, Op::kDir, precOf<T>(), A, B, nullptr, D, m, z);
      if (sat) lanes(m, [&](int l) { D[l] = put<T>(saturate(get<T>(D[l]))); });
      return true;
    }
  }
  if (!z && !sat) {
    lanes(m, [&](int l) { D[l] = put<T>(Op::template f<T>(get<T>(A[l]), get<T>(B[l]))); });
  } else {
    lanes(m, [&](int l) {
      T r = fz(Op::template f<T>(fz(get<T>(A[l]), z), fz(get<T>(B[l]), z)), z);
      D[l] = put<T>(sat ? saturate(r) : r);
    });
  }
  return true;
}

template <class T>
bool ffma(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  bool z = d.flags & kFtz, sat = d.flags & kSat;
  if (d.rnd != 0) {
    directedRound(d.rnd, 3, precOf<T>(), A, B, C, D, m, z);
  } else {
    lanes(m, [&](int l) {
      T r = fz(std::fma(fz(get<T>(A[l]), z), fz(get<T>(B[l]), z), fz(get<T>(C[l]), z)), z);
      D[l] = put<T>(r);
    });
  }
  if (sat) lanes(m, [&](int l) { D[l] = put<T>(saturate(get<T>(D[l]))); });
  return true;
}

enum FUnOp : uint8_t {
  kFNeg,
  kFAbs,
  kFSqrt,
  kFRsqrt,
  kFRcp,
  kFEx2,
  kFLg2,
  kFSin,
  kFCos,
  kFTanh,
  kFSqrtApprox,
  kFRcpApprox
};
template <class T>
bool fun(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  bool z = d.flags & kFtz, sat = d.flags & kSat;
  if (d.rnd != 0 && (d.aux8 == kFSqrt || d.aux8 == kFRcp)) {
    directedRound(d.rnd, d.aux8 == kFSqrt ? 5 : 9, precOf<T>(), A, nullptr, nullptr, D, m, z);
    return true;
  }
  lanes(m, [&](int l) {
    T a = fz(get<T>(A[l]), z), r;
    switch (d.aux8) {
      case kFNeg: r = -a; break;
      case kFAbs: r = std::fabs(a); break;
      case kFSqrt:
      case kFSqrtApprox: r = std::sqrt(a); break;
      case kFRsqrt: r = T(1) / std::sqrt(a); break;
      case kFRcp:
      case kFRcpApprox: r = T(1) / a; break;
      case kFEx2: r = std::exp2(a); break;
      case kFLg2: r = std::log2(a); break;
      case kFSin: r = std::sin(a); break;
      case kFCos: r = std::cos(a); break;
      case kFTanh: r = std::tanh(a); break;
      default: r = a;
    }
    r = fz(r, z);
    D[l] = put<T>(sat ? saturate(r) : r);
  });
  return true;
}

template <class T>
bool ftestp(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  uint32_t res = 0;
  lanes(m, [&](int l) {
    T a = get<T>(A[l]);
    bool v = false;
    switch (d.aux8) {
      case 0: v = std::isfinite(a); break;
      case 1: v = std::isinf(a); break;
      case 2: v = !std::isnan(a); break;
      case 3: v = std::isnan(a); break;
      case 4: v = std::isnormal(a); break;
      case 5: v = std::fpclassify(a) == FP_SUBNORMAL; break;
    }
    res |= uint32_t(v) << l;
  });
  c.p[d.d0] = (c.p[d.d0] & ~m) | (res & m);
  return true;
}

// f16 / bf16, scalar and packed: computed in f32 (exact for add/sub/mul, see docs/emulator.md), rounded back.
enum HOp : uint8_t { kHAdd, kHSub, kHMul, kHFma, kHMin, kHMax, kHNeg, kHAbs };
template <int kFmt, bool kX2>
bool hop(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  bool sat = d.flags & kSat;
  lanes(m, [&](int l) {
    uint64_t out = 0;
    for (int k = 0; k < (kX2 ? 2 : 1); ++k) {
      float a = h2f<kFmt>(uint16_t(A[l] >> (16 * k)));
      float b = (d.aux8 == kHNeg || d.aux8 == kHAbs) ? 0.f : h2f<kFmt>(uint16_t(B[l] >> (16 * k)));
      float r;
      uint16_t bits;
      switch (d.aux8) {
        case kHAdd: r = a + b; break;
        case kHSub: r = a - b; break;
        case kHMul: r = a * b; break;
        case kHFma: r = float(std::fma(double(a), double(b), double(h2f<kFmt>(uint16_t(C[l] >> (16 * k)))))); break;
        case kHMin: r = std::fmin(a, b); break;
        case kHMax: r = std::fmax(a, b); break;
        case kHNeg: r = -a; break;
        default: r = std::fabs(a); break;
      }
      if (sat) r = saturate(r);
      bits = f2h<kFmt>(r);
      if (d.aux8 == kHNeg) bits = uint16_t(A[l] >> (16 * k)) ^ 0x8000;
      if (d.aux8 == kHAbs) bits = uint16_t(A[l] >> (16 * k)) & 0x7fff;
      out |= uint64_t(bits) << (16 * k);
    }
    D[l] = out;
  });
  return true;
}

Handler halfOp(Ty t) {
  const bool bf = t == Ty::kBF16 || t == Ty::kBF16x2, x2 = t == Ty::kF16x2 || t == Ty::kBF16x2;
  return bf ? (x2 ? &hop<1, true> : &hop<1, false>) : (x2 ? &hop<0, true> : &hop<0, false>);
}

}  // namespace

// The float and half forms of add sub mul min max div copysign; decodeBinary has set up d0, a and b.
Status decodeFloatBinary(const Decoding& x) {
  KF_DECODING(x);
  if (t == Ty::kF32 || t == Ty::kF64) {
    bool f32 = t == Ty::kF32;
#define FB(Op) (f32 ? &fbin<float, Op> : &fbin<double, Op>)
    switch (op) {
      case Opcode::kAdd: d->fn = FB(FAdd), x.flopsFor(1); break;
      case Opcode::kSub: d->fn = FB(FSub), x.flopsFor(1); break;
      case Opcode::kMul: d->fn = FB(FMul), x.flopsFor(1); break;
      case Opcode::kMin: d->fn = FB(FMin); break;
      case Opcode::kMax: d->fn = FB(FMax); break;
      case Opcode::kCopysign: d->fn = FB(FCopysign); break;
      case Opcode::kDiv: d->fn = in.has(Mod::kApprox) ? FB(FDivApprox) : FB(FDiv); break;
      default: return unsupportedInst(in);
    }
#undef FB
    return {};
  }
  switch (op) {
    case Opcode::kAdd: d->aux8 = kHAdd; break;
    case Opcode::kSub: d->aux8 = kHSub; break;
    case Opcode::kMul: d->aux8 = kHMul; break;
    case Opcode::kMin: d->aux8 = kHMin; break;
    case Opcode::kMax: d->aux8 = kHMax; break;
    default: return unsupportedInst(in);
  }
  if (d->aux8 <= kHMul) x.flopsFor(1);
  d->fn = halfOp(t);
  return {};
}

// mad/fma on floats and halves; decodeMad has set up d0.
Status decodeFloatMad(const Decoding& x) {
  KF_DECODING(x);
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], t);
  VAL(d->c, ops[3], t);
  x.flopsFor(2);
  if (t == Ty::kF32) {
    d->fn = &ffma<float>;
  } else if (t == Ty::kF64) {
    d->fn = &ffma<double>;
  } else {
    d->aux8 = kHFma;
    d->fn = halfOp(t);
  }
  return {};
}

// neg abs sqrt rsqrt rcp ex2 lg2 sin cos tanh on floats
Status decodeFloatUnary(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  bool approx = in.has(Mod::kApprox);
  if (t == Ty::kF16 || t == Ty::kBF16 || t == Ty::kF16x2 || t == Ty::kBF16x2) {
    if (op != Opcode::kNeg && op != Opcode::kAbs) return unsupportedInst(in);
    d->aux8 = op == Opcode::kNeg ? kHNeg : kHAbs;
    d->b = d->a;
    d->fn = halfOp(t);
    return {};
  }
  switch (op) {
    case Opcode::kNeg: d->aux8 = kFNeg; break;
    case Opcode::kAbs: d->aux8 = kFAbs; break;
    case Opcode::kSqrt: d->aux8 = approx ? kFSqrtApprox : kFSqrt; break;
    case Opcode::kRsqrt: d->aux8 = kFRsqrt; break;
    case Opcode::kRcp: d->aux8 = approx ? kFRcpApprox : kFRcp; break;
    case Opcode::kEx2: d->aux8 = kFEx2; break;
    case Opcode::kLg2: d->aux8 = kFLg2; break;
    case Opcode::kSin: d->aux8 = kFSin; break;
    case Opcode::kCos: d->aux8 = kFCos; break;
    default: d->aux8 = kFTanh; break;
  }
  if (approx) d->rnd = 0;
  if (t == Ty::kF32)
    d->fn = &fun<float>;
  else if (t == Ty::kF64)
    d->fn = &fun<double>;
  else
    return unsupportedInst(in);
  return {};
}

Status decodeTestp(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  bool nd = false;
  PRED(d->d0, ops[0], nd);
  VAL(d->a, ops[1], t);
  static constexpr Mod kModes[] = {Mod::kFinite,     Mod::kInfinite, Mod::kNumber,
                                   Mod::kNotanumber, Mod::kNormal,   Mod::kSubnormal};
  d->aux8 = 255;
  for (int i = 0; i < 6; ++i)
    if (in.has(kModes[i])) d->aux8 = uint8_t(i);
  if (d->aux8 == 255) return unsupportedInst(in);
  d->fn = t == Ty::kF32 ? &ftestp<float> : &ftestp<double>;
  return {};
}

}  // namespace kfuse::emulator
