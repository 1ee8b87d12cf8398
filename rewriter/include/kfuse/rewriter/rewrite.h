// From an analyzer candidate to a validated plan directory: the driver behind `kfuse rewrite`.
//
//   candidate (proven) ─▶ the kernels' PTX (module images of the trace, or the application's fatbin)
//                      ─▶ merged module ─▶ fuse-vertical | fuse-horizontal ─▶ cleanup ─▶ keep-only ─▶ fused.ptx
//                      ─▶ ptxas -v per architecture (resources, occupancy) ─▶ re-predicted saving
//                      ─▶ plan (pattern, predicates, parameter/launch mapping, argument sets) ─▶ validation
//
// A candidate that is not proven, a fusion the transforms refuse, PTX that ptxas rejects and a fusion predicted
// to lose are refused with the reason (ErrorCode::kUnsupported); nothing is written to the plan directory then.
// The plan directory is written completely or not at all (built beside it, then renamed into place).
// Not thread-safe per call; independent calls may run concurrently on different plan directories.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/core/status.h"
#include "kfuse/rewriter/plan.h"
#include "kfuse/rewriter/validate.h"

namespace kfuse::rewriter {

struct RewriteOptions {
  bool aggressive = false;                 // drop stores of intermediates the trace shows nobody reads
  std::vector<std::string> archs;          // extra target architectures ("sm_80"); the trace's GPU always
  std::string binary;                      // take PTX from this application's fatbin when the trace has no image
  std::optional<HorizontalLayout> layout;  // force a horizontal layout (default: the one predicted faster)
  bool validate = true;
  ValidationOptions validation;
  size_t max_argument_sets = 3;  // recorded occurrences with distinct argument values to validate on
  std::function<void(const std::string&)> progress;
};

// Why a rewrite was refused or failed, beyond the Status message: the ptxas log and where the fused PTX was
// kept for inspection.
struct RewriteDiagnostics {
  std::string ptxas_log;
  std::string kept_ptx;  // path of the fused PTX ptxas rejected
};

// Rewrites `candidate` of `report` (produced by analyze() on `input`) into `plan_dir`. Returns the plan as
// written; validation failure is not an error: the plan says "failed" and the caller decides (exit 1).
Expected<Plan> rewriteCandidate(const analyzer::ImportResult& input, const analyzer::Report& report,
                                const analyzer::Candidate& candidate, const RewriteOptions& options,
                                const std::string& plan_dir, RewriteDiagnostics* diagnostics = nullptr);

}  // namespace kfuse::rewriter
