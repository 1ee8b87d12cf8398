// Thread locality by integer arithmetic; see thread_locality.h for the contract.
#include "legality/thread_locality.h"

#include <algorithm>

namespace kfuse::analyzer::locality {
namespace {

__extension__ typedef __int128 Wide;  // products of two 64-bit values never overflow it

constexpr const char* kVarNames[kVarCount] = {"tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "iter"};
constexpr Wide kOffsetLimit = Wide{1} << 31;

std::optional<Var> threadVar(const std::string& atom) {
  for (int v = 0; v < kThreadVars; ++v) {
    if (atom == kVarNames[v]) return static_cast<Var>(v);
  }
  return std::nullopt;
}

std::optional<int64_t> shapeValue(const std::string& atom, const Shape& s) {
  static const std::map<std::string, uint32_t core::Dim3::*> kAxes = {
      {"x", &core::Dim3::x}, {"y", &core::Dim3::y}, {"z", &core::Dim3::z}};
  for (const auto& [prefix, dim] : {std::pair{"ntid.", &s.block}, std::pair{"nctaid.", &s.grid}}) {
    const std::string p = prefix;
    if (atom.size() == p.size() + 1 && atom.compare(0, p.size(), p) == 0) {
      auto axis = kAxes.find(atom.substr(p.size()));
      if (axis != kAxes.end()) return static_cast<int64_t>((*dim).*(axis->second));
    }
  }
  return std::nullopt;
}

bool fitsInt64(Wide v) {
  return v >= INT64_MIN && v <= INT64_MAX;
}

// Smallest and largest value of `f` over the launch box (constraints not applied).
std::pair<Wide, Wide> boxRange(const LinearForm& f, const Shape& s) {
  Wide lo = f.constant, hi = f.constant;
  for (int v = 0; v < kVarCount; ++v) {
    const Wide span = Wide{f.coef[v]} * (s.extent(static_cast<Var>(v)) - 1);
    lo += std::min<Wide>(0, span);
    hi += std::max<Wide>(0, span);
  }
  return {lo, hi};
}

std::string printWide(Wide v) {
  if (fitsInt64(v)) return std::to_string(static_cast<int64_t>(v));
  return v < 0 ? "-huge" : "huge";
}

// Makes the first non-zero coefficient positive (flipping the bounds), so one constraint has one spelling.
Constraint canonical(LinearForm form, Wide lo, Wide hi) {
  form.constant = 0;
  for (int v = 0; v < kVarCount; ++v) {
    if (form.coef[v] == 0) continue;
    if (form.coef[v] < 0) {
      for (int64_t& c : form.coef) c = -c;
      std::swap(lo, hi);
      lo = -lo;
      hi = -hi;
    }
    break;
  }
  Constraint c;
  c.form = form;
  c.lo = static_cast<int64_t>(std::clamp<Wide>(lo, INT64_MIN, INT64_MAX));
  c.hi = static_cast<int64_t>(std::clamp<Wide>(hi, INT64_MIN, INT64_MAX));
  return c;
}

// Constraints both accesses obey: for a form both constrain, the hull of the two ranges; a form only one side
// constrains says nothing about the other side's threads.
std::vector<Constraint> hull(const std::vector<Constraint>& a, const std::vector<Constraint>& b) {
  std::vector<Constraint> out;
  for (const Constraint& x : a) {
    for (const Constraint& y : b) {
      if (x.form.coef != y.form.coef) continue;
      Constraint c = x;
      c.lo = std::min(x.lo, y.lo);
      c.hi = std::max(x.hi, y.hi);
      out.push_back(c);
    }
  }
  return out;
}

// One independent coordinate of the thread space: a thread variable, or a constrained form of several.
struct Item {
  Wide coef = 0;
  Wide size = 0;       // number of values
  Wide lo = 0;         // the least value (0 for a thread variable)
  bool steps = false;  // it moves a loop's step count (kIter): moving it alone stays in one thread
};

// Mixed radix: sorted by |coefficient|, for the highest item j that differs between two threads,
// |f(t) - f(t')| >= |c_j| - sum_{i<j} |c_i| (size_i - 1). The least of those bounds (INT64_MAX for no items).
int64_t itemSeparation(std::vector<Item> items) {
  if (items.empty()) return INT64_MAX;
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return (a.coef < 0 ? -a.coef : a.coef) < (b.coef < 0 ? -b.coef : b.coef);
  });
  Wide sep = -1, reach = 0;
  for (const Item& it : items) {
    const Wide c = it.coef < 0 ? -it.coef : it.coef;
    const Wide here = c - reach;
    sep = sep < 0 ? here : std::min(sep, here);
    reach += c * (it.size - 1);
    if (sep <= 0) return 0;
  }
  return static_cast<int64_t>(std::clamp<Wide>(sep, 0, INT64_MAX));
}

// Whether `l` takes a different value in every two threads that differ in one of the variables it uses.
bool injectiveOnItsVariables(const LinearForm& l, const Shape& s) {
  std::vector<Item> items;
  for (int v = 0; v < kVarCount; ++v) {
    if (l.coef[v] != 0 && s.extent(static_cast<Var>(v)) > 1)
      items.push_back(Item{l.coef[v], s.extent(static_cast<Var>(v)), 0});
  }
  return itemSeparation(items) >= 1;
}

// Decomposes `f` into items over the box narrowed by `domain`. Returns false when the domain is empty.
bool decompose(const LinearForm& f, const std::vector<Constraint>& domain, const Shape& s, std::vector<Item>& items) {
  std::array<bool, kVarCount> used{};
  std::vector<Constraint> sorted = domain;
  std::sort(sorted.begin(), sorted.end(),
            [](const Constraint& x, const Constraint& y) { return Wide{x.hi} - x.lo < Wide{y.hi} - y.lo; });
  for (const Constraint& c : sorted) {
    const LinearForm& l = c.form;
    bool overlaps = false;
    int first = -1;
    for (int v = 0; v < kVarCount; ++v) {
      if (l.coef[v] == 0) continue;
      overlaps = overlaps || used[v];
      if (first < 0) first = v;
    }
    if (overlaps || first < 0) continue;
    auto [lmin, lmax] = boxRange(l, s);
    const Wide lo = std::max<Wide>(c.lo, lmin), hi = std::min<Wide>(c.hi, lmax);
    if (lo > hi) return false;  // no thread satisfies the constraint
    // Usable as one coordinate only if f is a multiple of l on l's variables (k = 0: f ignores them) and l itself
    // tells threads apart.
    if (f.coef[first] % l.coef[first] != 0) continue;
    const int64_t k = f.coef[first] / l.coef[first];
    bool multiple = true;
    for (int v = 0; v < kVarCount && multiple; ++v) {
      if (l.coef[v] != 0) multiple = Wide{f.coef[v]} == Wide{k} * l.coef[v];
    }
    if (!multiple || !injectiveOnItsVariables(l, s)) continue;
    items.push_back(Item{k, hi - lo + 1, lo, l.coef[kIter] != 0});
    for (int v = 0; v < kVarCount; ++v) used[v] = used[v] || l.coef[v] != 0;
  }
  for (int v = 0; v < kVarCount; ++v) {
    if (!used[v]) items.push_back(Item{f.coef[v], s.extent(static_cast<Var>(v)), 0, v == kIter});
  }
  return true;
}

// Smallest and largest value of `f` over the box narrowed by `domain`; nullopt when no thread is in the domain.
std::optional<std::pair<Wide, Wide>> domainRange(const LinearForm& f, const std::vector<Constraint>& domain,
                                                 const Shape& s) {
  std::vector<Item> items;
  if (!decompose(f, domain, s, items)) return std::nullopt;
  Wide lo = f.constant, hi = f.constant;
  for (const Item& it : items) {
    const Wide a = it.coef * it.lo, b = it.coef * (it.lo + it.size - 1);
    lo += std::min(a, b);
    hi += std::max(a, b);
  }
  return std::make_pair(lo, hi);
}

// The items that tell threads apart: those with more than one value.
std::vector<Item> movable(std::vector<Item> items) {
  items.erase(std::remove_if(items.begin(), items.end(), [](const Item& i) { return i.size <= 1; }), items.end());
  return items;
}

Wide floorDiv(Wide a, Wide b) {  // b > 0
  const Wide q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Whether some item alone, moved by m steps (1 <= m < size) in either direction, changes the form by a value in
// the open interval (lo, hi): then two threads one variable apart overlap. Items that move a loop's step count are
// not tried: moved alone, they stay in one thread.
bool oneItemWitness(const std::vector<Item>& items, Wide lo, Wide hi) {
  for (const Item& it : items) {
    if (it.steps) continue;
    const Wide k = it.coef < 0 ? -it.coef : it.coef;
    if (k == 0) {
      if (lo < 0 && 0 < hi) return true;
      continue;
    }
    // +k*m in (lo, hi), or -k*m in (lo, hi) i.e. k*m in (-hi, -lo)
    for (const auto& [a, b] : {std::pair{lo, hi}, std::pair{-hi, -lo}}) {
      const Wide mmin = std::max<Wide>(floorDiv(a, k) + 1, 1);              // least m with k*m > a
      const Wide mmax = std::min<Wide>(-floorDiv(-b, k) - 1, it.size - 1);  // greatest m with k*m < b
      if (mmin <= mmax) return true;
    }
  }
  return false;
}

}  // namespace

bool LinearForm::hasVariables() const {
  return std::any_of(coef.begin(), coef.end(), [](int64_t c) { return c != 0; });
}

std::string LinearForm::toString() const {
  std::string s;
  // ctaid before tid, as the PTX analysis prints its forms; a loop's step count first
  for (int v : {kIter, kCtaidX, kCtaidY, kCtaidZ, kTidX, kTidY, kTidZ}) {
    const int64_t c = coef[v];
    if (c == 0) continue;
    if (!s.empty())
      s += c < 0 ? " - " : " + ";
    else if (c < 0)
      s += "-";
    const uint64_t mag = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    if (mag != 1) s += std::to_string(mag) + "*";
    s += kVarNames[v];
  }
  if (constant != 0 || s.empty()) {
    const uint64_t mag = constant < 0 ? 0 - static_cast<uint64_t>(constant) : static_cast<uint64_t>(constant);
    if (s.empty()) {
      s = (constant < 0 ? "-" : "") + std::to_string(mag);
    } else {
      s += (constant < 0 ? " - " : " + ") + std::to_string(mag);
    }
  }
  return s;
}

int64_t Shape::extent(Var v) const {
  switch (v) {
    case kTidX: return block.x;
    case kTidY: return block.y;
    case kTidZ: return block.z;
    case kCtaidX: return grid.x;
    case kCtaidY: return grid.y;
    case kCtaidZ: return grid.z;
    case kIter: return std::max<int64_t>(iterations, 1);
    default: return 1;
  }
}

std::optional<LinearForm> bind(const ptx::AffineExpr& e, const Shape& shape, const AtomValues& values,
                               std::string* why) {
  LinearForm f;
  std::array<Wide, kVarCount> coef{};
  Wide constant = 0;
  std::string loop;  // the one step-count atom the form may use
  for (const auto& [atoms, c] : e.terms) {
    Wide value = c;
    std::optional<Var> var;
    for (const std::string& atom : atoms) {
      std::optional<Var> v = threadVar(atom);
      if (atom.rfind(ptx::kIterationPrefix, 0) == 0) {
        if (shape.iterations < 1) {
          *why = "it changes in a loop whose number of steps is not known (" + e.toString() + ")";
          return std::nullopt;
        }
        if (!loop.empty() && atom != loop) {
          *why = "it counts the steps of two loops (" + e.toString() + ")";
          return std::nullopt;
        }
        loop = atom;
        v = kIter;
      }
      if (v) {
        if (var) {
          *why = "a term multiplies two thread indices (" + e.toString() + ")";
          return std::nullopt;
        }
        var = v;
        continue;
      }
      std::optional<int64_t> known = shapeValue(atom, shape);
      if (!known) {
        if (auto it = values.find(atom); it != values.end()) known = it->second;
      }
      if (!known) {
        *why = "it depends on " + atom + ", whose value the trace does not give";
        return std::nullopt;
      }
      value *= *known;
      if (!fitsInt64(value)) {
        *why = "a coefficient of " + e.toString() + " does not fit in 64 bits";
        return std::nullopt;
      }
    }
    (var ? coef[*var] : constant) += value;
  }
  for (int v = 0; v < kVarCount; ++v) {
    if (!fitsInt64(coef[v])) {
      *why = "a coefficient of " + e.toString() + " does not fit in 64 bits";
      return std::nullopt;
    }
    f.coef[v] = static_cast<int64_t>(coef[v]);
  }
  if (!fitsInt64(constant)) {
    *why = "the constant of " + e.toString() + " does not fit in 64 bits";
    return std::nullopt;
  }
  f.constant = static_cast<int64_t>(constant);
  return f;
}

bool countsLoopSteps(const ptx::AffineExpr& form) {
  return std::any_of(form.terms.begin(), form.terms.end(), [](const auto& t) {
    return std::any_of(t.first.begin(), t.first.end(),
                       [](const std::string& a) { return a.rfind(ptx::kIterationPrefix, 0) == 0; });
  });
}

Domain bindGuard(const std::vector<ptx::GuardCondition>& guard, const Shape& shape, const AtomValues& values) {
  Domain d;
  std::vector<Constraint> excluded;  // form != lo (lo == hi), applied below where they cut an end of a range
  for (const ptx::GuardCondition& g : guard) {
    if (!g.structured || g.bits < 1 || g.bits > 64 || countsLoopSteps(g.lhs) || countsLoopSteps(g.rhs)) {
      d.exact = false;
      continue;
    }
    std::string why;
    const std::optional<LinearForm> l = bind(g.lhs, shape, values, &why);
    const std::optional<LinearForm> r = bind(g.rhs, shape, values, &why);
    if (!l || !r) {
      d.exact = false;
      continue;
    }
    // The comparison means what it says only if neither side wraps in the compared type.
    const Wide tmin = g.is_signed ? -(Wide{1} << (g.bits - 1)) : Wide{0};
    const Wide tmax = g.is_signed ? (Wide{1} << (g.bits - 1)) - 1 : (Wide{1} << g.bits) - 1;
    const auto [lmin, lmax] = boxRange(*l, shape);
    const auto [rmin, rmax] = boxRange(*r, shape);
    if (lmin < tmin || lmax > tmax || rmin < tmin || rmax > tmax) {
      d.exact = false;
      continue;
    }
    LinearForm diff;  // l - r
    Wide diff_const = Wide{l->constant} - r->constant;
    bool fits = fitsInt64(diff_const);
    for (int v = 0; v < kVarCount; ++v) {
      const Wide c = Wide{l->coef[v]} - r->coef[v];
      fits = fits && fitsInt64(c);
      diff.coef[v] = fits ? static_cast<int64_t>(c) : 0;
    }
    if (!fits) {
      d.exact = false;
      continue;
    }
    // diff + diff_const CMP 0, i.e. diff CMP -diff_const
    const Wide bound = -diff_const;
    if (!diff.hasVariables()) {
      const Wide x = diff_const;  // compare x with 0
      bool holds = true;
      switch (g.cmp) {
        case ptx::CmpOp::kEq: holds = x == 0; break;
        case ptx::CmpOp::kNe: holds = x != 0; break;
        case ptx::CmpOp::kLt: holds = x < 0; break;
        case ptx::CmpOp::kLe: holds = x <= 0; break;
        case ptx::CmpOp::kGt: holds = x > 0; break;
        case ptx::CmpOp::kGe: holds = x >= 0; break;
      }
      d.never = d.never || !holds;
      continue;
    }
    Wide lo = INT64_MIN, hi = INT64_MAX;
    switch (g.cmp) {
      case ptx::CmpOp::kEq: lo = hi = bound; break;
      case ptx::CmpOp::kNe: excluded.push_back(canonical(diff, bound, bound)); continue;
      case ptx::CmpOp::kLt: hi = bound - 1; break;
      case ptx::CmpOp::kLe: hi = bound; break;
      case ptx::CmpOp::kGt: lo = bound + 1; break;
      case ptx::CmpOp::kGe: lo = bound; break;
    }
    Constraint c = canonical(diff, lo, hi);
    auto same = std::find_if(d.constraints.begin(), d.constraints.end(),
                             [&](const Constraint& x) { return x.form.coef == c.form.coef; });
    if (same == d.constraints.end()) {
      d.constraints.push_back(c);
    } else {
      same->lo = std::max(same->lo, c.lo);
      same->hi = std::min(same->hi, c.hi);
    }
  }
  // `x != v` narrows x's range when v is one of its ends (a stencil's `x != 0 && x != w - 1` inside `x < w`);
  // one cut can bring another's value to an end, so until none applies. One strictly inside is left out.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto e = excluded.begin(); e != excluded.end();) {
      auto same = std::find_if(d.constraints.begin(), d.constraints.end(),
                               [&](const Constraint& x) { return x.form.coef == e->form.coef; });
      const auto [fmin, fmax] = boxRange(e->form, shape);
      const Wide lo = same == d.constraints.end() ? fmin : std::max<Wide>(fmin, same->lo);
      const Wide hi = same == d.constraints.end() ? fmax : std::min<Wide>(fmax, same->hi);
      if (e->lo != lo && e->lo != hi) {
        ++e;
        continue;
      }
      Constraint c = e->lo == lo ? canonical(e->form, Wide{e->lo} + 1, hi) : canonical(e->form, lo, Wide{e->lo} - 1);
      if (same == d.constraints.end()) {
        d.constraints.push_back(c);
      } else {
        *same = c;
      }
      e = excluded.erase(e);
      changed = true;
    }
  }
  if (!excluded.empty()) d.exact = false;
  for (const Constraint& c : d.constraints) {
    const auto [fmin, fmax] = boxRange(c.form, shape);
    if (c.lo > c.hi || c.lo > fmax || c.hi < fmin) d.never = true;
  }
  return d;
}

int64_t evaluate(const LinearForm& f, const Thread& t) {
  Wide v = f.constant;
  for (int i = 0; i < kVarCount; ++i) v += Wide{f.coef[i]} * t[i];
  return static_cast<int64_t>(std::clamp<Wide>(v, INT64_MIN, INT64_MAX));
}

std::optional<std::pair<int64_t, int64_t>> range(const LinearForm& f, const Domain& d, const Shape& shape) {
  if (d.never) return std::nullopt;
  const auto r = domainRange(f, d.constraints, shape);
  if (!r) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(std::clamp<Wide>(r->first, INT64_MIN, INT64_MAX)),
                        static_cast<int64_t>(std::clamp<Wide>(r->second, INT64_MIN, INT64_MAX)));
}

bool contains(const Domain& d, const Thread& t) {
  if (d.never) return false;
  for (const Constraint& c : d.constraints) {
    const int64_t v = evaluate(c.form, t);
    if (v < c.lo || v > c.hi) return false;
  }
  return true;
}

int64_t separation(const LinearForm& f, const std::vector<Constraint>& domain, const Shape& shape) {
  std::vector<Item> items;
  if (!decompose(f, domain, shape, items)) return INT64_MAX;
  return itemSeparation(movable(std::move(items)));
}

PairVerdict checkPair(const Access& a, const Access& b, const Shape& shape) {
  PairVerdict r;
  if (a.domain.never || b.domain.never) {
    r.verdict = Verdict::kThreadLocal;
    r.why = "one of the accesses is guarded off for every thread of this launch";
    return r;
  }
  if (a.bytes == 0 || b.bytes == 0) {
    r.why = "an access's width is not known";
    return r;
  }
  for (const Access* x : {&a, &b}) {
    const auto range = domainRange(x->offset, x->domain.constraints, shape);
    if (!range) {
      r.verdict = Verdict::kThreadLocal;
      r.why = "one of the accesses is guarded off for every thread of this launch";
      return r;
    }
    const auto [lo, hi] = *range;
    if (lo < 0 || hi + x->bytes > kOffsetLimit) {
      r.why = "the offset " + x->offset.toString() + " ranges over [" + printWide(lo) + ", " + printWide(hi) +
              "] bytes in this launch, outside [0, 2 GiB): index arithmetic may wrap or go negative";
      return r;
    }
  }
  LinearForm fa = a.offset, fb = b.offset;
  const Wide ca = Wide{fa.constant} + a.base, cb = Wide{fb.constant} + b.base;
  if (!fitsInt64(ca) || !fitsInt64(cb)) {
    r.why = "buffer offsets too large";
    return r;
  }
  fa.constant = static_cast<int64_t>(ca);
  fb.constant = static_cast<int64_t>(cb);
  const std::vector<Constraint> domain = hull(a.domain.constraints, b.domain.constraints);
  const Wide wa = a.bytes, wb = b.bytes;
  // Two accesses whose byte ranges over the launch do not meet never touch the same bytes.
  const auto ra = domainRange(fa, a.domain.constraints, shape);
  const auto rb = domainRange(fb, b.domain.constraints, shape);
  if (!ra || !rb || ra->second + wa <= rb->first || rb->second + wb <= ra->first) {
    r.verdict = Verdict::kThreadLocal;
    r.why = "at bytes " + fa.toString() + " and " + fb.toString() + ", which never overlap";
    return r;
  }
  if (fa.sameLinearPart(fb)) {
    // b(t) - a(t') = c.(t - t') - delta overlaps iff delta - wb < c.(t - t') < delta + wa.
    Wide delta = ca - cb;
    // In a loop, a whole number q of steps S in delta is a later step of the same thread: a(t, k) = L(t) +
    // S (k + q) + r + cb, so the tuples (t, k + q) and (t', k') are compared, with r the rest and k's range
    // widened by |q| (the constraints on k no longer apply to the shifted tuple).
    Shape steps = shape;
    std::vector<Constraint> frame = domain;
    if (const int64_t s = fa.coef[kIter]; s != 0) {
      const Wide q = delta / s;
      const Wide wider = Wide{shape.iterations} + (q < 0 ? -q : q);
      if (q != 0 && fitsInt64(wider)) {
        delta -= q * s;
        steps.iterations = static_cast<int64_t>(wider);
        frame.erase(
            std::remove_if(frame.begin(), frame.end(), [](const Constraint& c) { return c.form.coef[kIter] != 0; }),
            frame.end());
      }
    }
    const Wide need = std::max(wb - delta, wa + delta);
    const Wide sep = separation(fa, frame, steps);
    if (sep >= need) {
      r.verdict = Verdict::kThreadLocal;
      r.why = delta == 0 ? "both at byte " + fa.toString() + ", which no two threads share"
                         : "at bytes " + fa.toString() + " and " + fb.toString() + ", which no two threads share";
      return r;
    }
    std::vector<Item> items;
    if (decompose(fa, frame, steps, items) && oneItemWitness(movable(items), delta - wb, delta + wa)) {
      r.verdict = Verdict::kCrossThread;
      r.why = fa.toString() == fb.toString()
                  ? "at byte " + fa.toString() + ", which several threads share"
                  : "at bytes " + fa.toString() + " and " + fb.toString() + ": a thread touches what another one does";
      return r;
    }
    r.why = "at bytes " + fa.toString() + " and " + fb.toString() + ": threads could not be shown to stay apart";
    return r;
  }
  r.why = "at bytes " + fa.toString() + " and " + fb.toString() +
          ", different functions of the thread: threads may touch each other's elements";
  return r;
}

}  // namespace kfuse::analyzer::locality
