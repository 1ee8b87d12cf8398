// BlockRanges, preparation: decoding a kernel's statements into the operations the interval analysis knows
// (register numbers, operand sources, integer types), recognising nvcc's signed remainder by a power of two, and
// finding the loops whose trip count follows from one induction variable's exit test.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kfuse/ptx/ranges.h"
#include "kfuse/ptx/special_registers.h"
#include "ranges_impl.h"

namespace kfuse::ptx {

namespace {

using Impl = BlockRanges::Impl;

IntType intType(DataType t) {
  const char c = typeClass(t);
  if (c != 'u' && c != 's' && c != 'b') return {};
  const int bits = static_cast<int>(typeElementBits(t));
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return {};
  return {bits, c == 's'};
}

Cmp cmpOf(const Instruction& in) {
  for (const Modifier& m : in.modifiers) {
    switch (m.asMod()) {
      case Mod::kEq: return Cmp::kEq;
      case Mod::kNe: return Cmp::kNe;
      case Mod::kLt:
      case Mod::kLo: return Cmp::kLt;
      case Mod::kLe:
      case Mod::kLs: return Cmp::kLe;
      case Mod::kGt:
      case Mod::kHi: return Cmp::kGt;
      case Mod::kGe:
      case Mod::kHs: return Cmp::kGe;
      default: break;
    }
  }
  return Cmp::kNone;
}

// nvcc's signed remainder by a power of two: `and b, c, -M` (c = a, or `add c, a, z`), then `sub d, a, b`, all in
// one block, unguarded, with a, z and b unchanged in between. The `sub` becomes Op::kRemMask.
void markSignedRemainders(const Cfg& cfg, Impl* impl) {
  for (const BasicBlock& bb : cfg.blocks()) {
    for (size_t i = bb.begin; i < bb.end; ++i) {
      Decoded& d = impl->code[i];
      if (d.op != Op::kSub || d.guard >= 0 || d.a.kind != SrcKind::kReg || d.b.kind != SrcKind::kReg) continue;
      // The last definition of `reg` before statement `at` in this block, and whether any of `kept` is written
      // after it (before `at`); SIZE_MAX when none.
      auto lastDef = [&](int reg, size_t at, std::initializer_list<int> kept, bool* clobbered) {
        *clobbered = false;
        for (size_t j = at; j-- > bb.begin;) {
          const Decoded& e = impl->code[j];
          const bool writes_reg =
              e.dst == reg || std::find(e.clobbers.begin(), e.clobbers.end(), reg) != e.clobbers.end();
          if (writes_reg) return j;
          for (int k : kept) {
            if (e.dst == k || std::find(e.clobbers.begin(), e.clobbers.end(), k) != e.clobbers.end()) *clobbered = true;
          }
        }
        return SIZE_MAX;
      };
      bool clobbered = false;
      const size_t and_at = lastDef(d.b.index, i, {d.a.index}, &clobbered);
      if (and_at == SIZE_MAX || clobbered) continue;
      const Decoded& an = impl->code[and_at];
      if (an.op != Op::kAnd || an.guard >= 0 || an.type.bits != d.type.bits) continue;
      const Src& x = an.b.kind == SrcKind::kImm ? an.a : an.b;
      const Src& m = an.b.kind == SrcKind::kImm ? an.b : an.a;
      if (m.kind != SrcKind::kImm || x.kind != SrcKind::kReg || d.type.bits == 0 || d.type.bits > 64) continue;
      // The mask: -M in the instruction's width (every bit from log2(M) up), or the bits from log2(M) up to some h.
      const Wide width_mask = d.type.bits == 64 ? ~Wide{0} : (Wide{1} << d.type.bits) - 1;
      const Wide bits = m.imm & width_mask;
      const Wide neg = bits & (0 - bits);  // M: the lowest set bit
      if (neg < 2 || neg > (Wide{1} << 30)) continue;
      Wide limit = -1;
      if (((0 - neg) & width_mask) != bits) {
        const Wide top = bits + neg;  // 2^(h+1) when the set bits are contiguous
        if ((top & (top - 1)) != 0) continue;
        limit = top - 1;
      }
      Src z;  // kNone: x is a itself
      if (x.index != d.a.index) {
        const size_t add_at = lastDef(x.index, and_at, {}, &clobbered);
        if (add_at == SIZE_MAX) continue;
        const Decoded& ad = impl->code[add_at];
        if (ad.op != Op::kAdd || ad.guard >= 0 || ad.type.bits != d.type.bits) continue;
        if (ad.a.kind == SrcKind::kReg && ad.a.index == d.a.index && ad.b.kind == SrcKind::kReg) {
          z = ad.b;
        } else if (ad.b.kind == SrcKind::kReg && ad.b.index == d.a.index && ad.a.kind == SrcKind::kReg) {
          z = ad.a;
        } else {
          continue;
        }
        // a and z keep their values from the add to the sub.
        bool moved = false;
        for (size_t j = add_at + 1; j < i && !moved; ++j) {
          const Decoded& e = impl->code[j];
          for (int r : {d.a.index, z.index}) {
            moved = moved || e.dst == r || std::find(e.clobbers.begin(), e.clobbers.end(), r) != e.clobbers.end();
          }
        }
        if (moved) continue;
      }
      d.op = Op::kRemMask;
      d.c = z;
      d.mask = neg;
      d.mask_limit = limit;
    }
  }
}

// The remainder as nvcc often computes it from a quotient it also needs: `div q, a, c`, `mul.lo b, q, c` (either
// order), `sub d, a, b`, in one block, unguarded, with a and c unchanged in between. d = a - (a / c) * c is exactly
// `rem d, a, c` (division truncates, and (a / c) * c cannot wrap): the `sub` becomes Op::kRem, whose range is
// [0, c - 1] for a >= 0 (the interval of a - b alone loses that: `t = idx % T` from `idx / T`).
void markDivisionRemainders(const Cfg& cfg, Impl* impl) {
  auto sameSrc = [](const Src& x, const Src& y) {
    return x.kind == y.kind && (x.kind == SrcKind::kImm ? x.imm == y.imm : x.index == y.index);
  };
  for (const BasicBlock& bb : cfg.blocks()) {
    // The last statement before `at` in this block that writes `reg`; SIZE_MAX when none.
    auto lastDef = [&](int reg, size_t at) {
      for (size_t j = at; j-- > bb.begin;) {
        const Decoded& e = impl->code[j];
        if (e.dst == reg || std::find(e.clobbers.begin(), e.clobbers.end(), reg) != e.clobbers.end()) return j;
      }
      return SIZE_MAX;
    };
    auto writesBetween = [&](const Src& r, size_t from, size_t to) {
      if (r.kind != SrcKind::kReg) return false;
      for (size_t j = from + 1; j < to; ++j) {
        const Decoded& e = impl->code[j];
        if (e.dst == r.index || std::find(e.clobbers.begin(), e.clobbers.end(), r.index) != e.clobbers.end())
          return true;
      }
      return false;
    };
    for (size_t i = bb.begin; i < bb.end; ++i) {
      Decoded& d = impl->code[i];
      if (d.op != Op::kSub || d.guard >= 0 || d.a.kind != SrcKind::kReg || d.b.kind != SrcKind::kReg) continue;
      const size_t mul_at = lastDef(d.b.index, i);
      if (mul_at == SIZE_MAX) continue;
      const Decoded& mu = impl->code[mul_at];
      if (mu.op != Op::kMulLo || mu.guard >= 0 || mu.type.bits != d.type.bits) continue;
      for (const auto& [q, c] : {std::pair{mu.a, mu.b}, std::pair{mu.b, mu.a}}) {
        if (q.kind != SrcKind::kReg) continue;
        const size_t div_at = lastDef(q.index, mul_at);
        if (div_at == SIZE_MAX) continue;
        const Decoded& dv = impl->code[div_at];
        if (dv.op != Op::kDiv || dv.guard >= 0 || dv.type.bits != d.type.bits || !sameSrc(dv.a, d.a) ||
            !sameSrc(dv.b, c) || writesBetween(d.a, div_at, i) || writesBetween(c, div_at, i) ||
            writesBetween(q, div_at, mul_at)) {
          continue;
        }
        d.op = Op::kRem;
        d.b = c;
        break;
      }
    }
  }
}

// nvcc's counter for a loop unrolled by M with a remainder loop after it: `add y, a, c` (or y = a), `and m, y,
// M - 1`, `sub x, a, m`, in one block, unguarded, with a unchanged in between: x + c = M * floor((a + c) / M) in
// two's complement, so x = -c (mod M). The `sub` keeps its meaning; it gets Decoded::congruent_mod/res.
void markUnrolledCounters(const Cfg& cfg, Impl* impl) {
  const std::vector<BasicBlock>& cb = cfg.blocks();
  auto writes = [&](size_t j, int reg) {
    const Decoded& e = impl->code[j];
    return e.dst == reg || std::find(e.clobbers.begin(), e.clobbers.end(), reg) != e.clobbers.end();
  };
  for (size_t bi = 0; bi < cb.size(); ++bi) {
    for (size_t i = cb[bi].begin; i < cb[bi].end; ++i) {
      Decoded& d = impl->code[i];
      if (d.op != Op::kSub || d.guard >= 0 || d.a.kind != SrcKind::kReg || d.b.kind != SrcKind::kReg) continue;
      // The statements that run just before, latest first: this block's, then its single predecessor's, and so on
      // (nvcc computes the mask before the branch that skips the unrolled loop, the counter after it).
      std::vector<size_t> before;
      for (size_t j = i; j-- > cb[bi].begin;) before.push_back(j);
      for (int b = static_cast<int>(bi), hops = 0; hops < 4 && cb[static_cast<size_t>(b)].preds.size() == 1; ++hops) {
        b = cb[static_cast<size_t>(b)].preds[0];
        if (b == static_cast<int>(bi)) break;
        for (size_t j = cb[static_cast<size_t>(b)].end; j-- > cb[static_cast<size_t>(b)].begin;) before.push_back(j);
      }
      // Position in `before` of the last write of `reg`; SIZE_MAX when none.
      auto lastDef = [&](int reg, size_t from) {
        for (size_t k = from; k < before.size(); ++k) {
          if (writes(before[k], reg)) return k;
        }
        return SIZE_MAX;
      };
      const size_t and_k = lastDef(d.b.index, 0);
      if (and_k == SIZE_MAX) continue;
      const Decoded& an = impl->code[before[and_k]];
      if (an.op != Op::kAnd || an.guard >= 0 || an.type.bits != d.type.bits) continue;
      const Src& y = an.b.kind == SrcKind::kImm ? an.a : an.b;
      const Src& m = an.b.kind == SrcKind::kImm ? an.b : an.a;
      if (m.kind != SrcKind::kImm || y.kind != SrcKind::kReg || m.imm < 1 || m.imm > 1023 || (m.imm & (m.imm + 1)))
        continue;
      Wide c = 0;
      size_t from_k = and_k;  // a must keep its value from here (the add, or the and) to the sub
      if (y.index != d.a.index) {
        const size_t add_k = lastDef(y.index, and_k + 1);
        if (add_k == SIZE_MAX) continue;
        const Decoded& ad = impl->code[before[add_k]];
        if (ad.op != Op::kAdd || ad.guard >= 0 || ad.type.bits != d.type.bits) continue;
        if (ad.a.kind == SrcKind::kReg && ad.a.index == d.a.index && ad.b.kind == SrcKind::kImm) {
          c = ad.b.imm;
        } else if (ad.b.kind == SrcKind::kReg && ad.b.index == d.a.index && ad.a.kind == SrcKind::kImm) {
          c = ad.a.imm;
        } else {
          continue;
        }
        from_k = add_k;
      }
      if (lastDef(d.a.index, 0) < from_k || c < -1024 || c > 1024) continue;  // a changed in between
      const Wide mod = m.imm + 1;
      d.congruent_mod = mod;
      d.congruent_res = ((-c) % mod + mod) % mod;
    }
  }
}

// Natural loops with a single latch whose exit test compares one induction variable with an invariant bound
// (Impl::Loop), indexed by header.
void findLoops(const Cfg& cfg, Impl* impl) {
  impl->loop_of_header.assign(cfg.blocks().size(), -1);
  const Dominators dom = Dominators::compute(cfg);
  const std::vector<BasicBlock>& cb = cfg.blocks();
  for (size_t h = 0; h < cb.size(); ++h) {
    std::vector<int> latches;
    for (int u : cb[h].preds) {
      if (dom.dominates(static_cast<int>(h), u)) latches.push_back(u);
    }
    if (latches.size() != 1) continue;
    Impl::Loop loop;
    loop.header = static_cast<int>(h);
    loop.body.assign(cb.size(), 0);
    loop.body[h] = 1;
    std::vector<int> work{latches[0]};
    while (!work.empty()) {
      const int b = work.back();
      work.pop_back();
      if (loop.body[static_cast<size_t>(b)]) continue;
      loop.body[static_cast<size_t>(b)] = 1;
      for (int q : cb[static_cast<size_t>(b)].preds) work.push_back(q);
    }
    const int latch = latches[0];
    // Registers defined in the loop, and how often.
    std::unordered_map<int, int> defs;
    for (size_t b = 0; b < cb.size(); ++b) {
      if (!loop.body[b]) continue;
      for (size_t i = cb[b].begin; i < cb[b].end; ++i) {
        const Decoded& d = impl->code[i];
        if (d.dst >= 0) ++defs[d.dst];
        for (int r : d.clobbers) defs[r] += 2;  // never an induction variable
      }
    }
    auto invariant = [&](const Src& x) { return x.kind != SrcKind::kReg || !defs.count(x.index); };
    // Induction variables: x defined once in the loop, on every iteration, as x's value at the header plus
    // invariant amounts, directly (`add x, x, c`) or through a chain (`add t, x, c; add x, t, c`, as nvcc bumps a
    // pointer by a row stride in an unrolled loop). The blocks that run on every iteration, in dominance order.
    std::vector<int> every;
    for (size_t b = 0; b < cb.size(); ++b) {
      if (loop.body[b] && dom.dominates(static_cast<int>(b), latch)) every.push_back(static_cast<int>(b));
    }
    std::sort(every.begin(), every.end(), [&](int x, int y) { return x != y && dom.dominates(x, y); });
    // ... once per iteration: a block on a cycle of its own inside the loop (a nested loop's) may run many times.
    auto inInnerCycle = [&](int b) {
      std::vector<char> seen(cb.size(), 0);
      std::vector<int> stack(cb[static_cast<size_t>(b)].succs.begin(), cb[static_cast<size_t>(b)].succs.end());
      while (!stack.empty()) {
        const int x = stack.back();
        stack.pop_back();
        if (x == b) return true;
        if (x == static_cast<int>(h) || !loop.body[static_cast<size_t>(x)] || seen[static_cast<size_t>(x)]) continue;
        seen[static_cast<size_t>(x)] = 1;
        for (int y : cb[static_cast<size_t>(x)].succs) stack.push_back(y);
      }
      return false;
    };
    if (std::any_of(every.begin(), every.end(), [&](int b) { return b != static_cast<int>(h) && inInnerCycle(b); })) {
      continue;  // iterated as usual
    }
    std::unordered_map<int, size_t> stmt_of_iv;
    std::unordered_map<int, std::pair<int, std::vector<Src>>> derived;  // register -> (header register, amounts)
    std::set<int> redefined;
    for (int b : every) {
      for (size_t i = cb[static_cast<size_t>(b)].begin; i < cb[static_cast<size_t>(b)].end; ++i) {
        const Decoded& d = impl->code[i];
        if (d.dst < 0) continue;
        std::optional<std::pair<int, std::vector<Src>>> form;
        if (d.op == Op::kMov && d.guard < 0 && d.a.kind == SrcKind::kReg) {
          // A copy continues a chain (`add t, x, c; mov x, t`, as nvcc ends a loop whose exit test reads x before
          // its increment), or starts one from x's value at the header (`mov t, x; ...; add x, t, 1`).
          if (auto it = derived.find(d.a.index); it != derived.end()) {
            form = it->second;
          } else if (d.a.index != d.dst && defs.count(d.a.index) && !redefined.count(d.a.index)) {
            form = std::pair<int, std::vector<Src>>{d.a.index, {}};
          }
        } else if ((d.op == Op::kAdd || d.op == Op::kSub) && d.guard < 0) {
          for (int side = 0; side < (d.op == Op::kAdd ? 2 : 1); ++side) {
            const Src& y = side == 0 ? d.a : d.b;
            Src c = side == 0 ? d.b : d.a;
            if (y.kind != SrcKind::kReg || !invariant(c) || c.kind == SrcKind::kUnknown) continue;
            if (d.op == Op::kSub) {
              if (c.kind != SrcKind::kImm) continue;
              c.imm = -c.imm;
            }
            if (auto it = derived.find(y.index); it != derived.end()) {
              form = it->second;
            } else if (defs.count(y.index) && !redefined.count(y.index)) {
              form = std::pair<int, std::vector<Src>>{y.index, {}};
            } else {
              continue;
            }
            form->second.push_back(c);
            break;
          }
        }
        redefined.insert(d.dst);
        for (int r : d.clobbers) {
          redefined.insert(r);
          derived.erase(r);
        }
        if (!form) {
          derived.erase(d.dst);
          continue;
        }
        if (form->first == d.dst && defs[d.dst] == 1) {
          Impl::Loop::Iv iv;
          iv.reg = d.dst;
          iv.steps = form->second;
          iv.type = d.type;
          stmt_of_iv[d.dst] = i;
          loop.ivs.push_back(std::move(iv));
          derived.erase(d.dst);
        } else if (defs[d.dst] == 1) {
          derived[d.dst] = std::move(*form);
        } else {
          // Also defined on a path these blocks do not show: its value where a later add reads it is not this one.
          derived.erase(d.dst);
        }
      }
    }
    // The exit test: the latch ends in `@p bra header`, p set in the latch from one induction variable, after its
    // increment or (nvcc's other rotated form, `setp p, x, b; add t, x, c; mov x, t; @p bra`) before it: then the
    // test reads the value before the step, and x_old cont b is x_new cont b + step.
    const BasicBlock& lb = cb[static_cast<size_t>(latch)];
    const Decoded* bra = nullptr;
    size_t bra_at = 0;
    for (size_t i = lb.begin; i < lb.end; ++i) {
      if (impl->code[i].op == Op::kBra) {
        bra = &impl->code[i];
        bra_at = i;
        break;
      }
    }
    if (bra && bra->guard >= 0 && bra->target == static_cast<int>(h)) {
      for (size_t i = bra_at; i-- > lb.begin;) {
        const Decoded& d = impl->code[i];
        if (d.dst != bra->guard) continue;
        if (d.op != Op::kSetp || d.guard >= 0 || d.cmp == Cmp::kNone || d.type.bits == 0) break;
        for (size_t v = 0; v < loop.ivs.size(); ++v) {
          const Impl::Loop::Iv& iv = loop.ivs[v];
          auto it = stmt_of_iv.find(iv.reg);
          if (it == stmt_of_iv.end()) continue;
          const bool incremented_before = impl->cfg.blockOf(it->second) != latch || it->second < i;
          const bool incremented_after =
              impl->cfg.blockOf(it->second) == latch && it->second > i && it->second < bra_at;
          if (!(incremented_before || incremented_after) || !invariant(d.b) || d.b.kind == SrcKind::kUnknown) continue;
          if (d.a.kind != SrcKind::kReg) continue;
          // Or a copy of its value at the header (`mov t, i` at the top, `add i, t, 1`, `setp t, n`): the test reads
          // the value before the step, wherever the increment sits.
          if (d.a.index != iv.reg) {
            const auto copy = derived.find(d.a.index);
            if (copy != derived.end() && copy->second.first == iv.reg && copy->second.second.empty() &&
                defs[d.a.index] == 1) {
              loop.test_iv = static_cast<int>(v);
              loop.bound = d.b;
              loop.bound_lag = iv.steps;
              loop.bound_minus.clear();
              loop.cont = bra->guard_negated ? negate(d.cmp) : d.cmp;
              loop.test_type = d.type;
              continue;
            }
          }
          // Or a copy of it plus an invariant, made after its increment (`add j, i, k; setp j, n`: j < n is
          // i < n - k).
          std::optional<Src> minus;
          if (d.a.index != iv.reg && incremented_before) {
            for (size_t j = i; j-- > lb.begin;) {
              const Decoded& t = impl->code[j];
              if (t.dst != d.a.index) continue;
              if (t.op == Op::kAdd && t.guard < 0 && (j > it->second || impl->cfg.blockOf(it->second) != latch)) {
                for (const auto& [x, c] : {std::pair{t.a, t.b}, std::pair{t.b, t.a}}) {
                  if (x.kind == SrcKind::kReg && x.index == iv.reg && invariant(c) && c.kind != SrcKind::kUnknown)
                    minus = c;
                }
              }
              break;
            }
            if (!minus) continue;
          }
          if (d.a.index == iv.reg || minus) {
            loop.test_iv = static_cast<int>(v);
            loop.bound = d.b;
            loop.bound_lag = incremented_before ? std::vector<Src>{} : iv.steps;
            loop.bound_minus = minus ? std::vector<Src>{*minus} : std::vector<Src>{};
            loop.cont = bra->guard_negated ? negate(d.cmp) : d.cmp;
            loop.test_type = d.type;
          }
        }
        break;
      }
    }
    if (loop.test_iv < 0) continue;
    // The tested variable's start values: one definition outside the loop, dominating its header, that is an
    // unrolled loop's counter.
    {
      const int reg = loop.ivs[static_cast<size_t>(loop.test_iv)].reg;
      const Decoded* start = nullptr;
      int outside = 0;
      for (size_t b = 0; b < cb.size(); ++b) {
        if (loop.body[b]) continue;
        for (size_t i = cb[b].begin; i < cb[b].end; ++i) {
          const Decoded& e = impl->code[i];
          if (e.dst != reg && std::find(e.clobbers.begin(), e.clobbers.end(), reg) == e.clobbers.end()) continue;
          ++outside;
          start = dom.dominates(static_cast<int>(b), static_cast<int>(h)) && e.dst == reg && e.guard < 0 ? &e : nullptr;
        }
      }
      if (outside == 1 && start && start->congruent_mod > 1) {
        loop.start_mod = start->congruent_mod;
        loop.start_res = start->congruent_res;
      }
    }
    impl->loop_of_header[h] = static_cast<int>(impl->loops.size());
    impl->loops.push_back(std::move(loop));
  }
}

}  // namespace

std::unique_ptr<BlockRanges> BlockRanges::prepare(const Function& f, const Cfg& cfg,
                                                  const std::vector<MemoryAccess>& accesses, std::string* why) {
  if (cfg.hasIndirectBranch()) {
    if (why) *why = "it has an indirect branch";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->cfg = cfg;
  std::unordered_map<std::string, int> reg_index;
  auto regOf = [&](const std::string& name) {
    auto [it, added] = reg_index.emplace(name, static_cast<int>(reg_index.size()));
    return it->second;
  };
  std::unordered_map<std::string, int> block_of_label;
  for (size_t i = 0; i < cfg.blocks().size(); ++i) {
    if (!cfg.blocks()[i].label.empty()) block_of_label[cfg.blocks()[i].label] = static_cast<int>(i);
  }
  auto src = [&](const Operand& o) {
    Src s;
    if (o.kind == OperandKind::kImmediate) {
      if (auto v = o.intValue()) {
        s.kind = SrcKind::kImm;
        s.imm = *v;
      } else {
        s.kind = SrcKind::kUnknown;
      }
      return s;
    }
    if (o.kind == OperandKind::kSymbol) {
      s.kind = SrcKind::kUnknown;
      return s;
    }
    if (o.kind != OperandKind::kRegister || o.negated) {
      s.kind = SrcKind::kUnknown;
      return s;
    }
    if (auto r = specialRegister(o.name)) {
      if (auto g = geometryComponent(*r)) {
        static constexpr SrcKind kFamily[] = {SrcKind::kTid, SrcKind::kNtid, SrcKind::kCtaid, SrcKind::kNctaid};
        s.kind = kFamily[static_cast<int>(g->family)];
        s.index = g->axis;
      } else {
        s.kind = SrcKind::kUnknown;  // another special register (%laneid, %clock...)
      }
      return s;
    }
    s.kind = SrcKind::kReg;
    s.index = regOf(o.name);
    return s;
  };

  impl->code.resize(f.body.size());
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Statement& stmt = f.body[i];
    if (stmt.kind != StatementKind::kInstruction) continue;
    const Instruction& in = stmt.inst;
    Decoded& d = impl->code[i];
    if (!in.guard.empty()) {
      d.guard = regOf(in.guard);
      d.guard_negated = in.guard_negated;
    }
    const std::vector<Operand>& o = in.operands;
    d.type = intType(in.type());
    // Destination registers: operand 0 of everything that writes (not st, bra, ret, bar...).
    auto dest = [&]() {
      if (o.empty()) return;
      if (o[0].kind == OperandKind::kRegister) {
        d.dst = regOf(o[0].name);
        if (!o[0].pair->empty()) d.clobbers.push_back(regOf(*o[0].pair));
      } else if (o[0].kind == OperandKind::kVector) {
        for (const Operand& e : o[0].elements) {
          if (e.kind == OperandKind::kRegister) d.clobbers.push_back(regOf(e.name));
        }
      }
    };
    switch (in.opcode) {
      case Opcode::kCall:
        if (why) *why = "it calls a function (line " + std::to_string(in.loc.line) + ")";
        return nullptr;
      case Opcode::kBra:
        d.op = Op::kBra;
        if (!o.empty() && o[0].kind == OperandKind::kSymbol) {
          auto it = block_of_label.find(o[0].name);
          d.target = it == block_of_label.end() ? -1 : it->second;
        }
        continue;
      case Opcode::kSt:
      case Opcode::kRet:
      case Opcode::kExit:
      case Opcode::kBar:
      case Opcode::kBarrier:
      case Opcode::kMembar:
      case Opcode::kFence:
      case Opcode::kRed:
      case Opcode::kPrefetch:
      case Opcode::kTrap: d.op = Op::kNop; continue;
      default: break;
    }
    dest();
    const bool wide = in.has(Mod::kWide);
    switch (in.opcode) {
      case Opcode::kMov:
        if (o.size() == 2 && d.type.bits) {
          d.op = Op::kMov;
          d.a = src(o[1]);
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kLd:
        if (in.hasBaseSpace(StateSpace::kParam) && o.size() == 2 && o[1].kind == OperandKind::kAddress &&
            !o[1].elements.empty() && o[1].elements[0].kind == OperandKind::kSymbol && d.type.bits) {
          d.op = Op::kLdParam;
          d.param = f.paramIndex(o[1].elements[0].name);
          d.param_offset = o[1].offset + o[1].elements[0].offset;
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kCvta:
        d.op = o.size() == 2 ? Op::kMov : Op::kOther;
        if (o.size() == 2) d.a = src(o[1]);
        d.type = IntType{64, false};
        break;
      case Opcode::kAdd:
      case Opcode::kSub:
      case Opcode::kMin:
      case Opcode::kMax:
      case Opcode::kAnd:
      case Opcode::kShl:
      case Opcode::kShr:
      case Opcode::kDiv:
      case Opcode::kRem:
        if (o.size() == 3 && d.type.bits && !in.has(Mod::kCc) && !in.has(Mod::kSat)) {
          d.op = in.opcode == Opcode::kAdd   ? Op::kAdd
                 : in.opcode == Opcode::kSub ? Op::kSub
                 : in.opcode == Opcode::kMin ? Op::kMin
                 : in.opcode == Opcode::kMax ? Op::kMax
                 : in.opcode == Opcode::kAnd ? Op::kAnd
                 : in.opcode == Opcode::kShl ? Op::kShl
                 : in.opcode == Opcode::kShr ? Op::kShr
                 : in.opcode == Opcode::kDiv ? Op::kDiv
                                             : Op::kRem;
          d.a = src(o[1]);
          d.b = src(o[2]);
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kMul:
      case Opcode::kMad:
        if (d.type.bits && (in.has(Mod::kLo) || wide) && !in.has(Mod::kCc) &&
            o.size() == (in.opcode == Opcode::kMul ? 3u : 4u)) {
          d.a = src(o[1]);
          d.b = src(o[2]);
          if (in.opcode == Opcode::kMad) d.c = src(o[3]);
          if (wide) {
            d.src_type = d.type;
            d.type = IntType{d.type.bits * 2, d.type.is_signed};
            d.op = in.opcode == Opcode::kMul ? Op::kMulWide : Op::kMadWide;
          } else {
            d.op = in.opcode == Opcode::kMul ? Op::kMulLo : Op::kMadLo;
          }
        } else {
          d.op = Op::kOther;
        }
        break;
      case Opcode::kNeg:
        d.op = o.size() == 2 && d.type.bits ? Op::kNeg : Op::kOther;
        if (o.size() == 2) d.a = src(o[1]);
        break;
      case Opcode::kCvt: {
        const IntType to = intType(in.typeAt(0)), from = intType(in.typeAt(1));
        if (o.size() == 2 && to.bits && from.bits && !in.has(Mod::kSat)) {
          d.op = Op::kCvt;
          d.type = to;
          d.src_type = from;
          d.a = src(o[1]);
        } else {
          d.op = Op::kOther;
        }
        break;
      }
      case Opcode::kSelp:
        d.op = o.size() == 4 && d.type.bits ? Op::kSelp : Op::kOther;
        if (o.size() == 4) {
          d.a = src(o[1]);
          d.b = src(o[2]);
        }
        break;
      case Opcode::kSetp:
        d.op = Op::kSetp;
        if (o.size() == 3 && o[0].pair->empty()) {
          d.a = src(o[1]);
          d.b = src(o[2]);
          d.cmp = cmpOf(in);
        } else {
          d.cmp = Cmp::kNone;
        }
        break;
      default: d.op = Op::kOther; break;
    }
  }

  markSignedRemainders(cfg, impl.get());
  markDivisionRemainders(cfg, impl.get());
  markUnrolledCounters(cfg, impl.get());
  findLoops(cfg, impl.get());

  for (const MemoryAccess& a : accesses) {
    Impl::Addr addr;
    addr.stmt = a.stmt;
    addr.bytes = a.bytes;
    const Instruction& in = f.body[a.stmt].inst;
    const Operand* mem = nullptr;
    for (const Operand& o : in.operands) {
      if (o.kind == OperandKind::kAddress) {
        mem = &o;
        break;
      }
    }
    if (mem && !mem->elements.empty()) {
      const Operand& base = mem->elements[0];
      addr.offset = mem->offset + base.offset;
      if (base.kind == OperandKind::kRegister) {
        addr.base = src(base);
      } else {
        addr.base.kind = SrcKind::kUnknown;
      }
    }
    impl->addrs.push_back(addr);
  }
  impl->registers = static_cast<int>(reg_index.size());
  // evaluate() keeps an interval per register for every reached block: a kernel with both many blocks and many
  // registers (a large unrolled kernel with guards) would need gigabytes, so it is not analysed this way.
  const uint64_t cells = static_cast<uint64_t>(cfg.blocks().size()) * reg_index.size();
  if (cells > kMaxStateCells) {
    if (why) {
      *why = std::to_string(cfg.blocks().size()) + " basic blocks x " + std::to_string(reg_index.size()) +
             " registers is beyond what the interval analysis keeps per block";
    }
    return nullptr;
  }
  return std::unique_ptr<BlockRanges>(new BlockRanges(std::move(impl)));
}

}  // namespace kfuse::ptx
