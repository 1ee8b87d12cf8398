// The timeline's data: every GPU operation (kernel, copy, set) on one lane per device and stream, and the
// application's NVTX / user-annotation ranges on lanes per thread (one row per nesting depth), each lane sorted by
// start time with a running maximum of end times, so that the slices visible in any time window are found by
// binary search (culling) however many there are. Built once per loaded trace; plain values, no Qt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/trace.h"

namespace kfuse::gui {

enum class SliceKind : uint8_t { kKernel, kMemcpy, kMemset, kRange, kCpuOp };

struct Slice {
  int64_t start = 0, end = 0;  // ns on the trace's clock
  uint32_t record_index = 0;   // into trace.launches / memcpys / memsets / nvtx_ranges, or ImportResult::cpu_ops
  SliceKind kind = SliceKind::kKernel;
  int32_t candidate = -1;  // index into report.candidates of the first candidate this launch belongs to; for a CPU
                           // operator, of the first candidate one of whose kernels it launched; for an nn.Module
                           // range, of the first candidate whose module instances it is and whose operator it holds
  uint32_t label = 0;      // into TimelineData::labels
};

enum class LaneKind : uint8_t { kStream, kRanges };

struct Lane {
  LaneKind kind = LaneKind::kStream;
  std::string title;  // "GPU 0 · stream 7", "thread 1234 · NVTX"
  core::Id device_id = core::kNoId, stream_id = core::kNoId;
  int64_t thread_id = 0;
  int depth = 0;                 // range lanes: nesting depth of this row
  std::vector<Slice> slices;     // by start
  std::vector<int64_t> max_end;  // max_end[i] = the largest end among slices[0..i]

  // Index of the first slice that may overlap [t0, t1): the first i with max_end[i] > t0.
  size_t firstVisible(int64_t t0) const;
  // Index one past the last slice starting before t1.
  size_t endVisible(int64_t t1) const;
  // Index of the first slice starting at or after t.
  size_t firstStartingAt(int64_t t) const;
};

struct SliceRef {
  uint32_t lane = 0, slice = 0;
};

struct TimelineData {
  std::vector<Lane> lanes;
  std::vector<std::string> labels;   // distinct short names
  int64_t start_ns = 0, end_ns = 0;  // of everything placed
  // true when the trace has no GPU times and work is placed at the launch calls' CPU times (emulator recordings,
  // hook recordings without GPU timing): durations then are those of the API calls.
  bool placed_at_api_time = false;
  size_t kernels = 0, copies = 0, sets = 0, ranges = 0, cpu_ops = 0;
  std::unordered_map<core::Id, SliceRef> by_launch;  // launch id -> its slice

  const Slice& slice(SliceRef r) const { return lanes[r.lane].slices[r.slice]; }
};

// Lanes for `trace`, kernels marked with the candidates of `report` they belong to (first by rank wins). `cpu_ops`
// (a PyTorch profile's operators, ImportResult::cpu_ops) become range lanes per thread too, after the NVTX ones;
// with `launch_external_ids` (ImportResult::launch_external_ids) each operator that launched a candidate's kernel
// (the same External id) is marked with that candidate, and so is each nn.Module range that is one of the
// candidate's module instances (Candidate::modules) holding such an operator, so that selecting a candidate picks
// out its operators and modules.
TimelineData buildTimeline(const core::Trace& trace, const analyzer::Report& report,
                           const std::vector<analyzer::CpuOp>* cpu_ops = nullptr,
                           const std::map<core::Id, int64_t>* launch_external_ids = nullptr);

}  // namespace kfuse::gui
