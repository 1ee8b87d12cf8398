// Which parameters can influence where a kernel's memory accesses fall and which of them run.
//
// A flow-insensitive taint analysis over registers: every parameter named by an operand seeds its bit, every
// instruction passes the union of its operands' bits (guard included) to the registers it writes, and values kept
// in local, shared or call-parameter memory pass their bits to every load from those spaces. The bits that reach an
// address, the guard of a memory access or of a control transfer, a branch index, a barrier's operands or a call
// are the influence set. Registers are PTX virtual registers; a register written in several places carries the
// union of all of them, which only over-approximates.
//
// A second layer follows pointer values: a parameter's value used as the base of an address (moved, converted,
// plus or minus an integer) matters only relative to its allocation, which plans pin; used as a number (masked,
// shifted, multiplied, compared with or subtracted from another pointer, stored) its absolute value matters, and
// ParamInfluence::absolute lists it.
#include <algorithm>
#include <cstdint>
#include <span>

#include "kfuse/core/status.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/name_table.h"
#include "kfuse/ptx/special_registers.h"

namespace kfuse::ptx {
namespace {

using Bits = std::vector<uint64_t>;
// One register's bits inside a table of all registers' (Influence::regs_, rel_, abs_), or a whole Bits.
using Row = std::span<uint64_t>;
using ConstRow = std::span<const uint64_t>;

bool orInto(Row to, ConstRow from) {
  bool changed = false;
  for (size_t i = 0; i < to.size(); ++i) {
    const uint64_t v = to[i] | from[i];
    changed = changed || v != to[i];
    to[i] = v;
  }
  return changed;
}

bool hasAddress(const Instruction& in) {
  return std::any_of(in.operands.begin(), in.operands.end(),
                     [](const Operand& o) { return o.kind == OperandKind::kAddress; });
}

// Instructions that transfer control, synchronize or have effects beyond the registers they write: their guard
// and operands decide what runs (branch targets, trip counts, barrier participation).
bool controls(const Instruction& in) {
  switch (in.opcode) {
    case Opcode::kBra:
    case Opcode::kBrx:
    case Opcode::kRet:
    case Opcode::kExit:
    case Opcode::kTrap:
    case Opcode::kBar:
    case Opcode::kBarrier:
    case Opcode::kCall: return true;
    default: return false;
  }
}

// Memory a value can be kept in and read back from without kfuse's analyses seeing it as unknown data: local and
// shared arrays and call parameters. Global memory is data to every proof (a value loaded from it is unbounded).
bool keepsValues(const Instruction& in) {
  return in.hasBaseSpace(StateSpace::kLocal) || in.hasBaseSpace(StateSpace::kShared) || in.has(StateSpace::kParam);
}

class Influence {
 public:
  explicit Influence(const Function& f) : f_(f) {
    const size_t bits = f.params.size() + 1;  // the last bit: the dynamic shared memory size
    words_ = (bits + 63) / 64;
    dyn_bit_ = f.params.size();
    mem_.assign(words_, 0);
    mem_abs_.assign(words_, 0);
    sink_.assign(words_, 0);
    abs_sink_.assign(words_, 0);
    // Every register name is numbered up front, so the tables are sized once and a row stays where it is; a node
    // and a vector per register per table took about 200 bytes per instruction of a huge kernel.
    for (const Statement& s : f.body) {
      if (s.kind != StatementKind::kInstruction) continue;
      if (!s.inst.guard.empty()) names_.intern(s.inst.guard);
      for (const Operand& o : s.inst.operands) internRegisters(o);
    }
    regs_.assign(names_.size() * words_, 0);
    rel_ = regs_;
    abs_ = regs_;
  }

  ParamInfluence run() {
    // Registers are few and instructions a few thousand: iterate to the fixed point (each pass only adds bits).
    for (int pass = 0; pass < 64; ++pass) {
      changed_ = false;
      for (const Statement& s : f_.body) {
        if (s.kind == StatementKind::kInstruction) visit(s.inst);
      }
      if (!changed_) break;
      // Not converged in 64 passes (cannot happen with monotone bits over a finite set; kept as a guard): every
      // parameter influences.
      if (pass == 63) {
        std::fill(sink_.begin(), sink_.end(), ~uint64_t{0});
        std::fill(abs_sink_.begin(), abs_sink_.end(), ~uint64_t{0});
      }
    }
    ParamInfluence out;
    for (size_t p = 0; p < f_.params.size(); ++p) {
      if (test(sink_, p)) out.params.push_back(static_cast<int>(p));
    }
    for (size_t p = 0; p < f_.params.size(); ++p) {
      if (test(abs_sink_, p)) out.absolute.push_back(static_cast<int>(p));
    }
    out.dynamic_shared_size = test(sink_, dyn_bit_);
    out.reads_dynamic_shared_size = reads_dyn_;
    return out;
  }

 private:
  static bool test(ConstRow b, size_t i) { return (b[i / 64] >> (i % 64)) & 1; }
  void set(Row b, size_t i) const { b[i / 64] |= uint64_t{1} << (i % 64); }

  void internRegisters(const Operand& o) {
    if (o.kind == OperandKind::kRegister) {
      names_.intern(o.name);
      if (!o.pair->empty()) names_.intern(*o.pair);
    }
    for (const Operand& e : o.elements) internRegisters(e);
  }

  Row reg(std::string_view name) { return slot(regs_, name); }
  // `name`'s row of `table` (regs_, rel_ or abs_); every register was numbered by the constructor.
  Row slot(std::vector<uint64_t>& table, std::string_view name) {
    const int id = names_.find(name);
    KFUSE_CHECK(id >= 0);
    return Row(table).subspan(static_cast<size_t>(id) * words_, words_);
  }

  // The pointer layer of a source operand: parameters present as an address base (`rel`) or as a number (`abs`).
  void gatherPointer(const Operand& o, Bits& rel, Bits& abs) {
    switch (o.kind) {
      case OperandKind::kRegister:
        orInto(rel, slot(rel_, o.name));
        orInto(abs, slot(abs_, o.name));
        if (!o.pair->empty()) {
          orInto(rel, slot(rel_, *o.pair));
          orInto(abs, slot(abs_, *o.pair));
        }
        break;
      case OperandKind::kVector:
      case OperandKind::kList:
        for (const Operand& e : o.elements) gatherPointer(e, rel, abs);
        break;
      default: break;
    }
  }

  static bool isZero(const Operand& o) { return o.kind == OperandKind::kImmediate && o.intValue() == 0; }
  static bool empty(ConstRow b) {
    return std::all_of(b.begin(), b.end(), [](uint64_t w) { return w == 0; });
  }
  static bool singleton(ConstRow b) {
    int n = 0;
    for (uint64_t w : b) n += __builtin_popcountll(w);
    return n == 1;
  }

  // Where pointer values go in `in`: sets `rel` (the result is a base of those parameters) and adds to `abs` (the
  // result depends on their absolute values). `sources` are the non-address source operands.
  void pointerFlow(const Instruction& in, const std::vector<const Operand*>& sources, Bits& rel, Bits& abs) {
    std::vector<Bits> rels;
    for (const Operand* o : sources) {
      Bits r(words_, 0);
      gatherPointer(*o, r, abs);
      rels.push_back(std::move(r));
    }
    auto unionOf = [&](Bits& into) {
      for (const Bits& r : rels) orInto(into, r);
    };
    size_t with_base = 0;
    for (const Bits& r : rels) with_base += empty(r) ? 0 : 1;
    // Two operands derived from one and the same pointer: their difference or comparison is relative.
    const bool same_base = with_base == 2 && [&] {
      const Bits* a = nullptr;
      for (const Bits& r : rels) {
        if (empty(r)) continue;
        if (!singleton(r)) return false;
        if (a && *a != r) return false;
        a = &r;
      }
      return true;
    }();
    switch (in.opcode) {
      case Opcode::kMov:
      case Opcode::kCvta:
      case Opcode::kCvt:
      case Opcode::kSelp: unionOf(rel); return;
      case Opcode::kAdd:
        if (with_base <= 1) return unionOf(rel);
        return unionOf(abs);  // pointer + pointer
      case Opcode::kSub:
        if (with_base == 0) return;
        if (with_base == 1 && !empty(rels.front())) return unionOf(rel);  // pointer - integer
        if (same_base) return;                                            // (p + a) - (p + b)
        return unionOf(abs);  // integer - pointer, or the distance between two pointers
      case Opcode::kSetp:
        // A null check sees only whether the pointer is null, which the plan's allocation pin decides.
        if (std::any_of(sources.begin(), sources.end(), [](const Operand* o) { return isZero(*o); })) return;
        if (same_base) return;
        return unionOf(abs);
      default: return unionOf(abs);  // masked, shifted, multiplied, divided...: the number matters
    }
  }

  // The bits an operand carries: its registers' and the parameters it names (a value, `[param]` or `param+4`).
  void gather(const Operand& o, Bits& into) {
    switch (o.kind) {
      case OperandKind::kRegister:
        // %total_smem_size is the static size plus the dynamic one: both follow the launch's dynamic size.
        if (auto special = specialRegister(o.name); special && readsLaunchSharedMemorySize(*special)) {
          set(into, dyn_bit_);
          reads_dyn_ = true;
        } else {
          orInto(into, reg(o.name));
        }
        if (!o.pair->empty()) orInto(into, reg(*o.pair));
        break;
      case OperandKind::kSymbol:
        if (const int p = f_.paramIndex(o.name); p >= 0) set(into, static_cast<size_t>(p));
        break;
      case OperandKind::kAddress:
      case OperandKind::kVector:
      case OperandKind::kList:
        for (const Operand& e : o.elements) gather(e, into);
        break;
      default: break;
    }
  }

  void sink(ConstRow b) { changed_ = orInto(sink_, b) || changed_; }
  void sinkAbsolute(ConstRow b) { changed_ = orInto(abs_sink_, b) || changed_; }

  void visit(const Instruction& in) {
    Bits src(words_, 0), rel(words_, 0), abs(words_, 0);
    if (!in.guard.empty()) {
      orInto(src, reg(in.guard));
      orInto(abs, slot(abs_, in.guard));
    }
    const bool memory = hasAddress(in);
    // A guard deciding whether an access or a control transfer happens decides a footprint or a trip count.
    if ((memory || controls(in)) && !in.guard.empty()) {
      sink(reg(in.guard));
      sinkAbsolute(slot(abs_, in.guard));
    }
    std::vector<const Operand*> sources;
    bool reads_kernel_param = false;  // ld.param [kernel_param]
    defs_.clear();
    instructionDefsUsesViews(in, &defs_, nullptr);
    size_t first = 0;
    if (!defs_.empty() && !in.operands.empty()) first = 1;  // operand 0 is the destination
    for (size_t i = first; i < in.operands.size(); ++i) {
      const Operand& o = in.operands[i];
      if (o.kind == OperandKind::kAddress) {
        Bits addr(words_, 0);
        gather(o, addr);
        orInto(src, addr);
        // `ld.param [kernel_param]` reads the parameter's value: a seed, not an address that can move. Any other
        // address (registers, offsets, a parameter's address taken) decides where the access falls.
        const bool reads_param = in.has(StateSpace::kParam) && o.elements.size() == 1 &&
                                 o.elements[0].kind == OperandKind::kSymbol && f_.paramIndex(o.elements[0].name) >= 0;
        if (reads_param) {
          reads_kernel_param = true;
          set(rel, static_cast<size_t>(f_.paramIndex(o.elements[0].name)));  // its value, as a possible base
        } else {
          Bits regs(words_, 0), base(words_, 0), number(words_, 0);
          for (const Operand& e : o.elements) {
            if (e.kind != OperandKind::kSymbol) {
              gather(e, regs);
              gatherPointer(e, base, number);
            }
          }
          sinkAbsolute(number);  // an address computed from a pointer's bits
          if (!o.elements.empty() && o.elements[0].kind == OperandKind::kSymbol &&
              f_.paramIndex(o.elements[0].name) >= 0 && !in.has(StateSpace::kParam)) {
            gather(o.elements[0], regs);  // a parameter's address used as a pointer elsewhere
          }
          sink(regs);
        }
        continue;
      }
      gather(o, src);
      sources.push_back(&o);
    }
    if (!sources.empty() || !memory) pointerFlow(in, sources, rel, abs);
    if (controls(in)) {
      sink(src);
      sinkAbsolute(abs);
      // A call sees whatever its arguments hold in parameter memory, and whatever it reaches itself.
      if (in.opcode == Opcode::kCall) {
        sink(mem_);
        sinkAbsolute(mem_abs_);
        sinkAbsolute(rel);
      }
    }
    // Values stored into local, shared or call-parameter memory come back through loads from those spaces.
    if (memory && keepsValues(in) &&
        (in.opcode == Opcode::kSt || in.opcode == Opcode::kAtom || in.opcode == Opcode::kRed)) {
      changed_ = orInto(mem_, src) || changed_;
      // A pointer kept in memory comes back as a number kfuse does not follow (pointerFlow made the stored values'
      // bases absolute).
      changed_ = orInto(mem_abs_, abs) || changed_;
    }
    if (memory && keepsValues(in) && in.opcode != Opcode::kSt && in.opcode != Opcode::kRed) {
      if (!reads_kernel_param) {
        orInto(src, mem_);
        orInto(abs, mem_abs_);
        std::fill(rel.begin(), rel.end(), 0);
      }
    }
    if (memory && in.opcode != Opcode::kSt && in.opcode != Opcode::kRed && !in.has(StateSpace::kParam) &&
        !keepsValues(in)) {
      std::fill(rel.begin(), rel.end(), 0);  // a value loaded from global memory is data
    }
    for (std::string_view d : defs_) {
      if (d == "_" || d.empty()) continue;
      changed_ = orInto(reg(d), src) || changed_;
      changed_ = orInto(slot(rel_, d), rel) || changed_;
      changed_ = orInto(slot(abs_, d), abs) || changed_;
    }
  }

  const Function& f_;
  size_t words_ = 1, dyn_bit_ = 0;
  NameTable names_;
  std::vector<uint64_t> regs_, rel_, abs_;  // words_ per register, by its number in names_
  Bits mem_, mem_abs_, sink_, abs_sink_;
  bool changed_ = false, reads_dyn_ = false;
  std::vector<std::string_view> defs_;
};

}  // namespace

ParamInfluence analyzeParamInfluence(const Function& f) {
  return Influence(f).run();
}

}  // namespace kfuse::ptx
