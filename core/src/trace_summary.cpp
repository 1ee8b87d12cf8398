#include "kfuse/core/trace_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace kfuse::core {

namespace {

void widen(int64_t& first, int64_t& last, int64_t t) {
  if (t == kNoTime) return;
  if (first == kNoTime || t < first) first = t;
  if (last == kNoTime || t > last) last = t;
}

}  // namespace

Expected<TraceSummary> summarizeTrace(TraceReader& reader, size_t top_n) {
  TraceSummary s;
  s.path = reader.path();
  s.schema_version = reader.schemaVersion();
  KFUSE_ASSIGN_OR_RETURN(s.counts, reader.counts());
  KFUSE_ASSIGN_OR_RETURN(Trace small, reader.readAllButLaunches());
  s.metadata = std::move(small.metadata);
  s.devices = std::move(small.devices);
  s.stats = std::move(small.stats);
  for (const Memcpy& m : small.memcpys) {
    for (int64_t t : {m.api_start_ns, m.api_end_ns, m.gpu_start_ns, m.gpu_end_ns}) widen(s.first_ns, s.last_ns, t);
  }
  for (const Memset& m : small.memsets) {
    for (int64_t t : {m.api_start_ns, m.api_end_ns, m.gpu_start_ns, m.gpu_end_ns}) widen(s.first_ns, s.last_ns, t);
  }
  for (const Sync& y : small.syncs) {
    for (int64_t t : {y.start_ns, y.end_ns}) widen(s.first_ns, s.last_ns, t);
  }

  std::unordered_map<Id, size_t> function_index;
  for (size_t i = 0; i < small.functions.size(); ++i) function_index[small.functions[i].id] = i;
  std::unordered_map<Id, KernelTimeSummary> per_function;
  KFUSE_RETURN_IF_ERROR(reader.forEachLaunch([&](const Launch& l) {
    for (int64_t t : {l.api_start_ns, l.api_end_ns, l.gpu_start_ns, l.gpu_end_ns}) widen(s.first_ns, s.last_ns, t);
    KernelTimeSummary& k = per_function[l.function_id];
    ++k.launches;
    if (const int64_t d = l.gpuDurationNs(); d != kNoTime && d >= 0) {
      ++k.timed_launches;
      k.total_gpu_ns += d;
      s.total_gpu_kernel_ns += d;
    }
    return true;
  }));
  for (auto& [fid, k] : per_function) {
    auto it = function_index.find(fid);
    if (it == function_index.end()) {
      k.name = "(unknown function " + std::to_string(fid) + ")";
    } else {
      const KernelFunction& f = small.functions[it->second];
      k.name = f.demangled_name.empty() ? f.mangled_name : f.demangled_name;
    }
    s.top_kernels.push_back(std::move(k));
  }
  std::sort(s.top_kernels.begin(), s.top_kernels.end(), [](const auto& a, const auto& b) {
    if (a.total_gpu_ns != b.total_gpu_ns) return a.total_gpu_ns > b.total_gpu_ns;
    if (a.launches != b.launches) return a.launches > b.launches;
    return a.name < b.name;
  });
  if (s.top_kernels.size() > top_n) s.top_kernels.resize(top_n);
  return s;
}

nlohmann::json toJson(const TraceSummary& s) {
  using nlohmann::json;
  auto timeOrNull = [](int64_t t) { return t == kNoTime ? json(nullptr) : json(t); };
  json j;
  j["path"] = s.path;
  j["schema_version"] = s.schema_version;
  j["producer"] = s.metadata.producer;
  j["producer_version"] = s.metadata.producer_version;
  j["command_line"] = s.metadata.command_line;
  j["host"] = s.metadata.host;
  j["start_time_ns"] = timeOrNull(s.metadata.start_time_ns);
  json devices = json::array();
  for (const Device& d : s.devices) {
    devices.push_back({{"ordinal", d.ordinal},
                       {"name", d.name},
                       {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                       {"sm_count", d.sm_count},
                       {"memory_bytes", d.memory_bytes}});
  }
  j["devices"] = devices;
  const TraceCounts& c = s.counts;
  j["counts"] = {
      {"launches", c.launches}, {"kernels", c.functions},       {"modules", c.modules}, {"allocations", c.allocations},
      {"memcpys", c.memcpys},   {"memsets", c.memsets},         {"syncs", c.syncs},     {"events", c.events},
      {"streams", c.streams},   {"nvtx_ranges", c.nvtx_ranges}, {"metrics", c.metrics}, {"contexts", c.contexts}};
  j["counts"]["graphs"] = c.graphs;
  j["counts"]["graph_nodes"] = c.graph_nodes;
  j["counts"]["graph_edges"] = c.graph_edges;
  j["counts"]["graph_execs"] = c.graph_execs;
  j["counts"]["graph_launches"] = c.graph_launches;
  j["counts"]["graph_launch_kernels"] = c.graph_launch_kernels;
  j["first_ns"] = timeOrNull(s.first_ns);
  j["last_ns"] = timeOrNull(s.last_ns);
  j["span_ns"] = s.first_ns == kNoTime ? json(nullptr) : json(spanNs(s.first_ns, s.last_ns));
  j["total_gpu_kernel_ns"] = s.total_gpu_kernel_ns;
  json top = json::array();
  for (const auto& k : s.top_kernels) {
    top.push_back({{"name", k.name},
                   {"launches", k.launches},
                   {"timed_launches", k.timed_launches},
                   {"total_gpu_ns", k.total_gpu_ns}});
  }
  j["top_kernels"] = top;
  json stats = json::array();
  for (const Stat& st : s.stats) {
    stats.push_back({{"name", st.name},
                     {"value", st.value},
                     {"severity", std::string(toString(st.severity))},
                     {"description", st.description}});
  }
  j["stats"] = stats;
  return j;
}

std::string formatDuration(int64_t ns) {
  char buf[64];
  if (ns == kNoTime) return "n/a";
  const double v = static_cast<double>(ns);
  if (ns < 1'000 && ns > -1'000) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " ns", ns);
  } else if (ns < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.3f us", v / 1e3);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.3f ms", v / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  }
  return buf;
}

namespace {

// printf into the end of `out` (kernel names can be long: sized first). The format attribute lets the compiler check
// every call's arguments against its format.
__attribute__((format(printf, 2, 3))) void appendFormatted(std::string& out, const char* fmt, ...) {
  va_list args, again;
  va_start(args, fmt);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  if (n > 0) {
    const size_t old = out.size();
    out.resize(old + static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data() + old, static_cast<size_t>(n) + 1, fmt, again);
    out.resize(old + static_cast<size_t>(n));
  }
  va_end(again);
}

}  // namespace

std::string formatSummary(const TraceSummary& s) {
  std::string out;
  appendFormatted(out, "trace       %s (schema %d)\n", s.path.c_str(), s.schema_version);
  appendFormatted(out, "producer    %s %s\n", s.metadata.producer.empty() ? "(unknown)" : s.metadata.producer.c_str(),
                  s.metadata.producer_version.c_str());
  if (!s.metadata.command_line.empty()) appendFormatted(out, "command     %s\n", s.metadata.command_line.c_str());
  if (!s.metadata.host.empty()) appendFormatted(out, "host        %s\n", s.metadata.host.c_str());
  if (s.devices.empty()) appendFormatted(out, "devices     (none recorded)\n");
  for (const Device& d : s.devices) {
    appendFormatted(out, "device %-4d %s (sm_%d%d, %d SMs, %.1f GiB)\n", d.ordinal, d.name.c_str(), d.cc_major,
                    d.cc_minor, d.sm_count, static_cast<double>(d.memory_bytes) / (1024.0 * 1024 * 1024));
  }
  const TraceCounts& c = s.counts;
  appendFormatted(out, "launches    %" PRId64 " of %" PRId64 " kernels, %" PRId64 " modules\n", c.launches, c.functions,
                  c.modules);
  appendFormatted(out, "memory      %" PRId64 " allocations, %" PRId64 " memcpy, %" PRId64 " memset\n", c.allocations,
                  c.memcpys, c.memsets);
  appendFormatted(out,
                  "sync        %" PRId64 " syncs, %" PRId64 " events, %" PRId64 " streams, %" PRId64 " NVTX ranges\n",
                  c.syncs, c.events, c.streams, c.nvtx_ranges);
  if (c.graphs > 0 || c.graph_launches > 0) {
    appendFormatted(out,
                    "graphs      %" PRId64 " graphs (%" PRId64 " nodes, %" PRId64 " edges), %" PRId64
                    " executable, %" PRId64 " launches running %" PRId64 " kernel nodes\n",
                    c.graphs, c.graph_nodes, c.graph_edges, c.graph_execs, c.graph_launches, c.graph_launch_kernels);
  }
  appendFormatted(out, "time span   %s", s.first_ns == kNoTime ? "n/a\n" : "");
  if (s.first_ns != kNoTime) appendFormatted(out, "%s\n", formatDuration(spanNs(s.first_ns, s.last_ns)).c_str());
  appendFormatted(out, "GPU kernels %s busy\n", formatDuration(s.total_gpu_kernel_ns).c_str());
  if (!s.top_kernels.empty()) {
    appendFormatted(out, "\ntop kernels by GPU time:\n  %12s  %8s  %6s  %s\n", "GPU time", "launches", "share",
                    "kernel");
    for (const auto& k : s.top_kernels) {
      const double share = s.total_gpu_kernel_ns > 0 ? 100.0 * static_cast<double>(k.total_gpu_ns) /
                                                           static_cast<double>(s.total_gpu_kernel_ns)
                                                     : 0.0;
      appendFormatted(out, "  %12s  %8" PRId64 "  %5.1f%%  %s\n", formatDuration(k.total_gpu_ns).c_str(), k.launches,
                      share, k.name.c_str());
    }
  }
  if (!s.stats.empty()) {
    appendFormatted(out, "\ninput problems counted while recording/importing:\n");
    for (const Stat& st : s.stats) {
      appendFormatted(out, "  %-8s %-32s %" PRId64 "  %s\n", std::string(toString(st.severity)).c_str(),
                      st.name.c_str(), st.value, st.description.c_str());
    }
  }
  return out;
}

}  // namespace kfuse::core
