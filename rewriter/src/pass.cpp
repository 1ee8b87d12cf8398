#include "kfuse/rewriter/pass.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kfuse::rewriter {

std::string PassOptions::get(std::string_view key, std::string_view fallback) const {
  auto it = values_.find(std::string(key));
  return it == values_.end() ? std::string(fallback) : it->second;
}

std::vector<std::string> PassOptions::list(std::string_view key) const {
  std::vector<std::string> out;
  const std::string v = get(key);
  size_t start = 0;
  while (start <= v.size() && !v.empty()) {
    const size_t plus = v.find('+', start);
    out.push_back(v.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return out;
}

Expected<bool> PassOptions::flag(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  const std::string v = get(key);
  if (v == "true" || v == "1" || v == "yes" || v.empty()) return true;
  if (v == "false" || v == "0" || v == "no") return false;
  return invalidArgument("option " + std::string(key) + "=" + v + ": expected true or false");
}

Expected<int64_t> PassOptions::integer(std::string_view key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const std::string v = get(key);
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return invalidArgument("option " + std::string(key) + "=" + v + ": expected an integer");
  }
  return n;
}

Status PassOptions::checkKnown(std::string_view pass, const std::vector<std::string_view>& known) const {
  for (const auto& [key, value] : values_) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return invalidArgument("pass " + std::string(pass) + " has no option '" + key +
                             "' (options: " + (list.empty() ? "none" : list) + ")");
    }
  }
  return {};
}

ptx::FunctionAnalyses& AnalysisManager::of(const ptx::Function& f) {
  auto it = cache_.find(f.name);
  // A function edited in place keeps its name; one that moved (the module's vector grew) is a different object.
  if (it == cache_.end() || &it->second->function() != &f) {
    it = cache_.insert_or_assign(f.name, std::make_unique<ptx::FunctionAnalyses>(module_, f)).first;
  }
  return *it->second;
}

void AnalysisManager::invalidate(std::string_view function_name) {
  if (auto it = cache_.find(function_name); it != cache_.end()) cache_.erase(it);
}

void AnalysisManager::invalidateAll() {
  cache_.clear();
}

Expected<std::vector<PipelineElement>> parsePipeline(std::string_view text) {
  std::vector<PipelineElement> out;
  size_t i = 0;
  auto fail = [&](const std::string& what) {
    return invalidArgument("pipeline '" + std::string(text) + "', column " + std::to_string(i + 1) + ": " + what);
  };
  auto isNameChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  while (i < text.size()) {
    PipelineElement e;
    const size_t start = i;
    while (i < text.size() && isNameChar(text[i])) ++i;
    if (i == start) return fail("expected a pass name");
    e.name = std::string(text.substr(start, i - start));
    std::map<std::string, std::string> values;
    if (i < text.size() && text[i] == '{') {
      ++i;
      while (i < text.size() && text[i] != '}') {
        const size_t key_start = i;
        while (i < text.size() && isNameChar(text[i])) ++i;
        if (i == key_start) return fail("expected an option name");
        std::string key(text.substr(key_start, i - key_start));
        std::string value;
        if (i < text.size() && text[i] == '=') {
          ++i;
          const size_t value_start = i;
          while (i < text.size() && text[i] != ',' && text[i] != '}') ++i;
          value = std::string(text.substr(value_start, i - value_start));
        }
        if (!values.emplace(key, value).second) return fail("option '" + key + "' given twice");
        if (i < text.size() && text[i] == ',') ++i;
      }
      if (i >= text.size()) return fail("expected '}'");
      ++i;
    }
    e.options = PassOptions(std::move(values));
    out.push_back(std::move(e));
    if (i < text.size()) {
      if (text[i] != ',') return fail("expected ',' between passes");
      ++i;
      if (i == text.size()) return fail("expected a pass name after ','");
    }
  }
  if (out.empty()) return invalidArgument("empty pipeline: name at least one pass (kfuse ptx opt --list shows them)");
  return out;
}

Expected<PassManager> PassManager::fromPipeline(std::string_view text) {
  auto elements = parsePipeline(text);
  if (!elements.ok()) return elements.status();
  PassManager pm;
  for (const PipelineElement& e : *elements) {
    const PassInfo* info = findPass(e.name);
    if (!info) {
      std::string names;
      for (const PassInfo& p : passRegistry()) names += (names.empty() ? "" : ", ") + p.name;
      return invalidArgument("unknown pass '" + e.name + "' (passes: " + names + ")");
    }
    auto pass = info->create(e.options);
    if (!pass.ok()) return pass.status().withContext("pass " + e.name);
    pm.add(std::move(pass).value());
  }
  return pm;
}

Status PassManager::run(ptx::Module& module) {
  AnalysisManager analyses(module);
  for (auto& pass : passes_) {
    Status s = pass->run(module, analyses, log_);
    if (!s.ok()) return s.withContext("pass " + std::string(pass->name()));
    // Passes edit the module freely: cached analyses of any function may be stale now.
    analyses.invalidateAll();
    Status v = ptx::verify(module);
    if (!v.ok()) {
      return internalError("pass " + std::string(pass->name()) + " produced invalid PTX: " + v.message());
    }
  }
  return {};
}

}  // namespace kfuse::rewriter
