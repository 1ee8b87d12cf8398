// Instruction decoding (PTX IR instruction -> DInst with a handler) and the handlers themselves.
// Handlers work on one warp: they loop over the lanes in the active mask, reading and writing 64-bit
// register slots (values live in the low bits, as wide as the instruction type).
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "builder.h"
#include "ctx.h"

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
    case Ty::kB8: case Ty::kU8: case Ty::kS8: return 1;
    case Ty::kB16: case Ty::kU16: case Ty::kS16: case Ty::kF16: case Ty::kBF16: return 2;
    case Ty::kB32: case Ty::kU32: case Ty::kS32: case Ty::kF32: case Ty::kF16x2: case Ty::kBF16x2: return 4;
    case Ty::kB64: case Ty::kU64: case Ty::kS64: case Ty::kF64: return 8;
    case Ty::kB128: return 16;
    case Ty::kPred: return 1;
    default: return 0;
  }
}

namespace {

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

KF_INLINE uint64_t* R(Ctx& c, uint16_t s) { return c.r + size_t(s) * 32; }

template <class T>
KF_INLINE T get(uint64_t v) {
  if constexpr (std::is_same_v<T, float>) return std::bit_cast<float>(static_cast<uint32_t>(v));
  else if constexpr (std::is_same_v<T, double>) return std::bit_cast<double>(v);
  else return static_cast<T>(v);
}
template <class T>
KF_INLINE uint64_t put(T x) {
  if constexpr (std::is_same_v<T, float>) return std::bit_cast<uint32_t>(x);
  else if constexpr (std::is_same_v<T, double>) return std::bit_cast<uint64_t>(x);
  else return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(x));
}

KF_INLINE float ftz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}
template <class T>
KF_INLINE T fz(T x, bool on) {
  if constexpr (std::is_same_v<T, float>) return on ? ftz(x) : x;
  else return x;
}
template <class T>
KF_INLINE T saturate(T x) {
  if (std::isnan(x)) return T(0);
  return x < T(0) ? T(0) : (x > T(1) ? T(1) : x);
}

// ---------------------------------------------------------------------------------------------------------------
// Integer arithmetic

template <class T> using U = std::make_unsigned_t<T>;

struct IAdd { template <class T> static T f(T a, T b) { return T(U<T>(a) + U<T>(b)); } };
struct ISub { template <class T> static T f(T a, T b) { return T(U<T>(a) - U<T>(b)); } };
struct IMulLo { template <class T> static T f(T a, T b) { return T(U<T>(a) * U<T>(b)); } };
struct IMulHi {
  template <class T> static T f(T a, T b) {
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
struct IMin { template <class T> static T f(T a, T b) { return a < b ? a : b; } };
struct IMax { template <class T> static T f(T a, T b) { return a < b ? b : a; } };
struct IAnd { template <class T> static T f(T a, T b) { return a & b; } };
struct IOr { template <class T> static T f(T a, T b) { return a | b; } };
struct IXor { template <class T> static T f(T a, T b) { return a ^ b; } };
struct IDiv {
  template <class T> static T f(T a, T b) {
    if (b == 0) return T(-1);
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
    return a / b;
  }
};
struct IRem {
  template <class T> static T f(T a, T b) {
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
  lanes(m, [&](int l) {
    D[l] = put<W>(W(U<W>(W(get<T>(A[l]))) * U<W>(W(get<T>(B[l]))) + U<W>(get<W>(C[l]))));
  });
  return true;
}
template <class T, class Op>
bool imad(Ctx& c, const DInst& d, uint32_t m) {  // mad.lo / mad.hi
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  lanes(m, [&](int l) {
    D[l] = put<T>(IAdd::f<T>(Op::template f<T>(get<T>(A[l]), get<T>(B[l])), get<T>(C[l])));
  });
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

// ---------------------------------------------------------------------------------------------------------------
// Floating point

struct FAdd { static constexpr int kDir = 0; template <class T> static T f(T a, T b) { return a + b; } };
struct FSub { static constexpr int kDir = 1; template <class T> static T f(T a, T b) { return a - b; } };
struct FMul { static constexpr int kDir = 2; template <class T> static T f(T a, T b) { return a * b; } };
struct FDiv { static constexpr int kDir = 4; template <class T> static T f(T a, T b) { return a / b; } };
struct FMin { static constexpr int kDir = -1; template <class T> static T f(T a, T b) { return std::fmin(a, b); } };
struct FMax { static constexpr int kDir = -1; template <class T> static T f(T a, T b) { return std::fmax(a, b); } };
struct FCopysign {
  static constexpr int kDir = -1;
  template <class T> static T f(T a, T b) { return std::copysign(b, a); }
};
struct FDivApprox {  // div.approx.f32: a * (1/b), as the hardware computes it
  static constexpr int kDir = -1;
  template <class T> static T f(T a, T b) { return a * (T(1) / b); }
};

template <class T> constexpr int precOf() { return std::is_same_v<T, float> ? 2 : 3; }

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

enum FUnOp : uint8_t { kFNeg, kFAbs, kFSqrt, kFRsqrt, kFRcp, kFEx2, kFLg2, kFSin, kFCos, kFTanh, kFSqrtApprox,
                       kFRcpApprox };
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
      case kFSqrt: case kFSqrtApprox: r = std::sqrt(a); break;
      case kFRsqrt: r = T(1) / std::sqrt(a); break;
      case kFRcp: case kFRcpApprox: r = T(1) / a; break;
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
template <int kFmt>
KF_INLINE float h2f(uint16_t h) { return kFmt == 0 ? halfToFloat(h) : bf16ToFloat(h); }
template <int kFmt>
KF_INLINE uint16_t f2h(float f) { return kFmt == 0 ? floatToHalf(f) : floatToBf16(f); }

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

// ---------------------------------------------------------------------------------------------------------------
// Comparison and selection

enum Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kLo, kLs, kHi, kHs, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum,
                     kNan };

template <class T>
KF_INLINE bool compare(uint8_t cmp, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    bool un = std::isnan(a) || std::isnan(b);
    switch (cmp) {
      case kEq: return !un && a == b;
      case kNe: return !un && a != b;
      case kLt: return !un && a < b;
      case kLe: return !un && a <= b;
      case kGt: return !un && a > b;
      case kGe: return !un && a >= b;
      case kEqu: return un || a == b;
      case kNeu: return un || a != b;
      case kLtu: return un || a < b;
      case kLeu: return un || a <= b;
      case kGtu: return un || a > b;
      case kGeu: return un || a >= b;
      case kNum: return !un;
      case kNan: return un;
      default: return false;
    }
  } else {
    using UT = U<T>;
    switch (cmp) {
      case kEq: return a == b;
      case kNe: return a != b;
      case kLt: return a < b;
      case kLe: return a <= b;
      case kGt: return a > b;
      case kGe: return a >= b;
      case kLo: return UT(a) < UT(b);
      case kLs: return UT(a) <= UT(b);
      case kHi: return UT(a) > UT(b);
      case kHs: return UT(a) >= UT(b);
      default: return false;
    }
  }
}

KF_INLINE void writePredPair(Ctx& c, const DInst& d, uint32_t m, uint32_t res) {
  uint32_t q = ~res;
  if (d.boolop) {
    uint32_t cm = c.p[d.c];
    if (d.flags & kNegC) cm = ~cm;
    switch (d.boolop) {
      case 1: res &= cm; q &= cm; break;
      case 2: res |= cm; q |= cm; break;
      case 3: res ^= cm; q ^= cm; break;
    }
  }
  c.p[d.d0] = (c.p[d.d0] & ~m) | (res & m);
  if (d.d1 != 0xffff) c.p[d.d1] = (c.p[d.d1] & ~m) | (q & m);
}

template <class T>
bool setp(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  bool z = d.flags & kFtz;
  uint32_t res = 0;
  lanes(m, [&](int l) {
    res |= uint32_t(compare<T>(d.cmp, fz(get<T>(A[l]), z), fz(get<T>(B[l]), z))) << l;
  });
  writePredPair(c, d, m, res);
  return true;
}
template <int kFmt>
bool setph(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  uint32_t res = 0;
  lanes(m, [&](int l) {
    res |= uint32_t(compare<float>(d.cmp, h2f<kFmt>(uint16_t(A[l])), h2f<kFmt>(uint16_t(B[l])))) << l;
  });
  writePredPair(c, d, m, res);
  return true;
}

bool selp(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  uint32_t p = c.p[d.c];
  if (d.flags & kNegC) p = ~p;
  lanes(m, [&](int l) { D[l] = ((p >> l) & 1) ? A[l] : B[l]; });
  return true;
}
template <class T>
bool slct(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  lanes(m, [&](int l) { D[l] = get<T>(C[l]) >= T(0) ? A[l] : B[l]; });
  return true;
}

// Predicate logic: and/or/xor/not/mov on .pred (aux8: 0 and 1 or 2 xor 3 not 4 mov).
bool predop(Ctx& c, const DInst& d, uint32_t m) {
  uint32_t a = c.p[d.a], b = d.b != 0xffff ? c.p[d.b] : 0;
  if (d.flags & kNegA) a = ~a;
  if (d.flags & kNegB) b = ~b;
  uint32_t r = 0;
  switch (d.aux8) {
    case 0: r = a & b; break;
    case 1: r = a | b; break;
    case 2: r = a ^ b; break;
    case 3: r = ~a; break;
    default: r = a; break;
  }
  c.p[d.d0] = (c.p[d.d0] & ~m) | (r & m);
  return true;
}
// mov.pred from an immediate or selp.pred-like materialisation: d.imm = 0/1.
bool predconst(Ctx& c, const DInst& d, uint32_t m) {
  c.p[d.d0] = d.imm ? (c.p[d.d0] | m) : (c.p[d.d0] & ~m);
  return true;
}
// A predicate written as a value (e.g. `selp.u32 %r, 1, 0, %p` is common; `cvt`/`mov` of a pred is not) and a
// value written as predicate: `setp.ne.b32` covers that; these two cover mov between predicate and register.
bool pred2reg(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  uint32_t p = c.p[d.a];
  lanes(m, [&](int l) { D[l] = (p >> l) & 1; });
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Moves and conversions

bool mov(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  if (m == 0xffffffffu) std::memcpy(D, A, 32 * sizeof(uint64_t));
  else lanes(m, [&](int l) { D[l] = A[l]; });
  return true;
}
// mov.b64 d, {a, b} / mov.b32 d, {a, b}: pack d.vec elements of d.size bytes from d.v[].
bool movpack(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  unsigned bits = 8 * d.size;
  uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  lanes(m, [&](int l) {
    uint64_t r = 0;
    for (int i = 0; i < d.vec; ++i) r |= (R(c, d.v[i])[l] & mask) << (bits * i);
    D[l] = r;
  });
  return true;
}
bool movunpack(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  unsigned bits = 8 * d.size;
  uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  lanes(m, [&](int l) {
    uint64_t a = A[l];
    for (int i = 0; i < d.vec; ++i) R(c, d.v[i])[l] = (a >> (bits * i)) & mask;
  });
  return true;
}
bool addimm(Ctx& c, const DInst& d, uint32_t m) {  // cvta: d = a + imm
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  uint64_t k = uint64_t(d.imm);
  lanes(m, [&](int l) { D[l] = A[l] + k; });
  return true;
}
bool cvtasub(Ctx& c, const DInst& d, uint32_t m) {  // cvta.to.{shared,local}: generic -> window offset
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  uint64_t k = uint64_t(d.imm);
  lanes(m, [&](int l) { D[l] = A[l] >= k && A[l] < k + kWindowSize ? A[l] - k : A[l]; });
  return true;
}
bool isspacep(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  uint32_t res = 0;
  lanes(m, [&](int l) {
    uint64_t a = A[l];
    bool v;
    switch (Space(d.space)) {
      case Space::kShared: v = a >= kSharedWindow && a < kSharedWindow + kWindowSize; break;
      case Space::kLocal: v = a >= kLocalWindow && a < kLocalWindow + kWindowSize; break;
      case Space::kKernelParam: v = a >= kParamWindow && a < kParamWindow + kWindowSize; break;
      default: v = a >= kGlobalBase; break;
    }
    res |= uint32_t(v) << l;
  });
  c.p[d.d0] = (c.p[d.d0] & ~m) | (res & m);
  return true;
}
bool clockreg(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  uint64_t v = c.cnt.warp_instructions * (d.aux8 ? 1000 : 1);  // %globaltimer ticks "ns"
  lanes(m, [&](int l) { D[l] = v; });
  return true;
}
bool nop(Ctx&, const DInst&, uint32_t) { return true; }
bool zero(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  lanes(m, [&](int l) { D[l] = 0; });
  return true;
}

// cvt: read the source as a wide value, write the destination. Integer->integer is the hot case.
template <class D_, class S_>
bool cvtint(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  bool sat = d.flags & kSat;
  lanes(m, [&](int l) {
    S_ s = get<S_>(A[l]);
    if (sat) {
      using W = std::conditional_t<std::is_signed_v<S_>, int64_t, uint64_t>;
      W w = W(s);
      if constexpr (std::is_signed_v<S_>) {
        if (w < int64_t(std::numeric_limits<D_>::min())) s = S_(std::numeric_limits<D_>::min());
        if (std::is_signed_v<D_> ? w > int64_t(std::numeric_limits<D_>::max())
                                 : (w > 0 && uint64_t(w) > uint64_t(std::numeric_limits<D_>::max())))
          D[l] = put<D_>(std::numeric_limits<D_>::max()), void();
      } else {
        if (w > uint64_t(std::numeric_limits<D_>::max())) {
          D[l] = put<D_>(std::numeric_limits<D_>::max());
          return;
        }
      }
      int64_t v = std::is_signed_v<S_> ? int64_t(s) : int64_t(uint64_t(s));
      if constexpr (std::is_signed_v<S_>) {
        int64_t lo = int64_t(std::numeric_limits<D_>::min());
        int64_t hi = std::is_signed_v<D_> || sizeof(D_) < 8 ? int64_t(std::numeric_limits<D_>::max()) : INT64_MAX;
        v = std::clamp(v, lo, hi);
      }
      D[l] = put<D_>(D_(v));
      return;
    }
    D[l] = put<D_>(D_(s));
  });
  return true;
}

// Generic conversion for everything with a float on one side.
KF_INLINE double readAsDouble(Ty t, uint64_t v) {
  switch (t) {
    case Ty::kF16: return halfToFloat(uint16_t(v));
    case Ty::kBF16: return bf16ToFloat(uint16_t(v));
    case Ty::kF32: return get<float>(v);
    case Ty::kF64: return get<double>(v);
    case Ty::kS8: return int8_t(v);
    case Ty::kS16: return int16_t(v);
    case Ty::kS32: return int32_t(v);
    case Ty::kS64: return double(int64_t(v));
    case Ty::kU8: case Ty::kB8: return uint8_t(v);
    case Ty::kU16: case Ty::kB16: return uint16_t(v);
    case Ty::kU32: case Ty::kB32: return uint32_t(v);
    default: return double(v);
  }
}

double roundInt(double x, int rnd) {
  switch (rnd) {
    case 0: return std::nearbyint(x);  // default environment: round to nearest even
    case 1: return std::trunc(x);
    case 2: return std::floor(x);
    default: return std::ceil(x);
  }
}

struct CvtAux {  // packed into DInst: a = src slot; aux8 = src type; cmp = dst type (Ty values); rnd; flags
};

bool cvtgen(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  Ty st = Ty(d.aux8), dt = Ty(d.cmp);
  bool sat = d.flags & kSat, z = d.flags & kFtz;
  bool int_round = d.flags & kApprox;  // rni/rzi/rmi/rpi on float->float
  lanes(m, [&](int l) {
    uint64_t v = A[l];
    if (tyFloat(dt)) {
      // Sources that need exact handling first.
      if (dt == Ty::kF32 && (st == Ty::kF64 || st == Ty::kS64 || st == Ty::kU64) && d.rnd != 0) {
        uint64_t out;
        directedRound(d.rnd, st == Ty::kF64 ? 6 : (st == Ty::kS64 ? 7 : 8), 2, &v, nullptr, nullptr, &out, 1, z);
        D[l] = out;
        return;
      }
      float f32;
      double f64;
      if (dt == Ty::kF64) {
        f64 = st == Ty::kS64 ? double(int64_t(v)) : (st == Ty::kU64 || st == Ty::kB64) ? double(v)
                                                                                         : readAsDouble(st, v);
        if (st == Ty::kF32 && z) f64 = ftz(get<float>(v));
        if (int_round) f64 = roundInt(f64, d.rnd);
        if (sat) f64 = saturate(f64);
        D[l] = put<double>(f64);
        return;
      }
      if (st == Ty::kF64) f32 = float(get<double>(v));
      else if (st == Ty::kS64) f32 = float(int64_t(v));
      else if (st == Ty::kU64 || st == Ty::kB64) f32 = float(v);
      else if (st == Ty::kS32) f32 = float(int32_t(v));
      else if (st == Ty::kU32 || st == Ty::kB32) f32 = float(uint32_t(v));
      else f32 = float(readAsDouble(st, v));
      if (z) f32 = ftz(f32);
      if (int_round) f32 = float(roundInt(f32, d.rnd));
      if (sat) f32 = saturate(f32);
      if (dt == Ty::kF32) {
        if (z) f32 = ftz(f32);
        D[l] = put<float>(f32);
      } else if (dt == Ty::kF16) {
        D[l] = floatToHalf(st == Ty::kF64 ? float(get<double>(v)) : f32, d.rnd);
      } else if (dt == Ty::kBF16) {
        D[l] = floatToBf16(f32, d.rnd);
      }
      return;
    }
    // float -> integer (integer -> integer has its own handler)
    double x = readAsDouble(st, v);
    if (st == Ty::kF32 && z) x = ftz(get<float>(v));
    if (std::isnan(x)) {
      D[l] = 0;
      return;
    }
    x = roundInt(x, d.rnd);
    uint32_t bytes = tySize(dt);
    if (tySigned(dt)) {
      double lo = -std::ldexp(1.0, 8 * bytes - 1), hi = std::ldexp(1.0, 8 * bytes - 1) - 1;
      int64_t r = x <= lo ? int64_t(lo) : x >= hi ? (bytes == 8 ? INT64_MAX : int64_t(hi)) : int64_t(x);
      D[l] = bytes == 8 ? uint64_t(r) : uint64_t(r) & ((1ull << (8 * bytes)) - 1);
    } else {
      double hi = std::ldexp(1.0, 8 * bytes) - 1;
      uint64_t r = x <= 0 ? 0 : x >= hi ? (bytes == 8 ? UINT64_MAX : uint64_t(hi)) : uint64_t(x);
      D[l] = r;
    }
  });
  return true;
}

bool cvtpack(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  bool bf = d.aux8 != 0, sat = d.flags & kSat;
  lanes(m, [&](int l) {
    float a = get<float>(A[l]), b = get<float>(B[l]);
    if (sat) a = saturate(a), b = saturate(b);
    uint32_t hi = bf ? floatToBf16(a, d.rnd) : floatToHalf(a, d.rnd);
    uint32_t lo = bf ? floatToBf16(b, d.rnd) : floatToHalf(b, d.rnd);
    D[l] = (hi << 16) | lo;
  });
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Memory

template <uint32_t N, bool S>
KF_INLINE uint64_t loadN(const uint8_t* p) {
  if constexpr (N == 1) return S ? uint64_t(int64_t(int8_t(*p))) : *p;
  else if constexpr (N == 2) { uint16_t v; std::memcpy(&v, p, 2); return S ? uint64_t(int64_t(int16_t(v))) : v; }
  else if constexpr (N == 4) { uint32_t v; std::memcpy(&v, p, 4); return S ? uint64_t(int64_t(int32_t(v))) : v; }
  else { uint64_t v; std::memcpy(&v, p, 8); return v; }
}
template <uint32_t N>
KF_INLINE void storeN(uint8_t* p, uint64_t v) { std::memcpy(p, &v, N); }

template <Space S>
KF_INLINE void countBytes(Ctx& c, uint64_t addr, uint64_t n, bool store) {
  Space s = S;
  if constexpr (S == Space::kGeneric) {
    if (addr >= kSharedWindow && addr < kSharedWindow + kWindowSize) s = Space::kShared;
    else if (addr >= kLocalWindow && addr < kLocalWindow + kWindowSize) s = Space::kLocal;
    else if (addr >= kParamWindow && addr < kParamWindow + kWindowSize) return;
    else s = Space::kGlobal;
  }
  switch (s) {
    case Space::kGlobal: case Space::kConst: (store ? c.cnt.global_store_bytes : c.cnt.global_load_bytes) += n; break;
    case Space::kShared: (store ? c.cnt.shared_store_bytes : c.cnt.shared_load_bytes) += n; break;
    case Space::kLocal: (store ? c.cnt.local_store_bytes : c.cnt.local_load_bytes) += n; break;
    default: break;
  }
}

template <Space S, uint32_t N, bool kSigned>
bool ld(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  const uint64_t off = uint64_t(d.imm);
  const int vec = d.vec;
  if (vec == 1) {
    uint64_t* D = R(c, d.v[0]);
    bool ok = true;
    lanes(m, [&](int l) {
      if (!ok) return;
      uint64_t addr = A[l] + off;
      const uint8_t* h = resolve<S>(c, addr, N, l, false);
      if (!h) { ok = false; return; }
      D[l] = loadN<N, kSigned>(h);
      countBytes<S>(c, addr, N, false);
    });
    return ok;
  }
  bool ok = true;
  lanes(m, [&](int l) {
    if (!ok) return;
    uint64_t addr = A[l] + off;
    const uint8_t* h = resolve<S>(c, addr, N * vec, l, false);
    if (!h) { ok = false; return; }
    for (int i = 0; i < vec; ++i) R(c, d.v[i])[l] = loadN<N, kSigned>(h + i * N);
    countBytes<S>(c, addr, N * vec, false);
  });
  return ok;
}

template <Space S, uint32_t N>
bool st(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  const uint64_t off = uint64_t(d.imm);
  const int vec = d.vec;
  bool ok = true;
  lanes(m, [&](int l) {
    if (!ok) return;
    uint64_t addr = A[l] + off;
    uint8_t* h = resolve<S>(c, addr, N * vec, l, true);
    if (!h) { ok = false; return; }
    for (int i = 0; i < vec; ++i) storeN<N>(h + i * N, R(c, d.v[i])[l]);
    countBytes<S>(c, addr, N * vec, true);
  });
  return ok;
}

// cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}: copied at once (the wait is a no-op).
bool cpasync(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* Dst = R(c, d.a);
  const uint64_t* Src = R(c, d.b);
  const uint64_t* SrcSize = d.e != 0xffff ? R(c, d.e) : nullptr;
  bool ok = true;
  lanes(m, [&](int l) {
    if (!ok) return;
    uint32_t n = d.size;
    uint32_t valid = SrcSize ? std::min<uint32_t>(uint32_t(SrcSize[l]), n) : n;
    uint8_t* dst = resolve<Space::kShared>(c, Dst[l] + uint64_t(d.imm), n, l, true);
    if (!dst) { ok = false; return; }
    uint8_t tmp[16] = {};
    if (valid) {
      const uint8_t* src = resolve<Space::kGlobal>(c, Src[l] + uint64_t(int64_t(d.target)), n, l, false);
      if (!src) { ok = false; return; }
      std::memcpy(tmp, src, valid);
      c.cnt.global_load_bytes += valid;
    }
    std::memcpy(dst, tmp, n);
    c.cnt.shared_store_bytes += n;
  });
  return ok;
}

// Atomics. aux8: operation. The lanes of a warp apply in lane order; blocks on different host threads use
// std::atomic_ref, so integer results do not depend on the thread count.
enum AtomOp : uint8_t { kAAdd, kAMin, kAMax, kAInc, kADec, kAAnd, kAOr, kAXor, kAExch, kACas };

template <class T>
KF_INLINE T atomApply(uint8_t op, T old, T b, T c3) {
  switch (op) {
    case kAAdd:
      if constexpr (std::is_floating_point_v<T>) return old + b;
      else return T(U<T>(old) + U<T>(b));
    case kAMin: if constexpr (std::is_floating_point_v<T>) return std::fmin(old, b); else return old < b ? old : b;
    case kAMax: if constexpr (std::is_floating_point_v<T>) return std::fmax(old, b); else return old < b ? b : old;
    case kAInc: if constexpr (std::is_integral_v<T>) return old >= b ? T(0) : T(old + 1); else return old;
    case kADec: if constexpr (std::is_integral_v<T>) return (old == 0 || old > b) ? b : T(old - 1); else return old;
    case kAAnd: if constexpr (std::is_integral_v<T>) return old & b; else return old;
    case kAOr: if constexpr (std::is_integral_v<T>) return old | b; else return old;
    case kAXor: if constexpr (std::is_integral_v<T>) return old ^ b; else return old;
    case kAExch: return b;
    case kACas: return old == b ? c3 : old;
  }
  return old;
}

template <Space S, class T>
bool atom(Ctx& c, const DInst& d, uint32_t m) {
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  uint64_t* D = d.d0 != 0xffff ? R(c, d.d0) : nullptr;
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  bool ok = true;
  bool shared_space = S == Space::kShared;
  lanes(m, [&](int l) {
    if (!ok) return;
    uint64_t addr = A[l] + uint64_t(d.imm);
    uint8_t* h = resolve<S>(c, addr, sizeof(T), l, true);
    if (!h) { ok = false; return; }
    if constexpr (S == Space::kGeneric) shared_space = addr >= kSharedWindow && addr < kSharedWindow + kWindowSize;
    std::atomic_ref<Bits> ref(*reinterpret_cast<Bits*>(h));
    Bits old = ref.load(std::memory_order_relaxed), nv;
    T b = get<T>(B[l]), c3 = get<T>(C[l]);
    do {
      nv = std::bit_cast<Bits>(atomApply<T>(d.aux8, std::bit_cast<T>(old), b, c3));
    } while (!ref.compare_exchange_weak(old, nv, std::memory_order_relaxed));
    if (D) D[l] = put<T>(std::bit_cast<T>(old));
    (shared_space ? c.cnt.shared_atomics : c.cnt.global_atomics) += 1;
  });
  return ok;
}

// ---------------------------------------------------------------------------------------------------------------
// Warp-level

bool shfl(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  const uint64_t* B = R(c, d.b);
  const uint64_t* C = R(c, d.c);
  uint64_t src[32];
  std::memcpy(src, A, sizeof src);
  uint32_t pres = 0;
  lanes(m, [&](int l) {
    uint32_t b = uint32_t(B[l]) & 31, cv = uint32_t(C[l]);
    uint32_t clamp = cv & 31, segmask = (cv >> 8) & 31;
    uint32_t max_lane = (uint32_t(l) & segmask) | (clamp & ~segmask);
    uint32_t min_lane = uint32_t(l) & segmask;
    int j;
    bool pv;
    switch (d.aux8) {
      case 0: j = l - int(b); pv = j >= int(max_lane); break;                  // up
      case 1: j = l + int(b); pv = j <= int(max_lane); break;                  // down
      case 2: j = l ^ int(b); pv = j <= int(max_lane); break;                  // bfly
      default: j = int(min_lane | (b & ~segmask)); pv = j <= int(max_lane); break;  // idx
    }
    if (!pv) j = l;
    D[l] = uint32_t(src[j & 31]);
    pres |= uint32_t(pv) << l;
  });
  if (d.d1 != 0xffff) c.p[d.d1] = (c.p[d.d1] & ~m) | (pres & m);
  return true;
}
bool vote(Ctx& c, const DInst& d, uint32_t m) {
  uint32_t p = c.p[d.a];
  if (d.flags & kNegA) p = ~p;
  uint32_t set = p & m;
  switch (d.aux8) {
    case 0: c.p[d.d0] = (c.p[d.d0] & ~m) | (set == m ? m : 0); break;                // all
    case 1: c.p[d.d0] = (c.p[d.d0] & ~m) | (set != 0 ? m : 0); break;                // any
    case 2: c.p[d.d0] = (c.p[d.d0] & ~m) | ((set == m || set == 0) ? m : 0); break;  // uni
    default: {                                                                         // ballot
      uint64_t* D = R(c, d.d0);
      lanes(m, [&](int l) { D[l] = set; });
    }
  }
  return true;
}
bool activemask(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  lanes(m, [&](int l) { D[l] = m; });
  return true;
}
bool matchsync(Ctx& c, const DInst& d, uint32_t m) {  // aux8: 0 any, 1 all; size: 4 or 8
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  uint64_t mask = d.size == 8 ? ~0ull : 0xffffffffull;
  uint32_t allp = 0;
  uint32_t res[32] = {};
  lanes(m, [&](int l) {
    uint32_t same = 0;
    lanes(m, [&](int k) { if ((A[k] & mask) == (A[l] & mask)) same |= 1u << k; });
    res[l] = same;
  });
  lanes(m, [&](int l) {
    if (d.aux8 == 0) D[l] = res[l];
    else {
      D[l] = res[l] == m ? m : 0;
      if (res[l] == m) allp |= 1u << l;
    }
  });
  if (d.aux8 == 1 && d.d1 != 0xffff) c.p[d.d1] = (c.p[d.d1] & ~m) | (allp & m);
  return true;
}
template <class T>
bool redux(Ctx& c, const DInst& d, uint32_t m) {  // aux8: 0 add 1 min 2 max 3 and 4 or 5 xor
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  T acc{};
  bool first = true;
  lanes(m, [&](int l) {
    T v = get<T>(A[l]);
    if (first) { acc = v; first = false; return; }
    switch (d.aux8) {
      case 0: acc = T(U<T>(acc) + U<T>(v)); break;
      case 1: acc = std::min(acc, v); break;
      case 2: acc = std::max(acc, v); break;
      case 3: acc &= v; break;
      case 4: acc |= v; break;
      default: acc ^= v; break;
    }
  });
  lanes(m, [&](int l) { D[l] = put<T>(acc); });
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Decoding: kDecoders, indexed by the opcode, picks the decoder of the instruction's family; each decoder reads
// the typed modifiers of the instruction (never their spelling) and fills in the DInst.

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
    if (in.operands.size() < n)
      return badFormat("'" + in.fullOpcode() + "' needs " + std::to_string(n) + " operands");
    return {};
  }
  // Counts `n` floating-point operations per lane (twice for packed halves) when `t` is a float type.
  void flopsFor(uint8_t n) const {
    d->fprec = fprecOf(t);
    if (d->fprec) d->flops = uint8_t(n * ((t == Ty::kF16x2 || t == Ty::kBF16x2) ? 2 : 1));
  }
  static uint8_t fprecOf(Ty ty) {
    switch (ty) {
      case Ty::kF16: case Ty::kF16x2: case Ty::kBF16: case Ty::kBF16x2: return 1;
      case Ty::kF32: return 2;
      case Ty::kF64: return 3;
      default: return 0;
    }
  }
};

using DecodeFn = Status (*)(const Decoding&);

Status unsupportedInst(const ptx::Instruction& in, const std::string& why = {}) {
  return unsupported("unsupported instruction '" + in.fullOpcode() + "'" + (why.empty() ? "" : " (" + why + ")"));
}

template <class Op>
Handler intBin(Ty t) {
  switch (t) {
    case Ty::kS16: return &ibin<int16_t, Op>;
    case Ty::kU16: case Ty::kB16: return &ibin<uint16_t, Op>;
    case Ty::kS32: return &ibin<int32_t, Op>;
    case Ty::kU32: case Ty::kB32: return &ibin<uint32_t, Op>;
    case Ty::kS64: return &ibin<int64_t, Op>;
    case Ty::kU64: case Ty::kB64: return &ibin<uint64_t, Op>;
    case Ty::kS8: return &ibin<int8_t, Op>;
    case Ty::kU8: case Ty::kB8: return &ibin<uint8_t, Op>;
    default: return nullptr;
  }
}
template <template <class> class H>
Handler intFamily(Ty t) {
  switch (t) {
    case Ty::kS16: return &H<int16_t>::run;
    case Ty::kU16: case Ty::kB16: return &H<uint16_t>::run;
    case Ty::kS32: return &H<int32_t>::run;
    case Ty::kU32: case Ty::kB32: return &H<uint32_t>::run;
    case Ty::kS64: return &H<int64_t>::run;
    case Ty::kU64: case Ty::kB64: return &H<uint64_t>::run;
    default: return nullptr;
  }
}
#define KF_FAMILY(name, fn) \
  template <class T> struct name { static bool run(Ctx& c, const DInst& d, uint32_t m) { return fn<T>(c, d, m); } };
KF_FAMILY(HShl, ishl)
KF_FAMILY(HShr, ishr)
KF_FAMILY(HUn, iun)
KF_FAMILY(HBfe, ibfe)
KF_FAMILY(HBfi, ibfi)
KF_FAMILY(HLop3, ilop3)
KF_FAMILY(HSad, isad)
KF_FAMILY(HSetp, setp)
KF_FAMILY(HRedux, redux)
template <class T> struct HMadLo { static bool run(Ctx& c, const DInst& d, uint32_t m) { return imad<T, IMulLo>(c, d, m); } };
template <class T> struct HMadHi { static bool run(Ctx& c, const DInst& d, uint32_t m) { return imad<T, IMulHi>(c, d, m); } };

template <Space S>
Handler ldFor(uint32_t n, bool sgn) {
  switch (n) {
    case 1: return sgn ? &ld<S, 1, true> : &ld<S, 1, false>;
    case 2: return sgn ? &ld<S, 2, true> : &ld<S, 2, false>;
    case 4: return sgn ? &ld<S, 4, true> : &ld<S, 4, false>;
    case 8: return &ld<S, 8, false>;
    default: return nullptr;
  }
}
template <Space S>
Handler stFor(uint32_t n) {
  switch (n) {
    case 1: return &st<S, 1>;
    case 2: return &st<S, 2>;
    case 4: return &st<S, 4>;
    case 8: return &st<S, 8>;
    default: return nullptr;
  }
}
Handler ldHandler(Space s, uint32_t n, bool sgn) {
  switch (s) {
    case Space::kGlobal: return ldFor<Space::kGlobal>(n, sgn);
    case Space::kConst: return ldFor<Space::kConst>(n, sgn);
    case Space::kShared: return ldFor<Space::kShared>(n, sgn);
    case Space::kLocal: return ldFor<Space::kLocal>(n, sgn);
    case Space::kKernelParam: return ldFor<Space::kKernelParam>(n, sgn);
    case Space::kFrameParam: return ldFor<Space::kFrameParam>(n, sgn);
    default: return ldFor<Space::kGeneric>(n, sgn);
  }
}
Handler stHandler(Space s, uint32_t n) {
  switch (s) {
    case Space::kGlobal: return stFor<Space::kGlobal>(n);
    case Space::kShared: return stFor<Space::kShared>(n);
    case Space::kLocal: return stFor<Space::kLocal>(n);
    case Space::kFrameParam: return stFor<Space::kFrameParam>(n);
    case Space::kKernelParam: return stFor<Space::kKernelParam>(n);
    case Space::kConst: return stFor<Space::kConst>(n);
    default: return stFor<Space::kGeneric>(n);
  }
}
template <Space S>
Handler atomFor(Ty t) {
  switch (t) {
    case Ty::kU32: case Ty::kB32: return &atom<S, uint32_t>;
    case Ty::kS32: return &atom<S, int32_t>;
    case Ty::kU64: case Ty::kB64: return &atom<S, uint64_t>;
    case Ty::kS64: return &atom<S, int64_t>;
    case Ty::kF32: return &atom<S, float>;
    case Ty::kF64: return &atom<S, double>;
    default: return nullptr;
  }
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

// Rounding mode of the first rounding modifier: 0 nearest, 1 zero, 2 down, 3 up.
int roundingOf(const ptx::Instruction& in) {
  for (const ptx::Modifier& m : in.modifiers) {
    switch (m.asMod()) {
      case Mod::kRn: case Mod::kRni: return 0;
      case Mod::kRz: case Mod::kRzi: return 1;
      case Mod::kRm: case Mod::kRmi: return 2;
      case Mod::kRp: case Mod::kRpi: return 3;
      default: break;
    }
  }
  return 0;
}
bool intRounding(const ptx::Instruction& in) {
  return in.has(Mod::kRni) || in.has(Mod::kRzi) || in.has(Mod::kRmi) || in.has(Mod::kRpi);
}

// The first comparison modifier as the index setp handlers use (.eq 0 ... .nan 17, the order of ptx::Mod), -1
// if none.
int cmpOf(const ptx::Instruction& in) {
  for (const ptx::Modifier& m : in.modifiers) {
    const Mod c = m.asMod();
    if (c >= Mod::kEq && c <= Mod::kNan) return int(c) - int(Mod::kEq);
  }
  return -1;
}

void setClass(DInst* d, InstClass c) { d->cls = static_cast<uint8_t>(c); }
InstClass arithClass(Ty t) {
  switch (t) {
    case Ty::kF16: case Ty::kF16x2: case Ty::kBF16: case Ty::kBF16x2: return InstClass::kFp16;
    case Ty::kF32: return InstClass::kFp32;
    case Ty::kF64: return InstClass::kFp64;
    default: return InstClass::kInteger;
  }
}

Handler halfOp(Ty t) {
  const bool bf = t == Ty::kBF16 || t == Ty::kBF16x2, x2 = t == Ty::kF16x2 || t == Ty::kBF16x2;
  return bf ? (x2 ? &hop<1, true> : &hop<1, false>) : (x2 ? &hop<0, true> : &hop<0, false>);
}

// The names each family decoder works with (not every decoder uses all of them).
#define KF_DECODING(x)                                   \
  [[maybe_unused]] const ptx::Instruction& in = (x).in;  \
  [[maybe_unused]] const Opcode op = (x).in.opcode;      \
  [[maybe_unused]] const auto& ops = (x).in.operands;    \
  [[maybe_unused]] FnBuilder& b = (x).b;                 \
  [[maybe_unused]] DInst* const d = (x).d;               \
  [[maybe_unused]] const Ty t = (x).t
#define VAL(var, opnd, ty)                                   \
  do {                                                       \
    auto v_ = b.value(opnd, ty);                             \
    if (!v_.ok()) return v_.status();                        \
    var = *v_;                                               \
  } while (false)
#define DST(var, opnd)                                       \
  do {                                                       \
    auto v_ = b.dest(opnd);                                  \
    if (!v_.ok()) return v_.status();                        \
    var = *v_;                                               \
  } while (false)
#define PRED(var, opnd, negvar)                              \
  do {                                                       \
    bool n_ = false;                                         \
    auto v_ = b.pred(opnd, &n_);                             \
    if (!v_.ok()) return v_.status();                        \
    var = *v_;                                               \
    negvar = n_;                                             \
    (void)negvar;                                            \
  } while (false)

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
  if (tyFloat(t)) {
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
  if (tyFloat(t)) {
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
  if (t == Ty::kF32) d->fn = &fun<float>;
  else if (t == Ty::kF64) d->fn = &fun<double>;
  else return unsupportedInst(in);
  return {};
}

// neg abs: integer or floating point by the type
Status decodeNegAbs(const Decoding& x) { return tyFloat(x.t) ? decodeFloatUnary(x) : decodeIntUnary(x); }

Status decodeTestp(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  bool nd = false;
  PRED(d->d0, ops[0], nd);
  VAL(d->a, ops[1], t);
  static constexpr Mod kModes[] = {Mod::kFinite, Mod::kInfinite, Mod::kNumber,
                                   Mod::kNotanumber, Mod::kNormal, Mod::kSubnormal};
  d->aux8 = 255;
  for (int i = 0; i < 6; ++i)
    if (in.has(kModes[i])) d->aux8 = uint8_t(i);
  if (d->aux8 == 255) return unsupportedInst(in);
  d->fn = t == Ty::kF32 ? &ftestp<float> : &ftestp<double>;
  return {};
}

Status decodeSetp(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(3));
  int cmp = cmpOf(in);
  if (cmp < 0) return unsupportedInst(in, "comparison");
  d->cmp = uint8_t(cmp);
  bool nd = false;
  PRED(d->d0, ops[0], nd);
  d->d1 = 0xffff;
  if (!ops[0].pair.empty()) {
    ptx::Operand q = ptx::Operand::reg(ops[0].pair);
    PRED(d->d1, q, nd);
  }
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], t);
  if (in.has(Mod::kOpAnd)) d->boolop = 1;
  if (in.has(Mod::kOpOr)) d->boolop = 2;
  if (in.has(Mod::kOpXor)) d->boolop = 3;
  if (d->boolop) {
    KFUSE_RETURN_IF_ERROR(x.need(4));
    bool nc = false;
    PRED(d->c, ops[3], nc);
    if (nc) d->flags |= kNegC;
  }
  switch (t) {
    case Ty::kF32: d->fn = &setp<float>; break;
    case Ty::kF64: d->fn = &setp<double>; break;
    case Ty::kF16: d->fn = &setph<0>; break;
    case Ty::kBF16: d->fn = &setph<1>; break;
    default: d->fn = intFamily<HSetp>(t);
  }
  return d->fn ? Status{} : unsupportedInst(in);
}

Status decodeSelp(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(4));
  if (t == Ty::kPred) return unsupportedInst(in);
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  VAL(d->b, ops[2], t);
  bool nc = false;
  PRED(d->c, ops[3], nc);
  if (nc) d->flags |= kNegC;
  d->fn = &selp;
  return {};
}

Status decodeSlct(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(4));
  if (x.types.size() < 2) return unsupportedInst(in);
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], x.types[0]);
  VAL(d->b, ops[2], x.types[0]);
  VAL(d->c, ops[3], x.types[1]);
  d->fn = x.types[1] == Ty::kF32 ? &slct<float> : &slct<int32_t>;
  return {};
}

Status decodeMov(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  setClass(d, InstClass::kMove);
  if (t == Ty::kPred) {
    bool nd = false, na = false;
    PRED(d->d0, ops[0], nd);
    if (ops[1].kind == ptx::OperandKind::kImmediate) {
      d->imm = ops[1].intValue().value_or(0) != 0;
      d->fn = &predconst;
      return {};
    }
    PRED(d->a, ops[1], na);
    if (na) d->flags |= kNegA;
    d->b = 0xffff;
    d->aux8 = 4;
    d->fn = &predop;
    return {};
  }
  if (ops[0].kind == ptx::OperandKind::kVector || ops[1].kind == ptx::OperandKind::kVector) {
    const auto& vec = ops[0].kind == ptx::OperandKind::kVector ? ops[0] : ops[1];
    size_t n = vec.elements.size();
    if (n < 2 || n > 4 || tySize(t) % n) return unsupportedInst(in, "vector shape");
    d->vec = uint8_t(n);
    d->size = uint8_t(tySize(t) / n);
    Ty et = d->size == 1 ? Ty::kB8 : d->size == 2 ? Ty::kB16 : d->size == 4 ? Ty::kB32 : Ty::kB64;
    if (ops[0].kind == ptx::OperandKind::kVector) {
      for (size_t i = 0; i < n; ++i) DST(d->v[i], vec.elements[i]);
      VAL(d->a, ops[1], t);
      d->fn = &movunpack;
    } else {
      DST(d->d0, ops[0]);
      for (size_t i = 0; i < n; ++i) VAL(d->v[i], vec.elements[i], et);
      d->fn = &movpack;
    }
    return {};
  }
  DST(d->d0, ops[0]);
  if (b.isClockRegister(ops[1])) {
    d->aux8 = ops[1].name == "%globaltimer" ? 1 : 0;
    d->fn = &clockreg;
    return {};
  }
  if (b.isPred(ops[1])) {
    bool na = false;
    PRED(d->a, ops[1], na);
    d->fn = &pred2reg;
    return {};
  }
  VAL(d->a, ops[1], t);
  d->fn = &mov;
  return {};
}

Status decodeCvta(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  setClass(d, InstClass::kConvert);
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  bool to = in.has(Mod::kTo);
  Space s = spaceOf(in, Space::kGlobal);
  int64_t window = s == Space::kShared ? int64_t(kSharedWindow) : s == Space::kLocal ? int64_t(kLocalWindow)
                 : s == Space::kFrameParam ? int64_t(kParamWindow) : 0;
  if (window == 0) {
    d->fn = &mov;
  } else if (to) {
    d->imm = window;
    d->fn = &cvtasub;
  } else {
    d->imm = window;
    d->fn = &addimm;
  }
  return {};
}

Status decodeIsspacep(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  bool nd = false;
  PRED(d->d0, ops[0], nd);
  VAL(d->a, ops[1], Ty::kU64);
  Space s = spaceOf(in, Space::kGlobal);
  d->space = uint8_t(s == Space::kFrameParam ? Space::kKernelParam : s);
  d->fn = &isspacep;
  return {};
}

Status decodeCvt(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  setClass(d, InstClass::kConvert);
  if (x.types.size() < 2) return unsupportedInst(in, "cvt needs two types");
  Ty dt = x.types[0], st = x.types[1];
  if ((dt == Ty::kF16x2 || dt == Ty::kBF16x2) && st == Ty::kF32 && ops.size() >= 3) {
    // cvt.rn.{f16x2,bf16x2}.f32 d, a, b: a goes to the upper half, b to the lower half.
    DST(d->d0, ops[0]);
    VAL(d->a, ops[1], st);
    VAL(d->b, ops[2], st);
    d->aux8 = dt == Ty::kBF16x2;
    d->fn = &cvtpack;
    return {};
  }
  if (dt == Ty::kF16x2 || dt == Ty::kBF16x2 || st == Ty::kF16x2 || st == Ty::kBF16x2)
    return unsupportedInst(in, "packed conversion");
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], st);
  bool int_to_int = !tyFloat(dt) && !tyFloat(st);
  if (int_to_int) {
#define CI(DT, ST) d->fn = &cvtint<DT, ST>
#define CI_SRC(DT)                                       \
  switch (st) {                                          \
    case Ty::kS8: CI(DT, int8_t); break;                 \
    case Ty::kS16: CI(DT, int16_t); break;               \
    case Ty::kS32: CI(DT, int32_t); break;               \
    case Ty::kS64: CI(DT, int64_t); break;               \
    case Ty::kU8: case Ty::kB8: CI(DT, uint8_t); break;  \
    case Ty::kU16: case Ty::kB16: CI(DT, uint16_t); break; \
    case Ty::kU32: case Ty::kB32: CI(DT, uint32_t); break; \
    default: CI(DT, uint64_t); break;                    \
  }
    switch (dt) {
      case Ty::kS8: CI_SRC(int8_t) break;
      case Ty::kS16: CI_SRC(int16_t) break;
      case Ty::kS32: CI_SRC(int32_t) break;
      case Ty::kS64: CI_SRC(int64_t) break;
      case Ty::kU8: case Ty::kB8: CI_SRC(uint8_t) break;
      case Ty::kU16: case Ty::kB16: CI_SRC(uint16_t) break;
      case Ty::kU32: case Ty::kB32: CI_SRC(uint32_t) break;
      default: CI_SRC(uint64_t) break;
    }
#undef CI_SRC
#undef CI
    return {};
  }
  d->aux8 = uint8_t(st);
  d->cmp = uint8_t(dt);
  if (tyFloat(dt) && tyFloat(st) && intRounding(in)) d->flags |= kApprox;
  d->fn = &cvtgen;
  return {};
}

// ld ldu st
Status decodeLdSt(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  bool store = op == Opcode::kSt;
  setClass(d, store ? InstClass::kStore : InstClass::kLoad);
  Space s = spaceOf(in, Space::kGeneric);
  int vec = in.has(Mod::kV2) ? 2 : in.has(Mod::kV4) ? 4 : in.has(Mod::kV8) ? 8 : 1;
  if (vec > 4) return unsupportedInst(in, "vector width");
  uint32_t n = tySize(t);
  if (n == 0 || n > 8) return unsupportedInst(in, "access size");
  const ptx::Operand& addr = store ? ops[0] : ops[1];
  const ptx::Operand& val = store ? ops[1] : ops[0];
  if (addr.kind != ptx::OperandKind::kAddress) return badFormat("'" + in.fullOpcode() + "' needs an address");
  KFUSE_RETURN_IF_ERROR(b.address(addr, &s, &d->a, &d->imm));
  d->space = uint8_t(s);
  d->vec = uint8_t(vec);
  d->size = uint8_t(n);
  if (vec > 1) {
    if (val.kind != ptx::OperandKind::kVector || val.elements.size() != size_t(vec))
      return badFormat("'" + in.fullOpcode() + "' needs a vector of " + std::to_string(vec));
    for (int i = 0; i < vec; ++i) {
      if (store) VAL(d->v[i], val.elements[i], t);
      else DST(d->v[i], val.elements[i]);
    }
  } else if (store) {
    VAL(d->v[0], val, t);
  } else {
    DST(d->v[0], val);
  }
  d->fn = store ? stHandler(s, n) : ldHandler(s, n, tySigned(t));
  return d->fn ? Status{} : unsupportedInst(in);
}

// atom red
Status decodeAtom(const Decoding& x) {
  KF_DECODING(x);
  bool is_red = op == Opcode::kRed;
  KFUSE_RETURN_IF_ERROR(x.need(is_red ? 2 : 3));
  setClass(d, InstClass::kAtomic);
  static constexpr std::pair<Mod, AtomOp> kOps[] = {
      {Mod::kOpAdd, kAAdd}, {Mod::kOpMin, kAMin}, {Mod::kOpMax, kAMax},   {Mod::kOpInc, kAInc},
      {Mod::kOpDec, kADec}, {Mod::kOpAnd, kAAnd}, {Mod::kOpOr, kAOr},     {Mod::kOpXor, kAXor},
      {Mod::kOpExch, kAExch}, {Mod::kOpCas, kACas}};
  int aop = -1;
  for (auto& [m, o] : kOps)
    if (in.has(m)) aop = o;
  if (aop < 0) return unsupportedInst(in, "atomic operation");
  if (in.has(Mod::kV2) || in.has(Mod::kV4) || in.has(Mod::kV8)) return unsupportedInst(in, "vector atomics");
  d->aux8 = uint8_t(aop);
  Space s = spaceOf(in, Space::kGeneric);
  size_t ai = is_red ? 0 : 1;
  KFUSE_RETURN_IF_ERROR(b.address(ops[ai], &s, &d->a, &d->imm));
  d->d0 = 0xffff;
  if (!is_red) DST(d->d0, ops[0]);
  VAL(d->b, ops[ai + 1], t);
  if (aop == kACas) {
    KFUSE_RETURN_IF_ERROR(x.need(ai + 3));
    VAL(d->c, ops[ai + 2], t);
  } else {
    d->c = d->b;
  }
  if ((t == Ty::kF32 || t == Ty::kF64) && aop != kAAdd && aop != kAExch && aop != kAMin && aop != kAMax)
    return unsupportedInst(in);
  if (t == Ty::kF32 || t == Ty::kF64) x.flopsFor(1);
  d->space = uint8_t(s);
  switch (s) {
    case Space::kGlobal: d->fn = atomFor<Space::kGlobal>(t); break;
    case Space::kShared: d->fn = atomFor<Space::kShared>(t); break;
    case Space::kGeneric: d->fn = atomFor<Space::kGeneric>(t); break;
    default: return unsupportedInst(in, "atomic space");
  }
  return d->fn ? Status{} : unsupportedInst(in, "atomic type");
}

Status decodeShfl(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(4));
  setClass(d, InstClass::kWarp);
  d->aux8 = in.has(Mod::kUp) ? 0 : in.has(Mod::kDown) ? 1 : in.has(Mod::kBfly) ? 2 : in.has(Mod::kIdx) ? 3 : 9;
  if (d->aux8 == 9) return unsupportedInst(in);
  DST(d->d0, ops[0]);
  d->d1 = 0xffff;
  if (!ops[0].pair.empty()) {
    bool nd = false;
    PRED(d->d1, ptx::Operand::reg(ops[0].pair), nd);
  }
  VAL(d->a, ops[1], Ty::kB32);
  VAL(d->b, ops[2], Ty::kB32);
  VAL(d->c, ops[3], Ty::kB32);
  d->fn = &shfl;
  return {};
}

Status decodeVote(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  setClass(d, InstClass::kWarp);
  d->aux8 = in.has(Mod::kAll) ? 0 : in.has(Mod::kAny) ? 1 : in.has(Mod::kUni) ? 2 : in.has(Mod::kBallot) ? 3 : 9;
  if (d->aux8 == 9) return unsupportedInst(in);
  bool nd = false, na = false;
  if (d->aux8 == 3) DST(d->d0, ops[0]);
  else PRED(d->d0, ops[0], nd);
  PRED(d->a, ops[1], na);
  if (na) d->flags |= kNegA;
  d->fn = &vote;
  return {};
}

Status decodeActivemask(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(1));
  setClass(d, InstClass::kWarp);
  DST(d->d0, ops[0]);
  d->fn = &activemask;
  return {};
}

Status decodeMatch(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  setClass(d, InstClass::kWarp);
  d->aux8 = in.has(Mod::kAll) ? 1 : 0;
  d->size = uint8_t(tySize(t));
  DST(d->d0, ops[0]);
  d->d1 = 0xffff;
  if (!ops[0].pair.empty()) {
    bool nd = false;
    PRED(d->d1, ptx::Operand::reg(ops[0].pair), nd);
  }
  VAL(d->a, ops[1], t);
  d->fn = &matchsync;
  return {};
}

Status decodeRedux(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  setClass(d, InstClass::kWarp);
  d->aux8 = in.has(Mod::kOpAdd) ? 0 : in.has(Mod::kOpMin) ? 1 : in.has(Mod::kOpMax) ? 2 : in.has(Mod::kOpAnd) ? 3
          : in.has(Mod::kOpOr) ? 4 : in.has(Mod::kOpXor) ? 5 : 9;
  if (d->aux8 == 9) return unsupportedInst(in);
  DST(d->d0, ops[0]);
  VAL(d->a, ops[1], t);
  d->fn = t == Ty::kS32 ? &redux<int32_t> : &redux<uint32_t>;
  return {};
}

Status decodeBra(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(1));
  setClass(d, InstClass::kControl);
  d->kind = Kind::kBranch;
  return b.branchTarget(ops[0], d);
}

Status decodeBrx(const Decoding& x) { return unsupportedInst(x.in, "indirect branch"); }

// ret exit trap
Status decodeExit(const Decoding& x) {
  KF_DECODING(x);
  setClass(d, InstClass::kControl);
  d->kind = op == Opcode::kRet ? Kind::kRet : op == Opcode::kExit ? Kind::kExit : Kind::kTrap;
  return {};
}

Status decodeCall(const Decoding& x) {
  KF_DECODING(x);
  setClass(d, InstClass::kControl);
  auto site = b.callSite(in);
  if (!site.ok()) return site.status();
  d->kind = Kind::kCall;
  d->target = *site;
  return {};
}

// bar barrier
Status decodeBarrier(const Decoding& x) {
  KF_DECODING(x);
  setClass(d, InstClass::kSync);
  if (in.has(Mod::kWarp)) {  // bar.warp.sync: warps execute in lockstep here
    d->fn = &nop;
    return {};
  }
  if (in.has(Mod::kRed)) {  // bar.red.{popc.u32,and.pred,or.pred} d, id, {count,} {!}p
    KFUSE_RETURN_IF_ERROR(x.need(3));
    d->kind = Kind::kBarSync;
    b.noteBarrier();
    d->aux8 = in.has(Mod::kOpPopc) ? 1 : in.has(Mod::kOpAnd) ? 2 : in.has(Mod::kOpOr) ? 3 : 0;
    if (d->aux8 == 0) return unsupportedInst(in);
    bool nd = false, nc = false;
    if (d->aux8 == 1) DST(d->d0, ops[0]);
    else PRED(d->d0, ops[0], nd);
    d->a = 0xffff;
    d->b = 0xffff;
    if (auto id = ops[1].intValue()) d->imm = *id;
    else VAL(d->a, ops[1], Ty::kU32);
    if (ops.size() >= 4) VAL(d->b, ops[2], Ty::kU32);
    PRED(d->c, ops.back(), nc);
    if (nc) d->flags |= kNegC;
    return {};
  }
  bool arrive = in.has(Mod::kArrive);
  if (!arrive && !in.has(Mod::kSync) && !(op == Opcode::kBar && x.rest == 0)) return unsupportedInst(in);
  d->kind = arrive ? Kind::kBarArrive : Kind::kBarSync;
  b.noteBarrier();
  d->a = 0xffff;
  d->b = 0xffff;
  if (ops.empty()) {
    d->imm = 0;
  } else if (auto id = ops[0].intValue()) {
    d->imm = *id;
  } else {
    VAL(d->a, ops[0], Ty::kU32);
  }
  if (ops.size() >= 2) VAL(d->b, ops[1], Ty::kU32);
  return {};
}

// cp: only cp.async (global -> shared, 4/8/16 bytes) and its group commits and waits
Status decodeCp(const Decoding& x) {
  KF_DECODING(x);
  if (!in.has(Mod::kAsync)) return unsupportedInst(in);
  setClass(d, InstClass::kLoad);
  if (in.has(Mod::kCommitGroup) || in.has(Mod::kWaitGroup) || in.has(Mod::kWaitAll)) {
    d->fn = &nop;
    return {};
  }
  if (in.has(Mod::kBulk) || in.has(Mod::kMbarrierMod) || !in.has(ptx::StateSpace::kShared) ||
      !in.has(ptx::StateSpace::kGlobal))
    return unsupportedInst(in);
  KFUSE_RETURN_IF_ERROR(x.need(3));
  Space ds = Space::kShared, ss = Space::kGlobal;
  int64_t src_off = 0;
  KFUSE_RETURN_IF_ERROR(b.address(ops[0], &ds, &d->a, &d->imm));
  KFUSE_RETURN_IF_ERROR(b.address(ops[1], &ss, &d->b, &src_off));
  if (ds != Space::kShared || ss != Space::kGlobal) return unsupportedInst(in, "cp.async operand spaces");
  auto n = ops[2].intValue();
  if (!n || (*n != 4 && *n != 8 && *n != 16)) return unsupportedInst(in, "cp.async size");
  d->size = uint8_t(*n);
  d->target = int32_t(src_off);
  d->e = 0xffff;
  if (ops.size() >= 4) VAL(d->e, ops[3], Ty::kU32);
  d->fn = &cpasync;
  return {};
}

// membar fence: ordering is implicit here; prefetch nanosleep griddepcontrol discard applypriority pmevent: hints
Status decodeNop(const Decoding& x) {
  KF_DECODING(x);
  setClass(d, op == Opcode::kMembar || op == Opcode::kFence ? InstClass::kSync : InstClass::kOther);
  d->fn = &nop;
  return {};
}

Status decodeCreatepolicy(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(1));
  DST(d->d0, ops[0]);
  setClass(d, InstClass::kOther);
  d->fn = &zero;
  return {};
}

#undef VAL
#undef DST
#undef PRED
#undef KF_DECODING

// The decoder of each opcode; nullptr: not supported (addc, madc, vadd, tex, wmma, ... and kUnknown).
constexpr auto kDecoders = [] {
  std::array<DecodeFn, size_t(Opcode::kCount)> t{};
  auto set = [&t](std::initializer_list<Opcode> ops, DecodeFn fn) {
    for (Opcode o : ops) t[size_t(o)] = fn;
  };
  set({Opcode::kAdd, Opcode::kSub, Opcode::kMul, Opcode::kMin, Opcode::kMax, Opcode::kDiv, Opcode::kRem,
       Opcode::kAnd, Opcode::kOr, Opcode::kXor, Opcode::kCopysign},
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
