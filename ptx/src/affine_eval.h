// The affine evaluator of the PTX analysis (access.cpp): a register's value at a statement as a polynomial over
// address atoms, following its definitions, with loop induction variables as forms that count steps
// (kIterationPrefix). Internal to the ptx library; access.cpp is its one user.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/special_registers.h"

namespace kfuse::ptx::affine {

inline constexpr int kMaxDepth = 64;
inline constexpr int kMaxDegree = 4;
inline constexpr size_t kMaxTerms = 64;  // bounds the cost of multiplying polynomials built from hostile input

// False when a float type (.f32, .bf16, ...) or a float-only modifier (.ftz, .full, .finite) is written.
inline bool isIntegerType(const Instruction& in) {
  for (const Modifier& m : in.modifiers) {
    if (isFloatType(m.asType())) return false;
    switch (m.asMod()) {
      case Mod::kFtz:
      case Mod::kFull:
      case Mod::kFinite: return false;
      default: break;
    }
  }
  return true;
}

class Evaluator {
 public:
  Evaluator(const Function& f, const DefUse& du) : f_(f), du_(du) {}

  // Value of operand `o` as read by statement `stmt`.
  std::optional<AffineExpr> operand(const Operand& o, size_t stmt, int depth, std::string* why) {
    if (o.kind == OperandKind::kImmediate) {
      if (auto v = o.intValue()) return AffineExpr::constant(*v);
      *why = "non-integer immediate " + o.name;
      return std::nullopt;
    }
    if (o.kind == OperandKind::kSymbol) {
      // the address of a module or function variable (`mov.u64 %rd1, table;`) is a symbolic atom
      if (f_.paramIndex(o.name) >= 0) {
        *why = "address of parameter " + o.name;
        return std::nullopt;
      }
      return AffineExpr::atom(o.name) + AffineExpr::constant(o.offset);
    }
    if (o.kind != OperandKind::kRegister) {
      *why = "operand " + o.name + " is not a register or symbol";
      return std::nullopt;
    }
    return reg(o.name, stmt, depth, why);
  }

  std::optional<AffineExpr> reg(const std::string& r, size_t stmt, int depth, std::string* why) {
    if (isSpecialRegister(r)) {
      if (auto special = specialRegister(r); special && geometryComponent(*special))
        return AffineExpr::atom(r.substr(1));
      *why = "depends on " + r;
      return std::nullopt;
    }
    if (depth > kMaxDepth) {
      *why = "expression too deep";
      return std::nullopt;
    }
    if (auto self = std::find(ivs_.begin(), ivs_.end(), r); self != ivs_.end()) {
      ++iv_reads_[static_cast<size_t>(self - ivs_.begin())];
      return AffineExpr::atom(earlierValue(r));
    }
    const auto defs = du_.reachingDefs(stmt, r);
    if (defs.size() != 1) {
      if (defs.size() > 1) {
        if (auto iv = induction(r, depth)) return iv;
        if (auto iv = derivedInduction(defs, depth)) return iv;
      }
      *why = defs.empty() ? r + " has no definition" : r + " has several reaching definitions (loop or branch)";
      return std::nullopt;
    }
    const size_t d = defs[0];
    if (!f_.body[d].inst.guard.empty()) {
      *why = r + " is defined under a predicate";
      return std::nullopt;
    }
    // While an induction variable is examined, values read in terms of its earlier value are not its values: they
    // are neither taken from nor kept in the memo.
    const bool memo = ivs_.empty();
    auto key = std::make_pair(d, r);
    if (memo) {
      auto it = memo_.find(key);
      if (it != memo_.end()) {
        if (!it->second) *why = memo_why_[key];
        return it->second;
      }
    }
    auto v = def(f_.body[d].inst, d, depth + 1, why);
    if (v && (v->degree() > kMaxDegree || v->terms.size() > kMaxTerms)) {
      *why = "polynomial degree too high or too many terms";
      v.reset();
    }
    if (memo) {
      memo_[key] = v;
      if (!v) memo_why_[key] = *why;
    }
    return v;
  }

 private:
  static std::string earlierValue(const std::string& r) { return "@" + r; }

  // A value derived from an induction variable on every path (`j = i + k` before the loop and again after each
  // step of i): each reaching definition is B + S * (iter + j) or B + S * j for one counter `iter` and whole j, so
  // the value is B + S * (m + iter') for some iter' >= 0, with m the least j.
  std::optional<AffineExpr> derivedInduction(const std::vector<size_t>& defs, int depth) {
    std::vector<AffineExpr> forms;
    for (size_t d : defs) {
      if (!f_.body[d].inst.guard.empty()) return std::nullopt;
      std::string ignored;
      auto v = def(f_.body[d].inst, d, depth + 1, &ignored);
      if (!v) return std::nullopt;
      forms.push_back(std::move(*v));
    }
    // The counter and its part S * iter, from the first form that has one.
    std::string counter;
    AffineExpr counted;
    for (const AffineExpr& f : forms) {
      for (const auto& [atoms, c] : f.terms) {
        for (const std::string& a : atoms) {
          if (a.rfind(kIterationPrefix, 0) != 0) continue;
          if (!counter.empty() && a != counter) return std::nullopt;  // two counters
          counter = a;
        }
      }
      if (!counter.empty() && counted.terms.empty()) {
        for (const auto& [atoms, c] : f.terms) {
          if (std::find(atoms.begin(), atoms.end(), counter) != atoms.end()) counted.terms[atoms] = c;
        }
      }
    }
    if (counter.empty()) return std::nullopt;
    // S: the counted part with the counter taken out of each term.
    AffineExpr step;
    for (const auto& [atoms, c] : counted.terms) {
      std::vector<std::string> rest = atoms;
      rest.erase(std::find(rest.begin(), rest.end(), counter));
      step.terms[rest] = c;
    }
    std::optional<AffineExpr> base;
    int64_t least = 0;
    for (const AffineExpr& f : forms) {
      AffineExpr part, rest;  // the counted terms, the others
      for (const auto& [atoms, c] : f.terms) {
        (std::find(atoms.begin(), atoms.end(), counter) != atoms.end() ? part : rest).terms[atoms] = c;
      }
      if (!part.terms.empty() && part.terms != counted.terms) return std::nullopt;
      if (!base) base = rest;
      // rest - base = j * S
      const AffineExpr diff = rest - *base;
      int64_t j = 0;
      for (const auto& [atoms, c] : diff.terms) {
        auto u = step.terms.find(atoms);
        if (u == step.terms.end() || u->second == 0 || c % u->second != 0) return std::nullopt;
        const int64_t here = c / u->second;
        if (j != 0 && here != j) return std::nullopt;
        j = here;
      }
      if (!diff.terms.empty() && diff.terms.size() != step.terms.size()) return std::nullopt;
      least = std::min(least, j);
    }
    return *base + step * AffineExpr::constant(least) + counted;
  }

  // A basic induction variable (grid-stride and row loops: `i = gid; ...; i += stride`): `r`'s definitions that do
  // not read it all give one value F, and every other definition is r + c * S for one invariant step S and whole c >= 1
  // (directly, through a chain of adds, or a copy). Every value r ever holds is then F + S * k for some k >= 0, by
  // induction over the definitions executed; k is the atom "iter:<r>@<F's statement>" (kIterationPrefix), one per
  // variable, for which nothing is known but k >= 0. Every definition in the function counts, not only those
  // reaching the use, so a value that entered the loop another way cannot hide. (A step that reads r before any
  // definition ran would read an undefined register, which nvcc does not emit for defined C++.)
  std::optional<AffineExpr> induction(const std::string& r, int depth) {
    constexpr size_t kMaxDefinitions = 8;
    const std::vector<size_t> all = du_.allDefs(r);
    if (all.size() < 2 || all.size() > kMaxDefinitions || ivs_.size() >= 4) return std::nullopt;
    ivs_.push_back(r);
    iv_reads_.push_back(0);
    const size_t me = ivs_.size() - 1;
    const AffineExpr earlier = AffineExpr::atom(earlierValue(r));
    std::optional<AffineExpr> init;
    size_t init_stmt = 0;
    std::vector<AffineExpr> steps;
    bool ok = true;
    for (size_t d : all) {
      const int reads_before = iv_reads_[me];
      std::string ignored;
      auto v = def(f_.body[d].inst, d, depth + 1, &ignored);
      const int reads = iv_reads_[me] - reads_before;
      if (!v) {
        ok = false;
        break;
      }
      if (reads == 0) {
        if (init) {
          ok = init->terms == v->terms;  // the same start set on two paths (`mov i, gid` in both branches)
          if (!ok) break;
          continue;
        }
        init = std::move(v);
        init_stmt = d;
        continue;
      }
      AffineExpr step = *v - earlier;
      const bool once = reads == 1 && v->terms.count({earlierValue(r)}) && v->terms.at({earlierValue(r)}) == 1;
      const bool invariant = std::none_of(step.terms.begin(), step.terms.end(), [](const auto& t) {
        return std::any_of(t.first.begin(), t.first.end(), [](const std::string& a) {
          return a.rfind("@", 0) == 0 || a.rfind(kIterationPrefix, 0) == 0;
        });
      });
      if (!once || !invariant || step.terms.empty()) {
        ok = false;
        break;
      }
      steps.push_back(std::move(step));
    }
    ivs_.pop_back();
    iv_reads_.pop_back();
    if (!ok || !init || steps.empty()) return std::nullopt;
    // Every step a whole multiple c >= 1 of the first.
    const AffineExpr& unit = steps.front();
    for (const AffineExpr& step : steps) {
      if (step.terms.size() != unit.terms.size()) return std::nullopt;
      int64_t c = 0;
      for (const auto& [atoms, coef] : step.terms) {
        auto u = unit.terms.find(atoms);
        if (u == unit.terms.end() || u->second == 0 || coef % u->second != 0) return std::nullopt;
        const int64_t here = coef / u->second;
        if (here < 1 || (c != 0 && here != c)) return std::nullopt;
        c = here;
      }
    }
    const std::string k = std::string(kIterationPrefix) + r + "@" + std::to_string(init_stmt);
    return *init + unit * AffineExpr::atom(k);
  }

  std::optional<AffineExpr> def(const Instruction& in, size_t stmt, int depth, std::string* why) {
    const Opcode op = in.opcode;
    const auto& o = in.operands;
    auto arg = [&](size_t i) -> std::optional<AffineExpr> {
      if (i >= o.size()) {
        *why = "missing operand";
        return std::nullopt;
      }
      return operand(o[i], stmt, depth, why);
    };
    if (op == Opcode::kLd && in.hasBaseSpace(StateSpace::kParam) && o.size() == 2 &&
        o[1].kind == OperandKind::kAddress && !o[1].elements.empty()) {
      const int p = f_.paramIndex(o[1].elements[0].name);
      if (p < 0) {
        *why = "loaded from .param " + o[1].elements[0].name;
        return std::nullopt;
      }
      std::string name = "param" + std::to_string(p);
      if (!f_.params[static_cast<size_t>(p)].dims.empty()) name += "[" + std::to_string(o[1].offset) + "]";
      return AffineExpr::atom(name);
    }
    if (op == Opcode::kMov || op == Opcode::kCvta) {
      if (!isIntegerType(in)) {
        *why = "floating-point move";
        return std::nullopt;
      }
      return arg(1);
    }
    if (op == Opcode::kCvt) {
      if (!isIntegerType(in)) {
        *why = "float conversion";
        return std::nullopt;
      }
      return arg(1);
    }
    if (!isIntegerType(in)) {
      *why = "floating-point arithmetic (" + in.fullOpcode() + ")";
      return std::nullopt;
    }
    if (op == Opcode::kAdd || op == Opcode::kSub) {
      auto a = arg(1);
      if (!a) return a;
      auto b = arg(2);
      if (!b) return b;
      return op == Opcode::kAdd ? *a + *b : *a - *b;
    }
    if ((op == Opcode::kMul || op == Opcode::kMad) && !in.has(Mod::kHi)) {
      auto a = arg(1);
      if (!a) return a;
      auto b = arg(2);
      if (!b) return b;
      if (a->terms.size() > kMaxTerms || b->terms.size() > kMaxTerms) {
        *why = "expression too large";
        return std::nullopt;
      }
      AffineExpr p = *a * *b;
      if (op == Opcode::kMad) {
        auto c = arg(3);
        if (!c) return c;
        p = p + *c;
      }
      return p;
    }
    if (op == Opcode::kShl) {
      auto a = arg(1);
      if (!a) return a;
      if (o.size() < 3 || !o[2].intValue() || *o[2].intValue() < 0 || *o[2].intValue() > 62) {
        *why = "shift by a non-constant amount";
        return std::nullopt;
      }
      return *a * AffineExpr::constant(int64_t{1} << *o[2].intValue());
    }
    if (op == Opcode::kNeg) {
      auto a = arg(1);
      if (!a) return a;
      return AffineExpr::constant(0) - *a;
    }
    *why = "computed by " + in.fullOpcode();
    return std::nullopt;
  }

  const Function& f_;
  const DefUse& du_;
  std::vector<std::string> ivs_;  // induction variables being examined: their reads stand for an earlier value
  std::vector<int> iv_reads_;     // how often each was read
  std::map<std::pair<size_t, std::string>, std::optional<AffineExpr>> memo_;
  std::map<std::pair<size_t, std::string>, std::string> memo_why_;
};

}  // namespace kfuse::ptx::affine
