#include "kfuse/collector/address_map.h"

#include <vector>

namespace kfuse::collector {

void AddressMap::insert(uint64_t address, uint64_t size, core::Id id, std::vector<core::Id>* evicted) {
  const uint64_t end = size > UINT64_MAX - address ? UINT64_MAX : address + size;
  // Remove every interval that overlaps [address, end) (or starts at address, for zero-sized ones).
  auto it = intervals_.upper_bound(address);
  if (it != intervals_.begin()) {
    auto prev = std::prev(it);
    if (prev->first == address || prev->second.end > address) it = prev;
  }
  while (it != intervals_.end() && (it->first < end || it->first == address)) {
    if (evicted) evicted->push_back(it->second.id);
    it = intervals_.erase(it);
  }
  intervals_[address] = Interval{end, id};
}

std::optional<core::Id> AddressMap::erase(uint64_t address) {
  auto it = intervals_.find(address);
  if (it == intervals_.end()) return std::nullopt;
  const core::Id id = it->second.id;
  intervals_.erase(it);
  return id;
}

std::optional<AddressMap::Hit> AddressMap::find(uint64_t address) const {
  auto it = intervals_.upper_bound(address);
  if (it == intervals_.begin()) return std::nullopt;
  --it;
  const uint64_t base = it->first;
  const bool inside = address < it->second.end || (it->second.end == base && address == base);
  if (!inside) return std::nullopt;
  return Hit{it->second.id, base, address - base};
}

}  // namespace kfuse::collector
