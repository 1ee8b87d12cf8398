#include "rename.h"

#include <numeric>
#include <set>

#include "kfuse/ptx/analysis.h"

namespace kfuse::rewriter::detail {

using ptx::Operand;
using ptx::OperandKind;
using ptx::Statement;
using ptx::StatementKind;

namespace {

bool isLocalRegister(std::string_view name) {
  return name.size() > 1 && name[0] == '%' && !ptx::isSpecialRegister(name);
}

// renamedRegister() in place: a copied body renames every register operand, and most names stay within the
// string's inline buffer this way.
void renameRegisterInPlace(std::string& reg, std::string_view tag) {
  reg.insert(1, tag);
}

}  // namespace

std::string renamedRegister(std::string_view reg, std::string_view tag) {
  // Built in place: a fusion renames every register operand it copies.
  std::string out;
  out.reserve(reg.size() + tag.size());
  out += '%';
  out += tag;
  out += reg.substr(1);
  return out;
}
std::string renamedLabel(std::string_view label, std::string_view tag) {
  std::string t(tag);
  if (!t.empty() && t.back() == '_') t.pop_back();
  return std::string(label) + "_" + t;
}
std::string renamedVariable(std::string_view var, std::string_view tag) {
  return std::string(tag) + std::string(var);
}

BodyRenamer::BodyRenamer(const ptx::Function& f, const BodyRenaming& r) : r_(r) {
  for (const Statement& s : f.body) {
    if (s.kind == StatementKind::kLabel) labels_.insert(*s.text);
    if (s.kind == StatementKind::kDeclaration && !isLocalRegister(s.decl->name)) variables_.insert(s.decl->name);
  }
}

bool BodyRenamer::dropped(const Statement& s) {
  return s.kind == StatementKind::kDirective && (s.text->rfind(".loc", 0) == 0 || s.text->rfind(".file", 0) == 0);
}

void BodyRenamer::renameName(std::string& name) const {
  if (isLocalRegister(name)) {
    renameRegisterInPlace(name, r_.tag);
  } else if (labels_.count(name)) {
    name = renamedLabel(name, r_.tag);
  } else if (variables_.count(name)) {
    name = renamedVariable(name, r_.tag);
  } else if (auto p = r_.params.find(name); p != r_.params.end()) {
    name = p->second;
  }
}

void BodyRenamer::rename(Statement& c) const {
  switch (c.kind) {
    case StatementKind::kLabel: c.text = renamedLabel(*c.text, r_.tag); break;
    case StatementKind::kDeclaration:
      if (isLocalRegister(c.decl->name)) {
        renameRegisterInPlace(c.decl.mut().name, r_.tag);
      } else {
        c.decl.mut().name = renamedVariable(c.decl->name, r_.tag);
      }
      break;
    case StatementKind::kInstruction:
      if (!c.inst.guard.empty() && isLocalRegister(c.inst.guard)) renameRegisterInPlace(c.inst.guard, r_.tag);
      forEachOperand(c.inst, [&](Operand& o) {
        if (o.kind == OperandKind::kRegister || o.kind == OperandKind::kSymbol) renameName(o.name);
        if (!o.pair->empty() && isLocalRegister(*o.pair)) renameRegisterInPlace(o.pair.mut(), r_.tag);
      });
      break;
    default: break;
  }
}

std::vector<Statement> renamedBody(const ptx::Function& f, const BodyRenaming& r) {
  const BodyRenamer renamer(f, r);
  std::vector<Statement> out;
  out.reserve(f.body.size());
  for (const Statement& s : f.body) {
    if (BodyRenamer::dropped(s)) continue;
    out.push_back(s);
    renamer.rename(out.back());
  }
  return out;
}

bool replaceReturn(Statement& s, const std::string& label) {
  if (s.kind != StatementKind::kInstruction) return false;
  if (s.inst.opcode != ptx::Opcode::kRet && s.inst.opcode != ptx::Opcode::kExit) return false;
  ptx::Instruction b = ptx::branchTo(label, s.inst.guard, s.inst.guard_negated);
  b.loc = s.inst.loc;
  s.inst = std::move(b);
  return true;
}

int replaceReturns(std::vector<Statement>& body, const std::string& label) {
  int n = 0;
  for (Statement& s : body) n += replaceReturn(s, label);
  return n;
}

void hoistDeclarations(std::vector<Statement>& body, std::vector<Statement>* decls) {
  std::vector<Statement> kept;
  kept.reserve(body.size());
  int depth = 0;
  for (Statement& s : body) {
    if (s.kind == StatementKind::kBlockBegin) ++depth;
    if (s.kind == StatementKind::kBlockEnd) --depth;
    if (depth == 0 && s.kind == StatementKind::kDeclaration) {
      decls->push_back(std::move(s));
    } else {
      kept.push_back(std::move(s));
    }
  }
  body = std::move(kept);
}

std::vector<std::string> registersRead(const ptx::Instruction& in) {
  std::vector<std::string> uses;
  ptx::instructionDefsUses(in, nullptr, &uses);
  return uses;
}

std::vector<std::string> registersWritten(const ptx::Instruction& in) {
  std::vector<std::string> defs;
  ptx::instructionDefsUses(in, &defs, nullptr);
  return defs;
}

std::string uniqueName(const std::string& base, std::map<std::string, int, std::less<>>& taken) {
  std::string name = base;
  for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
  taken.emplace(name, 0);
  return name;
}

Expected<MergedParams> mergeParameters(const std::vector<const ptx::Function*>& parts,
                                       const std::vector<std::pair<ArgRef, ArgRef>>& equal_args,
                                       const std::string& fused_name) {
  // Union-find over the arguments flattened in launch order; the smaller id is the root, so the first argument of
  // a class names its parameter.
  std::vector<size_t> first;
  size_t n = 0;
  for (const ptx::Function* f : parts) {
    first.push_back(n);
    n += f->params.size();
  }
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [a, b] : equal_args) {
    for (ArgRef r : {a, b}) {
      if (r.kernel < 0 || static_cast<size_t>(r.kernel) >= parts.size() || r.param < 0 ||
          static_cast<size_t>(r.param) >= parts[static_cast<size_t>(r.kernel)]->params.size()) {
        return invalidArgument("equal arguments refer to kernel " + std::to_string(r.kernel) + " parameter " +
                               std::to_string(r.param) + ", which does not exist");
      }
    }
    const ptx::VariableDecl& da = parts[static_cast<size_t>(a.kernel)]->params[static_cast<size_t>(a.param)];
    const ptx::VariableDecl& db = parts[static_cast<size_t>(b.kernel)]->params[static_cast<size_t>(b.param)];
    if (da.byteSize() != db.byteSize() || da.elementSize() != db.elementSize()) {
      return invalidArgument("equal arguments " + da.name + " and " + db.name + " have different sizes");
    }
    const size_t ra = find(first[static_cast<size_t>(a.kernel)] + static_cast<size_t>(a.param));
    const size_t rb = find(first[static_cast<size_t>(b.kernel)] + static_cast<size_t>(b.param));
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
  MergedParams out;
  out.index.resize(parts.size());
  out.names.resize(parts.size());
  std::map<size_t, size_t> fused_of_root;
  for (size_t k = 0; k < parts.size(); ++k) {
    for (size_t p = 0; p < parts[k]->params.size(); ++p) {
      auto [it, added] = fused_of_root.emplace(find(first[k] + p), out.decls.size());
      if (added) {
        ptx::VariableDecl d = parts[k]->params[p];
        d.name = fused_name + "_param_" + std::to_string(out.decls.size());
        out.params.push_back({d.name, {}});
        out.decls.push_back(std::move(d));
      }
      out.params[it->second].sources.push_back({static_cast<int>(k), static_cast<int>(p)});
      out.index[k].push_back(it->second);
      out.names[k][parts[k]->params[p].name] = out.decls[it->second].name;
    }
  }
  return out;
}

bool isCtaBarrier(const ptx::Instruction& in) {
  if (in.opcode != ptx::Opcode::kBar && in.opcode != ptx::Opcode::kBarrier) return false;
  return !in.has(ptx::Mod::kWarp);  // bar.warp.sync is a warp-level barrier
}

void collectSymbols(const ptx::Instruction& in, std::set<std::string, std::less<>>* out) {
  std::vector<const Operand*> work;
  for (const Operand& o : in.operands) work.push_back(&o);
  while (!work.empty()) {
    const Operand* o = work.back();
    work.pop_back();
    if (o->kind == OperandKind::kSymbol) out->insert(o->name);
    for (const Operand& e : o->elements) work.push_back(&e);
  }
}

ptx::Function fusedEntry(const std::string& name, std::vector<ptx::VariableDecl> params) {
  ptx::Function f;
  f.linkage = ptx::Linkage::kVisible;
  f.is_entry = true;
  f.name = name;
  f.has_param_list = true;
  f.has_body = true;
  f.params = std::move(params);
  return f;
}

Expected<std::vector<const ptx::Function*>> kernelsNamed(const ptx::Module& module,
                                                         const std::vector<std::string>& names) {
  std::vector<const ptx::Function*> out;
  for (const std::string& name : names) {
    const ptx::Function* f = module.findFunction(name);
    if (!f || !f->is_entry || !f->has_body) {
      return unsupported("no kernel (.entry with a body) named '" + name + "' in the module");
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace kfuse::rewriter::detail
