// Warp-level operations (shfl, vote, activemask, match, redux) and control: branches, exit/ret/trap, calls,
// barriers, and the instructions that need no work here (fences, prefetches, hints).
#include <algorithm>

#include "inst_common.h"

namespace kfuse::emulator {
namespace {

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
      case 0:
        j = l - int(b);
        pv = j >= int(max_lane);
        break;  // up
      case 1:
        j = l + int(b);
        pv = j <= int(max_lane);
        break;  // down
      case 2:
        j = l ^ int(b);
        pv = j <= int(max_lane);
        break;  // bfly
      default:
        j = int(min_lane | (b & ~segmask));
        pv = j <= int(max_lane);
        break;  // idx
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
    default: {                                                                       // ballot
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
    lanes(m, [&](int k) {
      if ((A[k] & mask) == (A[l] & mask)) same |= 1u << k;
    });
    res[l] = same;
  });
  lanes(m, [&](int l) {
    if (d.aux8 == 0)
      D[l] = res[l];
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
    if (first) {
      acc = v;
      first = false;
      return;
    }
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

}  // namespace

Status decodeShfl(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(4));
  setClass(d, InstClass::kWarp);
  d->aux8 = in.has(Mod::kUp) ? 0 : in.has(Mod::kDown) ? 1 : in.has(Mod::kBfly) ? 2 : in.has(Mod::kIdx) ? 3 : 9;
  if (d->aux8 == 9) return unsupportedInst(in);
  DST(d->d0, ops[0]);
  d->d1 = 0xffff;
  if (!ops[0].pair->empty()) {
    bool nd = false;
    PRED(d->d1, ptx::Operand::reg(*ops[0].pair), nd);
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
  if (d->aux8 == 3)
    DST(d->d0, ops[0]);
  else
    PRED(d->d0, ops[0], nd);
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
  if (!ops[0].pair->empty()) {
    bool nd = false;
    PRED(d->d1, ptx::Operand::reg(*ops[0].pair), nd);
  }
  VAL(d->a, ops[1], t);
  d->fn = &matchsync;
  return {};
}

Status decodeRedux(const Decoding& x) {
  KF_DECODING(x);
  KFUSE_RETURN_IF_ERROR(x.need(2));
  setClass(d, InstClass::kWarp);
  d->aux8 = in.has(Mod::kOpAdd)   ? 0
            : in.has(Mod::kOpMin) ? 1
            : in.has(Mod::kOpMax) ? 2
            : in.has(Mod::kOpAnd) ? 3
            : in.has(Mod::kOpOr)  ? 4
            : in.has(Mod::kOpXor) ? 5
                                  : 9;
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

Status decodeBrx(const Decoding& x) {
  return unsupportedInst(x.in, "indirect branch");
}

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
    if (d->aux8 == 1)
      DST(d->d0, ops[0]);
    else
      PRED(d->d0, ops[0], nd);
    d->a = 0xffff;
    d->b = 0xffff;
    if (auto id = ops[1].intValue())
      d->imm = *id;
    else
      VAL(d->a, ops[1], Ty::kU32);
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

// membar fence: ordering is implicit here; prefetch nanosleep griddepcontrol discard applypriority pmevent: hints
Status decodeNop(const Decoding& x) {
  KF_DECODING(x);
  setClass(d, op == Opcode::kMembar || op == Opcode::kFence ? InstClass::kSync : InstClass::kOther);
  d->fn = &nop;
  return {};
}

}  // namespace kfuse::emulator
