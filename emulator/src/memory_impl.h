// Private: the device address space layout and the allocation table shared by Memory and the interpreter.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "kfuse/emulator/emulator.h"

namespace kfuse::emulator {

// Generic address windows (PTX generic addressing): shared, local and kernel-parameter space live in fixed
// windows; everything else is global. Global allocations start at kGlobalBase.
inline constexpr uint64_t kSharedWindow = 0x0000000100000000ull;
inline constexpr uint64_t kLocalWindow = 0x0000000200000000ull;
inline constexpr uint64_t kParamWindow = 0x0000000300000000ull;
inline constexpr uint64_t kWindowSize = 0x0000000100000000ull;
// Addresses of .func functions (function pointers): kFunctionWindow + 16 * function index.
inline constexpr uint64_t kFunctionWindow = 0x0000000400000000ull;
inline constexpr uint64_t kGlobalBase = 0x0000010000000000ull;
inline constexpr uint64_t kAllocAlign = 256;
inline constexpr uint64_t kGuardBytes = 256;

struct Region {
  uint64_t base = 0;
  uint64_t size = 0;
  uint8_t* host = nullptr;
  bool host_memory = false;  // Memory::mapHost: not an allocation
};

struct Memory::Impl {
  struct Alloc {
    uint64_t size = 0;
    // calloc'ed: the kernel hands out zero pages as they are touched, so a large allocation (a module's
    // `.global .b8 big[1 << 34]`) costs address space, not memory, until the program writes it.
    // The allocation's bytes; a mapping's point into the physical buffer `owner` shares with other mappings.
    std::shared_ptr<uint8_t> owner;
    uint8_t* data = nullptr;
    std::string tag;
    bool mapping = false;  // made by map(): unmap() removes it, free() refuses it
    bool host = false;     // made by mapHost(): the program's own memory, found by accesses only
  };
  mutable std::shared_mutex mu;  // shared: launches and copies; exclusive: allocate/free
  std::map<uint64_t, Alloc> live;
  std::map<uint64_t, uint64_t> freed;     // base -> size, for use-after-free reports
  std::map<uint64_t, uint64_t> reserved;  // base -> size of each reserve()d range
  std::vector<Region> regions;            // sorted by base; rebuilt on allocate/free
  uint64_t next = kGlobalBase;
  uint64_t in_use = 0;

  void rebuild() {
    regions.clear();
    regions.reserve(live.size());
    for (auto& [b, a] : live) regions.push_back({b, a.size, a.data, a.host});
  }
  // Region containing [addr, addr+len), or nullptr. Caller holds `mu` (shared).
  const Region* find(uint64_t addr, uint64_t len) const {
    auto it =
        std::upper_bound(regions.begin(), regions.end(), addr, [](uint64_t a, const Region& r) { return a < r.base; });
    if (it == regions.begin()) return nullptr;
    --it;
    if (addr - it->base + len > it->size || addr < it->base) return nullptr;
    return &*it;
  }
  // The live range (allocation, mapping or host range) overlapping [base, end), if any: its base.
  std::optional<uint64_t> overlapping(uint64_t base, uint64_t end) const {
    auto after = live.lower_bound(base);
    if (after != live.end() && after->first < end) return after->first;
    if (after != live.begin() && std::prev(after)->first + std::prev(after)->second.size > base)
      return std::prev(after)->first;
    return std::nullopt;
  }
  // The first address from `next` on, aligned, where `bytes` (and a guard gap) meet no host range (mapHost).
  uint64_t place(uint64_t bytes, uint64_t align) const {
    uint64_t base = (next + align - 1) / align * align;
    for (auto it = live.lower_bound(next); it != live.end(); ++it) {
      if (!it->second.host || it->first >= base + bytes + kGuardBytes) continue;
      base = (it->first + it->second.size + kGuardBytes + align - 1) / align * align;
    }
    return base;
  }
  // Describes why `addr` is not accessible (for error messages).
  std::string describe(uint64_t addr, uint64_t len) const;
};

}  // namespace kfuse::emulator
