#include "kfuse/ptx/printer.h"

namespace kfuse::ptx {
namespace {

void appendOperand(std::string& out, const Operand& o) {
  if (o.negated) out += '!';
  switch (o.kind) {
    case OperandKind::kRegister:
      out += o.name;
      if (!o.pair->empty()) {
        out += '|';
        out += *o.pair;
      }
      return;
    case OperandKind::kImmediate:
    case OperandKind::kSink: out += o.name; return;
    case OperandKind::kSymbol:
      out += o.name;
      if (o.offset > 0) {
        out += '+';
        out += std::to_string(o.offset);
      } else if (o.offset < 0) {
        out += std::to_string(o.offset);
      }
      return;
    case OperandKind::kAddress:
      out += '[';
      for (size_t i = 0; i < o.elements.size(); ++i) {
        if (i == 1) {
          if (o.offset != 0) {
            out += '+';
            out += std::to_string(o.offset);
          }
        }
        if (i > 0) out += ", ";
        appendOperand(out, o.elements[i]);
      }
      if (o.elements.size() <= 1 && o.offset != 0) {
        out += '+';
        out += std::to_string(o.offset);
      }
      out += ']';
      return;
    case OperandKind::kVector:
    case OperandKind::kList: {
      out += o.kind == OperandKind::kVector ? '{' : '(';
      for (size_t i = 0; i < o.elements.size(); ++i) {
        if (i > 0) out += ", ";
        appendOperand(out, o.elements[i]);
      }
      out += o.kind == OperandKind::kVector ? '}' : ')';
      return;
    }
  }
}

}  // namespace

std::string_view Instruction::opcodeText() const {
  return opcode == Opcode::kUnknown ? std::string_view(spelled->unknown_opcode) : opcodeName(opcode);
}

std::string_view Instruction::modifierText(const Modifier& m) const {
  switch (m.kind) {
    case ModKind::kSpace: return spaceName(m.asSpace());
    case ModKind::kType: return typeName(m.asType());
    case ModKind::kMod: return modName(m.asMod());
    case ModKind::kOther: {
      const std::vector<std::string>& other = spelled->other_modifiers;
      return m.value < other.size() ? std::string_view(other[m.value]) : "";
    }
  }
  return "";
}

std::string_view VariableDecl::typeText() const {
  return type != DataType::kNone ? typeName(type) : std::string_view(unknown_type);
}

std::string Instruction::fullOpcode() const {
  std::string s(opcodeText());
  for (const Modifier& m : modifiers) s += modifierText(m);
  return s;
}

namespace {

void appendInstruction(std::string& out, const Instruction& in) {
  if (!in.guard.empty()) {
    out += '@';
    if (in.guard_negated) out += '!';
    out += in.guard;
    out += ' ';
  }
  out += in.opcodeText();
  for (const Modifier& m : in.modifiers) out += in.modifierText(m);
  for (size_t i = 0; i < in.operands.size(); ++i) {
    out += i == 0 ? "\t" : ", ";
    appendOperand(out, in.operands[i]);
  }
  out += ';';
}

void appendDecl(std::string& out, const VariableDecl& d) {
  if (d.linkage != Linkage::kNone) {
    out += linkageName(d.linkage);
    out += ' ';
  }
  out += spaceName(d.space);
  for (const auto& a : d.attributes) {
    out += ' ';
    out += a;
  }
  if (d.align) {
    out += " .align ";
    out += std::to_string(d.align);
  }
  if (d.vector) {
    out += " .v";
    out += std::to_string(d.vector);
  }
  if (d.type != DataType::kNone) {
    out += ' ';
    out += typeName(d.type);
  } else if (!d.unknown_type.empty()) {
    out += ' ';
    out += d.unknown_type;
  }
  if (d.is_ptr) {
    out += " .ptr";
    if (d.ptr_space != StateSpace::kNone) {
      out += ' ';
      out += spaceName(d.ptr_space);
    }
    if (d.ptr_align) {
      out += " .align ";
      out += std::to_string(d.ptr_align);
    }
  }
  out += ' ';
  out += d.name;
  if (d.range >= 0) {
    out += '<';
    out += std::to_string(d.range);
    out += '>';
  }
  for (int64_t n : d.dims) {
    out += '[';
    if (n > 0) out += std::to_string(n);
    out += ']';
  }
  if (!d.initializer.empty()) {
    out += " = ";
    out += d.initializer;
  }
}

void appendParamList(std::string& out, const std::vector<VariableDecl>& params, bool multiline) {
  out += '(';
  for (size_t i = 0; i < params.size(); ++i) {
    if (i > 0) out += ',';
    out += multiline ? "\n\t" : (i > 0 ? " " : "");
    appendDecl(out, params[i]);
  }
  if (multiline && !params.empty()) out += '\n';
  out += ')';
}

void appendFunction(std::string& out, const Function& f) {
  if (f.linkage != Linkage::kNone) {
    out += linkageName(f.linkage);
    out += ' ';
  }
  out += f.is_entry ? ".entry " : ".func ";
  if (!f.is_entry && !f.returns.empty()) {
    appendParamList(out, f.returns, /*multiline=*/false);
    out += ' ';
  }
  out += f.name;
  if (f.has_param_list) appendParamList(out, f.params, /*multiline=*/true);
  out += '\n';
  for (const auto& d : f.directives) {
    out += d.name;
    for (size_t i = 0; i < d.values.size(); ++i) {
      out += i == 0 ? " " : ", ";
      out += std::to_string(d.values[i]);
    }
    out += '\n';
  }
  if (!f.has_body) {
    out += ";\n";
    return;
  }
  out += "{\n";
  int depth = 1;
  for (const auto& st : f.body) {
    switch (st.kind) {
      case StatementKind::kLabel:
        out += *st.text;
        out += ":\n";
        break;
      case StatementKind::kBlockBegin:
        out.append(static_cast<size_t>(depth), '\t');
        out += "{\n";
        ++depth;
        break;
      case StatementKind::kBlockEnd:
        if (depth > 1) --depth;
        out.append(static_cast<size_t>(depth), '\t');
        out += "}\n";
        break;
      case StatementKind::kDeclaration:
        out.append(static_cast<size_t>(depth), '\t');
        appendDecl(out, *st.decl);
        out += ";\n";
        break;
      case StatementKind::kDirective:
        out.append(static_cast<size_t>(depth), '\t');
        out += *st.text;
        out += '\n';
        break;
      case StatementKind::kInstruction:
        out.append(static_cast<size_t>(depth), '\t');
        appendInstruction(out, st.inst);
        out += '\n';
        break;
    }
  }
  out += "}\n";
}

}  // namespace

std::string printOperand(const Operand& operand) {
  std::string s;
  appendOperand(s, operand);
  return s;
}

std::string printInstruction(const Instruction& inst) {
  std::string s;
  appendInstruction(s, inst);
  return s;
}

std::string printDecl(const VariableDecl& decl) {
  std::string s;
  appendDecl(s, decl);
  return s;
}

std::string printFunction(const Function& function) {
  std::string s;
  appendFunction(s, function);
  return s;
}

std::string printModule(const Module& m) {
  std::string out;
  out.reserve(4096 + m.functions.size() * 4096);
  out += ".version ";
  out += m.version;
  out += "\n.target ";
  out += m.target;
  out += "\n.address_size ";
  out += std::to_string(m.address_size);
  out += "\n\n";
  for (const auto& item : m.order) {
    switch (item.kind) {
      case TopLevelKind::kVariable:
        appendDecl(out, m.variables[item.index]);
        out += ";\n";
        break;
      case TopLevelKind::kFunction:
        appendFunction(out, m.functions[item.index]);
        out += '\n';
        break;
      case TopLevelKind::kVerbatim:
        out += m.verbatim[item.index];
        out += '\n';
        break;
    }
  }
  return out;
}

}  // namespace kfuse::ptx
