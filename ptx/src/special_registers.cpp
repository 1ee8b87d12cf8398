#include "kfuse/ptx/special_registers.h"

#include <array>
#include <charconv>
#include <utility>

namespace kfuse::ptx {
namespace {

using R = SpecialRegister;

// Every fixed spelling (the numbered families are matched apart).
constexpr std::pair<std::string_view, R> kNames[] = {
    {"%tid.x", R::kTidX},
    {"%tid.y", R::kTidY},
    {"%tid.z", R::kTidZ},
    {"%ntid.x", R::kNtidX},
    {"%ntid.y", R::kNtidY},
    {"%ntid.z", R::kNtidZ},
    {"%ctaid.x", R::kCtaidX},
    {"%ctaid.y", R::kCtaidY},
    {"%ctaid.z", R::kCtaidZ},
    {"%nctaid.x", R::kNctaidX},
    {"%nctaid.y", R::kNctaidY},
    {"%nctaid.z", R::kNctaidZ},
    {"%tid", R::kTid},
    {"%ntid", R::kNtid},
    {"%ctaid", R::kCtaid},
    {"%nctaid", R::kNctaid},
    {"%clusterid.x", R::kClusterIdX},
    {"%clusterid.y", R::kClusterIdY},
    {"%clusterid.z", R::kClusterIdZ},
    {"%nclusterid.x", R::kNClusterIdX},
    {"%nclusterid.y", R::kNClusterIdY},
    {"%nclusterid.z", R::kNClusterIdZ},
    {"%cluster_ctaid.x", R::kClusterCtaIdX},
    {"%cluster_ctaid.y", R::kClusterCtaIdY},
    {"%cluster_ctaid.z", R::kClusterCtaIdZ},
    {"%cluster_nctaid.x", R::kClusterNCtaIdX},
    {"%cluster_nctaid.y", R::kClusterNCtaIdY},
    {"%cluster_nctaid.z", R::kClusterNCtaIdZ},
    {"%clusterid", R::kClusterId},
    {"%nclusterid", R::kNClusterId},
    {"%cluster_ctaid", R::kClusterCtaId},
    {"%cluster_nctaid", R::kClusterNCtaId},
    {"%cluster_ctarank", R::kClusterCtaRank},
    {"%cluster_nctarank", R::kClusterNCtaRank},
    {"%is_explicit_cluster", R::kIsExplicitCluster},
    {"%laneid", R::kLaneId},
    {"%warpid", R::kWarpId},
    {"%nwarpid", R::kNWarpId},
    {"%smid", R::kSmId},
    {"%nsmid", R::kNSmId},
    {"%gridid", R::kGridId},
    {"%lanemask_eq", R::kLaneMaskEq},
    {"%lanemask_le", R::kLaneMaskLe},
    {"%lanemask_lt", R::kLaneMaskLt},
    {"%lanemask_ge", R::kLaneMaskGe},
    {"%lanemask_gt", R::kLaneMaskGt},
    {"%clock", R::kClock},
    {"%clock_hi", R::kClockHi},
    {"%clock64", R::kClock64},
    {"%globaltimer", R::kGlobalTimer},
    {"%globaltimer_lo", R::kGlobalTimerLo},
    {"%globaltimer_hi", R::kGlobalTimerHi},
    {"%dynamic_smem_size", R::kDynamicSmemSize},
    {"%total_smem_size", R::kTotalSmemSize},
    {"%aggr_smem_size", R::kAggrSmemSize},
    {"%reserved_smem_offset_begin", R::kReservedSmemOffsetBegin},
    {"%reserved_smem_offset_end", R::kReservedSmemOffsetEnd},
    {"%reserved_smem_offset_cap", R::kReservedSmemOffsetCap},
    {"%reserved_smem_offset_0", R::kReservedSmemOffset0},
    {"%reserved_smem_offset_1", R::kReservedSmemOffset1},
    {"%current_graph_exec", R::kCurrentGraphExec},
};

// A decimal number in [0, limit) spelling all of `digits`.
std::optional<int> smallNumber(std::string_view digits, int limit) {
  int v = 0;
  if (digits.empty() || digits.size() > 2) return std::nullopt;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v >= limit) return std::nullopt;
  if (digits.size() == 2 && digits[0] == '0') return std::nullopt;  // "%envreg03" is not a name PTX defines
  return v;
}

}  // namespace

std::optional<SpecialRegister> specialRegister(std::string_view name, int* number) {
  if (number) *number = 0;
  if (name.size() < 3 || name[0] != '%') return std::nullopt;
  // Most register operands are ordinary registers (%r12, %rd4, %f3, %p1): only names whose second letter starts a
  // special register are looked up.
  switch (name[1]) {
    case 't':
    case 'n':
    case 'c':
    case 'i':
    case 'l':
    case 'w':
    case 's':
    case 'g':
    case 'p':
    case 'e':
    case 'd':
    case 'a':
    case 'r': break;
    default: return std::nullopt;
  }
  for (const auto& [spelling, r] : kNames) {
    if (spelling == name) return r;
  }
  auto numbered = [&](std::string_view prefix, std::string_view suffix, int limit, R r) -> std::optional<R> {
    if (name.size() <= prefix.size() + suffix.size() || name.substr(0, prefix.size()) != prefix ||
        name.substr(name.size() - suffix.size()) != suffix) {
      return std::nullopt;
    }
    auto n = smallNumber(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()), limit);
    if (!n) return std::nullopt;
    if (number) *number = *n;
    return r;
  };
  if (auto r = numbered("%envreg", "", 32, R::kEnvReg)) return r;
  if (auto r = numbered("%pm", "_64", 8, R::kPerfMonitor64)) return r;
  if (auto r = numbered("%pm", "", 8, R::kPerfMonitor)) return r;
  return std::nullopt;
}

std::string specialRegisterName(SpecialRegister r, int number) {
  switch (r) {
    case R::kEnvReg: return "%envreg" + std::to_string(number);
    case R::kPerfMonitor: return "%pm" + std::to_string(number);
    case R::kPerfMonitor64: return "%pm" + std::to_string(number) + "_64";
    default: break;
  }
  for (const auto& [spelling, reg] : kNames) {
    if (reg == r) return std::string(spelling);
  }
  return "%<special " + std::to_string(static_cast<int>(r)) + ">";
}

std::optional<GeometryComponent> geometryComponent(SpecialRegister r) {
  const int i = static_cast<int>(r);
  if (i > static_cast<int>(R::kNctaidZ)) return std::nullopt;
  return GeometryComponent{static_cast<GeometryFamily>(i / 3), i % 3};
}

SpecialRegister geometryRegister(GeometryFamily family, int axis) {
  return static_cast<SpecialRegister>(static_cast<int>(family) * 3 + axis);
}

bool isGeometryVector(SpecialRegister r) {
  return r == R::kTid || r == R::kNtid || r == R::kCtaid || r == R::kNctaid;
}

bool isTimer(SpecialRegister r) {
  switch (r) {
    case R::kClock:
    case R::kClockHi:
    case R::kClock64:
    case R::kGlobalTimer:
    case R::kGlobalTimerLo:
    case R::kGlobalTimerHi: return true;
    default: return false;
  }
}

bool variesWithinBlock(SpecialRegister r) {
  switch (r) {
    case R::kTidX:
    case R::kTidY:
    case R::kTidZ:
    case R::kTid:
    case R::kLaneId:
    case R::kWarpId:
    case R::kLaneMaskEq:
    case R::kLaneMaskLe:
    case R::kLaneMaskLt:
    case R::kLaneMaskGe:
    case R::kLaneMaskGt:
    case R::kPerfMonitor:
    case R::kPerfMonitor64: return true;
    default: return isTimer(r);
  }
}

bool readsLaunchSharedMemorySize(SpecialRegister r) {
  return r == R::kDynamicSmemSize || r == R::kTotalSmemSize;
}

}  // namespace kfuse::ptx
