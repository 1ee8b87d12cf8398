// The cost model's rules; docs/analyzer.md ("Cost model") states them in words.
#include "cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "report/text_format.h"

namespace kfuse::analyzer::cost {

const char* sourceName(Source s) {
  switch (s) {
    case Source::kMeasured: return "measured";
    case Source::kEmulated: return "emulated";
    case Source::kPtxEstimate: return "ptx-estimate";
    case Source::kExtentEstimate: return "extent-estimate";
    case Source::kOperatorEstimate: return "operator-estimate";
    case Source::kMixedEstimate: return "mixed-estimate";
    case Source::kEstimated: return "estimated";
    case Source::kUnknown: return "unknown";
  }
  return "unknown";
}

Source combine(Source a, Source b) {
  if (a == b) return a;
  if (a == Source::kUnknown || b == Source::kUnknown) return Source::kUnknown;
  return Source::kMixedEstimate;
}

double memoryNs(double bytes, const core::GpuSpec& gpu) {
  return gpu.dram_bandwidth_bytes_per_s > 0 ? bytes / gpu.dram_bandwidth_bytes_per_s * 1e9 : 0;
}

double computeNs(const FlopCounts& flops, const core::GpuSpec& gpu) {
  auto at = [&gpu](double n, double peak) {
    if (peak <= 0) peak = gpu.fp32_flops;
    return n > 0 && peak > 0 ? n / peak * 1e9 : 0;
  };
  return at(flops.fp16, gpu.fp16_flops) + at(flops.bf16, gpu.bf16_flops) + at(flops.fp32, gpu.fp32_flops) +
         at(flops.fp64, gpu.fp64_flops);
}

double l1Ns(double request_bytes, const core::GpuSpec& gpu) {
  const double per_s = gpu.sm_count * gpu.l1_bytes_per_clock_per_sm * gpu.boost_clock_mhz * 1e6;
  return per_s > 0 && request_bytes > 0 ? request_bytes / per_s * 1e9 : 0;
}

double l2Ns(double bytes, const core::GpuSpec& gpu) {
  const double per_s = gpu.l2_bytes_per_clock * gpu.boost_clock_mhz * 1e6;
  return per_s > 0 && bytes > 0 ? bytes / per_s * 1e9 : 0;
}

double rooflineNs(double bytes, const FlopCounts& flops, const core::GpuSpec& gpu, const CacheTraffic& cache) {
  return std::max({memoryNs(bytes, gpu), computeNs(flops, gpu), l1Ns(cache.l1_bytes, gpu), l2Ns(cache.l2_bytes, gpu)});
}

double smShare(const LaunchResources& shape, const core::GpuSpec& gpu) {
  if (shape.blocks == 0 || gpu.sm_count <= 0) return 1;
  return std::min(1.0, static_cast<double>(shape.blocks) / gpu.sm_count);
}

double launchRooflineNs(double bytes, const FlopCounts& flops, const LaunchResources& shape, const core::GpuSpec& gpu,
                        const CacheTraffic& cache) {
  return rooflineNs(bytes, flops, gpu, cache) / smShare(shape, gpu);
}

double blockCapacity(const LaunchResources& shape, const core::GpuSpec& gpu) {
  const double threads = static_cast<double>(std::max<uint64_t>(1, shape.threads_per_block));
  double per_sm = gpu.max_blocks_per_sm;
  if (gpu.max_threads_per_sm > 0) per_sm = std::min(per_sm, std::floor(gpu.max_threads_per_sm / threads));
  if (shape.registers_per_thread > 0 && gpu.registers_per_sm > 0) {
    per_sm = std::min(per_sm, std::floor(gpu.registers_per_sm / (threads * shape.registers_per_thread)));
  }
  if (shape.shared_bytes_per_block > 0 && gpu.max_shared_per_sm > 0) {
    per_sm = std::min(per_sm, std::floor(static_cast<double>(gpu.max_shared_per_sm) / shape.shared_bytes_per_block));
  }
  return std::max(1.0, per_sm) * std::max(1, gpu.sm_count);
}

double waves(const std::vector<LaunchResources>& shapes, const core::GpuSpec& gpu) {
  double w = 0;
  for (const LaunchResources& s : shapes) w += static_cast<double>(s.blocks) / blockCapacity(s, gpu);
  return w;
}

double removedIdleNs(const std::vector<KernelTimes>& chain) {
  double idle = 0;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    const KernelTimes& a = chain[i];
    const KernelTimes& b = chain[i + 1];
    if (a.gpu_end_ns == core::kNoTime || b.gpu_start_ns == core::kNoTime || b.gpu_start_ns <= a.gpu_end_ns) continue;
    const double gap = static_cast<double>(core::spanNs(a.gpu_end_ns, b.gpu_start_ns));
    if (b.api_start_ns == core::kNoTime) {
      idle += std::min(gap, kUnknownIssueGapCapNs);
    } else if (b.api_start_ns <= a.gpu_end_ns) {
      idle += gap;
    }
  }
  return idle;
}

double busyNs(const std::vector<KernelTimes>& kernels) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const KernelTimes& k : kernels) {
    if (k.gpu_start_ns != core::kNoTime && k.gpu_end_ns != core::kNoTime)
      spans.emplace_back(k.gpu_start_ns, k.gpu_end_ns);
  }
  if (spans.empty()) return 0;
  std::sort(spans.begin(), spans.end());
  double busy = 0;
  int64_t cur_start = spans[0].first, cur_end = spans[0].second;
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first > cur_end) {
      busy += static_cast<double>(cur_end - cur_start);
      cur_start = spans[i].first;
    }
    cur_end = std::max(cur_end, spans[i].second);
  }
  return busy + static_cast<double>(cur_end - cur_start);
}

int backToBackLaunches(const std::vector<int64_t>& streams) {
  int n = 0;
  for (size_t i = 0; i + 1 < streams.size(); ++i) n += streams[i] >= 0 && streams[i] == streams[i + 1] ? 1 : 0;
  return n;
}

bool LivenessScan::see(Region used, bool reads, bool writes, bool writes_exactly) {
  if (decided_) return true;
  auto overlaps = [&used](const Region& r) { return used.begin < r.end && r.begin < used.end; };
  if (reads && std::any_of(live_parts_.begin(), live_parts_.end(), overlaps)) {
    decided_ = live_ = true;
    return true;
  }
  if (writes && writes_exactly) {
    std::vector<Region> left;
    for (const Region& r : live_parts_) {
      if (!overlaps(r)) {
        left.push_back(r);
        continue;
      }
      if (r.begin < used.begin) left.push_back({r.begin, used.begin});
      if (used.end < r.end) left.push_back({used.end, r.end});
    }
    live_parts_ = std::move(left);
    if (live_parts_.empty()) decided_ = true;  // every byte overwritten before any was read: dead
  }
  return decided_;
}

namespace {

struct BufferTotals {
  double first_read = -1;  // the first use's read bytes when it reads; -1 until seen
  bool seen = false, first_reads = false, followed = true;
  double read = 0, write = 0, all_bytes = 0;
};

std::map<int, BufferTotals> totals(const std::vector<UseBytes>& uses) {
  std::map<int, BufferTotals> bufs;
  for (const UseBytes& u : uses) {
    BufferTotals& b = bufs[u.buffer];
    if (!b.seen) {
      b.seen = true;
      b.first_reads = u.read_bytes > 0;
    }
    b.read = std::max(b.read, u.read_bytes);
    b.write = std::max(b.write, u.write_bytes);
    b.all_bytes += u.read_bytes + u.write_bytes;
    b.followed = b.followed && u.followed;
  }
  return bufs;
}

// The fused kernel's grid: the largest of a chain (its kernels share one when proven), the sum for kernels side by
// side; unknown (0) when any is.
uint64_t fusedBlocks(const std::vector<LaunchResources>& shapes, bool vertical) {
  uint64_t blocks = 0;
  for (const LaunchResources& s : shapes) {
    if (s.blocks == 0) return 0;
    blocks = vertical ? std::max(blocks, s.blocks) : blocks + s.blocks;
  }
  return blocks;
}

}  // namespace

std::vector<double> l2ResidentReads(const std::vector<UseBytes>& uses, size_t kernels, double l2_bytes) {
  std::vector<double> hits(kernels, 0);
  // Buffers are numbered from 0 in order of first use (Analysis::chainBuffers); a number outside a small range
  // (hand-built uses) counts as no hit.
  int buffers = 0;
  for (const UseBytes& u : uses) {
    if (u.buffer < 0 || u.buffer > 4096) return hits;
    buffers = std::max(buffers, u.buffer + 1);
  }
  std::vector<double> largest(static_cast<size_t>(buffers), 0);
  for (const UseBytes& u : uses) {
    double& b = largest[static_cast<size_t>(u.buffer)];
    b = std::max(b, std::max(u.read_bytes, u.write_bytes));
  }
  double working_set = 0;
  for (double bytes : largest) working_set += bytes;
  if (l2_bytes <= 0 || working_set > l2_bytes) return hits;
  // Per buffer: the bytes the chain's earlier kernels touched (their largest use) and the last kernel among them.
  std::vector<std::pair<double, int>> touched(static_cast<size_t>(buffers), {0.0, -1});
  for (const UseBytes& u : uses) {
    std::pair<double, int>& t = touched[static_cast<size_t>(u.buffer)];
    if (t.second >= 0 && t.second < u.kernel && u.kernel >= 0 && static_cast<size_t>(u.kernel) < kernels) {
      hits[static_cast<size_t>(u.kernel)] += std::min(u.read_bytes, t.first);
    }
    t.first = std::max(t.first, std::max(u.read_bytes, u.write_bytes));
    t.second = std::max(t.second, u.kernel);
  }
  return hits;
}

double fusedChainBytes(const std::vector<UseBytes>& uses, const std::vector<bool>& live) {
  double bytes = 0;
  for (const auto& [buffer, b] : totals(uses)) {
    if (!b.followed) {
      bytes += b.all_bytes;
      continue;
    }
    const bool is_live = buffer >= 0 && static_cast<size_t>(buffer) < live.size() && live[static_cast<size_t>(buffer)];
    if (b.first_reads) bytes += b.read;
    if (is_live) bytes += b.write;
  }
  return bytes;
}

double unfusedChainBytes(const std::vector<UseBytes>& uses) {
  double bytes = 0;
  for (const UseBytes& u : uses) bytes += u.read_bytes + u.write_bytes;
  return bytes;
}

CostEstimate occurrenceCost(const OccurrenceInput& in, const core::GpuSpec& gpu) {
  CostEstimate c;
  const bool vertical = in.kind == CandidateKind::kVertical;
  Source use_source = in.uses.empty() ? Source::kUnknown : in.uses.front().source;
  for (const UseBytes& u : in.uses) use_source = combine(use_source, u.source);
  const bool buffers_known = vertical && use_source != Source::kUnknown;
  // Per-kernel bytes for the achieved fraction: the per-buffer bytes when the fused bytes come from them.
  // Reads of what an earlier kernel of the chain touched are L2 hits when the chain's working set fits there.
  std::vector<double> model_bytes(in.kernels.size(), 0);
  std::vector<double> l2_hits(in.kernels.size(), 0);
  if (buffers_known) {
    l2_hits = l2ResidentReads(in.uses, in.kernels.size(), static_cast<double>(gpu.l2_bytes));
    for (const UseBytes& u : in.uses) {
      if (u.kernel >= 0 && static_cast<size_t>(u.kernel) < model_bytes.size()) {
        model_bytes[static_cast<size_t>(u.kernel)] += u.read_bytes + u.write_bytes;
      }
    }
    for (size_t i = 0; i < model_bytes.size(); ++i) model_bytes[i] -= l2_hits[i];
  }
  double l2_hit_bytes = 0;
  for (double h : l2_hits) l2_hit_bytes += h;
  // Measured DRAM bytes of every kernel win over the per-buffer estimates (the achieved fraction is taken with
  // them too); the per-buffer uses then only say which share of those bytes fusing keeps.
  const bool measured_bytes = buffers_known && !in.kernels.empty() &&
                              std::all_of(in.kernels.begin(), in.kernels.end(), [](const KernelCost& k) {
                                return k.bytes_source == Source::kMeasured && k.bytes > 0;
                              });
  if (measured_bytes) {
    for (size_t i = 0; i < in.kernels.size(); ++i) model_bytes[i] = in.kernels[i].bytes;
  }
  double sum_times = 0, sum_roof = 0, longest = 0;
  bool estimated_times = false, any_gpu_time = false;
  std::vector<double> kernel_ns;
  std::vector<int64_t> streams;
  FlopCounts flops;
  Source bytes_source = Source::kMeasured, flops_source = Source::kMeasured;
  std::vector<KernelTimes> times;
  std::vector<LaunchResources> shapes;
  for (size_t i = 0; i < in.kernels.size(); ++i) {
    const KernelCost& k = in.kernels[i];
    c.bytes_before += k.bytes;
    flops += k.flops;
    bytes_source = i == 0 ? k.bytes_source : combine(bytes_source, k.bytes_source);
    flops_source = i == 0 ? k.flops_source : combine(flops_source, k.flops_source);
    double t = 0;
    if (k.times.gpu_start_ns != core::kNoTime && k.times.gpu_end_ns != core::kNoTime) {
      t = static_cast<double>(core::spanNs(k.times.gpu_start_ns, k.times.gpu_end_ns));
    }
    if (t <= 0) {
      // No GPU time (a trace recorded on the emulator, or without GPU timestamps): the roofline estimate, of the
      // per-buffer DRAM bytes where known (an emulator's byte counts are every load's, cache hits included).
      t = launchRooflineNs(buffers_known && !measured_bytes ? model_bytes[i] : k.bytes, k.flops, k.shape, gpu,
                           {k.l1_bytes, 0});
      estimated_times = true;
    } else {
      any_gpu_time = true;
    }
    kernel_ns.push_back(t);
    streams.push_back(k.stream);
    sum_times += t;
    longest = std::max(longest, t);
    sum_roof +=
        std::min(launchRooflineNs(buffers_known ? model_bytes[i] : k.bytes, k.flops, k.shape, gpu, {k.l1_bytes, 0}), t);
    times.push_back(k.times);
    shapes.push_back(k.shape);
  }
  // The fused kernel's requests: the members' less the loads of what an earlier member wrote (kept in registers).
  double fused_l1 = in.fused_l1_bytes;
  if (fused_l1 < 0) {
    fused_l1 = 0;
    for (const KernelCost& k : in.kernels) fused_l1 += k.l1_bytes;
    std::map<int, int> first_writer;
    for (const UseBytes& u : in.uses) {
      auto w = first_writer.find(u.buffer);
      if (w != first_writer.end() && w->second < u.kernel) fused_l1 -= u.l1_load_bytes;
      if (u.write_bytes > 0 && w == first_writer.end()) first_writer.emplace(u.buffer, u.kernel);
    }
    fused_l1 = std::max(0.0, fused_l1);
  }
  const CacheTraffic fused_cache{fused_l1, in.fused_l2_bytes};
  FlopCounts fused_flops = flops;
  // What recomputing the producer may add at most: its own time once more per extra recomputation, and the
  // requests it makes at the consumer's pattern that miss the L1 (their L2 time in the consumer's launch).
  double recompute_ns = 0;
  if (vertical && in.recompute >= 0 && static_cast<size_t>(in.recompute) < in.kernels.size()) {
    if (in.recompute_times > 1) {
      fused_flops += in.kernels[static_cast<size_t>(in.recompute)].flops.scaled(in.recompute_times - 1);
      recompute_ns = kernel_ns[static_cast<size_t>(in.recompute)] * (in.recompute_times - 1);
    }
    const bool anchor_known = in.anchor >= 0 && static_cast<size_t>(in.anchor) < in.kernels.size();
    recompute_ns +=
        launchRooflineNs(0, {}, anchor_known ? in.kernels[static_cast<size_t>(in.anchor)].shape : LaunchResources{},
                         gpu, {0, in.fused_l2_bytes});
  }
  // Without any GPU time the trace shows no gaps: each launch removed that was back to back on one stream saves
  // the GPU's dependent-launch gap.
  const int removed_launches = any_gpu_time ? 0 : backToBackLaunches(streams);
  const double launch_gap_ns = removed_launches * gpu.dependent_launch_gap_ns;
  c.flops = flops.total();
  c.flops_source = sourceName(flops_source);
  c.bytes_source = sourceName(bytes_source);
  c.measured_ns = sum_times;
  if (vertical) c.gap_ns = removedIdleNs(times);
  c.gap_ns += launch_gap_ns;
  const double spans = vertical ? 0 : busyNs(times);
  const double busy = spans > 0 ? spans : sum_times;
  std::string launch_note;
  if (removed_launches > 0) {
    const bool one = removed_launches == 1;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "%d launch%s removed that %s back to back on one stream: %.0f ns of dependent-launch gap%s (up to "
                  "%.0f ns of launch latency%s when the host does not keep ahead of the GPU)",
                  removed_launches, one ? "" : "es", one ? "was" : "were", gpu.dependent_launch_gap_ns,
                  one ? "" : " each", gpu.launch_latency_ns, one ? "" : " each");
    launch_note = buf;
  }
  auto withLaunchNote = [&launch_note](std::string note) {
    if (launch_note.empty()) return note;
    return note.empty() ? launch_note : note + "; " + launch_note;
  };
  if (sum_times <= 0) {
    c.saving_ns = c.gap_ns;
    c.note = withLaunchNote("no GPU times for these kernels");
    return c;
  }
  double achieved = std::clamp(sum_roof / sum_times, kMinAchievedFraction, 1.0);
  const bool anchored = vertical && in.anchor >= 0 && static_cast<size_t>(in.anchor) < in.kernels.size();
  if (vertical && !buffers_known) {
    c.bytes_after = c.bytes_before;
    c.fused_ns = sum_times;
    c.note = "intermediate buffers unknown (no pointer arguments in the trace): only idle gaps counted";
  } else {
    double predicted = 0;
    LaunchResources fused_shape;
    fused_shape.blocks = fusedBlocks(shapes, vertical);
    if (anchored) {
      // The epilogue runs inside the anchor kernel: its grid, and its own achieved fraction.
      const size_t at = static_cast<size_t>(in.anchor);
      const KernelCost& a = in.kernels[at];
      fused_shape = a.shape;
      const double t = kernel_ns[at];  // its GPU time, else its roofline estimate
      const double roof =
          launchRooflineNs(buffers_known ? model_bytes[at] : a.bytes, a.flops, a.shape, gpu, {a.l1_bytes, 0});
      if (t > 0) achieved = std::clamp(std::min(roof, t) / t, kMinAchievedFraction, 1.0);
    }
    if (vertical) {
      // Before and after from the same per-buffer bytes, so that the two are comparable; with measured bytes,
      // the measured ones before and the same share of them after as the per-buffer bytes keep.
      // (Measured bytes already show what the L2 kept; the share is of the uses' own bytes.)
      const double model_before = unfusedChainBytes(in.uses) - (measured_bytes ? 0 : l2_hit_bytes);
      const double model_after = in.fused_bytes >= 0 ? in.fused_bytes : fusedChainBytes(in.uses, in.live);
      if (measured_bytes) {
        c.bytes_source = sourceName(Source::kMeasured);
        c.bytes_after = model_before > 0 ? c.bytes_before * model_after / model_before : c.bytes_before;
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "fused bytes: the measured %.3g x %.3g, the share the per-buffer estimate (%s) keeps",
                      c.bytes_before, model_before > 0 ? model_after / model_before : 1.0, sourceName(use_source));
        c.note = buf;
      } else {
        c.bytes_before = model_before;
        c.bytes_source = sourceName(use_source);
        c.bytes_after = model_after;
        if (l2_hit_bytes > 0) {
          char buf[200];
          std::snprintf(buf, sizeof buf,
                        "DRAM bytes before: %.3g B of re-reads left out, L2 hits (the chain's working set fits the "
                        "%.0f MiB L2)",
                        l2_hit_bytes, static_cast<double>(gpu.l2_bytes) / (1 << 20));
          c.note = buf;
        }
      }
      predicted = launchRooflineNs(c.bytes_after, fused_flops, fused_shape, gpu, fused_cache) / achieved;
    } else {
      // Horizontal: the kernels share the GPU; waves of the combined grid decide the time.
      c.bytes_after = c.bytes_before;
      predicted = longest * std::max(1.0, std::ceil(waves(shapes, gpu)));
    }
    // Never faster than the fused kernel's own roof, never slower than running the kernels as they are plus the
    // recomputation. The upper bound wins where the two disagree: the kernels' times say the bytes are too many.
    const double floor = launchRooflineNs(c.bytes_after, fused_flops, fused_shape, gpu, fused_cache);
    const double upper = sum_times + recompute_ns;
    c.fused_ns = std::min(upper, std::max(floor, predicted));
    if (floor > upper) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "%.3g estimated DRAM bytes would take %.3g ns at the roof, longer than the kernels' %.3g ns: "
                    "the fused time is capped at the kernels' time",
                    c.bytes_after, floor, upper);
      c.note += (c.note.empty() ? "" : "; ") + std::string(buf);
    }
  }
  c.saving_ns = std::max(0.0, (vertical ? sum_times : busy) + c.gap_ns - c.fused_ns);
  std::string note = c.note;
  if (estimated_times) {
    const std::string times_note =
        "no GPU times in the trace: kernel times are roofline estimates for " + gpu.short_name;
    note = note.empty() ? times_note : times_note + "; " + note;
  }
  c.note = withLaunchNote(note);
  return c;
}

std::string noGainReason(const CostEstimate& c, CandidateKind kind) {
  const std::string originals =
      durationText(c.measured_ns) + (c.gap_ns > 0 ? " + " + durationText(c.gap_ns) + " idle" : "");
  if (c.measured_ns <= 0) return "no time is known for these kernels (no GPU times, and no bytes or FLOPs to estimate)";
  if (c.fused_ns > c.measured_ns) {
    return "recomputing the producer at the consumer's loads costs more than fusing saves: fused " +
           durationText(c.fused_ns) + " against the originals' " + originals;
  }
  if (kind == CandidateKind::kVertical && c.bytes_after >= c.bytes_before && c.bytes_before > 0 && c.gap_ns <= 0) {
    return "the fused kernel moves as many DRAM bytes as the originals (" + fmt("%.3g", c.bytes_before) + " -> " +
           fmt("%.3g", c.bytes_after) + ", " + c.bytes_source + ") and no idle time between them is removed";
  }
  if (kind == CandidateKind::kHorizontal) {
    return "the fused kernel (" + durationText(c.fused_ns) +
           ") takes as long as the originals kept the GPU busy: they ran side by side already, or its longer kernel "
           "or the DRAM roof sets its time";
  }
  return "the fused kernel takes " + durationText(c.fused_ns) + " against the originals' " + originals;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

CandidateCost summarize(const std::vector<CostEstimate>& occurrences, bool blocked, const std::vector<int64_t>& times) {
  CandidateCost out;
  if (occurrences.empty()) return out;
  std::vector<double> savings, measured, fused, gaps;
  double total = 0;
  for (size_t i = 0; i < occurrences.size(); ++i) {
    const CostEstimate& e = occurrences[i];
    savings.push_back(e.saving_ns);
    measured.push_back(e.measured_ns);
    fused.push_back(e.fused_ns);
    gaps.push_back(e.gap_ns);
    total += e.saving_ns * static_cast<double>(i < times.size() ? times[i] : 1);
  }
  out.per_occurrence = occurrences.front();
  out.per_occurrence.saving_ns = median(savings);
  out.per_occurrence.measured_ns = median(measured);
  out.per_occurrence.fused_ns = median(fused);
  out.per_occurrence.gap_ns = median(gaps);
  out.total_saving_ns = blocked ? 0 : total;
  return out;
}

}  // namespace kfuse::analyzer::cost

namespace kfuse::analyzer {
namespace {

bool validOccupancy(double x) {
  return x > 0 && x <= 1;
}

std::string percentText(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

}  // namespace

Expected<CostEstimate> costWithOccupancy(const CostEstimate& estimate, double fused_occupancy,
                                         double originals_occupancy) {
  if (!validOccupancy(fused_occupancy) || !validOccupancy(originals_occupancy)) {
    return invalidArgument("occupancy must be in (0, 1]: fused " + std::to_string(fused_occupancy) + ", originals " +
                           std::to_string(originals_occupancy));
  }
  const double f = std::min(1.0, fused_occupancy / originals_occupancy);
  CostEstimate out = estimate;
  if (f >= 1) return out;
  out.fused_ns = estimate.fused_ns / f;
  out.saving_ns = estimate.saving_ns - (out.fused_ns - estimate.fused_ns);
  out.note += (out.note.empty() ? "" : "; ") + std::string("fused kernel's occupancy ") + percentText(fused_occupancy) +
              " vs the originals' " + percentText(originals_occupancy) +
              ": achieved fraction and fused time scaled by " + percentText(f);
  return out;
}

Expected<Candidate> candidateWithOccupancy(const Candidate& candidate, double fused_occupancy,
                                           double originals_occupancy) {
  auto cost = costWithOccupancy(candidate.cost, fused_occupancy, originals_occupancy);
  if (!cost.ok()) return cost.status();
  Candidate out = candidate;
  const double growth = cost->fused_ns - candidate.cost.fused_ns;
  out.cost = std::move(cost).value();
  out.total_saving_ns = candidate.total_saving_ns - static_cast<double>(candidate.occurrence_launches.size()) * growth;
  out.share_of_gpu_busy = candidate.share_of_gpu_busy > 0 && candidate.total_saving_ns > 0
                              ? out.total_saving_ns * (candidate.share_of_gpu_busy / candidate.total_saving_ns)
                              : 0;
  return out;
}

double meanOccupancy(const std::vector<double>& occupancies, const std::vector<double>& times_ns) {
  KFUSE_CHECK(times_ns.empty() || times_ns.size() == occupancies.size());
  double weighted = 0, weights = 0;
  for (size_t i = 0; i < occupancies.size(); ++i) {
    const double w = times_ns.empty() ? 0 : times_ns[i];
    weighted += w * occupancies[i];
    weights += w;
  }
  if (weights > 0) return weighted / weights;
  if (occupancies.empty()) return 0;
  double sum = 0;
  for (double o : occupancies) sum += o;
  return sum / static_cast<double>(occupancies.size());
}

}  // namespace kfuse::analyzer
