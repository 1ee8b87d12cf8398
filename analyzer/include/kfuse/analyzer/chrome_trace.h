// A trace as Chrome trace JSON (the Trace Event Format that Perfetto UI and chrome://tracing load): one process
// per GPU with a track per stream (kernels, copies, sets), the application's processes with their NVTX ranges,
// and each fusion candidate of a report as a flow through its member kernels plus an annotated slice on a
// "kfuse candidates" track (kind, legality, confidence, predicted saving in the args).
//
// Times are microseconds from the trace's first event. GPU work is placed at its GPU times; where a trace has
// none (kfuse's emulator, a hook recording without --gpu-time) at the launch call's CPU times, and the JSON says
// so in otherData.placement. Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/trace.h"

namespace kfuse::analyzer {

// `report` may be null (no candidates shown). `source`: the input's path, for otherData.
nlohmann::json toChromeTrace(const core::Trace& trace, const Report* report, const std::string& source);

}  // namespace kfuse::analyzer
