#include "kfuse/collector/nvtx_capture.h"

// Types only: the NVTX implementation lives in the application.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/collector/events.h"
#include "kfuse/collector/hook_recorder.h"
#include "kfuse/collector/trace_sink.h"

namespace kfuse::collector {
namespace {

// Names longer than this are cut: a range name is a label, not a payload.
constexpr size_t kMaxNameBytes = 1024;

std::atomic<TraceSink*> g_sink{nullptr};

// Domains and registered strings are handed to the application as opaque handles that point at these. Both live
// until the process exits (an application may use a handle after nvtxDomainDestroy: NVTX does not forbid it).
struct Domain {
  std::string name;
};
struct RegisteredString {
  std::string text;
};

// Guards startedRanges().
std::mutex& registryMutex() {
  static auto* mu = new std::mutex();  // leaked: callbacks may run during exit
  return *mu;
}

struct Open {
  const Domain* domain = nullptr;  // nullptr: the default domain
  std::string name;
  int64_t thread_id = 0;
  int64_t start_ns = 0;
};

// Push/pop ranges nest per thread (and per domain within the thread).
thread_local std::vector<Open> t_pushed;

// Start/end ranges are keyed by the id nvtxRangeStart* returned and may end on any thread.
std::unordered_map<uint64_t, Open>& startedRanges() {
  static auto* m = new std::unordered_map<uint64_t, Open>();  // leaked, like registryMutex()
  return *m;
}
std::atomic<uint64_t> g_next_range_id{1};

// Every domain and string handle given out, kept reachable until the process exits (handles stay valid; see Domain),
// so that leak checkers do not take them for leaks.
template <class T>
T* keepHandle(T* handle) {
  static auto* mu = new std::mutex();                     // leaked, like registryMutex()
  static auto* handles = new std::vector<const void*>();  // leaked, and so are the handles it holds
  std::lock_guard lock(*mu);
  handles->push_back(handle);
  return handle;
}

std::string narrow(const wchar_t* text) {
  std::string out;
  if (!text) return out;
  for (; *text && out.size() < kMaxNameBytes; ++text) {
    out.push_back(*text >= 0x20 && *text < 0x7f ? static_cast<char>(*text) : '?');
  }
  return out;
}

std::string ascii(const char* text) {
  if (!text) return {};
  return std::string(text, strnlen(text, kMaxNameBytes));
}

std::string messageOf(const nvtxEventAttributes_t* attributes) {
  if (!attributes) return {};
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return ascii(attributes->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(attributes->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const auto* s = reinterpret_cast<const RegisteredString*>(attributes->message.registered);
      return s ? s->text : std::string();
    }
    default: return {};
  }
}

void record(const Open& open, int64_t end_ns) {
  TraceSink* sink = g_sink.load(std::memory_order_acquire);
  if (!sink) return;
  NvtxEvent e;
  e.thread_id = open.thread_id;
  e.start_ns = open.start_ns;
  e.end_ns = end_ns;
  e.name_size = static_cast<uint32_t>(open.name.size());
  const std::string* domain = open.domain ? &open.domain->name : nullptr;
  e.domain_size = domain ? static_cast<uint32_t>(domain->size()) : 0;
  (void)sink->pushStruct(EventKind::kNvtx, e, open.name.data(), open.name.size(), domain ? domain->data() : nullptr,
                         e.domain_size);
}

// Every callback is a C entry point called by the application: nothing may escape it.
template <class Fn>
auto guarded(Fn&& fn, decltype(fn()) on_failure) noexcept -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    return on_failure;
  }
}

// The operations behind the callbacks; they may throw (allocation), the callbacks below catch.

int push(const Domain* domain, std::string name) {
  t_pushed.push_back(Open{domain, std::move(name), collectorThreadId(), collectorNowNs()});
  return static_cast<int>(t_pushed.size()) - 1;
}

int pop(const Domain* domain) {
  const int64_t now = collectorNowNs();
  auto it = std::find_if(t_pushed.rbegin(), t_pushed.rend(), [&](const Open& o) { return o.domain == domain; });
  if (it == t_pushed.rend()) return -1;  // a pop without a push: NVTX says so with -1
  record(*it, now);
  t_pushed.erase(std::next(it).base());
  return static_cast<int>(t_pushed.size());
}

nvtxRangeId_t start(const Domain* domain, std::string name) {
  const uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  Open o{domain, std::move(name), collectorThreadId(), collectorNowNs()};
  std::lock_guard lock(registryMutex());
  startedRanges().emplace(id, std::move(o));
  return id;
}

int end(nvtxRangeId_t id) {
  const int64_t now = collectorNowNs();
  Open o;
  {
    std::lock_guard lock(registryMutex());
    auto it = startedRanges().find(id);
    if (it == startedRanges().end()) return 0;
    o = std::move(it->second);
    startedRanges().erase(it);
  }
  record(o, now);
  return 0;
}

const Domain* domainOf(nvtxDomainHandle_t handle) {
  return reinterpret_cast<const Domain*>(handle);
}

// ---- the functions NVTX calls: every one runs its whole body, message conversion included, under guarded() ------

constexpr nvtxRangeId_t kNoRange = 0;

int NVTX_API rangePushA(const char* message) {
  return guarded([&] { return push(nullptr, ascii(message)); }, -1);
}
int NVTX_API rangePushW(const wchar_t* message) {
  return guarded([&] { return push(nullptr, narrow(message)); }, -1);
}
int NVTX_API rangePushEx(const nvtxEventAttributes_t* attributes) {
  return guarded([&] { return push(nullptr, messageOf(attributes)); }, -1);
}
int NVTX_API rangePop() {
  return guarded([&] { return pop(nullptr); }, -1);
}
nvtxRangeId_t NVTX_API rangeStartA(const char* message) {
  return guarded([&] { return start(nullptr, ascii(message)); }, kNoRange);
}
nvtxRangeId_t NVTX_API rangeStartW(const wchar_t* message) {
  return guarded([&] { return start(nullptr, narrow(message)); }, kNoRange);
}
nvtxRangeId_t NVTX_API rangeStartEx(const nvtxEventAttributes_t* attributes) {
  return guarded([&] { return start(nullptr, messageOf(attributes)); }, kNoRange);
}
void NVTX_API rangeEnd(nvtxRangeId_t id) {
  guarded([&] { return end(id); }, 0);
}

int NVTX_API domainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  return guarded([&] { return push(domainOf(domain), messageOf(attributes)); }, -1);
}
int NVTX_API domainRangePop(nvtxDomainHandle_t domain) {
  return guarded([&] { return pop(domainOf(domain)); }, -1);
}
nvtxRangeId_t NVTX_API domainRangeStartEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  return guarded([&] { return start(domainOf(domain), messageOf(attributes)); }, kNoRange);
}
void NVTX_API domainRangeEnd(nvtxDomainHandle_t /*domain*/, nvtxRangeId_t id) {
  guarded([&] { return end(id); }, 0);
}
// Domains and registered strings: never freed (see Domain), kept reachable by keepHandle.
nvtxDomainHandle_t NVTX_API domainCreateA(const char* name) {
  return guarded([&] { return reinterpret_cast<nvtxDomainHandle_t>(keepHandle(new Domain{ascii(name)})); },
                 nvtxDomainHandle_t{nullptr});
}
nvtxDomainHandle_t NVTX_API domainCreateW(const wchar_t* name) {
  return guarded([&] { return reinterpret_cast<nvtxDomainHandle_t>(keepHandle(new Domain{narrow(name)})); },
                 nvtxDomainHandle_t{nullptr});
}
void NVTX_API domainDestroy(nvtxDomainHandle_t /*domain*/) {}  // handles stay valid: see Domain
nvtxStringHandle_t NVTX_API domainRegisterStringA(nvtxDomainHandle_t /*domain*/, const char* text) {
  return guarded([&] { return reinterpret_cast<nvtxStringHandle_t>(keepHandle(new RegisteredString{ascii(text)})); },
                 nvtxStringHandle_t{nullptr});
}
nvtxStringHandle_t NVTX_API domainRegisterStringW(nvtxDomainHandle_t /*domain*/, const wchar_t* text) {
  return guarded([&] { return reinterpret_cast<nvtxStringHandle_t>(keepHandle(new RegisteredString{narrow(text)})); },
                 nvtxStringHandle_t{nullptr});
}

struct Slot {
  unsigned int id;
  NvtxFunctionPointer fn;
};

template <class F>
NvtxFunctionPointer slot(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

// Fills the slots NVTX offers for `module`; false when the module's table cannot be had.
bool fill(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module, const std::vector<Slot>& slots) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks.GetModuleFunctionTable || !callbacks.GetModuleFunctionTable(module, &table, &size) || !table) {
    return false;
  }
  for (const Slot& s : slots) {
    if (s.id < size && table[s.id]) *table[s.id] = s.fn;
  }
  return true;
}

}  // namespace

int initializeNvtxInjection(NvtxExportTableFn get_export_table) {
  if (!get_export_table) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  const std::vector<Slot> core = {
      {NVTX_CBID_CORE_RangeStartEx, slot(&rangeStartEx)}, {NVTX_CBID_CORE_RangeStartA, slot(&rangeStartA)},
      {NVTX_CBID_CORE_RangeStartW, slot(&rangeStartW)},   {NVTX_CBID_CORE_RangeEnd, slot(&rangeEnd)},
      {NVTX_CBID_CORE_RangePushEx, slot(&rangePushEx)},   {NVTX_CBID_CORE_RangePushA, slot(&rangePushA)},
      {NVTX_CBID_CORE_RangePushW, slot(&rangePushW)},     {NVTX_CBID_CORE_RangePop, slot(&rangePop)},
  };
  const std::vector<Slot> core2 = {
      {NVTX_CBID_CORE2_DomainRangeStartEx, slot(&domainRangeStartEx)},
      {NVTX_CBID_CORE2_DomainRangeEnd, slot(&domainRangeEnd)},
      {NVTX_CBID_CORE2_DomainRangePushEx, slot(&domainRangePushEx)},
      {NVTX_CBID_CORE2_DomainRangePop, slot(&domainRangePop)},
      {NVTX_CBID_CORE2_DomainRegisterStringA, slot(&domainRegisterStringA)},
      {NVTX_CBID_CORE2_DomainRegisterStringW, slot(&domainRegisterStringW)},
      {NVTX_CBID_CORE2_DomainCreateA, slot(&domainCreateA)},
      {NVTX_CBID_CORE2_DomainCreateW, slot(&domainCreateW)},
      {NVTX_CBID_CORE2_DomainDestroy, slot(&domainDestroy)},
  };
  if (!fill(*callbacks, NVTX_CB_MODULE_CORE, core) || !fill(*callbacks, NVTX_CB_MODULE_CORE2, core2)) return 0;
  // "Must be set by tools when attaching" (nvtxTypes.h).
  const auto* version = static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
  if (version && version->struct_size >= sizeof(NvtxExportTableVersionInfo) && version->SetInjectionNvtxVersion) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  return 1;
}

void attachNvtxSink(TraceSink* sink) {
  g_sink.store(sink, std::memory_order_release);
}

}  // namespace kfuse::collector
