// The GUI's before/after comparison: rewriter/compare.h's Comparison, loaded on a worker thread with the open
// pipeline's progress and cancel (session.h).
#pragma once

#include <string>

#include "kfuse/core/status.h"
#include "kfuse/gui/session.h"
#include "kfuse/rewriter/compare.h"

namespace kfuse::gui {

using rewriter::AppliedPlan;
using rewriter::compareTraces;
using rewriter::Comparison;
using rewriter::KernelDelta;
using rewriter::planDirsOfCommandLine;
using rewriter::PlanInput;
using rewriter::Presence;
using rewriter::presenceName;
using rewriter::RangeDelta;
using rewriter::readRecordedPlans;
using rewriter::SideFigures;

// Imports both files with the analyzer's importers (as loadSession does), reads the recorded plans, compares.
// Errors name the file that could not be opened; `control` as for loadSession (progress, cancel between stages).
Expected<Comparison> loadComparison(const std::string& before_path, const std::string& after_path,
                                    const LoadControl& control = {});

}  // namespace kfuse::gui
