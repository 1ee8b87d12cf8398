// AddressMap: the live allocations of a recording as non-overlapping address intervals, for resolving pointer
// arguments to (allocation, offset). Not thread-safe: the TraceAssembler owns it on the consumer side.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "kfuse/core/trace.h"

namespace kfuse::collector {

class AddressMap {
 public:
  struct Hit {
    core::Id allocation_id = core::kNoId;
    uint64_t base = 0;
    uint64_t offset = 0;
  };

  // Adds [address, address + size). An allocation already covering part of that range was freed without us
  // seeing it (or recording started late): it is removed, and its id returned through `evicted` if given.
  void insert(uint64_t address, uint64_t size, core::Id id, std::vector<core::Id>* evicted = nullptr);
  // Removes the allocation starting at `address`; returns its id, or nullopt if none starts there.
  std::optional<core::Id> erase(uint64_t address);
  // The live allocation containing `address`, if any. A zero-sized allocation contains only its base.
  std::optional<Hit> find(uint64_t address) const;
  size_t size() const { return intervals_.size(); }

 private:
  struct Interval {
    uint64_t end;  // exclusive; == base for a zero-sized allocation
    core::Id id;
  };
  std::map<uint64_t, Interval> intervals_;  // by base
};

}  // namespace kfuse::collector
