// The one place where PTX spellings meet the enums of kfuse/ptx/opcodes.h.
#include "opcodes.h"

#include <array>
#include <string>
#include <unordered_map>

#include "kfuse/ptx/ir.h"

namespace kfuse::ptx {
namespace {

constexpr std::string_view kOpcodeNames[] = {"",
#define KFUSE_PTX_X(e, s) s,
                                             KFUSE_PTX_OPCODES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
};
constexpr std::string_view kSpaceNames[] = {"",
#define KFUSE_PTX_X(e, s) s,
                                            KFUSE_PTX_STATE_SPACES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
};
constexpr std::string_view kLinkageNames[] = {"",
#define KFUSE_PTX_X(e, s) s,
                                              KFUSE_PTX_LINKAGES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
};
struct TypeInfo {
  std::string_view name;
  char cls;
  uint32_t bits;
  uint32_t elements;
};
constexpr TypeInfo kTypes[] = {{"", 0, 0, 0},
#define KFUSE_PTX_X(e, s, c, b, n) {s, c, b, n},
                               KFUSE_PTX_DATA_TYPES(KFUSE_PTX_X)
#undef KFUSE_PTX_X
};
constexpr std::string_view kModNames[] = {"",
#define KFUSE_PTX_X(e, s) s,
                                          KFUSE_PTX_MODIFIERS(KFUSE_PTX_X)
#undef KFUSE_PTX_X
};
static_assert(std::size(kOpcodeNames) == size_t(Opcode::kCount));
static_assert(std::size(kSpaceNames) == size_t(StateSpace::kCount));
static_assert(std::size(kTypes) == size_t(DataType::kCount));
static_assert(std::size(kLinkageNames) == size_t(Linkage::kCount));
static_assert(std::size(kModNames) == size_t(Mod::kCount));

template <class E, class Names>
std::unordered_map<std::string_view, E> indexOf(const Names& names) {
  std::unordered_map<std::string_view, E> m;
  for (size_t i = 1; i < std::size(names); ++i) m.emplace(names[i], static_cast<E>(i));
  return m;
}

}  // namespace

std::string_view opcodeName(Opcode op) {
  return kOpcodeNames[size_t(op)];
}
std::string_view spaceName(StateSpace s) {
  return kSpaceNames[size_t(s)];
}
std::string_view linkageName(Linkage l) {
  return kLinkageNames[size_t(l)];
}
std::string_view typeName(DataType t) {
  return kTypes[size_t(t)].name;
}
std::string_view modName(Mod m) {
  return kModNames[size_t(m)];
}
char typeClass(DataType t) {
  return kTypes[size_t(t)].cls;
}
uint32_t typeElementBits(DataType t) {
  return kTypes[size_t(t)].bits;
}
uint32_t typeElements(DataType t) {
  return kTypes[size_t(t)].elements;
}

StateSpace baseSpace(StateSpace s) {
  switch (s) {
    case StateSpace::kParamEntry:
    case StateSpace::kParamFunc: return StateSpace::kParam;
    case StateSpace::kSharedCta:
    case StateSpace::kSharedCluster: return StateSpace::kShared;
    default: return s;
  }
}

namespace detail {

Opcode lookupOpcode(std::string_view name) {
  static const auto kIndex = indexOf<Opcode>(kOpcodeNames);
  auto it = kIndex.find(name);
  return it == kIndex.end() ? Opcode::kUnknown : it->second;
}

StateSpace lookupSpace(std::string_view name) {
  static const auto kIndex = indexOf<StateSpace>(kSpaceNames);
  auto it = kIndex.find(name);
  return it == kIndex.end() ? StateSpace::kNone : it->second;
}

Linkage lookupLinkage(std::string_view name) {
  static const auto kIndex = indexOf<Linkage>(kLinkageNames);
  auto it = kIndex.find(name);
  return it == kIndex.end() ? Linkage::kNone : it->second;
}

DataType lookupType(std::string_view name) {
  static const auto kIndex = [] {
    std::unordered_map<std::string_view, DataType> m;
    for (size_t i = 1; i < std::size(kTypes); ++i) m.emplace(kTypes[i].name, static_cast<DataType>(i));
    return m;
  }();
  auto it = kIndex.find(name);
  return it == kIndex.end() ? DataType::kNone : it->second;
}

std::optional<Modifier> lookupModifier(std::string_view name) {
  // .texref/.surfref/.samplerref are both spaces and types; as instruction modifiers they are types.
  static const auto kIndex = [] {
    std::unordered_map<std::string_view, Modifier> m;
    for (size_t i = 1; i < std::size(kSpaceNames); ++i) m.emplace(kSpaceNames[i], Modifier::space(StateSpace(i)));
    for (size_t i = 1; i < std::size(kTypes); ++i) m.insert_or_assign(kTypes[i].name, Modifier::type(DataType(i)));
    for (size_t i = 1; i < std::size(kModNames); ++i) m.emplace(kModNames[i], Modifier::mod(Mod(i)));
    return m;
  }();
  auto it = kIndex.find(name);
  if (it == kIndex.end()) return std::nullopt;
  return it->second;
}

}  // namespace detail
}  // namespace kfuse::ptx

namespace kfuse::ptx {

void Instruction::addModifier(std::string_view spelling) {
  if (auto m = detail::lookupModifier(spelling)) {
    modifiers.push_back(*m);
    return;
  }
  modifiers.push_back({ModKind::kOther, static_cast<uint8_t>(spelled->other_modifiers.size())});
  spelled.mut().other_modifiers.emplace_back(spelling);
}

}  // namespace kfuse::ptx
