#include "kfuse/gui/timeline_data.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

namespace kfuse::gui {

size_t Lane::firstVisible(int64_t t0) const {
  return static_cast<size_t>(std::upper_bound(max_end.begin(), max_end.end(), t0) - max_end.begin());
}

size_t Lane::endVisible(int64_t t1) const {
  return static_cast<size_t>(
      std::lower_bound(slices.begin(), slices.end(), t1, [](const Slice& s, int64_t t) { return s.start < t; }) -
      slices.begin());
}

size_t Lane::firstStartingAt(int64_t t) const {
  return endVisible(t);
}

namespace {

struct Placement {
  int64_t start = core::kNoTime, end = core::kNoTime;
};

template <typename R>
Placement place(const R& r, bool api_time) {
  if (!api_time) return {r.gpu_start_ns, r.gpu_end_ns};
  return {r.api_start_ns, r.api_end_ns};
}

}  // namespace

namespace {

struct RangeIn {
  int64_t thread = 0, start = 0, end = 0;
  uint32_t index = 0;
  std::string_view name;
  int32_t candidate = -1;
};

// One lane per thread and nesting depth, ranges sorted outer (longer) first at equal starts.
void addRangeLanes(TimelineData& out, std::vector<RangeIn> ranges, SliceKind kind, const std::string& what,
                   const std::function<uint32_t(std::string_view)>& label) {
  std::stable_sort(ranges.begin(), ranges.end(), [](const RangeIn& a, const RangeIn& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  size_t i = 0;
  while (i < ranges.size()) {
    const int64_t thread = ranges[i].thread;
    std::vector<int64_t> open_ends;
    std::vector<Lane> rows;
    for (; i < ranges.size() && ranges[i].thread == thread; ++i) {
      const RangeIn& r = ranges[i];
      while (!open_ends.empty() && open_ends.back() <= r.start) open_ends.pop_back();
      const size_t depth = open_ends.size();
      open_ends.push_back(r.end);
      if (rows.size() <= depth) {
        Lane lane;
        lane.kind = LaneKind::kRanges;
        lane.thread_id = thread;
        lane.depth = static_cast<int>(depth);
        lane.title = depth == 0 ? "thread " + std::to_string(thread) + " · " + what : "";
        rows.push_back(std::move(lane));
      }
      rows[depth].slices.push_back({r.start, r.end, r.index, kind, r.candidate, label(r.name)});
    }
    for (Lane& l : rows) out.lanes.push_back(std::move(l));
  }
}

}  // namespace

TimelineData buildTimeline(const core::Trace& trace, const analyzer::Report& report,
                           const std::vector<analyzer::CpuOp>* cpu_ops,
                           const std::map<core::Id, int64_t>* launch_external_ids) {
  TimelineData out;
  // GPU times where the trace has any; else the API calls' times (and the timeline says so).
  bool any_gpu_time = false;
  for (const core::Launch& l : trace.launches) {
    if (l.gpu_start_ns != core::kNoTime && l.gpu_end_ns != core::kNoTime) {
      any_gpu_time = true;
      break;
    }
  }
  out.placed_at_api_time = !any_gpu_time;

  std::map<core::Id, core::Id> stream_device;  // stream -> device
  std::map<core::Id, core::Id> context_device;
  for (const core::Context& c : trace.contexts) context_device[c.id] = c.device_id;
  std::map<core::Id, const core::Stream*> streams;
  for (const core::Stream& s : trace.streams) {
    streams[s.id] = &s;
    auto it = context_device.find(s.context_id);
    stream_device[s.id] = it == context_device.end() ? core::kNoId : it->second;
  }
  std::map<core::Id, int> device_ordinal;
  for (const core::Device& d : trace.devices) device_ordinal[d.id] = d.ordinal;

  // launch id -> candidate index (first by rank)
  std::unordered_map<core::Id, int32_t> membership;
  for (size_t ci = 0; ci < report.candidates.size(); ++ci) {
    if (report.candidates[ci].inGraphs()) continue;  // graph node ids, not launches
    for (const auto& occ : report.candidates[ci].occurrence_launches) {
      for (core::Id id : occ) membership.emplace(id, static_cast<int32_t>(ci));
    }
  }

  std::map<core::Id, std::string> fn_label;
  for (const core::KernelFunction& f : trace.functions) {
    fn_label[f.id] = analyzer::shortKernelName(f.demangled_name.empty() ? f.mangled_name : f.demangled_name, 80);
  }
  std::unordered_map<std::string, uint32_t> label_index;
  std::function<uint32_t(std::string_view)> label = [&](std::string_view s) {
    auto [it, inserted] = label_index.emplace(std::string(s), static_cast<uint32_t>(out.labels.size()));
    if (inserted) out.labels.emplace_back(s);
    return it->second;
  };

  // Stream lanes, ordered by (device ordinal, stream native id / handle, id).
  std::map<core::Id, size_t> lane_of_stream;
  auto streamLane = [&](core::Id stream_id) -> Lane& {
    auto it = lane_of_stream.find(stream_id);
    if (it != lane_of_stream.end()) return out.lanes[it->second];
    Lane lane;
    lane.kind = LaneKind::kStream;
    lane.stream_id = stream_id;
    lane.device_id = stream_device.count(stream_id) ? stream_device[stream_id] : core::kNoId;
    const int ordinal = device_ordinal.count(lane.device_id) ? device_ordinal[lane.device_id] : 0;
    std::string stream_name = "stream ?";
    if (auto s = streams.find(stream_id); s != streams.end()) {
      const core::Stream& st = *s->second;
      if (st.native_id >= 0) {
        stream_name = "stream " + std::to_string(st.native_id);
      } else if (st.is_default || st.handle == 0) {
        stream_name = "default stream";
      } else {
        stream_name = "stream #" + std::to_string(st.id);
      }
    }
    lane.title = "GPU " + std::to_string(ordinal) + " · " + stream_name;
    out.lanes.push_back(std::move(lane));
    lane_of_stream[stream_id] = out.lanes.size() - 1;
    return out.lanes.back();
  };

  const bool api = out.placed_at_api_time;
  for (size_t i = 0; i < trace.launches.size(); ++i) {
    const core::Launch& l = trace.launches[i];
    Placement p = place(l, api);
    if (p.start == core::kNoTime) continue;
    if (p.end == core::kNoTime || p.end < p.start) p.end = p.start;
    Slice s{p.start, p.end, static_cast<uint32_t>(i), SliceKind::kKernel, -1, 0};
    if (auto m = membership.find(l.id); m != membership.end()) s.candidate = m->second;
    auto f = fn_label.find(l.function_id);
    s.label = label(f == fn_label.end() ? "kernel" : f->second);
    streamLane(l.stream_id).slices.push_back(s);
    ++out.kernels;
  }
  for (size_t i = 0; i < trace.memcpys.size(); ++i) {
    const core::Memcpy& m = trace.memcpys[i];
    Placement p = place(m, api);
    if (p.start == core::kNoTime) continue;
    if (p.end == core::kNoTime || p.end < p.start) p.end = p.start;
    streamLane(m.stream_id)
        .slices.push_back({p.start, p.end, static_cast<uint32_t>(i), SliceKind::kMemcpy, -1,
                           label("memcpy " + std::string(core::toString(m.kind)))});
    ++out.copies;
  }
  for (size_t i = 0; i < trace.memsets.size(); ++i) {
    const core::Memset& m = trace.memsets[i];
    Placement p = place(m, api);
    if (p.start == core::kNoTime) continue;
    if (p.end == core::kNoTime || p.end < p.start) p.end = p.start;
    streamLane(m.stream_id)
        .slices.push_back({p.start, p.end, static_cast<uint32_t>(i), SliceKind::kMemset, -1, label("memset")});
    ++out.sets;
  }
  // Stream lanes in a stable order: device ordinal, then title.
  std::stable_sort(out.lanes.begin(), out.lanes.end(), [&](const Lane& a, const Lane& b) {
    const int oa = device_ordinal.count(a.device_id) ? device_ordinal[a.device_id] : 0;
    const int ob = device_ordinal.count(b.device_id) ? device_ordinal[b.device_id] : 0;
    if (oa != ob) return oa < ob;
    const core::Stream* sa = streams.count(a.stream_id) ? streams[a.stream_id] : nullptr;
    const core::Stream* sb = streams.count(b.stream_id) ? streams[b.stream_id] : nullptr;
    const int64_t na = sa ? sa->native_id : -1, nb = sb ? sb->native_id : -1;
    return std::tie(na, a.stream_id) < std::tie(nb, b.stream_id);
  });

  // The CPU operators that launched a candidate's kernels (the same External id) carry that candidate (first by rank,
  // as for the kernels); so do the nn.Module instances the report names for it (Candidate::modules, by the last part
  // of the path) where they hold one of those operators on their thread.
  std::unordered_map<int64_t, int32_t> op_candidate;                      // External id -> candidate
  std::map<std::pair<int64_t, int32_t>, std::vector<int64_t>> op_starts;  // (thread, candidate) -> its ops' starts
  std::map<std::string, std::set<int32_t>> module_candidates;             // instance name -> candidates
  if (cpu_ops && launch_external_ids) {
    for (size_t ci = 0; ci < report.candidates.size(); ++ci) {
      const analyzer::Candidate& c = report.candidates[ci];
      for (const auto& occ : c.occurrence_launches) {
        for (core::Id id : occ) {
          auto e = launch_external_ids->find(id);
          if (e != launch_external_ids->end() && e->second != 0)
            op_candidate.emplace(e->second, static_cast<int32_t>(ci));
        }
      }
      for (const analyzer::ModuleOccurrences& m : c.modules) {
        if (m.module.empty()) continue;
        const size_t dot = m.module.rfind('.');
        module_candidates[dot == std::string::npos ? m.module : m.module.substr(dot + 1)].insert(
            static_cast<int32_t>(ci));
      }
    }
    for (const analyzer::CpuOp& op : *cpu_ops) {
      auto c = op.external_id != 0 ? op_candidate.find(op.external_id) : op_candidate.end();
      if (c != op_candidate.end() && op.start_ns != core::kNoTime)
        op_starts[{op.thread_id, c->second}].push_back(op.start_ns);
    }
    for (auto& [key, starts] : op_starts) std::sort(starts.begin(), starts.end());
  }
  auto moduleCandidate = [&](const core::NvtxRange& r, int64_t end) -> int32_t {
    if (r.domain != "nn.Module") return -1;
    auto names = module_candidates.find(r.name);
    if (names == module_candidates.end()) return -1;
    for (int32_t ci : names->second) {  // by rank
      auto starts = op_starts.find({r.thread_id, ci});
      if (starts == op_starts.end()) continue;
      auto first = std::lower_bound(starts->second.begin(), starts->second.end(), r.start_ns);
      if (first != starts->second.end() && *first <= end) return ci;
    }
    return -1;
  };

  // NVTX ranges, then a PyTorch profile's CPU operators: lanes per thread and nesting depth.
  std::vector<RangeIn> nvtx;
  for (size_t i = 0; i < trace.nvtx_ranges.size(); ++i) {
    const core::NvtxRange& r = trace.nvtx_ranges[i];
    if (r.start_ns == core::kNoTime) continue;
    const int64_t end = r.end_ns == core::kNoTime || r.end_ns < r.start_ns ? r.start_ns : r.end_ns;
    nvtx.push_back({r.thread_id, r.start_ns, end, static_cast<uint32_t>(i), r.name, moduleCandidate(r, end)});
  }
  out.ranges = nvtx.size();
  addRangeLanes(out, std::move(nvtx), SliceKind::kRange, "NVTX", label);
  if (cpu_ops) {
    std::vector<RangeIn> ops;
    for (size_t i = 0; i < cpu_ops->size(); ++i) {
      const analyzer::CpuOp& op = (*cpu_ops)[i];
      if (op.start_ns == core::kNoTime) continue;
      const int64_t end = op.end_ns == core::kNoTime || op.end_ns < op.start_ns ? op.start_ns : op.end_ns;
      auto c = op.external_id != 0 ? op_candidate.find(op.external_id) : op_candidate.end();
      ops.push_back({op.thread_id, op.start_ns, end, static_cast<uint32_t>(i), op.name,
                     c == op_candidate.end() ? -1 : c->second});
    }
    out.cpu_ops = ops.size();
    addRangeLanes(out, std::move(ops), SliceKind::kCpuOp, "CPU ops", label);
  }

  bool first = true;
  for (size_t li = 0; li < out.lanes.size(); ++li) {
    Lane& lane = out.lanes[li];
    std::stable_sort(lane.slices.begin(), lane.slices.end(),
                     [](const Slice& a, const Slice& b) { return a.start < b.start; });
    lane.max_end.resize(lane.slices.size());
    int64_t m = INT64_MIN;
    for (size_t i = 0; i < lane.slices.size(); ++i) {
      const Slice& s = lane.slices[i];
      m = std::max(m, s.end);
      lane.max_end[i] = m;
      if (first || s.start < out.start_ns) out.start_ns = s.start;
      if (first || s.end > out.end_ns) out.end_ns = s.end;
      first = false;
      if (s.kind == SliceKind::kKernel) {
        out.by_launch[trace.launches[s.record_index].id] = {static_cast<uint32_t>(li), static_cast<uint32_t>(i)};
      }
    }
  }
  if (out.end_ns <= out.start_ns) out.end_ns = out.start_ns + 1;
  return out;
}

}  // namespace kfuse::gui
