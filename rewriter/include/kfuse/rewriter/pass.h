// Passes over the PTX IR and the pass manager that runs a named pipeline of them (MLIR's pass style).
//
// A pass has a name, a one-line description, the function analyses it reads (kfuse/ptx/analysis.h names), and a
// run() that edits a Module in place and returns a Status. The PassManager verifies the module after every pass
// (ptx::verify) and stops at the first failure, naming the pass. Analyses are cached per function in an
// AnalysisManager; a pass that changes a function invalidates its entry (or all, when unsure).
//
// Pipelines are written as `name{key=value,key=value},name2,...` — the syntax of `kfuse ptx opt --passes=`. A
// value that is a list separates its items with '+': `fuse-vertical{kernels=scale+add,name=fused}`.
// Not thread-safe; independent PassManagers may run concurrently on different modules.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/ir.h"
#include "kfuse/rewriter/fusion.h"

namespace kfuse::rewriter {

// The options of one pass in a pipeline: `{key=value,...}`.
class PassOptions {
 public:
  PassOptions() = default;
  explicit PassOptions(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  bool has(std::string_view key) const { return values_.count(std::string(key)) != 0; }
  // The value of `key`, or `fallback` when absent.
  std::string get(std::string_view key, std::string_view fallback = {}) const;
  // A '+'-separated list; empty when absent.
  std::vector<std::string> list(std::string_view key) const;
  Expected<bool> flag(std::string_view key, bool fallback) const;
  Expected<int64_t> integer(std::string_view key, int64_t fallback) const;
  const std::map<std::string, std::string>& values() const { return values_; }
  // An error naming the first key that is not in `known` (a typo must not be ignored).
  Status checkKnown(std::string_view pass, const std::vector<std::string_view>& known) const;

 private:
  std::map<std::string, std::string> values_;
};

// Cached ptx::FunctionAnalyses per function of one module, keyed by name. The module must outlive it.
class AnalysisManager {
 public:
  explicit AnalysisManager(const ptx::Module& module) : module_(&module) {}
  // The analyses of function `f` (which must belong to the module).
  ptx::FunctionAnalyses& of(const ptx::Function& f);
  void invalidate(std::string_view function_name);
  void invalidateAll();

 private:
  const ptx::Module* module_;
  std::map<std::string, std::unique_ptr<ptx::FunctionAnalyses>, std::less<>> cache_;
};

// What passes report besides their Status: one line per noteworthy decision ("forwarded 2 loads of %rd4"), and
// the results a driver builds on (`kfuse rewrite` makes its plan from them).
struct PassLog {
  std::vector<std::string> lines;
  std::vector<FusionResult> fusions;                    // each fusion pass's result, in the order they ran
  std::map<std::string, std::vector<int>> kept_params;  // cleanup{params=true}: per kernel, the positions it kept
  void note(std::string pass, std::string text) { lines.push_back(std::move(pass) + ": " + std::move(text)); }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Names from ptx::FunctionAnalyses (kCfg, kDefUse, ...) this pass reads; shown by `kfuse ptx opt --list`.
  virtual std::vector<std::string_view> requiredAnalyses() const { return {}; }
  virtual Status run(ptx::Module& module, AnalysisManager& analyses, PassLog& log) = 0;
};

// A registered pass: how to make one from its options.
struct PassInfo {
  std::string name;
  std::string description;
  std::string options_help;  // "kernels=A+B (required), name=FUSED, forward=true|false"
  std::function<Expected<std::unique_ptr<Pass>>(const PassOptions&)> create;
};

// The passes for a driver that holds its specs already (the registry makes the same from option text).
std::unique_ptr<Pass> makeFusionPass(VerticalFusion spec);  // fuse-block-level when spec.block_barrier
std::unique_ptr<Pass> makeFusionPass(HorizontalFusion spec);
std::unique_ptr<Pass> makeFusionPass(EpilogueFusion spec);
std::unique_ptr<Pass> makeFusionPass(PrologueFusion spec);
std::unique_ptr<Pass> makeCleanupPass(std::vector<std::string> kernels, bool remove_params);
std::unique_ptr<Pass> makeKeepOnlyPass(std::vector<std::string> kernels);

// Every pass kfuse has, in a stable order.
const std::vector<PassInfo>& passRegistry();
const PassInfo* findPass(std::string_view name);

// One `name{options}` element of a pipeline text.
struct PipelineElement {
  std::string name;
  PassOptions options;
};
// Splits a pipeline text; errors name the column and what was expected.
Expected<std::vector<PipelineElement>> parsePipeline(std::string_view text);

class PassManager {
 public:
  void add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  // Builds the passes of a pipeline text from the registry.
  static Expected<PassManager> fromPipeline(std::string_view text);
  // Runs every pass in order; after each, ptx::verify(module). The first failure names the pass.
  Status run(ptx::Module& module);
  const PassLog& log() const { return log_; }
  size_t size() const { return passes_.size(); }

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  PassLog log_;
};

}  // namespace kfuse::rewriter
