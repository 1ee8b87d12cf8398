// Moves and conversions: mov (scalars, predicates, vector pack/unpack, clock registers), cvta, isspacep,
// cvt (integer, float, rounding, packed halves) and createpolicy.
#include <cmath>
#include <limits>

#include "inst_common.h"

namespace kfuse::emulator {
namespace {

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

bool mov(Ctx& c, const DInst& d, uint32_t m) {
  uint64_t* D = R(c, d.d0);
  const uint64_t* A = R(c, d.a);
  if (m == 0xffffffffu)
    std::memcpy(D, A, 32 * sizeof(uint64_t));
  else
    lanes(m, [&](int l) { D[l] = A[l]; });
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
    case Ty::kU8:
    case Ty::kB8: return uint8_t(v);
    case Ty::kU16:
    case Ty::kB16: return uint16_t(v);
    case Ty::kU32:
    case Ty::kB32: return uint32_t(v);
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
        f64 = st == Ty::kS64                       ? double(int64_t(v))
              : (st == Ty::kU64 || st == Ty::kB64) ? double(v)
                                                   : readAsDouble(st, v);
        if (st == Ty::kF32 && z) f64 = ftz(get<float>(v));
        if (int_round) f64 = roundInt(f64, d.rnd);
        if (sat) f64 = saturate(f64);
        D[l] = put<double>(f64);
        return;
      }
      if (st == Ty::kF64)
        f32 = float(get<double>(v));
      else if (st == Ty::kS64)
        f32 = float(int64_t(v));
      else if (st == Ty::kU64 || st == Ty::kB64)
        f32 = float(v);
      else if (st == Ty::kS32)
        f32 = float(int32_t(v));
      else if (st == Ty::kU32 || st == Ty::kB32)
        f32 = float(uint32_t(v));
      else
        f32 = float(readAsDouble(st, v));
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

bool intRounding(const ptx::Instruction& in) {
  return in.has(Mod::kRni) || in.has(Mod::kRzi) || in.has(Mod::kRmi) || in.has(Mod::kRpi);
}

}  // namespace

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
  int64_t window = s == Space::kShared       ? int64_t(kSharedWindow)
                   : s == Space::kLocal      ? int64_t(kLocalWindow)
                   : s == Space::kFrameParam ? int64_t(kParamWindow)
                                             : 0;
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
#define CI_SRC(DT)                          \
  switch (st) {                             \
    case Ty::kS8: CI(DT, int8_t); break;    \
    case Ty::kS16: CI(DT, int16_t); break;  \
    case Ty::kS32: CI(DT, int32_t); break;  \
    case Ty::kS64: CI(DT, int64_t); break;  \
    case Ty::kU8:                           \
    case Ty::kB8: CI(DT, uint8_t); break;   \
    case Ty::kU16:                          \
    case Ty::kB16: CI(DT, uint16_t); break; \
    case Ty::kU32:                          \
    case Ty::kB32: CI(DT, uint32_t); break; \
    default: CI(DT, uint64_t); break;       \
  }
    switch (dt) {
      case Ty::kS8: CI_SRC(int8_t) break;
      case Ty::kS16: CI_SRC(int16_t) break;
      case Ty::kS32: CI_SRC(int32_t) break;
      case Ty::kS64: CI_SRC(int64_t) break;
      case Ty::kU8:
      case Ty::kB8: CI_SRC(uint8_t) break;
      case Ty::kU16:
      case Ty::kB16: CI_SRC(uint16_t) break;
      case Ty::kU32:
      case Ty::kB32: CI_SRC(uint32_t) break;
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

Status decodeCreatepolicy(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(1));
  DST(d->d0, ops[0]);
  setClass(d, InstClass::kOther);
  d->fn = &zero;
  return {};
}

}  // namespace kfuse::emulator
