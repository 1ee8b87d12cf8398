#include "kfuse/ptx/ir.h"

#include <array>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kfuse/ptx/special_registers.h"

namespace kfuse::ptx {

std::optional<int64_t> Operand::intValue() const {
  if (kind != OperandKind::kImmediate) return std::nullopt;
  return parseIntegerLiteral(name);
}

std::optional<int64_t> parseIntegerLiteral(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.remove_suffix(1);
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;  // float literal (0f..., 0d...) or garbage
    }
    if (d >= base) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  // negate in unsigned arithmetic: "-9223372036854775808" is valid and must not overflow
  return static_cast<int64_t>(neg ? 0 - v : v);
}

bool Instruction::has(Mod m) const {
  for (const Modifier& x : modifiers) {
    if (x.asMod() == m) return true;
  }
  return false;
}

bool Instruction::has(StateSpace s) const {
  for (const Modifier& x : modifiers) {
    if (x.asSpace() == s) return true;
  }
  return false;
}

bool Instruction::has(DataType t) const {
  for (const Modifier& x : modifiers) {
    if (x.asType() == t) return true;
  }
  return false;
}

bool Instruction::hasBaseSpace(StateSpace base) const {
  for (const Modifier& x : modifiers) {
    if (x.kind == ModKind::kSpace && baseSpace(x.asSpace()) == base) return true;
  }
  return false;
}

StateSpace Instruction::space() const {
  for (const Modifier& x : modifiers) {
    if (x.kind == ModKind::kSpace) return x.asSpace();
  }
  return StateSpace::kNone;
}

size_t Instruction::typeCount() const {
  size_t n = 0;
  for (const Modifier& x : modifiers) n += x.kind == ModKind::kType;
  return n;
}

DataType Instruction::typeAt(size_t i) const {
  for (const Modifier& x : modifiers) {
    if (x.kind == ModKind::kType && i-- == 0) return x.asType();
  }
  return DataType::kNone;
}

DataType Instruction::type() const {
  for (auto it = modifiers.rbegin(); it != modifiers.rend(); ++it) {
    if (it->kind == ModKind::kType) return it->asType();
  }
  return DataType::kNone;
}

uint32_t VariableDecl::elementSize() const {
  // .pred occupies a byte; packed types count all their elements (.f16x2 is 4 bytes)
  const uint32_t bits = type == DataType::kPred ? 8 : typeElementBits(type) * typeElements(type);
  if (bits == 0) return 0;
  const uint32_t width = vector ? vector : 1;
  return (bits + 7) / 8 * width;
}

uint64_t VariableDecl::byteSize() const {
  uint64_t n = elementSize();
  for (int64_t d : dims) {
    if (d <= 0) return 0;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

int Function::paramIndex(std::string_view n) const {
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

const Function* Module::findFunction(std::string_view name) const {
  for (const auto& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Function* Module::findFunction(std::string_view name) {
  for (auto& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Module::primaryTarget() const {
  size_t end = target.find_first_of(", \t");
  return target.substr(0, end);
}

uint32_t Module::versionNumber() const {
  size_t dot = version.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= version.size()) return 0;
  uint32_t major = 0, minor = 0;
  for (size_t i = 0; i < dot; ++i) {
    if (version[i] < '0' || version[i] > '9') return 0;
    major = major * 10 + static_cast<uint32_t>(version[i] - '0');
  }
  for (size_t i = dot + 1; i < version.size(); ++i) {
    if (version[i] < '0' || version[i] > '9') return 0;
    minor = minor * 10 + static_cast<uint32_t>(version[i] - '0');
  }
  return major * 10 + minor;
}

std::optional<int64_t> predefinedConstant(std::string_view name) {
  if (name == "WARP_SZ" || name == "%WARP_SZ") return 32;
  return std::nullopt;
}

bool isSpecialRegister(std::string_view name) {
  return specialRegister(name).has_value() || predefinedConstant(name).has_value();
}

namespace {

std::string where(const SourceLoc& loc, const std::string& fn) {
  std::string s;
  if (loc.line) s = std::to_string(loc.line) + ":" + std::to_string(loc.column) + ": ";
  return s + "in " + fn + ": ";
}

// Registers declared in one scope: exact names plus `%r<N>` ranges (prefix -> count).
struct Scope {
  std::unordered_set<std::string> names;
  std::unordered_map<std::string, int64_t> ranges;
};

bool declaredIn(const std::vector<Scope>& scopes, const std::string& reg) {
  // split "%r12" into "%r" and 12 for range lookups
  size_t i = reg.size();
  while (i > 0 && reg[i - 1] >= '0' && reg[i - 1] <= '9') --i;
  int64_t idx = -1;
  if (i < reg.size() && reg.size() - i < 10) idx = std::stoll(reg.substr(i));
  const std::string prefix = reg.substr(0, i);
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    if (it->names.count(reg)) return true;
    if (idx >= 0) {
      auto r = it->ranges.find(prefix);
      if (r != it->ranges.end() && idx < r->second) return true;
    }
  }
  return false;
}

Status checkOperand(const Operand& o, const std::vector<Scope>& scopes, const SourceLoc& loc, const std::string& fn) {
  switch (o.kind) {
    case OperandKind::kRegister:
      for (const std::string* r : {&o.name, &*o.pair}) {
        if (r->empty() || isSpecialRegister(*r)) continue;
        if (!declaredIn(scopes, *r)) return badFormat(where(loc, fn) + "register " + *r + " is not declared");
      }
      return {};
    case OperandKind::kAddress:
    case OperandKind::kVector:
    case OperandKind::kList:
      for (const auto& e : o.elements) KFUSE_RETURN_IF_ERROR(checkOperand(e, scopes, loc, fn));
      return {};
    default: return {};
  }
}

}  // namespace

Status verify(const Function& f) {
  if (f.name.empty()) return badFormat("function without a name");
  if (f.is_entry && !f.has_body) return badFormat(where(f.loc, f.name) + ".entry without a body");
  if (f.is_entry && !f.returns.empty()) return badFormat(where(f.loc, f.name) + ".entry cannot return values");
  std::unordered_set<std::string> labels;
  std::vector<Scope> scopes(1);
  for (const auto& p : f.params) {
    if (!scopes[0].names.insert(p.name).second)
      return badFormat(where(p.loc, f.name) + "duplicate parameter " + p.name);
  }
  for (const auto& p : f.returns) scopes[0].names.insert(p.name);
  for (const auto& st : f.body) {
    if (st.kind == StatementKind::kLabel && !labels.insert(*st.text).second)
      return badFormat(where(st.loc, f.name) + "duplicate label " + *st.text);
  }
  int depth = 0;
  for (const auto& st : f.body) {
    switch (st.kind) {
      case StatementKind::kBlockBegin:
        ++depth;
        scopes.emplace_back();
        break;
      case StatementKind::kBlockEnd:
        if (--depth < 0) return badFormat(where(st.loc, f.name) + "'}' without a matching '{'");
        scopes.pop_back();
        break;
      case StatementKind::kDeclaration:
        if (st.decl->range >= 0) {
          scopes.back().ranges[st.decl->name] = st.decl->range;
        } else {
          scopes.back().names.insert(st.decl->name);
        }
        break;
      case StatementKind::kInstruction: {
        const Instruction& in = st.inst;
        if (in.opcode == Opcode::kUnknown && in.spelled->unknown_opcode.empty())
          return badFormat(where(st.loc, f.name) + "instruction without an opcode");
        if (!in.guard.empty() && !isSpecialRegister(in.guard) && !declaredIn(scopes, in.guard))
          return badFormat(where(st.loc, f.name) + "guard predicate " + in.guard + " is not declared");
        for (const auto& o : in.operands) KFUSE_RETURN_IF_ERROR(checkOperand(o, scopes, st.loc, f.name));
        if (in.opcode == Opcode::kBra || in.opcode == Opcode::kBrx) {
          if (in.operands.empty()) return badFormat(where(st.loc, f.name) + "branch without a target");
          const Operand& tgt = in.operands[0];
          if (in.opcode == Opcode::kBra && tgt.kind == OperandKind::kSymbol && !labels.count(tgt.name))
            return badFormat(where(st.loc, f.name) + "branch to undefined label " + tgt.name);
        }
        break;
      }
      default: break;
    }
  }
  if (depth != 0) return badFormat(where(f.loc, f.name) + "unbalanced '{' in the body");
  return {};
}

Status verify(const Module& m) {
  if (m.version.empty() || m.versionNumber() == 0) return badFormat("module has no valid .version");
  if (m.target.empty()) return badFormat("module has no .target");
  std::unordered_set<std::string> names;
  for (const auto& f : m.functions) {
    // a declaration may precede the definition
    if (f.has_body && !names.insert(f.name).second) return badFormat("function " + f.name + " defined twice");
    KFUSE_RETURN_IF_ERROR(verify(f));
  }
  return {};
}

}  // namespace kfuse::ptx
