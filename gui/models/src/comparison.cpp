#include "kfuse/gui/comparison.h"

#include "kfuse/core/cancel.h"

namespace kfuse::gui {

Expected<Comparison> loadComparison(const std::string& before_path, const std::string& after_path,
                                    const LoadControl& control) {
  auto progress = [&](int pct, const char* stage) {
    if (control.progress) control.progress(pct, stage);
  };
  const core::CancelScope scope(control.cancel);
  // The importers' messages name the file; the side is said too, for a pair of similar names.
  const auto import = [](const char* side, const std::string& path) -> Expected<analyzer::ImportResult> {
    auto r = analyzer::importTrace(path);
    if (r.ok() || isCancelled(r.status())) return r;
    Status s = r.status();
    if (s.message().find(path) == std::string::npos) s = s.withContext(path);
    return s.withContext(std::string("the trace ") + side);
  };
  progress(0, "importing the trace before");
  KFUSE_ASSIGN_OR_RETURN(analyzer::ImportResult before, import("before", before_path));
  KFUSE_RETURN_IF_CANCELLED();
  progress(40, "importing the trace after");
  KFUSE_ASSIGN_OR_RETURN(analyzer::ImportResult after, import("after", after_path));
  KFUSE_RETURN_IF_CANCELLED();
  progress(80, "comparing");
  Comparison c = compareTraces(before.trace, after.trace, readRecordedPlans(after.trace, after_path));
  c.before_path = before_path;
  c.after_path = after_path;
  progress(100, "done");
  return c;
}

}  // namespace kfuse::gui
