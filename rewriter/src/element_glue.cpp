// What the element-remapped passes share; see element_glue.h.
#include "element_glue.h"

#include <algorithm>
#include <functional>

#include "kfuse/ptx/parser.h"
#include "rename.h"

namespace kfuse::rewriter::detail {

using ptx::Operand;
using ptx::OperandKind;
using ptx::StatementKind;

std::map<std::string, std::string, std::less<>> elementSpecialRegisters(const std::string& prefix) {
  return {{"%tid.x", prefix + "tid"},       {"%ctaid.x", prefix + "ctaid"}, {"%ntid.x", prefix + "ntid"},
          {"%nctaid.x", prefix + "nctaid"}, {"%tid.y", prefix + "zero"},    {"%tid.z", prefix + "zero"},
          {"%ctaid.y", prefix + "zero"},    {"%ctaid.z", prefix + "zero"},  {"%ntid.y", prefix + "one"},
          {"%ntid.z", prefix + "one"},      {"%nctaid.y", prefix + "one"},  {"%nctaid.z", prefix + "one"}};
}

bool otherSpecialRegister(const std::string& name) {
  static const char* kSpecial[] = {"%laneid",
                                   "%warpid",
                                   "%nwarpid",
                                   "%smid",
                                   "%nsmid",
                                   "%lanemask",
                                   "%clock",
                                   "%globaltimer",
                                   "%gridid",
                                   "%cluster",
                                   "%is_explicit_cluster",
                                   "%envreg",
                                   "%dynamic_smem_size",
                                   "%total_smem_size",
                                   "%tid",
                                   "%ntid",
                                   "%ctaid",
                                   "%nctaid",
                                   "%pm",
                                   "%reserved_smem"};
  static const auto mapped = elementSpecialRegisters("");
  if (mapped.count(name)) return false;
  return std::any_of(std::begin(kSpecial), std::end(kSpecial), [&](const char* p) { return name.rfind(p, 0) == 0; });
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

Expected<std::vector<ptx::Statement>> parseGlue(const std::string& param, const std::string& text) {
  const std::string module = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kfuse_glue(.param .u64 " +
                             param + ")\n{\n" + text + "}\n";
  auto m = ptx::parseModule(module, "<glue>");
  if (!m.ok()) return internalError("the fusion's glue code does not parse: " + m.status().message());
  const ptx::Function* f = m->findFunction("kfuse_glue");
  if (!f) return internalError("the fusion's glue code has no body");
  return f->body;
}

}  // namespace kfuse::rewriter::detail
