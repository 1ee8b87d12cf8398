// A loaded trace: what the importer made of the file, the analysis report, and the timeline built from both.
// loadSession() is the whole "open" pipeline with progress and cancellation, free of Qt so that it runs on any
// thread (the GUI runs it on a worker; `kfuse analyze` runs the same importer and analyze()). A Session is
// immutable after loading and shared read-only between views and background jobs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/analyzer/importer.h"
#include "kfuse/core/status.h"
#include "kfuse/gui/timeline_data.h"

namespace kfuse::gui {

struct Session {
  std::string path;
  analyzer::ImportResult input;
  analyzer::AnalysisOptions options;
  analyzer::Report report;
  TimelineData timeline;
  std::vector<std::string> candidate_keys;  // core::reviewCandidateKey of each report candidate

  // A kfuse trace (SQLite): review decisions can be stored in it and plans made from it.
  bool isKfuseTrace() const { return input.format == "kfuse"; }
  const analyzer::Candidate* candidate(int index) const {
    return index >= 0 && static_cast<size_t>(index) < report.candidates.size() ? &report.candidates[index] : nullptr;
  }
};

// Stage names and progress in percent; `cancel` is polled between stages (the importer and the analysis run to
// the end of their stage once started; the result is then dropped).
struct LoadControl {
  std::function<void(int percent, const std::string& stage)> progress;
  const std::atomic<bool>* cancel = nullptr;
};

// Whether `s` is what a cancelled load returns (ErrorCode::kCancelled).
bool isCancelled(const Status& s);

// import (the analyzer's importers, sniffing the format) -> analyze -> timeline. Errors are the importer's or the
// analysis's Status, unchanged (they name the file).
Expected<std::shared_ptr<const Session>> loadSession(const std::string& path, const analyzer::AnalysisOptions& options,
                                                     const LoadControl& control = {});

// The report for the same input costed for another GPU of the spec table (the detail's GPU selector).
Expected<analyzer::Report> analyzeForGpu(const Session& session, const std::string& gpu_short_name);

// Writes the imported trace as a kfuse trace (so that review decisions can be kept in it). Fails if `path` exists.
Status saveAsKfuseTrace(const Session& session, const std::string& path);

// The PTX text of one kernel (its .entry, printed from the parsed module image of the trace), or why there is none.
Expected<std::string> kernelPtx(const core::Trace& trace, core::Id function_id);

}  // namespace kfuse::gui
