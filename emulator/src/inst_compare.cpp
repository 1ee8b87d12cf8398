// Comparison and selection: setp (integer, float, half), selp, slct, and predicate logic.

#include "inst_common.h"

namespace kfuse::emulator {
namespace {

enum Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kLo, kLs, kHi, kHs, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum, kNan };

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
      case 1:
        res &= cm;
        q &= cm;
        break;
      case 2:
        res |= cm;
        q |= cm;
        break;
      case 3:
        res ^= cm;
        q ^= cm;
        break;
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
  lanes(m, [&](int l) { res |= uint32_t(compare<T>(d.cmp, fz(get<T>(A[l]), z), fz(get<T>(B[l]), z))) << l; });
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

KF_FAMILY(HSetp, setp)

// The first comparison modifier as the index setp handlers use (.eq 0 ... .nan 17, the order of ptx::Mod), -1
// if none.
int cmpOf(const ptx::Instruction& in) {
  for (const ptx::Modifier& m : in.modifiers) {
    const Mod c = m.asMod();
    if (c >= Mod::kEq && c <= Mod::kNan) return int(c) - int(Mod::kEq);
  }
  return -1;
}

}  // namespace

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

Status decodeSetp(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(3));
  int cmp = cmpOf(in);
  if (cmp < 0) return unsupportedInst(in, "comparison");
  d->cmp = uint8_t(cmp);
  bool nd = false;
  PRED(d->d0, ops[0], nd);
  d->d1 = 0xffff;
  if (!ops[0].pair->empty()) {
    ptx::Operand q = ptx::Operand::reg(*ops[0].pair);
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

}  // namespace kfuse::emulator
