#include "kfuse/analyzer/chrome_trace.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

namespace kfuse::analyzer {
namespace {

using json = nlohmann::json;

// Process ids of the GPU "processes" (one per device): far above real pids.
constexpr int64_t kGpuPidBase = 1'000'000'000;
constexpr int64_t kCandidateTid = 999'999'999;  // the candidates track inside each GPU process

struct Span {
  int64_t start = core::kNoTime, end = core::kNoTime;
  bool gpu = false;
};

Span spanOf(int64_t gpu_start, int64_t gpu_end, int64_t api_start, int64_t api_end) {
  if (gpu_start != core::kNoTime && gpu_end != core::kNoTime) return {gpu_start, gpu_end, true};
  if (api_start != core::kNoTime) return {api_start, api_end == core::kNoTime ? api_start : api_end, false};
  return {};
}

class Writer {
 public:
  Writer(const core::Trace& t, const Report* report, const std::string& source)
      : t_(t), report_(report), source_(source) {}

  json run() {
    indexTrace();
    int64_t first = std::numeric_limits<int64_t>::max();
    auto see = [&](int64_t ns) {
      if (ns != core::kNoTime) first = std::min(first, ns);
    };
    for (const auto& l : t_.launches) see(spanOf(l.gpu_start_ns, l.gpu_end_ns, l.api_start_ns, l.api_end_ns).start);
    for (const auto& c : t_.memcpys) see(spanOf(c.gpu_start_ns, c.gpu_end_ns, c.api_start_ns, c.api_end_ns).start);
    for (const auto& m : t_.memsets) see(spanOf(m.gpu_start_ns, m.gpu_end_ns, m.api_start_ns, m.api_end_ns).start);
    for (const auto& r : t_.nvtx_ranges) see(r.start_ns);
    origin_ = first == std::numeric_limits<int64_t>::max() ? 0 : first;

    if (report_) {
      for (const Candidate& c : report_->candidates) {
        if (c.inGraphs()) continue;  // graph node ids, not launches
        for (const auto& occ : c.occurrence_launches) {
          for (core::Id id : occ) member_of_[id].push_back(c.rank);
        }
      }
    }
    metadata();
    for (const auto& l : t_.launches) launch(l);
    for (const auto& c : t_.memcpys) {
      json args = {{"bytes", c.bytes}, {"kind", std::string(core::toString(c.kind))}, {"async", c.async}};
      work(spanOf(c.gpu_start_ns, c.gpu_end_ns, c.api_start_ns, c.api_end_ns), c.stream_id,
           "Memcpy " + std::string(core::toString(c.kind)), "memcpy", std::move(args));
    }
    for (const auto& m : t_.memsets) {
      json args = {{"bytes", m.bytes}, {"value", m.value}, {"async", m.async}};
      work(spanOf(m.gpu_start_ns, m.gpu_end_ns, m.api_start_ns, m.api_end_ns), m.stream_id, "Memset", "memset",
           std::move(args));
    }
    for (const auto& r : t_.nvtx_ranges) {
      if (r.start_ns == core::kNoTime) continue;
      const int64_t end = r.end_ns == core::kNoTime ? r.start_ns : r.end_ns;
      json e = {{"name", r.name.empty() ? "(unnamed range)" : r.name},
                {"cat", "nvtx"},
                {"ph", "X"},
                {"ts", us(r.start_ns)},
                {"dur", dur(r.start_ns, end)},
                {"pid", hostPid()},
                {"tid", r.thread_id}};
      if (!r.domain.empty()) e["args"] = {{"domain", r.domain}};
      events_.push_back(std::move(e));
    }
    if (report_) candidates();
    json out;
    out["traceEvents"] = std::move(events_);
    out["displayTimeUnit"] = "ns";
    out["otherData"] = {{"producer", "kfuse export --chrome"},
                        {"source", source_},
                        {"placement", any_api_placed_ ? "some GPU work has no GPU times in the trace: it is placed "
                                                        "at its launch call's CPU times"
                                                      : "GPU work at its GPU times"}};
    return out;
  }

 private:
  void indexTrace() {
    for (const auto& c : t_.contexts) context_device_[c.id] = c.device_id;
    for (const auto& d : t_.devices) device_[d.id] = &d;
    for (const auto& s : t_.streams) stream_[s.id] = &s;
    for (const auto& f : t_.functions) function_[f.id] = &f;
    for (size_t i = 0; i < t_.launches.size(); ++i) launch_index_[t_.launches[i].id] = i;
  }

  double us(int64_t ns) const { return static_cast<double>(ns - origin_) / 1000.0; }
  static double dur(int64_t start, int64_t end) { return static_cast<double>(std::max<int64_t>(0, end - start)) / 1e3; }

  int64_t hostPid() const { return t_.processes.empty() ? 1 : t_.processes.front().pid; }

  int64_t gpuPid(core::Id stream_id) const {
    int ordinal = 0;
    if (auto s = stream_.find(stream_id); s != stream_.end()) {
      if (auto c = context_device_.find(s->second->context_id); c != context_device_.end()) {
        if (auto d = device_.find(c->second); d != device_.end()) ordinal = d->second->ordinal;
      }
    }
    return kGpuPidBase + ordinal;
  }

  void metadata() {
    for (const auto& p : t_.processes) {
      events_.push_back({{"name", "process_name"},
                         {"ph", "M"},
                         {"pid", p.pid},
                         {"tid", 0},
                         {"args", {{"name", p.name.empty() ? "process " + std::to_string(p.pid) : p.name}}}});
    }
    std::map<int, std::string> devices;
    for (const auto& d : t_.devices) devices[d.ordinal] = d.name;
    if (devices.empty()) devices[0] = "GPU";
    for (const auto& [ordinal, name] : devices) {
      const int64_t pid = kGpuPidBase + ordinal;
      events_.push_back({{"name", "process_name"},
                         {"ph", "M"},
                         {"pid", pid},
                         {"tid", 0},
                         {"args", {{"name", "GPU " + std::to_string(ordinal) + ": " + name}}}});
      events_.push_back({{"name", "process_sort_index"},
                         {"ph", "M"},
                         {"pid", pid},
                         {"tid", 0},
                         {"args", {{"sort_index", -1000 + ordinal}}}});
      if (report_ && !report_->candidates.empty()) {
        events_.push_back({{"name", "thread_name"},
                           {"ph", "M"},
                           {"pid", pid},
                           {"tid", kCandidateTid},
                           {"args", {{"name", "kfuse candidates"}}}});
      }
    }
    for (const auto& s : t_.streams) {
      const std::string name = s.native_id >= 0 ? "stream " + std::to_string(s.native_id)
                               : s.handle == 0  ? "stream (legacy default)"
                                                : "stream " + std::to_string(s.id);
      events_.push_back(
          {{"name", "thread_name"}, {"ph", "M"}, {"pid", gpuPid(s.id)}, {"tid", s.id}, {"args", {{"name", name}}}});
    }
  }

  void work(const Span& sp, core::Id stream_id, const std::string& name, const char* cat, json args) {
    if (sp.start == core::kNoTime) return;
    any_api_placed_ |= !sp.gpu;
    events_.push_back({{"name", name},
                       {"cat", cat},
                       {"ph", "X"},
                       {"ts", us(sp.start)},
                       {"dur", dur(sp.start, sp.end)},
                       {"pid", gpuPid(stream_id)},
                       {"tid", stream_id},
                       {"args", std::move(args)}});
  }

  void launch(const core::Launch& l) {
    const core::KernelFunction* f = function_.count(l.function_id) ? function_.at(l.function_id) : nullptr;
    std::string name = f ? (f->demangled_name.empty() ? f->mangled_name : f->demangled_name) : "kernel";
    json args = {{"launch", l.id},
                 {"grid", {l.grid.x, l.grid.y, l.grid.z}},
                 {"block", {l.block.x, l.block.y, l.block.z}},
                 {"correlation", l.correlation_id}};
    if (l.dynamic_shared_bytes) args["dynamic_shared_bytes"] = l.dynamic_shared_bytes;
    if (l.registers_per_thread) args["registers_per_thread"] = l.registers_per_thread;
    if (f && !f->demangled_name.empty()) args["mangled_name"] = f->mangled_name;
    if (auto it = member_of_.find(l.id); it != member_of_.end()) args["kfuse_candidates"] = it->second;
    work(spanOf(l.gpu_start_ns, l.gpu_end_ns, l.api_start_ns, l.api_end_ns), l.stream_id, name, "kernel",
         std::move(args));
  }

  void candidates() {
    int64_t flow_id = 1;
    for (const Candidate& c : report_->candidates) {
      const std::string title =
          "#" + std::to_string(c.rank) + " " + candidateKindName(c.kind) + " " + legalityName(c.legality);
      json args = {{"rank", c.rank},
                   {"kind", candidateKindName(c.kind)},
                   {"legality", legalityName(c.legality)},
                   {"confidence", confidenceName(c.confidence)},
                   {"kernels", c.names},
                   {"occurrences", c.runs()},
                   {"predicted_saving_per_occurrence_ns", c.cost.saving_ns},
                   {"predicted_total_saving_ns", c.total_saving_ns}};
      if (!c.reasons.empty()) args["reason"] = c.reasons.front();
      for (const auto& occ : c.occurrence_launches) {
        if (c.inGraphs()) break;  // graph nodes have no slices on the timeline
        std::vector<const core::Launch*> members;
        for (core::Id id : occ) {
          if (auto it = launch_index_.find(id); it != launch_index_.end()) members.push_back(&t_.launches[it->second]);
        }
        if (members.size() < 2) continue;
        // A flow runs forward in time (horizontal members on different streams may start in either order).
        std::stable_sort(members.begin(), members.end(), [](const core::Launch* a, const core::Launch* b) {
          return spanOf(a->gpu_start_ns, a->gpu_end_ns, a->api_start_ns, a->api_end_ns).start <
                 spanOf(b->gpu_start_ns, b->gpu_end_ns, b->api_start_ns, b->api_end_ns).start;
        });
        int64_t start = std::numeric_limits<int64_t>::max(), end = std::numeric_limits<int64_t>::min();
        for (size_t i = 0; i < members.size(); ++i) {
          const core::Launch& l = *members[i];
          const Span sp = spanOf(l.gpu_start_ns, l.gpu_end_ns, l.api_start_ns, l.api_end_ns);
          if (sp.start == core::kNoTime) continue;
          start = std::min(start, sp.start);
          end = std::max(end, sp.end);
          // A flow through the members: bound to each kernel's slice (start, steps, end).
          const char* ph = i == 0 ? "s" : i + 1 == members.size() ? "f" : "t";
          json flow = {{"name", title},      {"cat", "kfuse.candidate"},   {"ph", ph},          {"id", flow_id},
                       {"ts", us(sp.start)}, {"pid", gpuPid(l.stream_id)}, {"tid", l.stream_id}};
          if (i + 1 == members.size()) flow["bp"] = "e";
          events_.push_back(std::move(flow));
        }
        ++flow_id;
        if (start > end) continue;
        events_.push_back({{"name", title},
                           {"cat", "kfuse.candidate"},
                           {"ph", "X"},
                           {"ts", us(start)},
                           {"dur", dur(start, end)},
                           {"pid", gpuPid(members.front()->stream_id)},
                           {"tid", kCandidateTid},
                           {"args", args}});
      }
    }
  }

  const core::Trace& t_;
  const Report* report_;
  std::string source_;
  int64_t origin_ = 0;
  bool any_api_placed_ = false;
  json events_ = json::array();
  std::unordered_map<core::Id, core::Id> context_device_;
  std::unordered_map<core::Id, const core::Device*> device_;
  std::unordered_map<core::Id, const core::Stream*> stream_;
  std::unordered_map<core::Id, const core::KernelFunction*> function_;
  std::unordered_map<core::Id, size_t> launch_index_;
  std::unordered_map<core::Id, std::vector<int>> member_of_;
};

}  // namespace

nlohmann::json toChromeTrace(const core::Trace& trace, const Report* report, const std::string& source) {
  return Writer(trace, report, source).run();
}

}  // namespace kfuse::analyzer
