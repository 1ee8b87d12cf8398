#include "kfuse/hooks/mapping_table.h"

#include <algorithm>
#include <unordered_map>

namespace kfuse::hooks {

void MappingTable::noteHandle(uint64_t handle) {
  if (created_.insert(handle).second && !mappings_.empty()) update();
}

void MappingTable::map(uint64_t base, uint64_t size, uint64_t handle, uint64_t offset) {
  mappings_[base] = Mapping{size, handle, offset};
  update();
}

std::vector<uint64_t> MappingTable::unmap(uint64_t base, uint64_t size) {
  std::vector<uint64_t> gone;
  for (auto it = mappings_.lower_bound(base); it != mappings_.end() && it->first - base < size;) {
    gone.push_back(it->first);
    it = mappings_.erase(it);
  }
  if (!gone.empty()) update();
  return gone;
}

const MappingTable::Mapping* MappingTable::find(uint64_t base) const {
  auto it = mappings_.find(base);
  return it == mappings_.end() ? nullptr : &it->second;
}

void MappingTable::update() {
  shared_.clear();
  // Per handle, the mappings by offset: a mapping overlaps an earlier one exactly when it starts before the furthest
  // end among the earlier ones.
  std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> by_handle;  // handle -> (offset, base)
  for (const auto& [base, m] : mappings_) {
    if (!created_.count(m.handle)) {
      shared_.insert(base);  // imported or retained: another handle may show the same bytes
    } else {
      by_handle[m.handle].emplace_back(m.offset, base);
    }
  }
  for (auto& [handle, list] : by_handle) {
    std::sort(list.begin(), list.end());
    uint64_t end = 0, end_base = 0;
    bool any = false;
    for (const auto& [offset, base] : list) {
      const Mapping& m = mappings_.at(base);
      if (any && offset < end) {
        shared_.insert(base);
        shared_.insert(end_base);
      }
      if (!any || offset + m.size > end) {
        end = offset + m.size;
        end_base = base;
      }
      any = true;
    }
  }
}

}  // namespace kfuse::hooks
