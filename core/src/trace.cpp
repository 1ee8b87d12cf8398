#include "kfuse/core/trace.h"

#include <openssl/evp.h>

#include <array>
#include <utility>

namespace kfuse::core {
namespace {

// One table per enum: the string form is the one stored in SQLite and JSON, so never rename an entry.
template <typename E, size_t N>
using NameTable = std::array<EnumName<E>, N>;

constexpr NameTable<ImageKind, 4> kImageKinds{{{ImageKind::kUnknown, "unknown"},
                                               {ImageKind::kPtx, "ptx"},
                                               {ImageKind::kCubin, "cubin"},
                                               {ImageKind::kFatbin, "fatbin"}}};
constexpr NameTable<AccessMode, 5> kAccessModes{{{AccessMode::kUnknown, "unknown"},
                                                 {AccessMode::kNone, "none"},
                                                 {AccessMode::kRead, "read"},
                                                 {AccessMode::kWrite, "write"},
                                                 {AccessMode::kReadWrite, "read_write"}}};
constexpr NameTable<MetricSource, 3> kMetricSources{{{MetricSource::kMeasured, "measured"},
                                                     {MetricSource::kEmulated, "emulated"},
                                                     {MetricSource::kEstimated, "estimated"}}};
constexpr NameTable<AllocationKind, 6> kAllocationKinds{{{AllocationKind::kUnknown, "unknown"},
                                                         {AllocationKind::kDevice, "device"},
                                                         {AllocationKind::kHostPinned, "host_pinned"},
                                                         {AllocationKind::kManaged, "managed"},
                                                         {AllocationKind::kPool, "pool"},
                                                         {AllocationKind::kArray, "array"}}};
constexpr NameTable<MemcpyKind, 6> kMemcpyKinds{{{MemcpyKind::kUnknown, "unknown"},
                                                 {MemcpyKind::kHostToDevice, "htod"},
                                                 {MemcpyKind::kDeviceToHost, "dtoh"},
                                                 {MemcpyKind::kDeviceToDevice, "dtod"},
                                                 {MemcpyKind::kHostToHost, "htoh"},
                                                 {MemcpyKind::kPeer, "peer"}}};
constexpr NameTable<SyncKind, 5> kSyncKinds{{{SyncKind::kUnknown, "unknown"},
                                             {SyncKind::kContext, "context"},
                                             {SyncKind::kStream, "stream"},
                                             {SyncKind::kEvent, "event"},
                                             {SyncKind::kStreamWaitEvent, "stream_wait_event"}}};
constexpr NameTable<StatSeverity, 3> kSeverities{
    {{StatSeverity::kInfo, "info"}, {StatSeverity::kWarning, "warning"}, {StatSeverity::kError, "error"}}};
constexpr NameTable<GraphOrigin, 5> kGraphOrigins{{{GraphOrigin::kUnknown, "unknown"},
                                                   {GraphOrigin::kCapture, "capture"},
                                                   {GraphOrigin::kExplicit, "explicit"},
                                                   {GraphOrigin::kChild, "child"},
                                                   {GraphOrigin::kExecNodeUpdate, "exec_node_update"}}};
constexpr NameTable<GraphNodeType, 11> kGraphNodeTypes{{{GraphNodeType::kOther, "other"},
                                                        {GraphNodeType::kKernel, "kernel"},
                                                        {GraphNodeType::kMemcpy, "memcpy"},
                                                        {GraphNodeType::kMemset, "memset"},
                                                        {GraphNodeType::kHost, "host"},
                                                        {GraphNodeType::kEmpty, "empty"},
                                                        {GraphNodeType::kEventRecord, "event_record"},
                                                        {GraphNodeType::kEventWait, "event_wait"},
                                                        {GraphNodeType::kChildGraph, "child_graph"},
                                                        {GraphNodeType::kMemAlloc, "mem_alloc"},
                                                        {GraphNodeType::kMemFree, "mem_free"}}};

template <typename E, size_t N>
std::string_view nameOf(const NameTable<E, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::optional<E> valueOf(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [e, n] : table) {
    if (n == name) return e;
  }
  return std::nullopt;
}

}  // namespace

std::string_view toString(ImageKind v) {
  return nameOf(kImageKinds, v);
}
std::string_view toString(AccessMode v) {
  return nameOf(kAccessModes, v);
}
std::string_view toString(MetricSource v) {
  return nameOf(kMetricSources, v);
}
std::string_view toString(AllocationKind v) {
  return nameOf(kAllocationKinds, v);
}
std::string_view toString(MemcpyKind v) {
  return nameOf(kMemcpyKinds, v);
}
std::string_view toString(SyncKind v) {
  return nameOf(kSyncKinds, v);
}
std::string_view toString(StatSeverity v) {
  return nameOf(kSeverities, v);
}
std::string_view toString(GraphOrigin v) {
  return nameOf(kGraphOrigins, v);
}
std::string_view toString(GraphNodeType v) {
  return nameOf(kGraphNodeTypes, v);
}
std::optional<ImageKind> parseImageKind(std::string_view s) {
  return valueOf(kImageKinds, s);
}
std::optional<AccessMode> parseAccessMode(std::string_view s) {
  return valueOf(kAccessModes, s);
}
std::optional<MetricSource> parseMetricSource(std::string_view s) {
  return valueOf(kMetricSources, s);
}
std::optional<AllocationKind> parseAllocationKind(std::string_view s) {
  return valueOf(kAllocationKinds, s);
}
std::optional<MemcpyKind> parseMemcpyKind(std::string_view s) {
  return valueOf(kMemcpyKinds, s);
}
std::optional<SyncKind> parseSyncKind(std::string_view s) {
  return valueOf(kSyncKinds, s);
}
std::optional<StatSeverity> parseStatSeverity(std::string_view s) {
  return valueOf(kSeverities, s);
}
std::optional<GraphOrigin> parseGraphOrigin(std::string_view s) {
  return valueOf(kGraphOrigins, s);
}
std::optional<GraphNodeType> parseGraphNodeType(std::string_view s) {
  return valueOf(kGraphNodeTypes, s);
}

std::span<const EnumName<ImageKind>> nameTable(ImageKind) {
  return kImageKinds;
}
std::span<const EnumName<AccessMode>> nameTable(AccessMode) {
  return kAccessModes;
}
std::span<const EnumName<MetricSource>> nameTable(MetricSource) {
  return kMetricSources;
}
std::span<const EnumName<AllocationKind>> nameTable(AllocationKind) {
  return kAllocationKinds;
}
std::span<const EnumName<MemcpyKind>> nameTable(MemcpyKind) {
  return kMemcpyKinds;
}
std::span<const EnumName<SyncKind>> nameTable(SyncKind) {
  return kSyncKinds;
}
std::span<const EnumName<StatSeverity>> nameTable(StatSeverity) {
  return kSeverities;
}
std::span<const EnumName<GraphOrigin>> nameTable(GraphOrigin) {
  return kGraphOrigins;
}
std::span<const EnumName<GraphNodeType>> nameTable(GraphNodeType) {
  return kGraphNodeTypes;
}

const Allocation* findAllocation(const std::vector<Allocation>& allocations, uint64_t address, int64_t time_ns) {
  for (const Allocation& a : allocations) {
    if (address < a.address || address - a.address >= a.size) continue;
    if (time_ns != kNoTime) {
      if (a.alloc_ns != kNoTime && time_ns < a.alloc_ns) continue;
      if (a.free_ns != kNoTime && time_ns >= a.free_ns) continue;
    }
    return &a;
  }
  return nullptr;
}

std::string sha256Hex(const uint8_t* bytes, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  EVP_Digest(bytes, size, digest, &digest_len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(digest_len * 2);
  for (unsigned int i = 0; i < digest_len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

}  // namespace kfuse::core
