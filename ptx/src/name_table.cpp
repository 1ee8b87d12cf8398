#include "kfuse/ptx/name_table.h"

namespace kfuse::ptx {
namespace {

// FNV-1a: register and symbol names are a few bytes, where it is cheaper than a general-purpose string hash.
uint64_t hashName(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

NameTable::NameTable(size_t expected) {
  size_t slots = 16;
  while (slots < expected * 2) slots *= 2;
  slots_.assign(slots, -1);
  names_.reserve(expected);
  hashes_.reserve(expected);
}

size_t NameTable::slotOf(std::string_view name, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const int id = slots_[i];
    if (id < 0 || (hashes_[static_cast<size_t>(id)] == hash && names_[static_cast<size_t>(id)] == name)) return i;
  }
}

void NameTable::rehash(size_t slots) {
  slots_.assign(slots, -1);
  const size_t mask = slots - 1;
  for (size_t id = 0; id < names_.size(); ++id) {
    size_t i = hashes_[id] & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = static_cast<int>(id);
  }
}

int NameTable::intern(std::string_view name) {
  const uint64_t hash = hashName(name);
  const size_t slot = slotOf(name, hash);
  if (slots_[slot] >= 0) return slots_[slot];
  const int id = static_cast<int>(names_.size());
  names_.push_back(name);
  hashes_.push_back(hash);
  // At most half full, so probes stay short and an empty slot always ends them.
  if (names_.size() * 2 > slots_.size()) {
    rehash(slots_.size() * 2);
  } else {
    slots_[slot] = id;
  }
  return id;
}

int NameTable::find(std::string_view name) const {
  return slots_[slotOf(name, hashName(name))];
}

}  // namespace kfuse::ptx
