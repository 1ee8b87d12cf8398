// ByteDependences: RAW, WAR and WAW edges from per-allocation interval maps.
#include "graph/byte_dependences.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace kfuse::analyzer {

namespace {

bool reads(core::AccessMode m) {
  return m == core::AccessMode::kRead || m == core::AccessMode::kReadWrite || m == core::AccessMode::kUnknown;
}
bool writes(core::AccessMode m) {
  return m == core::AccessMode::kWrite || m == core::AccessMode::kReadWrite || m == core::AccessMode::kUnknown;
}

}  // namespace

void ByteDependences::split(Segments& s, uint64_t at) {
  auto it = s.upper_bound(at);
  if (it == s.begin()) return;
  --it;
  if (it->first == at || it->second.hi <= at) return;
  Segment tail = it->second;  // the same history for the bytes past `at`
  it->second.hi = at;
  s.emplace_hint(std::next(it), at, std::move(tail));
}

ByteDependences::Segments::iterator ByteDependences::cover(Segments& s, uint64_t lo, uint64_t hi) {
  split(s, lo);
  split(s, hi);
  uint64_t at = lo;
  auto it = s.lower_bound(lo);
  while (at < hi) {
    if (it == s.end() || it->first > at) {
      Segment gap;
      gap.hi = it == s.end() ? hi : std::min(hi, it->first);
      it = s.emplace_hint(it, at, std::move(gap));
    }
    at = it->second.hi;
    ++it;
  }
  return s.lower_bound(lo);
}

void ByteDependences::add(size_t op, const std::vector<BufferUse>& uses, std::vector<Edge>& edges) {
  // Edges against the state before this operation: reads and writes of one kernel happen in no order we know.
  std::set<std::tuple<size_t, EdgeKind, core::Id, int, int>> seen;
  auto edge = [&](const Access& from, EdgeKind kind, core::Id alloc, int to_param) {
    if (from.op == kNone || from.op == op) return;
    if (!seen.emplace(from.op, kind, alloc, from.param, to_param).second) return;
    Edge e;
    e.from = from.op;
    e.to = op;
    e.kind = kind;
    e.allocation_id = alloc;
    e.from_param = from.param;
    e.to_param = to_param;
    edges.push_back(e);
  };
  for (const BufferUse& u : uses) {
    if (u.allocation_id == core::kNoId || u.lo >= u.hi) continue;
    auto found = allocations_.find(u.allocation_id);
    if (found == allocations_.end()) continue;
    const Segments& s = found->second;
    auto it = s.upper_bound(u.lo);
    if (it != s.begin() && std::prev(it)->second.hi > u.lo) --it;
    for (; it != s.end() && it->first < u.hi; ++it) {
      const Segment& seg = it->second;
      if (reads(u.mode)) edge(seg.writer, EdgeKind::kRaw, u.allocation_id, u.param_index);
      if (writes(u.mode)) {
        edge(seg.writer, EdgeKind::kWaw, u.allocation_id, u.param_index);
        for (const Access& r : seg.readers) edge(r, EdgeKind::kWar, u.allocation_id, u.param_index);
      }
    }
  }
  // Then the new state: this operation reads, then its writes retire the bytes they cover (its own reads
  // included: it is their last writer now).
  for (const BufferUse& u : uses) {
    if (u.allocation_id == core::kNoId || u.lo >= u.hi || !reads(u.mode) || writes(u.mode)) continue;
    Segments& s = allocations_[u.allocation_id];
    for (auto it = cover(s, u.lo, u.hi); it != s.end() && it->first < u.hi; ++it) {
      std::vector<Access>& r = it->second.readers;
      const Access a{op, u.param_index};
      if (r.empty() || !(r.back() == a)) r.push_back(a);
    }
  }
  for (const BufferUse& u : uses) {
    if (u.allocation_id == core::kNoId || u.lo >= u.hi || !writes(u.mode)) continue;
    Segments& s = allocations_[u.allocation_id];
    auto first = cover(s, u.lo, u.hi);
    auto last = s.lower_bound(u.hi);
    s.erase(first, last);
    Segment seg;
    seg.hi = u.hi;
    seg.writer = {op, u.param_index};
    s.emplace(u.lo, std::move(seg));
  }
}

}  // namespace kfuse::analyzer
