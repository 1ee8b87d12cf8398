// BlockRanges, evaluation: the abstract interpretation of a prepared kernel (ranges_prepare.cpp) for one launch:
// the transfer function of each decoded operation, branch edges narrowed by their comparison, loops with a known
// trip count accelerated at their header, and the fixpoint iteration with its work budget; then each reached block
// is replayed once to bound its accesses.
#include "kfuse/ptx/ranges.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ranges_impl.h"

namespace kfuse::ptx {

namespace {

bool sameSrc(const Src& x, const Src& y) {
  return x.kind == y.kind && x.index == y.index && x.imm == y.imm;
}

void joinInto(State& into, const State& from) {
  if (!from.reached) return;
  if (!into.reached) {
    into = from;
    return;
  }
  for (size_t i = 0; i < into.regs.size(); ++i) into.regs[i] = join(into.regs[i], from.regs[i]);
  std::erase_if(into.preds, [&](const std::pair<int, PredFact>& e) {
    const PredFact& x = e.second;
    const PredFact* y = from.pred(e.first);
    return !(y && x.cmp == y->cmp && sameSrc(x.a, y->a) && sameSrc(x.b, y->b));
  });
}

}  // namespace

Interval BlockRanges::Impl::value(const Src& s, const State& st, const LaunchBinding& b, IntType as) const {
  switch (s.kind) {
    case SrcKind::kReg: return readAs(st.regs[static_cast<size_t>(s.index)], as);
    case SrcKind::kImm: return Interval::point(s.imm);
    case SrcKind::kTid: return {0, b.ntid[static_cast<size_t>(s.index)] - 1};
    case SrcKind::kNtid: return Interval::point(b.ntid[static_cast<size_t>(s.index)]);
    case SrcKind::kCtaid:
      if (b.all_blocks) return {0, b.nctaid[static_cast<size_t>(s.index)] - 1};
      return Interval::point(b.ctaid[static_cast<size_t>(s.index)]);
    case SrcKind::kNctaid: return Interval::point(b.nctaid[static_cast<size_t>(s.index)]);
    default: return Interval::top();
  }
}

void BlockRanges::Impl::write(State& st, int reg, Interval v, bool guarded) const {
  if (reg < 0) return;
  Interval& r = st.regs[static_cast<size_t>(reg)];
  r = guarded ? join(r, v) : v;
  // The comparisons into `reg`, and those reading it, no longer hold.
  if (st.preds.empty()) return;
  std::erase_if(st.preds, [&](const std::pair<int, PredFact>& e) {
    const PredFact& f = e.second;
    return e.first == reg || (f.a.kind == SrcKind::kReg && f.a.index == reg) ||
           (f.b.kind == SrcKind::kReg && f.b.index == reg);
  });
}

// Narrows the registers of a comparison known to hold (`cmp` may be negated by the caller).
void BlockRanges::Impl::refine(State& st, Cmp cmp, const PredFact& f, const Interval& av, const Interval& bv) {
  Interval na = av, nb = bv;
  switch (cmp) {
    case Cmp::kLt:
      na.hi = std::min(na.hi, bv.hi - 1);
      nb.lo = std::max(nb.lo, av.lo + 1);
      break;
    case Cmp::kLe:
      na.hi = std::min(na.hi, bv.hi);
      nb.lo = std::max(nb.lo, av.lo);
      break;
    case Cmp::kGt:
      na.lo = std::max(na.lo, bv.lo + 1);
      nb.hi = std::min(nb.hi, av.hi - 1);
      break;
    case Cmp::kGe:
      na.lo = std::max(na.lo, bv.lo);
      nb.hi = std::min(nb.hi, av.hi);
      break;
    case Cmp::kEq:
      na = {std::max(av.lo, bv.lo), std::min(av.hi, bv.hi)};
      nb = na;
      break;
    case Cmp::kNe:
      // Only an endpoint equal to the other side's single value can go.
      if (bv.lo == bv.hi) {
        if (na.lo == bv.lo) ++na.lo;
        if (na.hi == bv.lo) --na.hi;
      }
      if (av.lo == av.hi) {
        if (nb.lo == av.lo) ++nb.lo;
        if (nb.hi == av.lo) --nb.hi;
      }
      break;
    default: return;
  }
  if (na.isEmpty() || nb.isEmpty()) {
    st.reached = false;  // the edge cannot be taken
    return;
  }
  // Only registers the comparison read in the register's own representation are narrowed.
  if (f.a.kind == SrcKind::kReg &&
      readAs(st.regs[static_cast<size_t>(f.a.index)], f.type) == st.regs[static_cast<size_t>(f.a.index)]) {
    st.regs[static_cast<size_t>(f.a.index)] = na;
  }
  if (f.b.kind == SrcKind::kReg &&
      readAs(st.regs[static_cast<size_t>(f.b.index)], f.type) == st.regs[static_cast<size_t>(f.b.index)]) {
    st.regs[static_cast<size_t>(f.b.index)] = nb;
  }
}

// Applies the edge condition of a branch on `pred` (taken or not) to `st`.
void BlockRanges::Impl::branchEdge(State& st, int pred, bool negated, bool taken, const LaunchBinding& b) const {
  if (pred < 0) return;
  const PredFact* known = st.pred(pred);
  if (!known) return;
  const PredFact f = *known;
  const bool holds = taken != negated;
  const Cmp c = holds ? f.cmp : negate(f.cmp);
  refine(st, c, f, value(f.a, st, b, f.type), value(f.b, st, b, f.type));
}

// The number of iterations of `loop` entered with `entry` (at least one: the header is reached), or 0 when it
// cannot be computed from point values.
int64_t BlockRanges::Impl::trips(Cmp cont, Wide init, Wide step, Wide bound, IntType t) {
  if (step == 0) return 0;
  // v_m = init + m * step after the m-th increment (m >= 1); the loop runs again while cont(v_m, bound).
  Wide m = 0;  // the first m >= 1 with !cont(v_m): the trip count
  auto ceilDiv = [](Wide a, Wide b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };  // b > 0
  switch (cont) {
    case Cmp::kNe: {
      const Wide d = bound - init;
      if (d % step != 0 || d / step < 1) return 0;  // never meets the bound: it would wrap
      m = d / step;
      break;
    }
    case Cmp::kLt:
    case Cmp::kLe: {
      if (step < 0) return 0;
      const Wide limit = cont == Cmp::kLt ? bound : bound + 1;  // v < limit
      m = std::max<Wide>(1, ceilDiv(limit - init, step));
      break;
    }
    case Cmp::kGt:
    case Cmp::kGe: {
      if (step > 0) return 0;
      const Wide limit = cont == Cmp::kGt ? bound : bound - 1;  // v > limit
      m = std::max<Wide>(1, ceilDiv(init - limit, -step));
      break;
    }
    default: return 0;
  }
  // Every value the variable takes must fit its type (no wrap-around on the way).
  const Wide last = init + m * step;
  if (m > (Wide{1} << 40) || std::min(init, last) < t.minValue() || std::max(init, last) > t.maxValue()) return 0;
  return static_cast<int64_t>(m);
}

// The header's state from the loop's entry state: induction variables over their whole range. False when the
// trip count cannot be computed (the caller then iterates as usual).
bool BlockRanges::Impl::accelerate(const Loop& loop, State& st, const LaunchBinding& b) const {
  auto stepOf = [&](const Loop::Iv& iv) {
    Interval sum = Interval::point(0);
    for (const Src& c : iv.steps) sum = add(sum, value(c, st, b, iv.type));
    return sum;
  };
  const Loop::Iv& t = loop.ivs[static_cast<size_t>(loop.test_iv)];
  const Interval init = readAs(st.regs[static_cast<size_t>(t.reg)], loop.test_type);
  const Interval step = stepOf(t);
  Interval bound = value(loop.bound, st, b, loop.test_type);
  for (const Src& c : loop.bound_lag) bound = add(bound, value(c, st, b, loop.test_type));
  for (const Src& c : loop.bound_minus) bound = add(bound, neg(value(c, st, b, loop.test_type)));
  if (init.isEmpty() || !init.bounded() || step.lo != step.hi || bound.isEmpty() || !bound.bounded()) return false;
  // A bound that differs between threads (a causal loop `t2 <= t`, t = row % T): each thread stops no later than
  // at the bound farthest along the step, so that one bounds every thread's trip count.
  Wide limit = bound.lo;
  if (bound.lo != bound.hi) {
    if ((loop.cont == Cmp::kLt || loop.cont == Cmp::kLe) && step.lo > 0) {
      limit = bound.hi;
    } else if (!((loop.cont == Cmp::kGt || loop.cont == Cmp::kGe) && step.lo < 0)) {
      return false;
    }
  }
  // Threads may enter with different values (`j = tid.y` for a block's rows): each runs at most as many
  // iterations as the one that starts farthest from the bound, and none wraps when neither end of the range does.
  // An `!=` test with several start values needs steps of one towards a bound they all lie before (nvcc's
  // remainder loops count `r = trips & 3` down to 0); larger steps could step past it.
  // With a start congruent to the bound modulo a multiple of the step (nvcc's counter of a loop unrolled by M, one
  // below a multiple of M, stepping by -M to -1), every start value meets the bound: only the congruent values of
  // the interval are starts.
  Wide first = init.lo, last = init.hi;
  const bool congruent = loop.start_mod > 1 && step.lo != 0 &&
                         loop.start_mod % (step.lo < 0 ? -step.lo : step.lo) == 0 &&
                         ((limit - loop.start_res) % loop.start_mod + loop.start_mod) % loop.start_mod == 0;
  if (congruent && loop.cont == Cmp::kNe) {
    const Wide m = loop.start_mod;
    auto mod = [m](Wide v) { return (v % m + m) % m; };
    first = init.lo + mod(loop.start_res - init.lo);
    last = init.hi - mod(init.hi - loop.start_res);
    if (first > last || !((step.lo < 0 && first > limit) || (step.lo > 0 && last < limit))) return false;
  } else if (init.lo != init.hi && loop.cont == Cmp::kNe && !(step.lo == -1 && init.lo > limit) &&
             !(step.lo == 1 && init.hi < limit)) {
    return false;
  }
  const int64_t from_lo = trips(loop.cont, first, step.lo, limit, loop.test_type);
  const int64_t from_hi = trips(loop.cont, last, step.lo, limit, loop.test_type);
  if (from_lo <= 0 || from_hi <= 0) return false;
  const int64_t n = std::max(from_lo, from_hi);
  std::vector<Interval> ranges;
  for (const Loop::Iv& iv : loop.ivs) {
    const Interval x = st.regs[static_cast<size_t>(iv.reg)];
    const Interval s = stepOf(iv);
    if (x.isEmpty() || s.lo != s.hi) return false;
    ranges.push_back(fitTo(add(x, mul(s, Interval{0, n - 1})), iv.type));
  }
  // The tested variable comes back to the header only having passed the test: beyond its start values it stays
  // on the continuing side of the bound (a thread starting near the bound runs fewer iterations than n).
  Interval& tested = ranges[static_cast<size_t>(loop.test_iv)];
  const Interval start = st.regs[static_cast<size_t>(t.reg)];
  if (start == init) {
    switch (loop.cont) {
      case Cmp::kLt: tested.hi = std::min(tested.hi, std::max(init.hi, limit - 1)); break;
      case Cmp::kLe: tested.hi = std::min(tested.hi, std::max(init.hi, limit)); break;
      case Cmp::kGt: tested.lo = std::max(tested.lo, std::min(init.lo, limit + 1)); break;
      case Cmp::kGe: tested.lo = std::max(tested.lo, std::min(init.lo, limit)); break;
      default: break;
    }
  }
  for (size_t v = 0; v < loop.ivs.size(); ++v) st.regs[static_cast<size_t>(loop.ivs[v].reg)] = ranges[v];
  return true;
}

void BlockRanges::Impl::step(const Decoded& d, State& st, const LaunchBinding& b) const {
  const bool guarded = d.guard >= 0;
  for (int r : d.clobbers) write(st, r, Interval::top(), false);
  auto v = [&](const Src& s, IntType t) { return value(s, st, b, t); };
  switch (d.op) {
    case Op::kNop:
    case Op::kBra: return;
    case Op::kOther: write(st, d.dst, Interval::top(), false); return;
    case Op::kMov: write(st, d.dst, fitTo(v(d.a, d.type), d.type), guarded); return;
    case Op::kLdParam: {
      Interval r = Interval::top();
      if (d.param >= 0 && static_cast<size_t>(d.param) < b.params.size() && b.params[static_cast<size_t>(d.param)] &&
          d.param_offset == 0) {
        r = readAs(Interval::point(*b.params[static_cast<size_t>(d.param)]), d.type);
      }
      write(st, d.dst, r, guarded);
      return;
    }
    case Op::kAdd: write(st, d.dst, fitTo(add(v(d.a, d.type), v(d.b, d.type)), d.type), guarded); return;
    case Op::kSub: write(st, d.dst, fitTo(add(v(d.a, d.type), neg(v(d.b, d.type))), d.type), guarded); return;
    case Op::kMulLo: write(st, d.dst, fitTo(mul(v(d.a, d.type), v(d.b, d.type)), d.type), guarded); return;
    case Op::kMulWide: write(st, d.dst, fitTo(mul(v(d.a, d.src_type), v(d.b, d.src_type)), d.type), guarded); return;
    case Op::kMadLo:
      write(st, d.dst, fitTo(add(mul(v(d.a, d.type), v(d.b, d.type)), v(d.c, d.type)), d.type), guarded);
      return;
    case Op::kMadWide:
      write(st, d.dst, fitTo(add(mul(v(d.a, d.src_type), v(d.b, d.src_type)), v(d.c, d.type)), d.type), guarded);
      return;
    case Op::kShl: {
      const Interval k = v(d.b, IntType{32, false});
      if (k.lo != k.hi || k.lo < 0 || k.lo > 62) return write(st, d.dst, Interval::top(), guarded);
      write(st, d.dst, fitTo(mul(v(d.a, d.type), Interval::point(Wide{1} << static_cast<int>(k.lo))), d.type), guarded);
      return;
    }
    case Op::kShr: {
      const Interval k = v(d.b, IntType{32, false});
      const Interval x = v(d.a, d.type);
      if (k.lo != k.hi || k.lo < 0 || k.lo > 62 || x.isEmpty() || !x.bounded() || (x.lo < 0 && !d.type.is_signed)) {
        return write(st, d.dst, Interval::top(), guarded);
      }
      const int s = static_cast<int>(k.lo);
      write(st, d.dst, {x.lo >> s, x.hi >> s}, guarded);
      return;
    }
    case Op::kAnd: {
      Interval x = v(d.a, d.type), m = v(d.b, d.type);
      if (m.lo != m.hi || m.lo < 0) std::swap(x, m);
      if (m.lo != m.hi || m.lo < 0 || x.isEmpty()) return write(st, d.dst, Interval::top(), guarded);
      if (x.lo == x.hi && x.lo >= 0) return write(st, d.dst, Interval::point(x.lo & m.lo), guarded);
      write(st, d.dst, x.lo >= 0 ? Interval{0, std::min(x.hi, m.lo)} : Interval{0, m.lo}, guarded);
      return;
    }
    case Op::kCvt: write(st, d.dst, fitTo(v(d.a, d.src_type), d.type), guarded); return;
    case Op::kMin:
    case Op::kMax: {
      const Interval x = v(d.a, d.type), y = v(d.b, d.type);
      if (x.isEmpty() || y.isEmpty()) return write(st, d.dst, Interval::empty(), guarded);
      write(st, d.dst,
            d.op == Op::kMin ? Interval{std::min(x.lo, y.lo), std::min(x.hi, y.hi)}
                             : Interval{std::max(x.lo, y.lo), std::max(x.hi, y.hi)},
            guarded);
      return;
    }
    case Op::kNeg: write(st, d.dst, fitTo(neg(v(d.a, d.type)), d.type), guarded); return;
    case Op::kDiv:
    case Op::kRem: {
      const Interval x = v(d.a, d.type), c = v(d.b, d.type);
      if (c.lo != c.hi || c.lo <= 0 || x.isEmpty() || !x.bounded() || x.lo < 0) {
        return write(st, d.dst, Interval::top(), guarded);
      }
      write(st, d.dst, d.op == Op::kDiv ? Interval{x.lo / c.lo, x.hi / c.lo} : Interval{0, std::min(x.hi, c.lo - 1)},
            guarded);
      return;
    }
    case Op::kRemMask: {
      const Interval z = d.c.kind == SrcKind::kNone ? Interval::point(0) : v(d.c, d.type);
      if (z.isEmpty() || !z.bounded() || z.lo < 0 || z.hi > d.mask - 1)
        return write(st, d.dst, Interval::top(), guarded);
      if (d.mask_limit >= 0) {
        const Interval sum = add(v(d.a, d.type), z);
        if (sum.isEmpty() || !sum.bounded() || sum.lo < 0 || sum.hi > d.mask_limit) {
          return write(st, d.dst, Interval::top(), guarded);
        }
      }
      write(st, d.dst, fitTo(Interval{-z.hi, d.mask - 1 - z.lo}, d.type), guarded);
      return;
    }
    case Op::kSelp: write(st, d.dst, join(v(d.a, d.type), v(d.b, d.type)), guarded); return;
    case Op::kSetp: {
      write(st, d.dst, Interval::top(), false);
      if (d.dst < 0 || guarded || d.cmp == Cmp::kNone || d.type.bits == 0) return;
      if (st.preds.size() >= ranges_detail::kMaxPredFacts) st.preds.erase(st.preds.begin());  // the oldest
      PredFact& f = st.preds.emplace_back(d.dst, PredFact{}).second;  // write() above removed any fact into it
      f.valid = true;
      f.cmp = d.cmp;
      f.a = d.a;
      f.b = d.b;
      f.type = d.type;
      return;
    }
  }
}

BlockRanges::BlockRanges(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlockRanges::~BlockRanges() = default;

uint64_t BlockRanges::size() const {
  return impl_->code.size() + static_cast<uint64_t>(impl_->registers);
}

std::vector<AccessRange> BlockRanges::evaluate(const LaunchBinding& binding, int budget) const {
  const Impl& m = *impl_;
  const std::vector<BasicBlock>& blocks = m.cfg.blocks();
  std::vector<AccessRange> out(m.addrs.size());
  if (blocks.empty()) return out;
  State init;
  init.reached = true;
  init.regs.assign(static_cast<size_t>(m.registers), Interval::top());
  // A block not reached yet holds no registers: joining a reached state into it copies that state.
  State unreached;
  std::vector<State> in(blocks.size(), unreached);
  in[0] = init;
  std::vector<char> queued(blocks.size(), 0);
  std::vector<int> work{0};
  queued[0] = 1;
  int visits = 0;
  // Loop headers with a computable trip count: their state is the accelerated entry state joined with the back
  // edge's, induction variables clamped to their range.
  std::vector<State> entry(blocks.size(), unreached), back(blocks.size(), unreached);
  auto push = [&](int s, const State& st, int from) {
    if (!st.reached || s < 0) return;
    State merged = in[static_cast<size_t>(s)];
    const int li = m.loop_of_header[static_cast<size_t>(s)];
    bool accelerated = false;
    // Past the budget no header is recomputed from its entry state any more: plain joins, whose given-up registers
    // stay given up, are what makes the iteration end.
    if (li >= 0 && visits <= budget) {
      const Impl::Loop& loop = m.loops[static_cast<size_t>(li)];
      joinInto(loop.body[static_cast<size_t>(from)] ? back[static_cast<size_t>(s)] : entry[static_cast<size_t>(s)], st);
      State head = entry[static_cast<size_t>(s)];
      if (head.reached && m.accelerate(loop, head, binding)) {
        accelerated = true;
        State b2 = back[static_cast<size_t>(s)];
        if (b2.reached) {
          for (const Impl::Loop::Iv& iv : loop.ivs)
            b2.regs[static_cast<size_t>(iv.reg)] = head.regs[static_cast<size_t>(iv.reg)];
          joinInto(head, b2);
        }
        merged = std::move(head);
      }
    }
    if (!accelerated) joinInto(merged, st);
    if (merged == in[static_cast<size_t>(s)]) return;
    if (visits > budget && in[static_cast<size_t>(s)].reached) {
      // Still growing after the budget: give up on the registers that changed (unknown from here on). Joins
      // only grow intervals, so this ends.
      for (size_t r = 0; r < merged.regs.size(); ++r) {
        if (!(merged.regs[r] == in[static_cast<size_t>(s)].regs[r])) merged.regs[r] = Interval::top();
      }
    }
    in[static_cast<size_t>(s)] = std::move(merged);
    if (!queued[static_cast<size_t>(s)]) {
      queued[static_cast<size_t>(s)] = 1;
      work.push_back(s);
    }
  };
  while (!work.empty()) {
    // Lowest block first: loops settle before what follows them is revisited.
    auto lowest = std::min_element(work.begin(), work.end());
    const int bi = *lowest;
    work.erase(lowest);
    queued[static_cast<size_t>(bi)] = 0;
    ++visits;
    const BasicBlock& bb = blocks[static_cast<size_t>(bi)];
    State st = in[static_cast<size_t>(bi)];
    if (!st.reached) continue;
    const Decoded* branch = nullptr;
    for (size_t i = bb.begin; i < bb.end; ++i) {
      const Decoded& d = m.code[i];
      if (d.op == Op::kBra) {
        branch = &d;
        break;  // a branch ends its block
      }
      m.step(d, st, binding);
    }
    if (branch && branch->target >= 0) {
      State taken = st, fall = st;
      if (branch->guard >= 0) {
        m.branchEdge(taken, branch->guard, branch->guard_negated, /*taken=*/true, binding);
        m.branchEdge(fall, branch->guard, branch->guard_negated, /*taken=*/false, binding);
      }
      for (int s : bb.succs) {
        if (s == branch->target) {
          push(s, taken, bi);
        } else if (branch->guard >= 0) {
          push(s, fall, bi);
        }
      }
      // A block whose fall-through is also the target (a branch to the next label): both states joined above.
    } else {
      for (int s : bb.succs) push(s, st, bi);
    }
  }

  // Addresses: replay each reached block once more from its final in-state and record the accesses.
  std::vector<int> addr_of_stmt(m.code.size(), -1);
  for (size_t k = 0; k < m.addrs.size(); ++k) addr_of_stmt[m.addrs[k].stmt] = static_cast<int>(k);
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    State st = in[bi];
    if (!st.reached) continue;
    for (size_t i = blocks[bi].begin; i < blocks[bi].end; ++i) {
      const int k = addr_of_stmt[i];
      if (k >= 0) {
        const Impl::Addr& a = m.addrs[static_cast<size_t>(k)];
        AccessRange& r = out[static_cast<size_t>(k)];
        const Interval base = m.value(a.base, st, binding, IntType{64, false});
        const bool first = !r.reached;
        r.reached = true;
        if (!base.isEmpty() && base.bounded() && a.bytes > 0 && (first || r.bounded)) {
          const Wide lo = base.lo + a.offset, hi = base.hi + a.offset + a.bytes;
          if (lo >= INT64_MIN && hi <= INT64_MAX) {
            r.lo = first ? static_cast<int64_t>(lo) : std::min(r.lo, static_cast<int64_t>(lo));
            r.hi = first ? static_cast<int64_t>(hi) : std::max(r.hi, static_cast<int64_t>(hi));
            r.bounded = true;
          } else {
            r.bounded = false;
          }
        } else {
          r.bounded = false;
        }
      }
      if (m.code[i].op == Op::kBra) break;
      m.step(m.code[i], st, binding);
    }
  }
  return out;
}

}  // namespace kfuse::ptx
