#include "legality/block_level.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "graph/footprint.h"
#include "kfuse/ptx/ranges.h"

namespace kfuse::analyzer::block_level {
namespace {

struct Interval {
  int64_t lo = 0, hi = 0;
  uint32_t block = 0;
  uint32_t line = 0;
};

// Intervals of one kind (a producer's writes, say), sorted by start, with the two largest ends over every prefix
// that come from different blocks: whether an interval of block b overlaps one of another block is then a binary
// search.
class Index {
 public:
  explicit Index(std::vector<Interval> v) : v_(std::move(v)) {
    std::sort(v_.begin(), v_.end(), [](const Interval& a, const Interval& b) { return a.lo < b.lo; });
    best_.resize(v_.size());
    Best cur;
    for (size_t i = 0; i < v_.size(); ++i) {
      const Interval& x = v_[i];
      if (x.hi > cur.hi1) {
        if (x.block != cur.block1) {
          cur.hi2 = cur.hi1;
        }
        cur.hi1 = x.hi;
        cur.block1 = x.block;
      } else if (x.block != cur.block1 && x.hi > cur.hi2) {
        cur.hi2 = x.hi;
      }
      best_[i] = cur;
    }
  }

  // Whether [lo, hi) overlaps an interval of a block other than `block`.
  bool conflicts(int64_t lo, int64_t hi, uint32_t block) const {
    if (lo >= hi) return false;
    const size_t n = static_cast<size_t>(
        std::partition_point(v_.begin(), v_.end(), [&](const Interval& x) { return x.lo < hi; }) - v_.begin());
    if (n == 0) return false;
    const Best& b = best_[n - 1];
    return (b.block1 != block ? b.hi1 : b.hi2) > lo;
  }

  // The other blocks' intervals overlapping [lo, hi) (for the sentence that explains a refusal).
  std::vector<const Interval*> overlapping(int64_t lo, int64_t hi, uint32_t block) const {
    std::vector<const Interval*> out;
    for (const Interval& x : v_) {
      if (x.lo >= hi) break;
      if (x.hi > lo && x.block != block) out.push_back(&x);
    }
    return out;
  }

 private:
  struct Best {
    int64_t hi1 = INT64_MIN, hi2 = INT64_MIN;
    uint32_t block1 = UINT32_MAX;
  };
  std::vector<Interval> v_;
  std::vector<Best> best_;
};

constexpr int kBudgetPerBlock = 4000;

ptx::LaunchBinding binding(const KernelFacts& k, const core::Launch& l) {
  ptx::LaunchBinding b;
  b.ntid = {l.block.x, l.block.y, l.block.z};
  b.nctaid = {l.grid.x, l.grid.y, l.grid.z};
  b.params.resize(k.params.size());
  for (size_t i = 0; i < k.params.size(); ++i) b.params[i] = argumentValue(l, k.params[i]);
  return b;
}

std::string blocksText(const std::vector<const Interval*>& v) {
  std::set<uint32_t> blocks;
  for (const Interval* x : v) blocks.insert(x->block);
  if (blocks.empty()) return "no block";
  const uint32_t lo = *blocks.begin(), hi = *blocks.rbegin();
  if (blocks.size() == 1) return "block " + std::to_string(lo);
  if (hi - lo + 1 == blocks.size()) return "blocks " + std::to_string(lo) + "-" + std::to_string(hi);
  return std::to_string(blocks.size()) + " other blocks (" + std::to_string(lo) + " to " + std::to_string(hi) + ")";
}

}  // namespace

Result check(const KernelFacts& producer, const core::Launch& lp, const KernelFacts& consumer, const core::Launch& lc) {
  Result r;
  for (const KernelFacts* k : {&producer, &consumer}) {
    if (!k->block_ranges) {
      r.why = "block-level fusion not shown: the bytes each block of " + k->name + " touches cannot be computed (" +
              (k->block_ranges_problem.empty() ? std::string("no PTX") : k->block_ranges_problem) + ")";
      return r;
    }
  }
  // The producer's returning threads go to the barrier between the parts: none may leave while others of its
  // block still meet one of the producer's own barriers (a block-level reduction whose threads all finish is fine).
  if (producer.barriers > 0 && !producer.barrier_exit_problem.empty()) {
    r.why = "block-level fusion refused: " + producer.name + " synchronizes its block, and " +
            producer.barrier_exit_problem;
    return r;
  }
  const uint64_t blocks = uint64_t{lp.grid.x} * lp.grid.y * lp.grid.z;
  if (blocks == 0 || blocks > kMaxBlocks) {
    r.legality = Legality::kLikely;
    r.why = "block-level fusion not checked: " + std::to_string(blocks) + " blocks (the check evaluates at most " +
            std::to_string(kMaxBlocks) + ")";
    return r;
  }
  // Both bounds are checked before any block is evaluated: a check past them would be all cost and no answer.
  const uint64_t size = producer.block_ranges->size() + consumer.block_ranges->size();
  const uint64_t accesses = producer.block_accesses.size() + consumer.block_accesses.size();
  if (size > kMaxWork / blocks) {
    r.legality = Legality::kLikely;
    r.why = "block-level fusion not checked: " + std::to_string(blocks) + " blocks x " + std::to_string(size) +
            " statements and registers of the two kernels is more work than the check's budget of " +
            std::to_string(kMaxWork) + " (each block is an interval analysis of both kernels)";
    return r;
  }
  if (accesses > kMaxIntervals / blocks) {
    r.legality = Legality::kLikely;
    r.why = "block-level fusion not checked: " + std::to_string(blocks) + " blocks x " + std::to_string(accesses) +
            " global accesses of the two kernels are more byte ranges than the " + std::to_string(kMaxIntervals) +
            " the check keeps";
    return r;
  }
  ptx::LaunchBinding bp = binding(producer, lp), bc = binding(consumer, lc);
  std::vector<Interval> pw, pr, cw, cr;
  for (uint64_t b = 0; b < blocks; ++b) {
    const int64_t x = static_cast<int64_t>(b % lp.grid.x), y = static_cast<int64_t>((b / lp.grid.x) % lp.grid.y),
                  z = static_cast<int64_t>(b / (uint64_t{lp.grid.x} * lp.grid.y));
    bp.ctaid = bc.ctaid = {x, y, z};
    for (int side = 0; side < 2; ++side) {
      const KernelFacts& k = side == 0 ? producer : consumer;
      // A smaller work budget per block than for one whole-grid footprint: this runs once per block, and a loop
      // still growing after it is given up (unbounded: the fusion is refused, never wrongly proven).
      const std::vector<ptx::AccessRange> ranges = k.block_ranges->evaluate(side == 0 ? bp : bc, kBudgetPerBlock);
      for (size_t i = 0; i < ranges.size() && i < k.block_accesses.size(); ++i) {
        const ptx::AccessRange& a = ranges[i];
        const KernelFacts::BlockAccess& info = k.block_accesses[i];
        if (!a.reached) continue;
        if (!a.bounded) {
          r.why = "block-level fusion not shown: " + k.name + " (line " + std::to_string(info.line) + ") " +
                  (info.is_write ? "writes" : "reads") +
                  " memory whose bytes per block cannot be bounded (an address "
                  "loaded from memory, or a loop whose bound is data)";
          return r;
        }
        const Interval iv{a.lo, a.hi, static_cast<uint32_t>(b), info.line};
        auto& writes = side == 0 ? pw : cw;
        auto& reads = side == 0 ? pr : cr;
        if (info.is_write) writes.push_back(iv);
        if (info.is_read) reads.push_back(iv);
      }
    }
  }
  const Index producer_writes(pw), producer_reads(pr);
  struct Rule {
    const std::vector<Interval>* consumer;
    const Index* producer;
    const char* consumer_verb;
    const char* producer_verb;
    const char* consequence;
  };
  const Rule rules[] = {
      {&cr, &producer_writes, "reads", "write",
       "it would read them before those blocks wrote them (rows or tiles span several producer blocks)"},
      {&cw, &producer_writes, "writes", "write", "one of the two writes would be lost"},
      {&cw, &producer_reads, "writes", "read", "they would read the consumer's values instead of the original ones"},
  };
  for (const Rule& rule : rules) {
    for (const Interval& c : *rule.consumer) {
      if (!rule.producer->conflicts(c.lo, c.hi, c.block)) continue;
      const auto others = rule.producer->overlapping(c.lo, c.hi, c.block);
      r.legality = Legality::kBlocked;
      r.why = "block-level fusion refused: " + consumer.name + " block " + std::to_string(c.block) + " (line " +
              std::to_string(c.line) + ") " + rule.consumer_verb + " bytes that " + producer.name + " " +
              blocksText(others) + " may " + rule.producer_verb + " (line " +
              std::to_string(others.empty() ? 0 : others.front()->line) + "): " + rule.consequence;
      return r;
    }
  }
  r.legality = Legality::kProven;
  r.why = "block-level: no block of " + consumer.name + " reads or writes bytes that another block of " +
          producer.name + " touches (all " + std::to_string(blocks) + " blocks checked for these arguments, loops " +
          "included); the fused kernel runs " + producer.name + "'s body, a block barrier, then " + consumer.name +
          "'s body";
  return r;
}

}  // namespace kfuse::analyzer::block_level
