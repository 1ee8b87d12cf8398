// The roofline's points as plain values, taken from the analysis report alone: each kernel of the per-kernel table
// with both a byte and a FLOP count at its arithmetic intensity and achieved FLOP/s, the selected candidate's members
// among them, and the fused kernel the cost model predicts. Each point says whether its counts were measured
// (profiler metrics, the emulator's counters) or are the analyzer's estimates (from operator shapes, the PTX or the
// buffers' extents), so that a view can draw the two apart. No Qt: the view (app/roofline_view) draws these.
#pragma once

#include <string>
#include <vector>

#include "kfuse/analyzer/analysis.h"

namespace kfuse::gui {

enum class RooflineRole { kKernel, kMember, kFused };

struct RooflineMark {
  RooflineRole role = RooflineRole::kKernel;
  std::string name;                        // the kernel's name, or "#3 fused"
  double intensity = 0;                    // FLOP per DRAM byte
  double flops_per_s = 0;                  // achieved (kernels, members) or predicted (fused)
  bool estimated = false;                  // bytes or FLOPs are the analyzer's estimates, not counted
  std::string bytes_source, flops_source;  // the report's source names ("measured", "operator-estimate", ...)
  bool time_from_roof = false;             // the trace has no GPU time for it: placed at the time the roofline allows
};

struct RooflineChart {
  std::vector<RooflineMark> marks;  // kernels first, then the candidate's members, then its fused point
  // "estimated from operator shapes", "estimated from the PTX", ...: what the estimated kernel and member marks rest
  // on, for a legend; empty when none is estimated. fused_legend: the same for the fused kernel's prediction.
  std::string estimate_legend, fused_legend;
  std::string note;  // a sentence on what is shown, or on why the candidate has no point
};

// Whether a count from `source` (a report source name) was measured rather than estimated.
bool countedSource(const std::string& source);

// The points of `report` with candidate `candidate` (an index into report.candidates; -1: none) picked out.
RooflineChart rooflineChart(const analyzer::Report& report, int candidate);

}  // namespace kfuse::gui
