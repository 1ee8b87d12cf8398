// Numbering of the distinct names (registers, symbols) of one function, for analyses that look a name up for every
// operand of functions of tens of thousands of instructions.
//
// The table keeps views of the names it is given, never copies: the strings (normally the operands of a Function)
// must outlive it and not change while it is used. Not thread-safe to intern from several threads; const lookups
// from many threads are fine.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kfuse::ptx {

class NameTable {
 public:
  // `expected`: roughly how many distinct names will be interned (sizes the table up front; 0 is fine).
  explicit NameTable(size_t expected = 0);

  // The number of `name`: the one it got when first interned, or the next free one (0, 1, 2, ...).
  int intern(std::string_view name);
  // The number of `name`, or -1 if it was never interned.
  int find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) >= 0; }
  // How many distinct names were interned; name(i) is the i-th.
  size_t size() const { return names_.size(); }
  std::string_view name(int id) const { return names_[static_cast<size_t>(id)]; }

 private:
  // Open addressing with linear probing over a power-of-two array of slots (-1: empty, else a number): one
  // allocation for the whole table instead of a node per name.
  size_t slotOf(std::string_view name, uint64_t hash) const;
  void rehash(size_t slots);

  std::vector<std::string_view> names_;
  std::vector<uint64_t> hashes_;  // of names_, so growing does not hash again
  std::vector<int> slots_;
};

}  // namespace kfuse::ptx
