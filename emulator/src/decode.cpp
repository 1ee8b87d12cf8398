// Module and function decoding: symbol layout (globals, shared, params, locals), register slots, constants,
// labels and call sites. Instruction semantics live in instructions.cpp and inst_*.cpp.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "builder.h"
#include "kfuse/core/log.h"
#include "kfuse/ptx/special_registers.h"

namespace kfuse::emulator {

namespace {

uint32_t alignUp(uint32_t v, uint32_t a) {
  return a <= 1 ? v : (v + a - 1) / a * a;
}

struct ModuleSym {
  enum Kind { kGlobal, kShared, kFunction } kind = kGlobal;
  uint64_t value = 0;  // address (global) or shared-space offset
  uint64_t size = 0;
};

struct ModuleSymbols {
  std::unordered_map<std::string, ModuleSym> syms;
  std::unordered_map<std::string, int> fn_index;  // functions with bodies
  const ptx::Module* module = nullptr;
};

std::string lineOf(const ptx::SourceLoc& l) {
  return "line " + std::to_string(l.line);
}

// Parses an initializer list into bytes of `elem`-sized elements.
Status parseInitializer(const ptx::VariableDecl& v, const ModuleSymbols& ms, std::vector<uint8_t>* out) {
  Ty t = tyOf(v.type);
  uint32_t es = tySize(t);
  if (es == 0) return unsupported("initializer of type " + std::string(v.typeText()));
  std::string s = v.initializer;
  std::vector<std::string> toks;
  std::string cur;
  int depth = 0;
  for (char ch : s) {
    if (ch == '{') {
      ++depth;
      continue;
    }
    if (ch == '}') {
      --depth;
      continue;
    }
    if (ch == ',') {
      toks.push_back(cur);
      cur.clear();
      continue;
    }
    if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') cur += ch;
  }
  if (!cur.empty()) toks.push_back(cur);
  size_t pos = 0;
  for (auto& tok : toks) {
    if (tok.empty()) continue;
    uint64_t bits = 0;
    std::string name = tok;
    if (name.rfind("generic(", 0) == 0 && name.back() == ')') name = name.substr(8, name.size() - 9);
    if (auto it = ms.syms.find(name); it != ms.syms.end() && it->second.kind == ModuleSym::kGlobal) {
      bits = it->second.value;
    } else if (auto fit = ms.fn_index.find(name); fit != ms.fn_index.end()) {
      bits = kFunctionWindow + 16 * uint64_t(fit->second);
    } else if (tok.size() > 2 && tok[0] == '0' && (tok[1] == 'f' || tok[1] == 'F')) {
      uint32_t u = uint32_t(std::strtoul(tok.c_str() + 2, nullptr, 16));
      bits = t == Ty::kF64 ? std::bit_cast<uint64_t>(double(std::bit_cast<float>(u))) : u;
    } else if (tok.size() > 2 && tok[0] == '0' && (tok[1] == 'd' || tok[1] == 'D')) {
      uint64_t u = std::strtoull(tok.c_str() + 2, nullptr, 16);
      bits = t == Ty::kF32 ? std::bit_cast<uint32_t>(float(std::bit_cast<double>(u))) : u;
    } else if (tok.find_first_of(".eE") != std::string::npos && tok.find("0x") == std::string::npos) {
      double d = std::strtod(tok.c_str(), nullptr);
      bits = t == Ty::kF32 ? std::bit_cast<uint32_t>(float(d)) : std::bit_cast<uint64_t>(d);
    } else {
      ptx::Operand o = ptx::Operand::imm(tok);
      auto iv = o.intValue();
      if (!iv) return unsupported("initializer element '" + tok + "' of " + v.name);
      bits = uint64_t(*iv);
      if (t == Ty::kF32) bits = std::bit_cast<uint32_t>(float(*iv));
      if (t == Ty::kF64) bits = std::bit_cast<uint64_t>(double(*iv));
    }
    if ((pos + 1) * es > out->size()) break;
    std::memcpy(out->data() + pos * es, &bits, es);
    ++pos;
  }
  return {};
}

class FunctionDecoder final : public FnBuilder {
 public:
  FunctionDecoder(const ptx::Function& fn, const ModuleSymbols& ms, DecodedFunction* out, uint64_t dyn_shared_base)
      : fn_(fn), ms_(ms), f_(*out), dyn_base_(dyn_shared_base) {}

  Status run() {
    f_.name = fn_.name;
    f_.is_entry = fn_.is_entry;
    scopes_.emplace_back();
    if (fn_.is_entry) {
      uint32_t off = 0;
      KernelInfo& ki = f_.info;
      ki.name = fn_.name;
      ki.ptx_line = fn_.loc.line;
      for (auto& p : fn_.params) {
        uint32_t size = uint32_t(p.byteSize());
        uint32_t align = p.align ? p.align : std::max<uint32_t>(1, p.elementSize());
        if (size == 0) return unsupported("parameter " + p.name + " of unknown size");
        off = alignUp(off, align);
        kparams_[p.name] = {off, size};
        ki.params.push_back({off, size, align});
        off += size;
      }
      ki.param_bytes = off;
      for (auto& d : fn_.directives) {
        if ((d.name == ".maxntid" || d.name == ".reqntid") && !d.values.empty()) {
          uint64_t n = 1;
          for (auto v : d.values) n *= uint64_t(std::max<int64_t>(v, 1));
          ki.max_threads_per_block = uint32_t(std::min<uint64_t>(n, 1024));
        }
      }
    } else {
      for (auto& p : fn_.params) {
        Status s = addFrameParam(p, &f_.formal_offsets, &f_.formal_sizes);
        if (!s.ok()) return s;
      }
      for (auto& p : fn_.returns) {
        Status s = addFrameParam(p, &f_.return_offsets, &f_.return_sizes);
        if (!s.ok()) return s;
      }
    }
    scratch_ = newSlot();
    for (size_t i = 0; i < fn_.body.size(); ++i) {
      const ptx::Statement& st = fn_.body[i];
      switch (st.kind) {
        case ptx::StatementKind::kBlockBegin: scopes_.emplace_back(); break;
        case ptx::StatementKind::kBlockEnd:
          if (scopes_.size() > 1) scopes_.pop_back();
          break;
        case ptx::StatementKind::kLabel: labels_[*st.text] = int32_t(f_.code.size()); break;
        case ptx::StatementKind::kDirective: break;
        case ptx::StatementKind::kDeclaration: {
          Status s = declare(*st.decl);
          if (!s.ok()) return s.withContext(where(st.decl->loc));
          break;
        }
        case ptx::StatementKind::kInstruction: {
          const ptx::Instruction& in = st.inst;
          DInst d;
          d.line = in.loc.line ? in.loc.line : st.loc.line;
          if (!in.guard.empty()) {
            auto g = predIndex(in.guard);
            if (!g.ok()) return g.status().withContext(where(in.loc));
            d.guard = uint16_t(*g + 1);
            d.guard_neg = in.guard_negated;
          }
          Status s = decodeInstruction(in, *this, &d);
          if (!s.ok()) return Status(s.code(), where(in.loc) + ": " + s.message());
          if (d.kind == Kind::kNormal && !d.fn) return internalError(where(in.loc) + ": no handler");
          f_.code.push_back(d);
          f_.text.push_back(in.fullOpcode());
          break;
        }
      }
    }
    // Falling off the end returns.
    DInst end;
    end.kind = Kind::kRet;
    end.cls = uint8_t(InstClass::kControl);
    end.line = fn_.body.empty() ? fn_.loc.line : fn_.body.back().loc.line;
    f_.code.push_back(end);
    f_.text.push_back("ret");
    for (auto& [pc, name, loc] : fixups_) {
      auto it = labels_.find(name);
      if (it == labels_.end()) return badFormat(where(loc) + ": branch to unknown label " + name);
      f_.code[pc].target = it->second;
    }
    f_.num_slots = slots_;
    f_.num_preds = std::max<uint32_t>(preds_, 1);
    f_.param_area = alignUp(param_area_, 8);
    f_.local_bytes = alignUp(local_bytes_, 16);
    if (fn_.is_entry) {
      f_.info.local_bytes = f_.local_bytes;
      f_.info.num_registers = declared_regs_;
    }
    if (slots_ >= 0xfff0) return unsupported(where(fn_.loc) + ": too many registers and constants");
    return {};
  }

  // FnBuilder ------------------------------------------------------------------------------------------------
  Expected<uint16_t> value(const ptx::Operand& o, Ty t) override {
    switch (o.kind) {
      case ptx::OperandKind::kRegister: {
        if (auto c = ptx::predefinedConstant(o.name)) return constant(uint64_t(*c));
        if (ptx::isSpecialRegister(o.name)) return special(o.name);
        auto s = lookup(o.name);
        if (!s) return badFormat("undeclared register " + o.name);
        if (s->kind == LSym::kPred) return badFormat("predicate " + o.name + " used as a value");
        if (s->kind != LSym::kReg) return badFormat(o.name + " is not a register");
        return uint16_t(s->index);
      }
      case ptx::OperandKind::kImmediate: {
        auto bits = immediate(o.name, t);
        if (!bits.ok()) return bits.status();
        return constant(*bits);
      }
      case ptx::OperandKind::kSymbol: {
        // Inline asm declares registers without '%' (`.reg .f16 low, high;`); those parse as symbols.
        if (auto s = lookup(o.name); s && s->kind == LSym::kReg && o.offset == 0) return uint16_t(s->index);
        if (auto c = ptx::predefinedConstant(o.name); c && !lookup(o.name) && o.offset == 0)
          return constant(uint64_t(*c));
        Space sp = Space::kGeneric;
        uint16_t slot = 0;
        int64_t off = 0;
        Status s = symbolAddress(o.name, o.offset, /*generic=*/false, &sp, &slot, &off);
        if (!s.ok()) return s;
        return slot;
      }
      case ptx::OperandKind::kSink: return scratch_;
      default: return badFormat("unexpected operand '" + o.name + "'");
    }
  }
  Expected<uint16_t> dest(const ptx::Operand& o) override {
    if (o.kind == ptx::OperandKind::kSink) return scratch_;
    if (o.kind != ptx::OperandKind::kRegister && o.kind != ptx::OperandKind::kSymbol)
      return badFormat("destination must be a register");
    auto s = lookup(o.name);
    if (!s || s->kind != LSym::kReg) return badFormat("undeclared destination register " + o.name);
    return uint16_t(s->index);
  }
  Expected<uint16_t> pred(const ptx::Operand& o, bool* neg) override {
    if (o.kind != ptx::OperandKind::kRegister && o.kind != ptx::OperandKind::kSymbol)
      return badFormat("predicate operand expected");
    *neg = o.negated;
    return predIndex(o.name);
  }
  bool isPred(const ptx::Operand& o) override {
    if (o.kind != ptx::OperandKind::kRegister && o.kind != ptx::OperandKind::kSymbol) return false;
    auto s = lookup(o.name);
    return s && s->kind == LSym::kPred;
  }
  Status address(const ptx::Operand& o, Space* space, uint16_t* base, int64_t* off) override {
    if (o.kind != ptx::OperandKind::kAddress || o.elements.empty()) return badFormat("address operand expected");
    const ptx::Operand& b = o.elements[0];
    int64_t extra = o.offset + (b.kind == ptx::OperandKind::kSymbol ? 0 : b.offset);
    if (b.kind == ptx::OperandKind::kRegister) {
      auto v = value(b, Ty::kU64);
      if (!v.ok()) return v.status();
      *base = *v;
      *off = extra;
      if (*space == Space::kFrameParam && fn_.is_entry) *space = Space::kKernelParam;
      return {};
    }
    if (b.kind == ptx::OperandKind::kImmediate) {
      auto iv = b.intValue();
      if (!iv) return badFormat("bad address " + b.name);
      *base = constant(uint64_t(*iv));
      *off = extra;
      return {};
    }
    if (b.kind == ptx::OperandKind::kSymbol) {
      Status s = symbolAddress(b.name, b.offset, *space == Space::kGeneric, space, base, off);
      if (!s.ok()) return s;
      *off += extra;
      return {};
    }
    return badFormat("unsupported address form");
  }
  Status branchTarget(const ptx::Operand& o, DInst* d) override {
    if (o.kind != ptx::OperandKind::kSymbol && o.kind != ptx::OperandKind::kRegister)
      return badFormat("branch target must be a label");
    fixups_.push_back({f_.code.size(), o.name, ptx::SourceLoc{d->line, 0}});
    return {};
  }
  Expected<int> callSite(const ptx::Instruction& in) override {
    CallSite cs;
    const auto& ops = in.operands;
    size_t i = 0;
    const ptx::Operand* rets = nullptr;
    const ptx::Operand* args = nullptr;
    if (i < ops.size() && ops[i].kind == ptx::OperandKind::kList) rets = &ops[i++];
    if (i < ops.size() && ops[i].kind == ptx::OperandKind::kRegister) {
      // Indirect call through a function pointer (`call (r), %rd, (args), prototype;`).
      auto v = value(ops[i++], Ty::kU64);
      if (!v.ok()) return v.status();
      cs.indirect = true;
      cs.target_slot = *v;
      if (i < ops.size() && ops[i].kind == ptx::OperandKind::kList) args = &ops[i++];
      KFUSE_RETURN_IF_ERROR(addCallArgs(args, &cs.args, nullptr));
      KFUSE_RETURN_IF_ERROR(addCallArgs(rets, &cs.rets, nullptr));
      f_.calls.push_back(std::move(cs));
      return int(f_.calls.size() - 1);
    }
    if (i >= ops.size() || ops[i].kind != ptx::OperandKind::kSymbol) return unsupported("call without a target");
    std::string callee = ops[i++].name;
    if (i < ops.size() && ops[i].kind == ptx::OperandKind::kList) args = &ops[i++];
    if (i < ops.size() && ops[i].kind != ptx::OperandKind::kSymbol) return unsupported("call with extra operands");
    const ptx::Function* target = ms_.module->findFunction(callee);
    if (callee == "vprintf")
      cs.builtin = 1;
    else if (callee == "__assertfail")
      cs.builtin = 2;
    else if (auto it = ms_.fn_index.find(callee); it != ms_.fn_index.end())
      cs.callee = it->second;
    else
      return unsupported("call to '" + callee + "', which has no body in this module");
    KFUSE_RETURN_IF_ERROR(addCallArgs(args, &cs.args, target ? &target->params : nullptr));
    KFUSE_RETURN_IF_ERROR(addCallArgs(rets, &cs.rets, target ? &target->returns : nullptr));
    f_.calls.push_back(std::move(cs));
    return int(f_.calls.size() - 1);
  }
  Status addCallArgs(const ptx::Operand* list, std::vector<CallArg>* outv,
                     const std::vector<ptx::VariableDecl>* decls) {
    if (!list) return {};
    for (size_t k = 0; k < list->elements.size(); ++k) {
      const ptx::Operand& a = list->elements[k];
      CallArg ca;
      uint32_t want = decls && k < decls->size() ? uint32_t((*decls)[k].byteSize()) : 8;
      if (a.kind == ptx::OperandKind::kSymbol) {
        auto s = lookup(a.name);
        if (!s || s->kind != LSym::kFrameParam) return badFormat("call argument " + a.name + " is not a .param");
        ca.offset = s->index;
        ca.size = std::min(s->size, want ? want : s->size);
      } else {
        auto v = value(a, Ty::kB64);
        if (!v.ok()) return v.status();
        ca.is_reg = true;
        ca.slot = *v;
        ca.size = want ? want : 8;
      }
      outv->push_back(ca);
    }
    return {};
  }
  uint16_t scratch() override { return scratch_; }
  void noteBarrier() override { f_.uses_barrier = true; }
  bool isClockRegister(const ptx::Operand& o) override {
    if (o.kind != ptx::OperandKind::kRegister) return false;
    const auto r = ptx::specialRegister(o.name);
    return r && ptx::isTimer(*r);
  }

 private:
  struct LSym {
    enum Kind { kReg, kPred, kFrameParam, kLocal } kind = kReg;
    uint32_t index = 0;  // slot, predicate index, param-area offset, local offset
    uint32_t size = 0;
  };
  struct Fixup {
    size_t pc;
    std::string name;
    ptx::SourceLoc loc;
  };

  std::string where(const ptx::SourceLoc& loc) const {
    return std::string(fn_.is_entry ? "kernel '" : "function '") + fn_.name + "' " + lineOf(loc);
  }

  uint16_t newSlot() { return uint16_t(slots_++); }

  const LSym* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }
  Expected<uint16_t> predIndex(const std::string& name) {
    auto s = lookup(name);
    if (!s || s->kind != LSym::kPred) return badFormat("undeclared predicate " + name);
    return uint16_t(s->index);
  }

  Status addFrameParam(const ptx::VariableDecl& p, std::vector<uint32_t>* offs, std::vector<uint32_t>* sizes) {
    uint32_t size = uint32_t(p.byteSize());
    if (p.space == ptx::StateSpace::kReg) return unsupported(".reg function parameters (" + p.name + ")");
    if (size == 0) return unsupported("parameter " + p.name + " of unknown size");
    uint32_t align = p.align ? p.align : std::max<uint32_t>(1, p.elementSize());
    param_area_ = alignUp(param_area_, std::min<uint32_t>(align, 16));
    scopes_.back()[p.name] = {LSym::kFrameParam, param_area_, size};
    offs->push_back(param_area_);
    sizes->push_back(size);
    param_area_ += size;
    return {};
  }

  Status declare(const ptx::VariableDecl& v) {
    if (v.space == ptx::StateSpace::kReg) {
      bool is_pred = v.type == ptx::DataType::kPred;
      int n = v.vector == 2 ? 2 : v.vector == 4 ? 4 : 1;
      if (n != 1) return unsupported("vector registers");
      auto add = [&](const std::string& name) {
        if (is_pred)
          scopes_.back()[name] = {LSym::kPred, preds_++, 1};
        else {
          scopes_.back()[name] = {LSym::kReg, newSlot(), 8};
          ++declared_regs_;
        }
      };
      if (v.range >= 0) {
        if (v.range > 60000) return unsupported("register range too large");
        for (int64_t i = 0; i < v.range; ++i) add(v.name + std::to_string(i));
      } else {
        add(v.name);
      }
      return {};
    }
    if (v.space == ptx::StateSpace::kParam) {
      uint32_t size = uint32_t(v.byteSize());
      uint32_t align = v.align ? v.align : std::max<uint32_t>(1, v.elementSize());
      param_area_ = alignUp(param_area_, std::min<uint32_t>(align, 16));
      scopes_.back()[v.name] = {LSym::kFrameParam, param_area_, size};
      param_area_ += std::max<uint32_t>(size, 1);
      return {};
    }
    if (v.space == ptx::StateSpace::kLocal) {
      uint32_t size = uint32_t(v.byteSize());
      uint32_t align = v.align ? v.align : std::max<uint32_t>(1, v.elementSize());
      local_bytes_ = alignUp(local_bytes_, std::min<uint32_t>(align, 16));
      scopes_.back()[v.name] = {LSym::kLocal, local_bytes_, size};
      local_bytes_ += size;
      return {};
    }
    if (v.space == ptx::StateSpace::kShared) return {};  // laid out module-wide before decoding
    core::logWarning("emulator: ignoring declaration of " + v.name + " in space " +
                     std::string(ptx::spaceName(v.space)));
    return {};
  }

  Expected<uint64_t> immediate(const std::string& text, Ty t) {
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'f' || text[1] == 'F')) {
      uint32_t u = uint32_t(std::strtoul(text.c_str() + 2, nullptr, 16));
      if (t == Ty::kF64) return std::bit_cast<uint64_t>(double(std::bit_cast<float>(u)));
      return uint64_t(u);
    }
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'd' || text[1] == 'D')) {
      uint64_t u = std::strtoull(text.c_str() + 2, nullptr, 16);
      if (t == Ty::kF32) return uint64_t(std::bit_cast<uint32_t>(float(std::bit_cast<double>(u))));
      return u;
    }
    ptx::Operand o = ptx::Operand::imm(text);
    if (auto iv = o.intValue()) {
      if (t == Ty::kF32) return uint64_t(std::bit_cast<uint32_t>(float(*iv)));
      if (t == Ty::kF64) return std::bit_cast<uint64_t>(double(*iv));
      return uint64_t(*iv);
    }
    char* end = nullptr;
    double d = std::strtod(text.c_str(), &end);
    if (end && *end == '\0' && end != text.c_str()) {
      if (t == Ty::kF64) return std::bit_cast<uint64_t>(d);
      return uint64_t(std::bit_cast<uint32_t>(float(d)));
    }
    return badFormat("bad immediate '" + text + "'");
  }

  uint16_t constant(uint64_t v) {
    auto it = consts_.find(v);
    if (it != consts_.end()) return it->second;
    uint16_t s = newSlot();
    consts_[v] = s;
    f_.const_slots.push_back(s);
    f_.const_values.push_back(v);
    return s;
  }
  uint16_t localConstant(uint64_t v) {  // frame-relative local address; the frame base is added at run time
    auto it = local_consts_.find(v);
    if (it != local_consts_.end()) return it->second;
    uint16_t s = newSlot();
    local_consts_[v] = s;
    f_.const_slots.push_back(s);
    f_.const_values.push_back(v);
    f_.local_addr_slots.push_back(s);
    return s;
  }
  Expected<uint16_t> special(const std::string& name) {
    auto it = specials_.find(name);
    if (it != specials_.end()) return it->second;
    const auto r = ptx::specialRegister(name);
    if (!r) return unsupported("special register " + name);
    using R = ptx::SpecialRegister;
    R what = *r;
    switch (*r) {
      // A bare vector reads as its x component.
      case R::kTid: what = R::kTidX; break;
      case R::kNtid: what = R::kNtidX; break;
      case R::kCtaid: what = R::kCtaidX; break;
      case R::kNctaid: what = R::kNctaidX; break;
      // Launches never use thread-block clusters here: each block is a cluster of one, so the cluster ids are
      // the block ids, a block's place in its cluster is 0 and the cluster sizes are 1.
      case R::kClusterIdX: what = R::kCtaidX; break;
      case R::kClusterIdY: what = R::kCtaidY; break;
      case R::kClusterIdZ: what = R::kCtaidZ; break;
      case R::kNClusterIdX: what = R::kNctaidX; break;
      case R::kNClusterIdY: what = R::kNctaidY; break;
      case R::kNClusterIdZ: what = R::kNctaidZ; break;
      case R::kClusterNCtaIdX:
      case R::kClusterNCtaIdY:
      case R::kClusterNCtaIdZ:
      case R::kClusterNCtaId:
      case R::kClusterNCtaRank: {
        uint16_t one = constant(1);
        specials_[name] = one;
        return one;
      }
      // Timers are read by mov only (inst_convert.cpp), and there is no graph to name.
      case R::kClock:
      case R::kClockHi:
      case R::kClock64:
      case R::kGlobalTimer:
      case R::kGlobalTimerLo:
      case R::kGlobalTimerHi:
      case R::kCurrentGraphExec: return unsupported("special register " + name);
      default: break;  // the launch geometry, lanes, warps, lane masks, sizes; the rest reads as 0 (specialValue)
    }
    uint16_t s = newSlot();
    specials_[name] = s;
    f_.specials.push_back({s, what});
    return s;
  }

  // Address of symbol `name` (+off): kernel parameter, frame parameter, local, global or shared.
  Status symbolAddress(const std::string& name, int64_t off, bool generic, Space* space, uint16_t* slot,
                       int64_t* out_off) {
    *out_off = 0;
    if (auto s = lookup(name)) {
      if (s->kind == LSym::kFrameParam) {
        *slot = constant(uint64_t(s->index + off));
        if (*space == Space::kGeneric || *space == Space::kFrameParam || *space == Space::kKernelParam)
          *space = Space::kFrameParam;
        return {};
      }
      if (s->kind == LSym::kLocal) {
        uint64_t v = s->index + off;
        if (generic && *space == Space::kGeneric) v += kLocalWindow;
        *slot = localConstant(v);
        return {};
      }
      return badFormat(name + " is a register, not a symbol");
    }
    if (auto it = kparams_.find(name); it != kparams_.end()) {
      *slot = constant(kParamWindow + it->second.first + uint64_t(off));
      if (*space == Space::kFrameParam || *space == Space::kGeneric) *space = Space::kKernelParam;
      return {};
    }
    if (auto it = ms_.syms.find(name); it != ms_.syms.end()) {
      const ModuleSym& m = it->second;
      if (m.kind == ModuleSym::kGlobal) {
        *slot = constant(m.value + uint64_t(off));
        return {};
      }
      if (m.kind == ModuleSym::kShared) {
        uint64_t v = (m.value == ~0ull ? dyn_base_ : m.value) + uint64_t(off);
        if (generic && *space == Space::kGeneric) v += kSharedWindow;
        *slot = constant(v);
        return {};
      }
      return unsupported("address of " + name);
    }
    if (auto it = ms_.fn_index.find(name); it != ms_.fn_index.end()) {
      *slot = constant(kFunctionWindow + 16 * uint64_t(it->second));
      return {};
    }
    return badFormat("unknown symbol " + name);
  }

  const ptx::Function& fn_;
  const ModuleSymbols& ms_;
  DecodedFunction& f_;
  uint64_t dyn_base_;
  std::vector<std::unordered_map<std::string, LSym>> scopes_;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> kparams_;
  std::unordered_map<uint64_t, uint16_t> consts_, local_consts_;
  std::unordered_map<std::string, uint16_t> specials_;
  std::unordered_map<std::string, int32_t> labels_;
  std::vector<Fixup> fixups_;
  uint32_t slots_ = 0, preds_ = 0, declared_regs_ = 0;
  uint32_t param_area_ = 0, local_bytes_ = 0;
  uint16_t scratch_ = 0;
};

}  // namespace

Status decodeModule(const ptx::Module& module, Memory& memory, Program::Impl* out, std::vector<GlobalSymbol>* globals,
                    const std::string& program_name) {
  ModuleSymbols ms;
  ms.module = &module;
  // Static shared layout (module-wide) and dynamic shared base.
  uint32_t shared_off = 0;
  auto layoutShared = [&](const ptx::VariableDecl& v) {
    bool dynamic = v.linkage == ptx::Linkage::kExtern || v.byteSize() == 0;
    if (dynamic) {
      ms.syms[v.name] = {ModuleSym::kShared, ~0ull, 0};
      out->uses_dynamic_shared = true;
      return;
    }
    if (ms.syms.count(v.name)) return;
    uint32_t align = v.align ? v.align : std::max<uint32_t>(1, v.elementSize());
    shared_off = alignUp(shared_off, align);
    ms.syms[v.name] = {ModuleSym::kShared, shared_off, v.byteSize()};
    shared_off += uint32_t(v.byteSize());
  };
  for (auto& v : module.variables)
    if (v.space == ptx::StateSpace::kShared) layoutShared(v);
  for (auto& f : module.functions)
    for (auto& st : f.body)
      if (st.kind == ptx::StatementKind::kDeclaration && st.decl->space == ptx::StateSpace::kShared)
        layoutShared(*st.decl);
  out->static_shared = shared_off;
  uint64_t dyn_base = alignUp(shared_off, 16);

  for (auto& f : module.functions) {
    if (!f.has_body) continue;
    ms.fn_index[f.name] = int(out->functions.size());
    out->functions.push_back(std::make_unique<DecodedFunction>());
  }
  // Globals and constants: allocated in device memory (in declaration order, so initializers may refer to
  // earlier globals).
  for (auto& v : module.variables) {
    if (v.space != ptx::StateSpace::kGlobal && v.space != ptx::StateSpace::kConst) continue;
    // A variable the emulator cannot place (extern, texture references, unknown size or initializer) is left
    // out with a warning; kernels that use it fail to decode ("unknown symbol") and report that at launch.
    auto skip = [&](const std::string& why) {
      core::logWarning("emulator: " + program_name + " " + lineOf(v.loc) + ": " + std::string(ptx::spaceName(v.space)) +
                       " variable " + v.name + " is not available: " + why);
    };
    if (v.linkage == ptx::Linkage::kExtern) {
      skip("extern (needs linking)");
      continue;
    }
    uint64_t size = v.byteSize();
    if (size == 0) {
      skip("unknown size or type " + std::string(v.typeText()));
      continue;
    }
    std::vector<uint8_t> bytes;
    if (!v.initializer.empty()) {
      bytes.assign(size, 0);
      Status s = parseInitializer(v, ms, &bytes);
      if (!s.ok()) {
        skip(s.message());
        continue;
      }
    }
    auto addr = memory.allocate(size, program_name + ":" + v.name);
    if (!addr.ok()) return addr.status();
    if (!bytes.empty()) KFUSE_RETURN_IF_ERROR(memory.copyToDevice(*addr, bytes.data(), size));
    ms.syms[v.name] = {ModuleSym::kGlobal, *addr, size};
    globals->push_back({v.name, *addr, size});
  }
  for (auto& f : module.functions) {
    if (!f.has_body) continue;
    DecodedFunction* df = out->functions[size_t(ms.fn_index[f.name])].get();
    FunctionDecoder dec(f, ms, df, dyn_base);
    // A function that cannot be decoded (an unsupported instruction) does not stop the other kernels of the
    // module: the failure is kept and reported when a kernel that reaches it is launched.
    df->status = dec.run();
    if (!df->status.ok()) {
      df->name = f.name;
      df->is_entry = f.is_entry;
      df->info.name = f.name;
      df->code.clear();
      df->calls.clear();
    }
    if (!df->calls.empty()) out->has_calls = true;
    if (f.is_entry) df->info.static_shared_bytes = out->static_shared;
  }
  // Propagate callee failures to the kernels that call them.
  for (auto& fn : out->functions) {
    if (!fn->is_entry || !fn->status.ok()) continue;
    std::vector<const DecodedFunction*> stack{fn.get()};
    std::vector<char> seen(out->functions.size(), 0);
    while (!stack.empty() && fn->status.ok()) {
      const DecodedFunction* cur = stack.back();
      stack.pop_back();
      for (const CallSite& cs : cur->calls) {
        if (cs.callee < 0 || seen[size_t(cs.callee)]) continue;
        seen[size_t(cs.callee)] = 1;
        const DecodedFunction* callee = out->functions[size_t(cs.callee)].get();
        if (!callee->status.ok()) {
          fn->status = callee->status.withContext("kernel '" + fn->name + "' calls '" + callee->name + "'");
          break;
        }
        stack.push_back(callee);
      }
    }
  }
  return {};
}

}  // namespace kfuse::emulator
