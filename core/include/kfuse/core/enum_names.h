// Name tables of enums: each value with the one string that stands for it in files and messages.
//
// An enum takes part by declaring, next to itself, a function found by argument-dependent lookup:
//
//   std::span<const core::EnumName<E>> nameTable(E);  // every value once, in declaration order
//
// Writers, readers and schema generators (kfuse/core/json_fields.h) then read and write it by name, list its
// names and reject unknown ones, all from that one table. Never rename an entry: the names are stored in files.
#pragma once

#include <concepts>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

namespace kfuse::core {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// An enum with a name table.
template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) {
  { nameTable(e) } -> std::convertible_to<std::span<const EnumName<E>>>;
};

template <NamedEnum E>
std::span<const EnumName<E>> enumNames() {
  return nameTable(E{});
}

// The name of `v`; "" for a value the table lacks (an integer cast to the enum).
template <NamedEnum E>
const char* enumName(E v) {
  for (const EnumName<E>& e : nameTable(v)) {
    if (e.value == v) return e.name;
  }
  return "";
}

// The value named `name`, or nullopt when no value has that name.
template <NamedEnum E>
std::optional<E> enumFromName(std::string_view name) {
  for (const EnumName<E>& e : nameTable(E{})) {
    if (name == e.name) return e.value;
  }
  return std::nullopt;
}

}  // namespace kfuse::core
