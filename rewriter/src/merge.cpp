// Merging PTX modules, so kernels from different modules (different .cu files, a library and the application)
// can be fused into one entry.
//
// Module-scope names are global to a module: a variable, .func or entry that two inputs define differently is
// renamed in the later input (and every reference to it there); one they define identically is kept once. A
// declaration (prototype or .extern) is kept once, before any definition. Debug sections and .file lines are
// dropped: line tables of several inputs cannot be merged by renumbering alone, and a fused kernel has no single
// source anyway.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "kfuse/ptx/printer.h"
#include "kfuse/rewriter/fusion.h"
#include "rename.h"

namespace kfuse::rewriter {

using ptx::Function;
using ptx::Module;
using ptx::Operand;
using ptx::OperandKind;
using ptx::Statement;
using ptx::StatementKind;

namespace {

uint32_t smNumber(const std::string& target) {
  if (target.rfind("sm_", 0) != 0) return 0;
  uint32_t n = 0;
  for (size_t i = 3; i < target.size() && std::isdigit(static_cast<unsigned char>(target[i])); ++i) {
    n = n * 10 + static_cast<uint32_t>(target[i] - '0');
  }
  return n;
}

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Replaces whole identifiers in an initialiser's text.
std::string renameInText(std::string text, const std::map<std::string, std::string>& renames) {
  for (const auto& [from, to] : renames) {
    for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos)) {
      const bool left = pos == 0 || !isIdentChar(text[pos - 1]);
      const bool right = pos + from.size() >= text.size() || !isIdentChar(text[pos + from.size()]);
      if (left && right) {
        text.replace(pos, from.size(), to);
        pos += to.size();
      } else {
        pos += from.size();
      }
    }
  }
  return text;
}

// Applies `renames` to the module-scope names a function refers to (locals shadowing them are left alone).
void renameReferences(Function& f, const std::map<std::string, std::string>& renames) {
  if (renames.empty()) return;
  if (auto it = renames.find(f.name); it != renames.end()) f.name = it->second;
  std::set<std::string> locals;
  for (const Statement& s : f.body) {
    if (s.kind == StatementKind::kDeclaration || s.kind == StatementKind::kLabel) {
      locals.insert(s.kind == StatementKind::kLabel ? *s.text : s.decl->name);
    }
  }
  for (const auto& p : f.params) locals.insert(p.name);
  for (Statement& s : f.body) {
    if (s.kind == StatementKind::kDirective) s.text = renameInText(*s.text, renames);
    if (s.kind != StatementKind::kInstruction) continue;
    detail::forEachOperand(s.inst, [&](Operand& o) {
      if (o.kind != OperandKind::kSymbol || locals.count(o.name)) return;
      if (auto it = renames.find(o.name); it != renames.end()) o.name = it->second;
    });
  }
}

}  // namespace

Expected<Module> mergeModules(const std::vector<Module>& modules, std::vector<Rename>* renames,
                              const std::string& target) {
  if (modules.empty()) return unsupported("nothing to merge");
  Module out;
  out.address_size = 64;
  uint32_t best_version = 0, best_sm = 0;
  for (const Module& m : modules) {
    if (m.address_size != 64) return unsupported("only 64-bit PTX modules can be merged (.address_size 32 found)");
    if (m.versionNumber() > best_version) {
      best_version = m.versionNumber();
      out.version = m.version;
    }
    const std::string t = m.primaryTarget();
    if (smNumber(t) > best_sm || out.target.empty()) {
      best_sm = std::max(best_sm, smNumber(t));
      out.target = t;
    }
  }
  if (!target.empty()) out.target = target;

  // Module-scope names taken so far, and what each is: a printed definition, to tell identical ones apart.
  std::map<std::string, int, std::less<>> taken;
  std::map<std::string, std::string> printed;  // name -> printed text of the kept item
  std::set<std::string> verbatim_seen;
  for (size_t mi = 0; mi < modules.size(); ++mi) {
    const Module& m = modules[mi];
    std::map<std::string, std::string> local_renames;
    // First pass: decide every item's name in the merged module.
    std::vector<std::string> var_names(m.variables.size()), fn_names(m.functions.size());
    std::vector<char> var_keep(m.variables.size(), 1), fn_keep(m.functions.size(), 1);
    for (const ptx::TopLevel& item : m.order) {
      if (item.kind == ptx::TopLevelKind::kVariable) {
        const ptx::VariableDecl& v = m.variables[item.index];
        const std::string text = ptx::printDecl(v);
        std::string name = v.name;
        if (taken.count(name)) {
          if (printed[name] == text || v.linkage == ptx::Linkage::kExtern) {
            var_keep[item.index] = 0;  // the same variable, or a declaration of one already there
          } else {
            name = detail::uniqueName(v.name + "_m" + std::to_string(mi), taken);
            local_renames[v.name] = name;
          }
        } else {
          taken.emplace(name, 0);
        }
        printed.emplace(name, text);
        var_names[item.index] = name;
      } else if (item.kind == ptx::TopLevelKind::kFunction) {
        const Function& f = m.functions[item.index];
        const std::string text = ptx::printFunction(f);
        std::string name = f.name;
        if (taken.count(name)) {
          const std::string& previous = printed[name];
          const bool same = previous == text;
          const bool prototype = !f.has_body;  // a prototype of something already declared or defined
          const bool previous_prototype = previous.find('{') == std::string::npos;
          if (same || prototype) {
            fn_keep[item.index] = 0;
          } else if (previous_prototype && !f.is_entry) {
            printed[name] = text;  // the definition of a function declared earlier: keep both, in order
          } else {
            name = detail::uniqueName(f.name + "_m" + std::to_string(mi), taken);
            local_renames[f.name] = name;
            printed.emplace(name, text);
          }
        } else {
          taken.emplace(name, 0);
          printed.emplace(name, text);
        }
        fn_names[item.index] = name;
      }
    }
    if (renames) {
      for (const auto& [from, to] : local_renames) renames->push_back({mi, from, to});
    }
    // Second pass: copy the kept items, with references renamed.
    for (const ptx::TopLevel& item : m.order) {
      switch (item.kind) {
        case ptx::TopLevelKind::kVariable: {
          if (!var_keep[item.index]) break;
          ptx::VariableDecl v = m.variables[item.index];
          v.name = var_names[item.index];
          v.initializer = renameInText(v.initializer, local_renames);
          out.variables.push_back(std::move(v));
          out.order.push_back({ptx::TopLevelKind::kVariable, out.variables.size() - 1});
          break;
        }
        case ptx::TopLevelKind::kFunction: {
          if (!fn_keep[item.index]) break;
          Function f = m.functions[item.index];
          renameReferences(f, local_renames);
          f.name = fn_names[item.index];
          out.functions.push_back(std::move(f));
          out.order.push_back({ptx::TopLevelKind::kFunction, out.functions.size() - 1});
          break;
        }
        case ptx::TopLevelKind::kVerbatim: {
          const std::string& text = m.verbatim[item.index];
          if (text.rfind(".file", 0) == 0 || text.rfind(".section", 0) == 0) break;
          if (!verbatim_seen.insert(text).second) break;
          out.verbatim.push_back(text);
          out.order.push_back({ptx::TopLevelKind::kVerbatim, out.verbatim.size() - 1});
          break;
        }
      }
    }
  }
  // Line directives would point at .file entries that were dropped.
  for (Function& f : out.functions) {
    std::erase_if(f.body, [](const Statement& s) {
      return s.kind == StatementKind::kDirective && (s.text->rfind(".loc", 0) == 0 || s.text->rfind(".file", 0) == 0);
    });
  }
  KFUSE_RETURN_IF_ERROR(ptx::verify(out));
  return out;
}

}  // namespace kfuse::rewriter
