#include "kfuse/ptx/ranges.h"

#include <algorithm>
#include <unordered_map>

namespace kfuse::ptx {
namespace {

__extension__ typedef __int128 Wide;  // room for products of 64-bit bounds
constexpr Wide kInf = Wide{1} << 100;  // beyond any 64-bit value: an open bound

// A set of mathematical integers [lo, hi]; lo > hi is empty (unreached). Open bounds are ±kInf.
struct Interval {
  Wide lo = -kInf, hi = kInf;
  static Interval top() { return {}; }
  static Interval empty() { return {1, 0}; }
  static Interval point(Wide v) { return {v, v}; }
  bool isEmpty() const { return lo > hi; }
  bool bounded() const { return lo > -kInf && hi < kInf; }
  bool operator==(const Interval&) const = default;
};

Interval join(const Interval& a, const Interval& b) {
  if (a.isEmpty()) return b;
  if (b.isEmpty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Wide clampInf(Wide v) { return std::clamp(v, -kInf, kInf); }

Interval add(const Interval& a, const Interval& b) {
  if (a.isEmpty() || b.isEmpty()) return Interval::empty();
  return {clampInf(a.lo + b.lo), clampInf(a.hi + b.hi)};
}
Interval neg(const Interval& a) { return a.isEmpty() ? a : Interval{-a.hi, -a.lo}; }
Interval mul(const Interval& a, const Interval& b) {
  if (a.isEmpty() || b.isEmpty()) return Interval::empty();
  if (!a.bounded() || !b.bounded()) return Interval::top();
  const Wide c[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {clampInf(*std::min_element(c, c + 4)), clampInf(*std::max_element(c, c + 4))};
}

// How an instruction reads or writes an integer register: `bits` wide, signed or not.
struct IntType {
  int bits = 0;  // 0: not an integer type
  bool is_signed = false;
  Wide minValue() const { return is_signed ? -(Wide{1} << (bits - 1)) : 0; }
  Wide maxValue() const { return is_signed ? (Wide{1} << (bits - 1)) - 1 : (Wide{1} << bits) - 1; }
};

IntType intType(DataType t) {
  const char c = typeClass(t);
  if (c != 'u' && c != 's' && c != 'b') return {};
  const int bits = static_cast<int>(typeElementBits(t));
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return {};
  return {bits, c == 's'};
}

// The value as read with type `t`: the stored interval when it lies in t's range; an interval of negative values
// read as unsigned is shifted by 2^bits; anything else may be any value of the type.
Interval readAs(const Interval& v, IntType t) {
  if (v.isEmpty() || t.bits == 0) return v;
  if (v.lo >= t.minValue() && v.hi <= t.maxValue()) return v;
  if (!t.is_signed && v.hi < 0 && v.lo >= -(Wide{1} << (t.bits - 1))) {
    return {v.lo + (Wide{1} << t.bits), v.hi + (Wide{1} << t.bits)};
  }
  return {t.minValue(), t.maxValue()};
}

// A result written with type `t`: kept when it fits, else it may have wrapped to anything of the type. (The
// register keeps the value as the instruction's type reads it; readAs() reinterprets for other readers.)
Interval fitTo(const Interval& v, IntType t) {
  if (v.isEmpty() || t.bits == 0) return v;
  if (v.lo >= t.minValue() && v.hi <= t.maxValue()) return v;
  if (t.bits == 64 || !v.bounded()) return {t.minValue(), t.maxValue()};
  // A result that fits the other signedness of the same width is the same bits: keep it as that.
  const IntType other{t.bits, !t.is_signed};
  if (v.lo >= other.minValue() && v.hi <= other.maxValue()) return v;
  return {t.minValue(), t.maxValue()};
}

enum class SrcKind : uint8_t { kNone, kReg, kImm, kTid, kNtid, kCtaid, kNctaid, kParamAddr, kUnknown };
struct Src {
  SrcKind kind = SrcKind::kNone;
  int index = 0;  // register index, dimension (0..2), or parameter index
  Wide imm = 0;
};

enum class Op : uint8_t {
  kOther,  // writes its destination(s) with unknown values
  kNop,    // writes no tracked register
  kMov, kLdParam, kAdd, kSub, kMulLo, kMulWide, kMadLo, kMadWide, kShl, kShr, kAnd, kCvt, kMin, kMax, kNeg, kDiv,
  kRem, kSelp, kSetp, kBra, kCall,
};

enum class Cmp : uint8_t { kNone, kEq, kNe, kLt, kLe, kGt, kGe };

struct Decoded {
  Op op = Op::kNop;
  int dst = -1;               // register index written (-1 none)
  std::vector<int> clobbers;  // further registers written with unknown values (vector destinations, pairs)
  Src a, b, c;
  IntType type;     // instruction type (destination)
  IntType src_type; // cvt's source type; mul/mad.wide operand type
  Cmp cmp = Cmp::kNone;
  int guard = -1;  // predicate register index of @%p
  bool guard_negated = false;
  int target = -1;  // kBra: target block
  int param = -1;   // kLdParam: parameter index
  int64_t param_offset = 0;
};

struct PredFact {
  bool valid = false;
  Cmp cmp = Cmp::kNone;
  Src a, b;
  IntType type;
};

struct State {
  bool reached = false;
  std::vector<Interval> regs;
  std::vector<PredFact> preds;  // by register index (only predicate registers get facts)
  bool operator==(const State& o) const {
    if (reached != o.reached || regs != o.regs) return false;
    for (size_t i = 0; i < preds.size(); ++i) {
      const PredFact& x = preds[i];
      const PredFact& y = o.preds[i];
      if (x.valid != y.valid) return false;
      if (x.valid && (x.cmp != y.cmp || x.a.kind != y.a.kind || x.a.index != y.a.index || x.a.imm != y.a.imm ||
                      x.b.kind != y.b.kind || x.b.index != y.b.index || x.b.imm != y.b.imm)) {
        return false;
      }
    }
    return true;
  }
};

bool sameSrc(const Src& x, const Src& y) { return x.kind == y.kind && x.index == y.index && x.imm == y.imm; }

void joinInto(State& into, const State& from) {
  if (!from.reached) return;
  if (!into.reached) {
    into = from;
    return;
  }
  for (size_t i = 0; i < into.regs.size(); ++i) into.regs[i] = join(into.regs[i], from.regs[i]);
  for (size_t i = 0; i < into.preds.size(); ++i) {
    PredFact& x = into.preds[i];
    const PredFact& y = from.preds[i];
    if (x.valid && !(y.valid && x.cmp == y.cmp && sameSrc(x.a, y.a) && sameSrc(x.b, y.b))) x.valid = false;
  }
}

Cmp cmpOf(const Instruction& in) {
  for (const Modifier& m : in.modifiers) {
    switch (m.asMod()) {
      case Mod::kEq: return Cmp::kEq;
      case Mod::kNe: return Cmp::kNe;
      case Mod::kLt: case Mod::kLo: return Cmp::kLt;
      case Mod::kLe: case Mod::kLs: return Cmp::kLe;
      case Mod::kGt: case Mod::kHi: return Cmp::kGt;
      case Mod::kGe: case Mod::kHs: return Cmp::kGe;
      default: break;
    }
  }
  return Cmp::kNone;
}

Cmp negate(Cmp c) {
  switch (c) {
    case Cmp::kEq: return Cmp::kNe;
    case Cmp::kNe: return Cmp::kEq;
    case Cmp::kLt: return Cmp::kGe;
    case Cmp::kLe: return Cmp::kGt;
    case Cmp::kGt: return Cmp::kLe;
    case Cmp::kGe: return Cmp::kLt;
    default: return Cmp::kNone;
  }
}

}  // namespace

struct BlockRanges::Impl {
  Cfg cfg;  // a copy: the prepared object outlives the caller's analyses
  std::vector<Decoded> code;  // per statement
  int registers = 0;
  // Per access (in the caller's order): statement, address operand (register + constant offset, or a parameter's
  // address), bytes.
  struct Addr {
    size_t stmt = 0;
    Src base;
    int64_t offset = 0;
    uint32_t bytes = 0;
  };
  std::vector<Addr> addrs;

  Interval value(const Src& s, const State& st, const LaunchBinding& b, IntType as) const {
    switch (s.kind) {
      case SrcKind::kReg: return readAs(st.regs[static_cast<size_t>(s.index)], as);
      case SrcKind::kImm: return Interval::point(s.imm);
      case SrcKind::kTid: return {0, b.ntid[static_cast<size_t>(s.index)] - 1};
      case SrcKind::kNtid: return Interval::point(b.ntid[static_cast<size_t>(s.index)]);
      case SrcKind::kCtaid: return Interval::point(b.ctaid[static_cast<size_t>(s.index)]);
      case SrcKind::kNctaid: return Interval::point(b.nctaid[static_cast<size_t>(s.index)]);
      default: return Interval::top();
    }
  }

  void write(State& st, int reg, Interval v, bool guarded) const {
    if (reg < 0) return;
    Interval& r = st.regs[static_cast<size_t>(reg)];
    r = guarded ? join(r, v) : v;
    for (PredFact& f : st.preds) {
      if (!f.valid) continue;
      if ((f.a.kind == SrcKind::kReg && f.a.index == reg) || (f.b.kind == SrcKind::kReg && f.b.index == reg)) {
        f.valid = false;
      }
    }
    st.preds[static_cast<size_t>(reg)].valid = false;
  }

  // Narrows the registers of a comparison known to hold (`cmp` may be negated by the caller).
  static void refine(State& st, Cmp cmp, const PredFact& f, const Interval& av, const Interval& bv) {
    Interval na = av, nb = bv;
    switch (cmp) {
      case Cmp::kLt: na.hi = std::min(na.hi, bv.hi - 1); nb.lo = std::max(nb.lo, av.lo + 1); break;
      case Cmp::kLe: na.hi = std::min(na.hi, bv.hi); nb.lo = std::max(nb.lo, av.lo); break;
      case Cmp::kGt: na.lo = std::max(na.lo, bv.lo + 1); nb.hi = std::min(nb.hi, av.hi - 1); break;
      case Cmp::kGe: na.lo = std::max(na.lo, bv.lo); nb.hi = std::min(nb.hi, av.hi); break;
      case Cmp::kEq:
        na = {std::max(av.lo, bv.lo), std::min(av.hi, bv.hi)};
        nb = na;
        break;
      default: return;
    }
    if (na.isEmpty() || nb.isEmpty()) {
      st.reached = false;  // the edge cannot be taken
      return;
    }
    // Only registers the comparison read in the register's own representation are narrowed.
    if (f.a.kind == SrcKind::kReg && readAs(st.regs[static_cast<size_t>(f.a.index)], f.type) ==
                                         st.regs[static_cast<size_t>(f.a.index)]) {
      st.regs[static_cast<size_t>(f.a.index)] = na;
    }
    if (f.b.kind == SrcKind::kReg && readAs(st.regs[static_cast<size_t>(f.b.index)], f.type) ==
                                         st.regs[static_cast<size_t>(f.b.index)]) {
      st.regs[static_cast<size_t>(f.b.index)] = nb;
    }
  }

  // Applies the edge condition of a branch on `pred` (taken or not) to `st`.
  void branchEdge(State& st, int pred, bool negated, bool taken, const LaunchBinding& b) const {
    if (pred < 0) return;
    const PredFact f = st.preds[static_cast<size_t>(pred)];
    if (!f.valid) return;
    const bool holds = taken != negated;
    const Cmp c = holds ? f.cmp : negate(f.cmp);
    refine(st, c, f, value(f.a, st, b, f.type), value(f.b, st, b, f.type));
  }

  void step(const Decoded& d, State& st, const LaunchBinding& b) const {
    const bool guarded = d.guard >= 0;
    for (int r : d.clobbers) write(st, r, Interval::top(), false);
    auto v = [&](const Src& s, IntType t) { return value(s, st, b, t); };
    switch (d.op) {
      case Op::kNop: case Op::kBra: case Op::kCall: return;
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
        write(st, d.dst, fitTo(mul(v(d.a, d.type), Interval::point(Wide{1} << static_cast<int>(k.lo))), d.type),
              guarded);
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
        write(st, d.dst, x.lo >= 0 ? Interval{0, std::min(x.hi, m.lo)} : Interval{0, m.lo}, guarded);
        return;
      }
      case Op::kCvt: write(st, d.dst, fitTo(v(d.a, d.src_type), d.type), guarded); return;
      case Op::kMin: case Op::kMax: {
        const Interval x = v(d.a, d.type), y = v(d.b, d.type);
        if (x.isEmpty() || y.isEmpty()) return write(st, d.dst, Interval::empty(), guarded);
        write(st, d.dst,
              d.op == Op::kMin ? Interval{std::min(x.lo, y.lo), std::min(x.hi, y.hi)}
                               : Interval{std::max(x.lo, y.lo), std::max(x.hi, y.hi)},
              guarded);
        return;
      }
      case Op::kNeg: write(st, d.dst, fitTo(neg(v(d.a, d.type)), d.type), guarded); return;
      case Op::kDiv: case Op::kRem: {
        const Interval x = v(d.a, d.type), c = v(d.b, d.type);
        if (c.lo != c.hi || c.lo <= 0 || x.isEmpty() || !x.bounded() || x.lo < 0) {
          return write(st, d.dst, Interval::top(), guarded);
        }
        write(st, d.dst, d.op == Op::kDiv ? Interval{x.lo / c.lo, x.hi / c.lo} : Interval{0, std::min(x.hi, c.lo - 1)},
              guarded);
        return;
      }
      case Op::kSelp: write(st, d.dst, join(v(d.a, d.type), v(d.b, d.type)), guarded); return;
      case Op::kSetp: {
        write(st, d.dst, Interval::top(), false);
        if (d.dst < 0 || guarded || d.cmp == Cmp::kNone || d.type.bits == 0) return;
        PredFact& f = st.preds[static_cast<size_t>(d.dst)];
        f.valid = true;
        f.cmp = d.cmp;
        f.a = d.a;
        f.b = d.b;
        f.type = d.type;
        return;
      }
    }
  }
};

BlockRanges::BlockRanges(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlockRanges::~BlockRanges() = default;

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
    static const std::pair<const char*, SrcKind> kSpecial[] = {
        {"%tid.", SrcKind::kTid}, {"%ntid.", SrcKind::kNtid}, {"%ctaid.", SrcKind::kCtaid},
        {"%nctaid.", SrcKind::kNctaid}};
    for (const auto& [prefix, kind] : kSpecial) {
      const std::string_view p(prefix);
      if (o.name.size() == p.size() + 1 && o.name.compare(0, p.size(), p) == 0) {
        const char c = o.name.back();
        if (c >= 'x' && c <= 'z') {
          s.kind = kind;
          s.index = c - 'x';
          return s;
        }
      }
    }
    if (o.name.rfind("%", 0) == 0 && o.name.find('.') != std::string::npos) {
      s.kind = SrcKind::kUnknown;  // another special register (%laneid, %clock...)
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
        if (!o[0].pair.empty()) d.clobbers.push_back(regOf(o[0].pair));
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
      case Opcode::kSt: case Opcode::kRet: case Opcode::kExit: case Opcode::kBar: case Opcode::kBarrier:
      case Opcode::kMembar: case Opcode::kFence: case Opcode::kRed: case Opcode::kPrefetch: case Opcode::kTrap:
        d.op = Op::kNop;
        continue;
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
      case Opcode::kAdd: case Opcode::kSub: case Opcode::kMin: case Opcode::kMax: case Opcode::kAnd:
      case Opcode::kShl: case Opcode::kShr: case Opcode::kDiv: case Opcode::kRem:
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
      case Opcode::kMul: case Opcode::kMad:
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
        if (o.size() == 3 && o[0].pair.empty()) {
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
  return std::unique_ptr<BlockRanges>(new BlockRanges(std::move(impl)));
}

std::vector<AccessRange> BlockRanges::evaluate(const LaunchBinding& binding, int budget) const {
  const Impl& m = *impl_;
  const std::vector<BasicBlock>& blocks = m.cfg.blocks();
  std::vector<AccessRange> out(m.addrs.size());
  if (blocks.empty()) return out;
  State init;
  init.reached = true;
  init.regs.assign(static_cast<size_t>(m.registers), Interval::top());
  init.preds.assign(static_cast<size_t>(m.registers), PredFact{});
  State unreached = init;
  unreached.reached = false;
  std::vector<State> in(blocks.size(), unreached);
  in[0] = init;
  std::vector<char> queued(blocks.size(), 0);
  std::vector<int> work{0};
  queued[0] = 1;
  int visits = 0;
  auto push = [&](int s, const State& st) {
    if (!st.reached || s < 0) return;
    State merged = in[static_cast<size_t>(s)];
    joinInto(merged, st);
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
          push(s, taken);
        } else if (branch->guard >= 0) {
          push(s, fall);
        }
      }
      // A block whose fall-through is also the target (a branch to the next label): both states joined above.
    } else {
      for (int s : bb.succs) push(s, st);
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
