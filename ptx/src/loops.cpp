// Counted loops and value numbering (loops.h).
#include "kfuse/ptx/loops.h"

#include <algorithm>

#include "kfuse/ptx/special_registers.h"
#include "loops_impl.h"

namespace kfuse::ptx {

namespace detail {

constexpr int kMaxDepth = 48;
constexpr size_t kMaxValueText = 4096;
constexpr const char* kInductionToken = "<iv>";

// Instructions whose result is a function of their operands alone (no memory, no hidden state such as a carry
// flag or a clock), for value numbering.
bool pureOpcode(Opcode op) {
  switch (op) {
    case Opcode::kMov:
    case Opcode::kAdd:
    case Opcode::kSub:
    case Opcode::kMul:
    case Opcode::kMad:
    case Opcode::kMul24:
    case Opcode::kMad24:
    case Opcode::kCvt:
    case Opcode::kCvta:
    case Opcode::kShl:
    case Opcode::kShr:
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kNot:
    case Opcode::kNeg:
    case Opcode::kMin:
    case Opcode::kMax:
    case Opcode::kAbs:
    case Opcode::kSetp:
    case Opcode::kSelp:
    case Opcode::kDiv:
    case Opcode::kRem: return true;
    default: return false;
  }
}

// The thread and launch-shape registers: the same in every part of a fused kernel of one launch.
bool launchRegister(std::string_view name) {
  const auto r = specialRegister(name);
  if (!r) return false;
  switch (*r) {
    case SpecialRegister::kTidX:
    case SpecialRegister::kTidY:
    case SpecialRegister::kTidZ:
    case SpecialRegister::kNtidX:
    case SpecialRegister::kNtidY:
    case SpecialRegister::kNtidZ:
    case SpecialRegister::kCtaidX:
    case SpecialRegister::kCtaidY:
    case SpecialRegister::kCtaidZ:
    case SpecialRegister::kNctaidX:
    case SpecialRegister::kNctaidY:
    case SpecialRegister::kNctaidZ: return true;
    default: return false;
  }
}

bool defines(const Instruction& in, std::string_view reg) {
  std::vector<std::string_view> defs, uses;
  instructionDefsUsesViews(in, &defs, &uses);
  return std::find(defs.begin(), defs.end(), reg) != defs.end();
}

const Operand* addressOperand(const Instruction& in) {
  for (const Operand& o : in.operands) {
    if (o.kind == OperandKind::kAddress) return &o;
  }
  return nullptr;
}

// Statement indices of the instructions of a block, in order.
std::vector<size_t> instructionsOf(const Function& f, const BasicBlock& b) {
  std::vector<size_t> out;
  for (size_t s = b.begin; s < b.end; ++s) {
    if (f.body[s].kind == StatementKind::kInstruction) out.push_back(s);
  }
  return out;
}

std::string branchTarget(const Instruction& in) {
  for (const Operand& o : in.operands) {
    if (o.kind == OperandKind::kSymbol) return o.name;
  }
  return {};
}

// What a loop body may not contain for its iterations to be interleaved with another loop's: control flow, block
// and warp collectives, atomics, textures and surfaces, shared memory, and instructions the IR does not know.
std::optional<std::string> notInterleavable(const Instruction& in) {
  switch (in.opcode) {
    case Opcode::kBra:
    case Opcode::kBrx:
    case Opcode::kRet:
    case Opcode::kExit:
    case Opcode::kCall: return "control flow (" + in.fullOpcode() + ")";
    case Opcode::kBar:
    case Opcode::kBarrier:
    case Opcode::kShfl:
    case Opcode::kVote:
    case Opcode::kMatch:
    case Opcode::kRedux:
    case Opcode::kActivemask:
    case Opcode::kWmma:
    case Opcode::kMma:
    case Opcode::kWgmma: return "a block or warp collective (" + in.fullOpcode() + ")";
    case Opcode::kAtom:
    case Opcode::kRed: return "an atomic (" + in.fullOpcode() + ")";
    case Opcode::kTex:
    case Opcode::kTld4:
    case Opcode::kSuld:
    case Opcode::kSust:
    case Opcode::kSured:
    case Opcode::kCp:
    case Opcode::kMbarrier:
    case Opcode::kUnknown: return "an instruction it cannot reorder (" + in.fullOpcode() + ")";
    case Opcode::kLd:
    case Opcode::kLdu:
    case Opcode::kSt:
      if (in.hasBaseSpace(StateSpace::kShared)) return "shared memory (" + in.fullOpcode() + ")";
      return std::nullopt;
    default: return std::nullopt;
  }
}

bool isMemory(const Instruction& in) {
  return in.opcode == Opcode::kLd || in.opcode == Opcode::kLdu || in.opcode == Opcode::kSt;
}

}  // namespace detail

using namespace detail;

ValueNumbering::ValueNumbering(const Function& f, const Cfg& cfg, const DefUse& du,
                               std::function<std::string(const std::string&)> param_name)
    : f_(f), cfg_(cfg), du_(du), in_loop_(blocksInLoops(cfg)), param_name_(std::move(param_name)) {}

void ValueNumbering::nameAtBlockEntry(int block, const std::string& reg, const std::string& token) {
  entry_names_[{block, reg}] = token;
}

std::optional<std::string> ValueNumbering::registerValue(std::string_view reg, size_t stmt) const {
  return registerValue(reg, stmt, 0);
}

std::optional<std::string> ValueNumbering::operandValue(const Operand& o, size_t stmt) const {
  return operandValue(o, stmt, 0);
}

std::optional<std::string> ValueNumbering::definedValue(size_t stmt, std::string_view reg) const {
  if (stmt >= f_.body.size() || f_.body[stmt].kind != StatementKind::kInstruction) return std::nullopt;
  return definitionValue(stmt, reg, 0);
}

std::optional<std::string> ValueNumbering::addressValue(size_t stmt) const {
  if (stmt >= f_.body.size() || f_.body[stmt].kind != StatementKind::kInstruction) return std::nullopt;
  const Operand* a = addressOperand(f_.body[stmt].inst);
  if (!a || a->elements.empty() || a->elements[0].kind != OperandKind::kRegister) return std::nullopt;
  auto base = registerValue(a->elements[0].name, stmt, 0);
  if (!base) return std::nullopt;
  return *base + "+" + std::to_string(a->offset);
}

std::optional<std::string> ValueNumbering::registerValue(std::string_view reg, size_t stmt, int depth) const {
  if (depth > kMaxDepth) return std::nullopt;
  const int b = cfg_.blockOf(stmt);
  if (b < 0) return std::nullopt;
  const BasicBlock& block = cfg_.blocks()[static_cast<size_t>(b)];
  // The latest definition earlier in the block.
  for (size_t s = stmt; s > block.begin; --s) {
    const Statement& st = f_.body[s - 1];
    if (st.kind == StatementKind::kInstruction && defines(st.inst, reg)) return definitionValue(s - 1, reg, depth);
  }
  if (auto it = entry_names_.find(std::pair<int, std::string>{b, std::string(reg)}); it != entry_names_.end()) {
    return it->second;
  }
  // Else one definition reaching the block that runs at most once per thread.
  const std::vector<size_t> defs = du_.reachingDefs(stmt, reg);
  if (defs.size() != 1) return std::nullopt;
  const int db = cfg_.blockOf(defs[0]);
  if (db < 0 || in_loop_[static_cast<size_t>(db)]) return std::nullopt;
  return definitionValue(defs[0], reg, depth);
}

std::optional<std::string> ValueNumbering::operandValue(const Operand& o, size_t stmt, int depth) const {
  if (o.kind == OperandKind::kImmediate) return o.name;
  if (o.kind != OperandKind::kRegister) return std::nullopt;
  if (isSpecialRegister(o.name)) {
    if (!launchRegister(o.name)) return std::nullopt;
    return o.name;
  }
  auto v = registerValue(o.name, stmt, depth + 1);
  if (!v) return std::nullopt;
  return o.negated ? "!" + *v : *v;
}

std::optional<std::string> ValueNumbering::definitionValue(size_t def, std::string_view reg, int depth) const {
  const Instruction& in = f_.body[def].inst;
  if (!in.guard.empty() || in.operands.empty()) return std::nullopt;
  const Operand& dest = in.operands[0];
  if (dest.kind != OperandKind::kRegister) return std::nullopt;
  // setp's second destination (`%p|%q`) holds the complement.
  const std::string prefix = dest.name == reg ? "" : *dest.pair == reg ? "~" : "?";
  if (prefix == "?") return std::nullopt;
  const std::string opcode = in.fullOpcode();
  if (opcode.find(".cc") != std::string::npos) return std::nullopt;  // reads or writes the carry flag
  if (in.opcode == Opcode::kLd) {
    if (!in.hasBaseSpace(StateSpace::kParam) || in.operands.size() != 2) return std::nullopt;
    const Operand& a = in.operands[1];
    if (a.kind != OperandKind::kAddress || a.elements.empty() || a.elements[0].kind != OperandKind::kSymbol)
      return std::nullopt;
    const std::string& name = a.elements[0].name;
    return prefix + opcode + "(param:" + (param_name_ ? param_name_(name) : name) + "+" +
           std::to_string(a.offset + a.elements[0].offset) + ")";
  }
  if (!pureOpcode(in.opcode)) return std::nullopt;
  std::string text = prefix + opcode + "(";
  for (size_t i = 1; i < in.operands.size(); ++i) {
    auto v = operandValue(in.operands[i], def, depth + 1);
    if (!v) return std::nullopt;
    text += (i > 1 ? "," : "") + *v;
    if (text.size() > kMaxValueText) return std::nullopt;
  }
  return text + ")";
}

std::optional<CountedLoop> findCountedLoop(const Function& f, const Cfg& cfg, const DefUse& du,
                                           const std::function<std::string(const std::string&)>& param_name,
                                           std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<CountedLoop> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (cfg.hasIndirectBranch()) return fail("it has an indirect branch");
  const auto& blocks = cfg.blocks();
  const std::vector<char> in_loop = blocksInLoops(cfg);
  CountedLoop loop;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!in_loop[b]) continue;
    if (loop.loop_block >= 0) return fail("its loop is more than one block (or it has several loops)");
    loop.loop_block = static_cast<int>(b);
  }
  if (loop.loop_block < 0) return fail("it has no loop");
  const BasicBlock& body = blocks[static_cast<size_t>(loop.loop_block)];
  loop.loop_begin = body.begin;
  loop.loop_end = body.end;
  const std::vector<size_t> body_insts = instructionsOf(f, body);
  if (body.label.empty() || body_insts.size() < 3) return fail("its loop is not a labelled block");
  // The latch: `@q bra LOOP` last.
  loop.latch_stmt = body_insts.back();
  const Instruction& latch = f.body[loop.latch_stmt].inst;
  if (latch.opcode != Opcode::kBra || latch.guard.empty() || branchTarget(latch) != body.label)
    return fail("its loop does not end in a conditional branch back to its start");
  // The exit: the block after the loop, `ret` and nothing else, the function's end.
  for (int s : body.succs) {
    if (s != loop.loop_block) loop.exit_block = s;
  }
  if (loop.exit_block < 0 || body.succs.size() != 2) return fail("its loop has no single exit");
  const BasicBlock& exit = blocks[static_cast<size_t>(loop.exit_block)];
  const std::vector<size_t> exit_insts = instructionsOf(f, exit);
  if (exit.begin != body.end || exit.label.empty() || exit_insts.size() != 1 ||
      f.body[exit_insts[0]].inst.opcode != Opcode::kRet || !f.body[exit_insts[0]].inst.guard.empty() ||
      !exit.succs.empty()) {
    return fail("the block after its loop is not a plain return");
  }
  for (size_t s = exit.end; s < f.body.size(); ++s) {
    if (f.body[s].kind == StatementKind::kInstruction || f.body[s].kind == StatementKind::kLabel)
      return fail("code follows its return");
  }
  // The blocks before the loop: straight-line, one guard branch to the exit and no other branch (a fusion that
  // puts several kernels' code before one loop must run all of it), no memory access but ld.param.
  int guards = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (static_cast<int>(b) == loop.loop_block || static_cast<int>(b) == loop.exit_block) continue;
    if (blocks[b].end > body.begin) return fail("code before its loop is laid out after it");
    for (size_t s : instructionsOf(f, blocks[b])) {
      const Instruction& in = f.body[s].inst;
      if (in.opcode == Opcode::kBra) {
        const std::string target = branchTarget(in);
        if (target == exit.label && !in.guard.empty()) {
          ++guards;
          loop.guard_stmt = s;
          continue;
        }
        return fail("it branches before its loop other than to skip it");
      }
      if (in.opcode == Opcode::kLd && in.hasBaseSpace(StateSpace::kParam)) continue;
      if (!pureOpcode(in.opcode) || !in.guard.empty())
        return fail("it does more than compute values before its loop (" + in.fullOpcode() + ")");
    }
  }
  if (guards != 1) return fail("its loop is not skipped by one guard");
  // The induction variable: the register of the latch's comparison with one definition before the loop and one
  // `add i, i, step` in it.
  size_t compare = 0;
  for (size_t s : body_insts) {
    if (s < loop.latch_stmt && defines(f.body[s].inst, latch.guard)) compare = s;
  }
  if (compare == 0 || f.body[compare].inst.opcode != Opcode::kSetp)
    return fail("its loop's exit test is not a comparison in the loop");
  const Instruction& cmp = f.body[compare].inst;
  const Operand* step_operand = nullptr;
  bool iv_first = true;
  for (size_t i = 1; i < cmp.operands.size() && loop.induction.empty(); ++i) {
    const Operand& o = cmp.operands[i];
    if (o.kind != OperandKind::kRegister || isSpecialRegister(o.name)) continue;
    const std::vector<size_t> defs = du.allDefs(o.name);
    if (defs.size() != 2) continue;
    for (size_t d : defs) {
      if (cfg.blockOf(d) != loop.loop_block) continue;
      const Instruction& add = f.body[d].inst;
      if (add.opcode != Opcode::kAdd || !add.guard.empty() || add.operands.size() != 3 ||
          add.operands[0].kind != OperandKind::kRegister || add.operands[0].name != o.name)
        continue;
      for (size_t k : {size_t{1}, size_t{2}}) {
        const Operand& x = add.operands[k];
        if (x.kind == OperandKind::kRegister && x.name == o.name && !x.negated) {
          loop.induction = o.name;
          loop.step_stmt = d;
          iv_first = k == 1;
          step_operand = &add.operands[k == 1 ? 2 : 1];
        }
      }
    }
    if (!loop.induction.empty()) {
      loop.start_stmt = defs[0] == loop.step_stmt ? defs[1] : defs[0];
      if (cfg.blockOf(loop.start_stmt) == loop.loop_block || !f.body[loop.start_stmt].inst.guard.empty())
        return fail("its induction variable is set twice in its loop");
    }
  }
  if (loop.induction.empty()) return fail("its loop has no induction variable `i = i + step`");
  if (loop.step_stmt > compare) return fail("its loop tests its induction variable before stepping it");
  for (size_t s : body_insts) {
    if (s == loop.latch_stmt) continue;
    const Instruction& in = f.body[s].inst;
    if (auto bad = notInterleavable(in)) return fail("its loop has " + *bad);
    if (isMemory(in) && s > loop.step_stmt)
      return fail("its loop accesses memory after stepping its induction variable (" + in.fullOpcode() + ")");
  }
  // The values that decide the steps, with i named at the top of the loop.
  ValueNumbering vn(f, cfg, du, param_name);
  vn.nameAtBlockEntry(loop.loop_block, loop.induction, kInductionToken);
  const auto start_value = vn.definedValue(loop.start_stmt, loop.induction);
  const auto step = vn.operandValue(*step_operand, loop.step_stmt);
  const Instruction& guard = f.body[loop.guard_stmt].inst;
  const auto guard_value = vn.registerValue(guard.guard, loop.guard_stmt);
  const auto latch_value = vn.registerValue(latch.guard, loop.latch_stmt);
  if (!start_value) return fail("its induction variable does not start at a value of the launch and parameters");
  if (!step || step->find(kInductionToken) != std::string::npos)
    return fail("its loop's step is not the same in every iteration");
  if (!guard_value || !latch_value) return fail("its loop's bounds are not values of the launch and parameters");
  const std::string add = f.body[loop.step_stmt].inst.fullOpcode();
  loop.start = *start_value;
  loop.step =
      iv_first ? add + "(" + kInductionToken + "," + *step + ")" : add + "(" + *step + "," + kInductionToken + ")";
  loop.guard = (guard.guard_negated ? "!" : "") + *guard_value;
  loop.latch = (latch.guard_negated ? "!" : "") + *latch_value;
  return loop;
}

namespace detail {

namespace {

std::optional<ValueTree> parseValue(std::string_view s, size_t& pos, int depth) {
  if (depth > kMaxDepth) return std::nullopt;
  ValueTree t;
  while (pos < s.size() && s[pos] != '(' && s[pos] != ',' && s[pos] != ')') t.op += s[pos++];
  if (t.op.empty()) return std::nullopt;
  if (pos < s.size() && s[pos] == '(') {
    ++pos;
    while (true) {
      auto c = parseValue(s, pos, depth + 1);
      if (!c) return std::nullopt;
      t.children.push_back(std::move(*c));
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ')') {
        ++pos;
        break;
      }
      return std::nullopt;
    }
  }
  return t;
}

}  // namespace

std::optional<ValueTree> parseValue(std::string_view s) {
  size_t pos = 0;
  auto t = parseValue(s, pos, 0);
  if (!t || pos != s.size()) return std::nullopt;
  return t;
}

namespace {

bool oneOf(std::string_view op, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

}  // namespace

// Integer index arithmetic with the widths and copies taken out, sums and products in one order: the launch index
// written `mad.lo.s32(mov.u32(%ctaid.x),mov.u32(%ntid.x),mov.u32(%tid.x))` becomes `add(%tid.x,mul(%ctaid.x,
// %ntid.x))`. Only for values that stay below 2^31, where the widths do not change them (the caller's to ensure).
ValueTree canonicalIndex(const ValueTree& t) {
  if (t.children.empty()) return t;
  std::vector<ValueTree> c;
  for (const ValueTree& x : t.children) c.push_back(canonicalIndex(x));
  if (t.op.rfind("mov.", 0) == 0 && c.size() == 1) return c[0];
  if (oneOf(t.op, {"cvt.u64.u32", "cvt.s64.s32", "cvt.s64.u32"}) && c.size() == 1) return c[0];
  auto sorted = [](std::string op, std::vector<ValueTree> xs) {
    std::sort(xs.begin(), xs.end(), [](const ValueTree& a, const ValueTree& b) { return a.text() < b.text(); });
    return ValueTree{std::move(op), std::move(xs)};
  };
  if (oneOf(t.op, {"mad.lo.s32", "mad.lo.u32"}) && c.size() == 3) {
    return sorted("add", {sorted("mul", {c[0], c[1]}), c[2]});
  }
  if (oneOf(t.op, {"mul.lo.s32", "mul.lo.u32", "mul.wide.u32", "mul.wide.s32", "mul.lo.s64", "mul.lo.u64"}) &&
      c.size() == 2) {
    return sorted("mul", c);
  }
  if (oneOf(t.op, {"add.s32", "add.u32", "add.s64", "add.u64"}) && c.size() == 2) return sorted("add", c);
  return ValueTree{t.op, std::move(c)};
}

// (Comparison: loops_impl.h.) `setp.<cmp>.<type>(a,b)`, with a leading `!` (the branch taken when the comparison is
// false) folded into the comparison: the comparison as `x < y` (lt) or `x >= y` (ge), its type, and x, y.

std::optional<Comparison> comparison(const std::string& text) {
  const bool negated = !text.empty() && text[0] == '!';
  auto t = parseValue(negated ? std::string_view(text).substr(1) : std::string_view(text));
  if (!t || t->children.size() != 2 || t->op.rfind("setp.", 0) != 0) return std::nullopt;
  const std::string rest = t->op.substr(5);  // "lt.s32"
  const size_t dot = rest.find('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string cmp = rest.substr(0, dot), type = rest.substr(dot + 1);
  if (!oneOf(type, {"s32", "u32", "s64", "u64"})) return std::nullopt;
  Comparison c;
  c.type = type;
  // x < y: lt(x,y), gt(y,x); x >= y: ge(x,y), le(y,x); a negation swaps the two.
  bool swap = false;
  if (cmp == "lt" || cmp == "ge") {
    c.less = cmp == "lt";
  } else if (cmp == "gt" || cmp == "le") {
    c.less = cmp == "gt";
    swap = true;
  } else {
    return std::nullopt;
  }
  if (negated) c.less = !c.less;
  c.x = t->children[swap ? 1 : 0];
  c.y = t->children[swap ? 0 : 1];
  return c;
}

std::vector<int> boundParameters(const Function& f, const ValueTree& n) {
  const ValueTree t = canonicalIndex(n);
  std::vector<int> out;
  const std::function<bool(const ValueTree&)> walk = [&](const ValueTree& x) {
    if (x.op == "mul") return std::all_of(x.children.begin(), x.children.end(), walk);
    if (x.op.rfind("ld.param.", 0) != 0 || x.children.size() != 1) return false;
    const std::string& leaf = x.children[0].op;
    if (leaf.rfind("param:", 0) != 0 || leaf.size() < 8 || leaf.substr(leaf.size() - 2) != "+0") return false;
    const int i = f.paramIndex(std::string_view(leaf).substr(6, leaf.size() - 8));
    if (i < 0) return false;
    out.push_back(i);
    return true;
  };
  if (!walk(t) || out.empty() || out.size() > 4) return {};
  return out;
}

}  // namespace detail

using namespace detail;

std::optional<GridStrideLoop> findGridStrideLoop(const Function& f, const Cfg& cfg, const DefUse& du,
                                                 std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<GridStrideLoop> {
    if (why) *why = w;
    return std::nullopt;
  };
  GridStrideLoop g;
  {
    auto loop = findCountedLoop(f, cfg, du, {}, why);
    if (!loop) return std::nullopt;
    g.loop = std::move(*loop);
  }
  const CountedLoop& loop = g.loop;
  const auto start = parseValue(loop.start);
  if (!start || canonicalIndex(*start).text() != kLaunchIndex)
    return fail(
        "its loop does not start at the thread's index in a 1-D launch (blockIdx.x * blockDim.x + "
        "threadIdx.x)");
  const auto stepped = parseValue(loop.step);  // add(<iv>, step)
  std::optional<ValueTree> step;
  if (stepped && stepped->children.size() == 2) {
    for (const ValueTree& c : stepped->children) {
      if (c.op != kInductionToken) step = c;
    }
  }
  if (!step || canonicalIndex(*step).text() != kLaunchThreads)
    return fail("its loop does not step by the launch's thread count (gridDim.x * blockDim.x)");
  // Leaves when gid >= n; goes on while i + step < n.
  const auto guard = comparison(loop.guard);
  const auto latch = comparison(loop.latch);
  if (!guard || !latch || guard->less || !latch->less || guard->type != latch->type || guard->x.text() != loop.start ||
      latch->x.text() != loop.step || guard->y.text() != latch->y.text()) {
    return fail("its loop does not run while its index is below one bound (i < n)");
  }
  g.bound_params = boundParameters(f, guard->y);
  if (g.bound_params.empty()) return fail("its loop's bound is not a parameter or a product of parameters");

  // The body depends on the launch only through i.
  ValueNumbering vn(f, cfg, du);
  size_t compare = loop.latch_stmt;
  for (size_t s = loop.loop_begin; s < loop.latch_stmt; ++s) {
    if (f.body[s].kind == StatementKind::kInstruction && defines(f.body[s].inst, f.body[loop.latch_stmt].inst.guard))
      compare = s;
  }
  const int lb = loop.loop_block;
  for (size_t s = loop.loop_begin; s < loop.loop_end; ++s) {
    if (s == loop.step_stmt || s == compare || s == loop.latch_stmt) continue;
    if (f.body[s].kind != StatementKind::kInstruction) continue;
    std::vector<std::string_view> defs, uses;
    instructionDefsUsesViews(f.body[s].inst, &defs, &uses);
    const std::string line = " (line " + std::to_string(f.body[s].loc.line) + ")";
    for (std::string_view reg : uses) {
      if (isSpecialRegister(reg)) return fail("its loop reads " + std::string(reg) + line);
      if (reg == loop.induction) {
        if (s > loop.step_stmt) return fail("its loop reads its index after stepping it" + line);
        continue;
      }
      const std::vector<size_t> reaching = du.reachingDefs(s, reg);
      bool inside = false;
      for (size_t d : reaching) {
        if (cfg.blockOf(d) != lb) continue;
        if (d >= s) return fail("its loop carries " + std::string(reg) + " from one iteration to the next" + line);
        inside = true;
      }
      if (inside) continue;
      const auto v = vn.registerValue(reg, s);
      if (!v) return fail("its loop reads " + std::string(reg) + ", which is not a value of the parameters" + line);
      if (v->find('%') != std::string::npos)
        return fail("its loop reads " + std::string(reg) + ", computed from the launch (" + *v + ")" + line);
    }
  }
  return g;
}

Function elementPerThread(const Function& f, const GridStrideLoop& g) {
  Function out = f;
  out.body.erase(out.body.begin() + static_cast<std::ptrdiff_t>(g.loop.latch_stmt));
  return out;
}

}  // namespace kfuse::ptx
