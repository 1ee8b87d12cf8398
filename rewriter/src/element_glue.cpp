// What the element-remapped passes share; see element_glue.h.
#include "element_glue.h"

#include <algorithm>
#include <functional>

#include "kfuse/ptx/loops.h"
#include "kfuse/ptx/special_registers.h"
#include "rename.h"

namespace kfuse::rewriter::detail {

using ptx::Operand;
using ptx::OperandKind;
using ptx::StatementKind;

std::map<ptx::SpecialRegister, std::string> elementSpecialRegisters(const std::string& prefix) {
  using R = ptx::SpecialRegister;
  return {{R::kTidX, prefix + "tid"},       {R::kCtaidX, prefix + "ctaid"}, {R::kNtidX, prefix + "ntid"},
          {R::kNctaidX, prefix + "nctaid"}, {R::kTidY, prefix + "zero"},    {R::kTidZ, prefix + "zero"},
          {R::kCtaidY, prefix + "zero"},    {R::kCtaidZ, prefix + "zero"},  {R::kNtidY, prefix + "one"},
          {R::kNtidZ, prefix + "one"},      {R::kNctaidY, prefix + "one"},  {R::kNctaidZ, prefix + "one"}};
}

bool otherSpecialRegister(const std::string& name) {
  const auto r = ptx::specialRegister(name);
  if (!r) return false;
  auto c = ptx::geometryComponent(*r);
  return !c;  // every component of the launch geometry has an element register; nothing else does
}

void declareElementThread(ptx::Builder& b) {
  for (const char* name : {"tid", "ctaid", "ntid", "nctaid", "zero", "one"}) b.declare(name, ptx::DataType::kB32);
}

void setElementThread(ptx::Builder& b, const ptx::Operand& element, const core::LaunchShape& shape) {
  const int64_t block = shape.block.x;
  b.emit(ptx::Opcode::kDiv, {".u32"}, {b.named("ctaid"), element, ptx::integerOperand(block)});
  b.emit(ptx::Opcode::kRem, {".u32"}, {b.named("tid"), element, ptx::integerOperand(block)});
  b.emit(ptx::Opcode::kMov, {".u32"}, {b.named("ntid"), ptx::integerOperand(block)});
  b.emit(ptx::Opcode::kMov, {".u32"}, {b.named("nctaid"), ptx::integerOperand(shape.grid.x)});
  b.emit(ptx::Opcode::kMov, {".u32"}, {b.named("zero"), ptx::integerOperand(0)});
  b.emit(ptx::Opcode::kMov, {".u32"}, {b.named("one"), ptx::integerOperand(1)});
}

ElementAddress declareElementAddress(ptx::Builder& b) {
  ElementAddress r;
  r.ptr = b.declare("ptr", ptx::DataType::kB64);
  r.rel = b.declare("rel", ptx::DataType::kB64);
  r.e = b.declare("e", ptx::DataType::kB64);
  return r;
}

void emitDistanceFromElement0(ptx::Builder& b, const ElementAddress& r, const std::string& param,
                              const ptx::Operand& access, int64_t element0_offset) {
  b.emit(ptx::Opcode::kLd, {".param", ".u64"}, {r.ptr, ptx::addressOperand(ptx::symbolOperand(param))});
  b.emit(ptx::Opcode::kCvta, {".to", ".global", ".u64"}, {r.ptr, r.ptr});
  b.emit(ptx::Opcode::kSub, {".s64"}, {r.rel, access.elements[0], r.ptr});
  if (const int64_t off = access.offset - element0_offset; off != 0) {
    b.emit(ptx::Opcode::kAdd, {".s64"}, {r.rel, r.rel, ptx::integerOperand(off)});
  }
}

void useElementRegisters(ptx::Instruction& in, const std::map<ptx::SpecialRegister, std::string>& registers) {
  forEachOperand(in, [&](Operand& o) {
    if (o.kind != OperandKind::kRegister) return;
    const auto r = ptx::specialRegister(o.name);
    if (!r) return;
    if (auto it = registers.find(*r); it != registers.end()) o.name = it->second;
  });
}

std::string elementBodyProblem(const ptx::Function& f, const std::string& role) {
  for (const ptx::Statement& s : f.body) {
    if (s.kind != StatementKind::kInstruction) continue;
    const ptx::Instruction& in = s.inst;
    const std::string at = " (line " + std::to_string(s.loc.line) + ")";
    if (isCtaBarrier(in) || in.opcode == ptx::Opcode::kExit || in.opcode == ptx::Opcode::kCall) {
      return role + " " +
             (in.opcode == ptx::Opcode::kCall   ? "calls a function"
              : in.opcode == ptx::Opcode::kExit ? "executes exit"
                                                : "synchronises its block") +
             at + ": it cannot run as one element's thread inside another kernel";
    }
    for (const Operand& o : in.operands) {
      const std::function<bool(const Operand&)> bad = [&](const Operand& x) {
        if (x.kind == OperandKind::kRegister && otherSpecialRegister(x.name)) return true;
        return std::any_of(x.elements.begin(), x.elements.end(), bad);
      };
      if (bad(o)) return role + " reads a special register an element's thread cannot stand for" + at;
    }
  }
  return "";
}

const ptx::Function* elementPerThread(const ptx::Module& module, const ptx::Function& f,
                                      std::optional<ptx::Function>& storage) {
  ptx::FunctionAnalyses fa(&module, f);
  auto v = ptx::gridStrideElementView(f, fa.cfg(), fa.defUse(), nullptr);
  if (!v) return nullptr;
  storage = std::move(v->function);
  return &*storage;
}

}  // namespace kfuse::rewriter::detail
