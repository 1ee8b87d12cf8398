// Virtual memory management as the recorder and the injector see it: the physical allocations cuMemCreate made in
// this process, each live cuMemMap'd range with the handle and offset it shows, and which of those ranges may show
// bytes another live range also shows. A handle mapped twice over overlapping offsets (a double-mapped ring buffer)
// puts the same bytes at two addresses, and a handle this process did not see created (imported, retained, made
// before kfuse was loaded) may too; addresses cannot tell such ranges apart, so no proof or plan may rest on them.
//
// Not thread-safe: callers hold their own lock. Lookups are O(log n); map, unmap and handle events recompute the
// shared set in O(n log n), n the live mappings (a handful in real programs).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_set>
#include <vector>

namespace kfuse::hooks {

class MappingTable {
 public:
  struct Mapping {
    uint64_t size = 0;
    uint64_t handle = 0;  // CUmemGenericAllocationHandle
    uint64_t offset = 0;  // into the handle's bytes
  };

  // cuMemCreate made `handle` in this process.
  void noteHandle(uint64_t handle);
  // cuMemMap of `handle` at `offset` onto [base, base + size); replaces a mapping at the same base.
  void map(uint64_t base, uint64_t size, uint64_t handle, uint64_t offset);
  // Forgets every mapping that starts inside [base, base + size) (cuMemUnmap; an allocation replacing the range)
  // and returns their bases.
  std::vector<uint64_t> unmap(uint64_t base, uint64_t size);

  bool empty() const { return mappings_.empty(); }
  // The mapping that starts at `base`, or null.
  const Mapping* find(uint64_t base) const;
  // True when the mapping that starts at `base` may show bytes that another live mapping shows too.
  bool shared(uint64_t base) const { return shared_.count(base) != 0; }

 private:
  void update();

  std::map<uint64_t, Mapping> mappings_;
  std::unordered_set<uint64_t> created_;
  std::unordered_set<uint64_t> shared_;
};

}  // namespace kfuse::hooks
