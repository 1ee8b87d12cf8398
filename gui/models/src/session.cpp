#include "kfuse/gui/session.h"

#include <span>

#include "kfuse/core/cancel.h"
#include "kfuse/core/trace_review.h"
#include "kfuse/core/trace_store.h"
#include "kfuse/ptx/fatbin.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"

namespace kfuse::gui {

bool isCancelled(const Status& s) {
  return s.code() == ErrorCode::kCancelled;
}

Expected<std::shared_ptr<const Session>> loadSession(const std::string& path, const analyzer::AnalysisOptions& options,
                                                     const LoadControl& control) {
  auto progress = [&](int pct, const char* stage) {
    if (control.progress) control.progress(pct, stage);
  };
  // The importers and the analysis stop early when Cancel sets the flag (core/cancel.h).
  const core::CancelScope scope(control.cancel);
  auto session = std::make_shared<Session>();
  session->path = path;
  session->options = options;

  progress(0, "importing");
  KFUSE_ASSIGN_OR_RETURN(session->input, analyzer::importTrace(path));
  KFUSE_RETURN_IF_CANCELLED();
  progress(50, "analysing");
  KFUSE_ASSIGN_OR_RETURN(session->report, analyzer::analyze(session->input, path, options));
  KFUSE_RETURN_IF_CANCELLED();
  progress(85, "building the timeline");
  session->timeline = buildTimeline(session->input.trace, session->report, &session->input.cpu_ops,
                                    &session->input.launch_external_ids);
  for (const analyzer::Candidate& c : session->report.candidates) {
    session->candidate_keys.push_back(core::reviewCandidateKey(analyzer::candidateKindName(c.kind), c.mangled_names));
  }
  KFUSE_RETURN_IF_CANCELLED();
  progress(100, "done");
  return std::shared_ptr<const Session>(std::move(session));
}

Expected<analyzer::Report> analyzeForGpu(const Session& session, const std::string& gpu_short_name) {
  analyzer::AnalysisOptions options = session.options;
  options.gpu = gpu_short_name;
  return analyzer::analyze(session.input, session.path, options);
}

Status saveAsKfuseTrace(const Session& session, const std::string& path) {
  KFUSE_ASSIGN_OR_RETURN(auto writer, core::TraceWriter::create(path));
  KFUSE_RETURN_IF_ERROR(writer->write(session.input.trace));
  return writer->close();
}

Expected<std::string> kernelPtx(const core::Trace& trace, core::Id function_id) {
  const core::KernelFunction* fn = nullptr;
  for (const core::KernelFunction& f : trace.functions) {
    if (f.id == function_id) fn = &f;
  }
  if (!fn) return notFound("function " + std::to_string(function_id) + " is not in the trace");
  // The kernel's own module first, then any module image that defines it.
  std::vector<const core::Module*> modules;
  for (const core::Module& m : trace.modules) {
    if (m.id == fn->module_id)
      modules.insert(modules.begin(), &m);
    else
      modules.push_back(&m);
  }
  auto fromText = [&](std::string_view text) -> std::optional<std::string> {
    if (text.find(fn->mangled_name) == std::string_view::npos) return std::nullopt;
    auto module = ptx::parseModule(text);
    if (!module.ok()) return std::nullopt;
    const ptx::Function* f = module->findFunction(fn->mangled_name);
    if (!f || !f->has_body) return std::nullopt;
    return ptx::printFunction(*f);
  };
  for (const core::Module* m : modules) {
    if (m->image.empty()) continue;
    if (m->kind == core::ImageKind::kPtx) {
      std::string_view text(reinterpret_cast<const char*>(m->image.data()), m->image.size());
      if (auto s = fromText(text)) return *s;
    } else if (m->kind == core::ImageKind::kFatbin) {
      auto entries = ptx::listEntries(std::span<const uint8_t>(m->image));
      if (!entries.ok()) continue;
      for (const ptx::FatbinEntry& e : *entries) {
        if (e.kind != ptx::EntryKind::kPtx) continue;
        auto text = ptx::extractEntry(std::span<const uint8_t>(m->image), e);
        if (!text.ok()) continue;
        if (auto s = fromText(*text)) return *s;
      }
    }
  }
  return notFound("the trace holds no PTX for " + fn->mangled_name +
                  " (imported traces carry no module images; kfuse recordings capture them)");
}

}  // namespace kfuse::gui
