// The cost model of `kfuse analyze`: how long a fused kernel would take and what fusing saves.
//
// Private to the analyzer. Every function here takes plain values (bytes and FLOPs with their source, measured
// times, launch shapes, the GPU spec, per-buffer use) and knows nothing of traces, graphs or PTX: analyze.cpp
// gathers those values, this unit turns them into numbers. docs/analyzer.md ("Cost model") states each rule;
// cost_model_test.cpp checks each against a value worked out by hand.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kfuse/analyzer/analysis.h"
#include "kfuse/core/gpu_spec.h"

namespace kfuse::analyzer::cost {

// Written into reports ("cost_model_version"): bumped whenever a rule changes the numbers.
inline constexpr int kCostModelVersion = 5;

// Without API times, an idle gap between two chained kernels counts as launch latency up to this much.
inline constexpr double kUnknownIssueGapCapNs = 5'000;

// The achieved fraction of the roofline carried to a fused kernel is kept within these bounds.
inline constexpr double kMinAchievedFraction = 0.02;

// Where an amount of bytes or FLOPs came from. Amounts of different sources are never compared with each other.
enum class Source {
  kMeasured,          // a GPU's performance counters
  kEmulated,          // counted by kfuse's CPU emulator
  kPtxEstimate,       // PTX access widths (or FLOP instructions) x threads
  kExtentEstimate,    // allocation extents: the whole buffer from the pointer on, read or written once
  kOperatorEstimate,  // the enclosing CPU operator's tensor shapes (Kineto)
  kMixedEstimate,     // a sum of estimates of more than one kind
  kEstimated,         // an estimate the trace itself holds, of a kind it does not say
  kUnknown,
};
// "measured", "emulated", "ptx-estimate", "extent-estimate", "operator-estimate", "mixed-estimate", "estimated",
// "unknown".
const char* sourceName(Source s);
// The source of a sum: the common source; unknown if either is; a mixed estimate otherwise.
Source combine(Source a, Source b);

// ---- roofline ----

// Time at the DRAM roof: bytes / bandwidth.
double memoryNs(double bytes, const core::GpuSpec& gpu);
// Time at the compute roof: each precision's FLOPs at that precision's peak, summed (the precisions share issue
// slots). A precision the GPU has no peak for (0 in the spec table) runs at the FP32 peak.
double computeNs(const FlopCounts& flops, const core::GpuSpec& gpu);
// Time the SMs' L1s take to serve `request_bytes` of global requests (32-byte sectors per warp request, hits and
// misses alike): request_bytes / (SMs x L1 bytes per clock x clock).
double l1Ns(double request_bytes, const core::GpuSpec& gpu);
// Time the L2 takes to deliver `bytes`: bytes / (L2 bytes per clock x clock).
double l2Ns(double bytes, const core::GpuSpec& gpu);
// Traffic a kernel puts on the caches besides its DRAM bytes (0: not known, no cache term).
struct CacheTraffic {
  double l1_bytes = 0;  // sectors of every global request, loops counted (CacheTraffic of the uses)
  double l2_bytes = 0;  // requests the L1 cannot keep: recomputed loads at an uncoalesced pattern
};
// max(memoryNs, computeNs, l1Ns, l2Ns): the roofline time on the whole GPU.
double rooflineNs(double bytes, const FlopCounts& flops, const core::GpuSpec& gpu, const CacheTraffic& cache = {});

// ---- occupancy ----

// What the occupancy rules need of a launch: block and thread counts (not the grid's and block's dimensions, as
// in core::LaunchShape), registers and shared memory per block.
struct LaunchResources {
  uint64_t blocks = 0;             // grid.x * grid.y * grid.z; 0 = unknown
  uint64_t threads_per_block = 1;  // block.x * block.y * block.z
  int registers_per_thread = 0;    // 0 = unknown (no register limit applied)
  double shared_bytes_per_block = 0;
};
// The share of the GPU's peaks a launch can reach: a launch of fewer blocks than the GPU has SMs runs on only
// that many SMs, so min(1, blocks / SMs); 1 when the shape is unknown.
double smShare(const LaunchResources& shape, const core::GpuSpec& gpu);
// The roofline time of one launch: rooflineNs / smShare. What a kernel without a GPU time is costed at, the
// bound the achieved fraction is taken against, and the floor of a fused kernel's time.
double launchRooflineNs(double bytes, const FlopCounts& flops, const LaunchResources& shape, const core::GpuSpec& gpu,
                        const CacheTraffic& cache = {});
// Blocks of this shape resident on the whole GPU at once: per SM the least of the block, thread, register and
// shared-memory limits (at least 1), times the SM count.
double blockCapacity(const LaunchResources& shape, const core::GpuSpec& gpu);
// Waves of kernels launched as one: the sum over the kernels of blocks / capacity (fractional).
double waves(const std::vector<LaunchResources>& shapes, const core::GpuSpec& gpu);

// ---- timeline ----

// One kernel's times, core::kNoTime where unknown.
struct KernelTimes {
  int64_t api_start_ns = core::kNoTime;  // when the launch was issued
  int64_t gpu_start_ns = core::kNoTime, gpu_end_ns = core::kNoTime;
};
// Idle GPU time between consecutive kernels of a chain that fusing removes: a gap counts only when the next launch
// was issued before the previous kernel ended (launch latency; a GPU starved by its host stays starved); without
// an issue time, at most kUnknownIssueGapCapNs per boundary.
double removedIdleNs(const std::vector<KernelTimes>& chain);
// Time at least one of the kernels was running (the union of their GPU spans); 0 when none has GPU times.
double busyNs(const std::vector<KernelTimes>& kernels);
// Launches fusing the kernels into one removes that were back to back on one stream: the boundaries between
// consecutive kernels (in issue order) on the same known stream (`streams`: one per kernel, < 0 unknown).
int backToBackLaunches(const std::vector<int64_t>& streams);

// ---- buffers ----

// A byte range inside one allocation: [begin, end).
struct Region {
  double begin = 0, end = 0;
};

// What happens to a region a chain wrote, seen through the later uses of the same allocation in issue order.
// A later read of any byte still unwritten since: live. A later write known exactly removes its bytes; once none
// is left, dead. Uses of other bytes (another tensor of the allocation) are looked past.
class LivenessScan {
 public:
  explicit LivenessScan(Region written) : live_parts_{written} {}
  // Feeds the next use of the allocation; `writes_exactly` is true when `used` is known to be written in full
  // (every access followed), false for a write whose extent is only an upper bound. Returns true once decided.
  bool see(Region used, bool reads, bool writes, bool writes_exactly);
  bool decided() const { return decided_; }
  // The verdict once the scan stops: decided, else at the end of the trace nothing read it (dead), else the scan
  // window ran out before the trace did (unknown: live).
  bool live(bool end_of_trace) const { return decided_ ? live_ : !end_of_trace; }

 private:
  std::vector<Region> live_parts_;  // the bytes of the region not overwritten yet
  bool decided_ = false, live_ = false;
};

// One use of a buffer by one kernel of a vertical chain.
struct UseBytes {
  int kernel = 0;  // position of the using kernel in the chain
  int buffer = 0;  // the same number for every use of one buffer (allocation and offset) across the chain
  double read_bytes = 0, write_bytes = 0;
  bool followed = true;  // every access through it was followed by the PTX analysis (false: bytes are an extent)
  Source source = Source::kUnknown;
  // What its global requests ask of the caches, every execution counted (loops included): the sectors they move
  // through the L1, the bytes they load, and the sectors of the loads whose lanes sit a sector or more apart
  // (uncoalesced: a thread per row, a transposed read). 0 when not known.
  double l1_bytes = 0, l1_load_bytes = 0, loaded_bytes = 0, strided_load_l1_bytes = 0;
};
// Reads that an unfused chain serves from L2, not DRAM: a kernel's read of a buffer an earlier kernel of the chain
// wrote or read, when the chain's working set (per buffer its largest use, summed) fits in the L2 (`l2_bytes`). Per
// kernel position (`kernels` entries).
std::vector<double> l2ResidentReads(const std::vector<UseBytes>& uses, size_t kernels, double l2_bytes);
// DRAM bytes of the chain fused into one kernel. Per buffer: read once (the largest read) if its first use in the
// chain reads it; written once (the largest write) if it is written and `live` says it is read later. A buffer any
// use of which was not followed keeps every use's bytes (it cannot be proven to stay in registers).
double fusedChainBytes(const std::vector<UseBytes>& uses, const std::vector<bool>& live);
// The same uses unfused: every read and write of every kernel.
double unfusedChainBytes(const std::vector<UseBytes>& uses);

// ---- one occurrence ----

struct KernelCost {
  double bytes = 0;  // DRAM bytes of the kernel alone (measured, emulated or estimated)
  Source bytes_source = Source::kUnknown;
  FlopCounts flops;
  Source flops_source = Source::kUnknown;
  KernelTimes times;  // gpu_start/end kNoTime: no GPU time, the roofline estimate stands in
  LaunchResources shape;
  int64_t stream = -1;  // the stream it was launched on (< 0 unknown): kernels on one stream run one at a time
  double l1_bytes = 0;  // sectors of its global requests through the L1 (0: unknown, no L1 term)
};

struct OccurrenceInput {
  CandidateKind kind = CandidateKind::kVertical;
  std::vector<KernelCost> kernels;  // in issue order
  // Vertical only: the uses of every buffer by the chain's kernels, and whether each buffer (by UseBytes::buffer)
  // is read after the chain. Empty `uses`: buffers unknown (no pointer arguments), only idle gaps are counted.
  std::vector<UseBytes> uses;
  std::vector<bool> live;
  // Vertical, an epilogue fusion (a GEMM or convolution followed by elementwise work): the position of the heavy
  // kernel. The fused kernel runs with that kernel's launch shape and at its achieved fraction (the tail runs in
  // its epilogue); -1: the chain's largest grid and the chain's achieved fraction.
  int anchor = -1;
  // Vertical, a prologue fusion: kernel `recompute` (the producer) runs again at every consumer load of what it
  // wrote, so its FLOPs count `recompute_times` over in the fused kernel (the consumer's bytes read of the
  // intermediate over the producer's bytes written, at least 1). -1: nothing is recomputed.
  int recompute = -1;
  double recompute_times = 1;
  // Vertical: the fused kernel's bytes when the caller knows them better than the per-buffer rule (a prologue
  // fusion reads the producer's inputs instead of the intermediate); < 0: fusedChainBytes(uses, live).
  double fused_bytes = -1;
  // Vertical: the fused kernel's L1 request bytes when the caller knows them better than the members' sum less
  // the loads of what an earlier member wrote (a prologue: its loads of the intermediate become loads of the
  // producer's inputs); < 0: that rule. And what the fused kernel asks of the L2 beyond (a prologue recomputing at
  // an uncoalesced consumer's loads: those requests miss the L1).
  double fused_l1_bytes = -1;
  double fused_l2_bytes = 0;
};

// The cost of one occurrence (roofline times are launchRooflineNs):
//  - each kernel's time is its GPU time, else its roofline time (and the note says so);
//  - no kernel has a GPU time: the launches fusing removes that were back to back on one stream
//    (backToBackLaunches) each save the GPU's dependent-launch gap, counted as removed idle time (gap_ns);
//  - the achieved fraction, sum over kernels of min(roofline time, time) / sum of times (clamped to
//    [kMinAchievedFraction, 1]), carries over to the fused kernel; for a vertical chain with known buffers the
//    roofline times are of the per-buffer bytes, the same source as the fused bytes;
//  - vertical with known buffers and measured bytes for every kernel: before = the measured bytes, after = them
//    times fusedChainBytes / unfusedChainBytes (or fused_bytes / unfused), achieved fraction of the measured
//    bytes, bytes_source "measured"; otherwise:
//  - vertical with known buffers: before and after bytes are both per-buffer bytes (fusedChainBytes); the fused
//    kernel has the largest grid of the chain; fused = its roofline time / achieved; saving = times + removed idle
//    time - fused. Without known buffers: fused = the times, only the idle time is saved;
//  - horizontal: the fused kernel has the blocks of both; fused = longest time x ceil(waves) (at least one wave);
//    saving = busy time + removed idle time - fused;
//  - the fused time is never below the fused kernel's own roofline time for its bytes and FLOPs, and never above
//    the sum of the times plus the recomputation (the producer's time once more per extra recomputation): the
//    upper bound wins where the two disagree (bytes beyond what the times allow are an estimate's error, and the
//    note says so); the saving is never negative.
CostEstimate occurrenceCost(const OccurrenceInput& in, const core::GpuSpec& gpu);

// Why an occurrence costed as `c` saves nothing, in one clause derived from its numbers: recomputation made the
// fused kernel slower, the fused kernel moves as many DRAM bytes as the originals with no idle time to remove, a
// horizontal group already filled the GPU, or no time is known at all. For the default report's line about a
// proven candidate it does not list.
std::string noGainReason(const CostEstimate& c, CandidateKind kind);

// ---- a candidate ----

// Per-occurrence figures are medians over the occurrences (those of the first occurrence for the rest of the
// estimate); the total saving is their sum, 0 for a blocked candidate.
struct CandidateCost {
  CostEstimate per_occurrence;
  double total_saving_ns = 0;
};
// `times`: how often each occurrence ran (a CUDA graph's replays); empty: once each.
CandidateCost summarize(const std::vector<CostEstimate>& occurrences, bool blocked,
                        const std::vector<int64_t>& times = {});

double median(std::vector<double> v);

}  // namespace kfuse::analyzer::cost
