// Memory: ld/ldu/st in every state space, atomics and reductions, cp.async.
#include <atomic>
#include <cstring>

#include "inst_common.h"

namespace kfuse::emulator {
namespace {

template <uint32_t N, bool S>
KF_INLINE uint64_t loadN(const uint8_t* p) {
  if constexpr (N == 1)
    return S ? uint64_t(int64_t(int8_t(*p))) : *p;
  else if constexpr (N == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return S ? uint64_t(int64_t(int16_t(v))) : v;
  } else if constexpr (N == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return S ? uint64_t(int64_t(int32_t(v))) : v;
  } else {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
}
template <uint32_t N>
KF_INLINE void storeN(uint8_t* p, uint64_t v) {
  std::memcpy(p, &v, N);
}

template <Space S>
KF_INLINE void countBytes(Ctx& c, uint64_t addr, uint64_t n, bool store) {
  Space s = S;
  if constexpr (S == Space::kGeneric) {
    if (addr >= kSharedWindow && addr < kSharedWindow + kWindowSize)
      s = Space::kShared;
    else if (addr >= kLocalWindow && addr < kLocalWindow + kWindowSize)
      s = Space::kLocal;
    else if (addr >= kParamWindow && addr < kParamWindow + kWindowSize)
      return;
    else
      s = Space::kGlobal;
  }
  switch (s) {
    case Space::kGlobal:
    case Space::kConst: (store ? c.cnt.global_store_bytes : c.cnt.global_load_bytes) += n; break;
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
      if (!h) {
        ok = false;
        return;
      }
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
    if (!h) {
      ok = false;
      return;
    }
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
    if (!h) {
      ok = false;
      return;
    }
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
    if (!dst) {
      ok = false;
      return;
    }
    uint8_t tmp[16] = {};
    if (valid) {
      const uint8_t* src = resolve<Space::kGlobal>(c, Src[l] + uint64_t(int64_t(d.target)), n, l, false);
      if (!src) {
        ok = false;
        return;
      }
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
      if constexpr (std::is_floating_point_v<T>)
        return old + b;
      else
        return T(U<T>(old) + U<T>(b));
    case kAMin:
      if constexpr (std::is_floating_point_v<T>)
        return std::fmin(old, b);
      else
        return old < b ? old : b;
    case kAMax:
      if constexpr (std::is_floating_point_v<T>)
        return std::fmax(old, b);
      else
        return old < b ? b : old;
    case kAInc:
      if constexpr (std::is_integral_v<T>)
        return old >= b ? T(0) : T(old + 1);
      else
        return old;
    case kADec:
      if constexpr (std::is_integral_v<T>)
        return (old == 0 || old > b) ? b : T(old - 1);
      else
        return old;
    case kAAnd:
      if constexpr (std::is_integral_v<T>)
        return old & b;
      else
        return old;
    case kAOr:
      if constexpr (std::is_integral_v<T>)
        return old | b;
      else
        return old;
    case kAXor:
      if constexpr (std::is_integral_v<T>)
        return old ^ b;
      else
        return old;
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
    if (!h) {
      ok = false;
      return;
    }
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
    case Ty::kU32:
    case Ty::kB32: return &atom<S, uint32_t>;
    case Ty::kS32: return &atom<S, int32_t>;
    case Ty::kU64:
    case Ty::kB64: return &atom<S, uint64_t>;
    case Ty::kS64: return &atom<S, int64_t>;
    case Ty::kF32: return &atom<S, float>;
    case Ty::kF64: return &atom<S, double>;
    default: return nullptr;
  }
}

}  // namespace

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
      if (store)
        VAL(d->v[i], val.elements[i], t);
      else
        DST(d->v[i], val.elements[i]);
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
      {Mod::kOpAdd, kAAdd}, {Mod::kOpMin, kAMin}, {Mod::kOpMax, kAMax}, {Mod::kOpInc, kAInc},   {Mod::kOpDec, kADec},
      {Mod::kOpAnd, kAAnd}, {Mod::kOpOr, kAOr},   {Mod::kOpXor, kAXor}, {Mod::kOpExch, kAExch}, {Mod::kOpCas, kACas}};
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

}  // namespace kfuse::emulator
