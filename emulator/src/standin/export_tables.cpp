// The driver's private export tables ("dark API") that the CUDA runtime (cudart, static or shared) asks for with
// cuGetExportTable before it does anything else. Nothing here comes from NVIDIA headers: the UUIDs and slot
// meanings were documented by projects that run cudart programs on other back ends (ZLUDA's dark_api crate and
// the issue threads and notes of similar projects), and confirmed by running cudart 13.0 programs against this
// stand-in with KFUSE_STANDIN_TRACE=1. docs/emulator.md lists which slots are implemented and which are guesses.
//
// Layout: a table is an array of pointers. Most begin with their own size in bytes (slot 0); the context-local
// storage and context-check tables do not. A slot whose meaning is unknown holds a stub that names the table and
// the slot once on stderr and returns CUDA_ERROR_NOT_SUPPORTED, so an unexpected call is visible, never silent.
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "standin_internal.h"

namespace kfuse::standin {
namespace {

// ---- table identities -----------------------------------------------------------------------------------------
enum TableId : int {
  kCudartInterface,      // 6bd5fb6c: module loads from fatbins, the primary context
  kToolsTls,             // 42d85a81: tools thread-local state
  kToolsRuntimeHooks,    // a094798c: buffers the runtime's tools callbacks live in
  kContextLocalStorage,  // c693336e: per-context key/value store with destructors
  kContextChecks,        // 263e8860: context validity checks
  kIntegrityCheck,       // d4082055: runtime/driver validity handshake
  kCtxCreateBypass,      // 0ca50b8c: context creation
  kHeapAccess,           // 195bcbf4: device heap records
  kDeviceExtended,       // b10541e1: extended device attributes
  kTableCount
};

struct TableInfo {
  const char* name;
  const char* uuid;  // as printed in messages
  std::array<uint8_t, 16> bytes;
  size_t slots;
  bool size_header;
};

constexpr TableInfo kTables[kTableCount] = {
    {"cudart interface",
     "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9",
     {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     13,
     true},
    {"tools TLS",
     "42d85a81-23f6-cb47-8298-f6e78a3aecdc",
     {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     4,
     true},
    {"tools runtime callback hooks",
     "a094798c-2e74-2e74-93f2-0800200c0a66",
     {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     7,
     true},
    {"context-local storage",
     "c693336e-1121-df11-a8c3-68f355d89593",
     {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     4,
     false},
    {"context checks",
     "263e8860-7cd2-6143-92f6-bbd5006dfa7e",
     {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
     4,
     true},
    {"integrity check",
     "d4082055-bde6-704b-8d34-ba123c66e1f2",
     {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     3,
     true},
    {"context-create bypass",
     "0ca50b8c-1004-929a-89a7-d0df10e77286",
     {0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72, 0x86},
     2,
     true},
    {"heap access",
     "195bcbf4-d67d-024a-acc5-1d29cea631ae",
     {0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a, 0xac, 0xc5, 0x1d, 0x29, 0xce, 0xa6, 0x31, 0xae},
     3,
     true},
    {"device extended attributes",
     "b10541e1-f7c7-c74a-9f64-f223be99f1e2",
     {0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a, 0x9f, 0x64, 0xf2, 0x23, 0xbe, 0x99, 0xf1, 0xe2},
     26,
     true},
};

// Tables the stand-in deliberately does not provide. cudart 13.0 treats "not found" as "absent" and carries on
// (checked here); other projects' notes say that success makes it take another start-up path, and f8cff951 holds
// several sub-tables whose slots are unknown.
constexpr std::array<uint8_t, 16> kDeclinedTables[] = {
    {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9},
};

std::string uuidText(const CUuuid* id) {
  const auto* b = reinterpret_cast<const uint8_t*>(id->bytes);
  char s[40];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

// ---- stubs for slots whose meaning is unknown -----------------------------------------------------------------
template <int T, int S>
CUresult CUDAAPI unknownSlot() {
  logOnce(std::string("the runtime called slot ") + std::to_string(S) + " of the private driver table " +
          kTables[T].uuid + " (" + kTables[T].name +
          "), whose meaning is unknown; it returns CUDA_ERROR_NOT_SUPPORTED");
  return CUDA_ERROR_NOT_SUPPORTED;
}

constexpr size_t kMaxSlots = 26;
template <int T, size_t... S>
std::array<void*, kMaxSlots> stubsFor(std::index_sequence<S...>) {
  return {reinterpret_cast<void*>(&unknownSlot<T, int(S)>)...};
}

// ---- cudart interface -----------------------------------------------------------------------------------------
// Slots 1, 6 and 8 register a fatbin as a module: 1 and 6 get the __fatBinC_Wrapper_t, 8 the fatbin itself.
// The extra arguments of 6 and 8 are unused here (ZLUDA's notes saw them null). cudart 13.0 calls none of the
// three: it loads fatbins with cuLibraryLoadData.
CUresult CUDAAPI moduleFromWrapper(CUmodule* module, const void* wrapper) {
  if (tracing()) std::fprintf(stderr, "kfuse stand-in trace: cudart slot 1 (fatbin wrapper %p)\n", wrapper);
  if (!module || !wrapper) return CUDA_ERROR_INVALID_VALUE;
  return cuModuleLoadFatBinary(module, wrapper);
}
CUresult CUDAAPI primaryContext(CUcontext* ctx, CUdevice device) {
  if (tracing()) std::fprintf(stderr, "kfuse stand-in trace: cudart slot 2 (primary context of device %d)\n", device);
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuDevicePrimaryCtxRetain(ctx, device);
  if (r == CUDA_SUCCESS) cuDevicePrimaryCtxRelease(device);  // the runtime does not release what it gets here
  return r;
}
CUresult CUDAAPI moduleFromWrapperEx(CUmodule* module, const void* wrapper, void* a3, void* a4, unsigned a5) {
  if (tracing())
    std::fprintf(stderr, "kfuse stand-in trace: cudart slot 6 (fatbin wrapper %p, %p, %p, %u)\n", wrapper, a3, a4, a5);
  if (!module || !wrapper) return CUDA_ERROR_INVALID_VALUE;
  return cuModuleLoadFatBinary(module, wrapper);
}
CUresult CUDAAPI cudartSlot7(size_t arg) {
  if (tracing()) std::fprintf(stderr, "kfuse stand-in trace: cudart slot 7 (%zu)\n", arg);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI moduleFromFatbin(const void* fatbin, CUmodule* module, void* a3, void* a4, unsigned a5) {
  if (tracing())
    std::fprintf(stderr, "kfuse stand-in trace: cudart slot 8 (fatbin %p, %p, %p, %u)\n", fatbin, a3, a4, a5);
  if (!module || !fatbin) return CUDA_ERROR_INVALID_VALUE;
  return cuModuleLoadFatBinary(module, fatbin);
}

// ---- tools TLS, tools runtime callback hooks ------------------------------------------------------------------
CUresult CUDAAPI toolsCurrentContext(CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  return cuCtxGetCurrent(ctx);
}
// The runtime keeps its tools-callback state in memory the driver hands out; it is only ever written by the
// runtime. Sizes as observed (1024 and 14 units); the buffers are 8 times larger in case the unit is a pointer.
alignas(64) uint8_t g_hooks_buffer1[1024 * 8];
alignas(64) uint8_t g_hooks_buffer2[14 * 8];
void CUDAAPI hooksBuffer1(void** ptr, size_t* size) {
  if (ptr) *ptr = g_hooks_buffer1;
  if (size) *size = 1024;
}
void CUDAAPI hooksBuffer2(void** ptr, size_t* size) {
  if (ptr) *ptr = g_hooks_buffer2;
  if (size) *size = 14;
}

// ---- context-local storage ------------------------------------------------------------------------------------
using ClsDestructor = void(CUDAAPI*)(CUcontext, void*, void*);
struct ClsValue {
  void* value;
  ClsDestructor destructor;
};
struct ContextLocalStorage {
  std::mutex mu;
  std::map<std::pair<CUcontext, void*>, ClsValue> values;
};
ContextLocalStorage& cls() {
  static auto* s = new ContextLocalStorage();  // never destroyed: the runtime tears down from atexit handlers
  return *s;
}
CUcontext contextOrCurrent(CUcontext ctx) {
  if (ctx) return ctx;
  CUcontext cur = nullptr;
  cuCtxGetCurrent(&cur);
  return cur;
}
CUresult CUDAAPI clsPut(CUcontext ctx, void* key, void* value, ClsDestructor destructor) {
  ctx = contextOrCurrent(ctx);
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(cls().mu);
  cls().values[{ctx, key}] = ClsValue{value, destructor};
  return CUDA_SUCCESS;
}
CUresult CUDAAPI clsRemove(CUcontext ctx, void* key) {
  ctx = contextOrCurrent(ctx);
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(cls().mu);
  cls().values.erase({ctx, key});
  return CUDA_SUCCESS;
}
CUresult CUDAAPI clsGet(void** value, CUcontext ctx, void* key) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  *value = nullptr;
  ctx = contextOrCurrent(ctx);
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(cls().mu);
  auto it = cls().values.find({ctx, key});
  if (it == cls().values.end()) return CUDA_ERROR_INVALID_VALUE;  // "not stored yet": the runtime then puts one
  *value = it->second.value;
  return CUDA_SUCCESS;
}

// ---- context checks -------------------------------------------------------------------------------------------
// Slot 2 reports whether a context needs special handling (never here: 0 and no detail); slot 3 a global flag
// (0). Both meanings are inferred from the values a real driver returns.
CUresult CUDAAPI contextCheck(CUcontext ctx, uint32_t* flags, const void** detail) {
  (void)ctx;
  if (flags) *flags = 0;
  if (detail) *detail = nullptr;
  return CUDA_SUCCESS;
}
uint32_t CUDAAPI contextCheckGlobal() {
  return 0;
}

// ---- integrity check ------------------------------------------------------------------------------------------
// The runtime passes its version, the time, and a 16-byte result it compares with its own computation. For
// versions ending in 0 and 1 the expected results are constants; otherwise it is HMAC-MD2 (RFC 1319, RFC 2104)
// with a fixed 16-byte key over a record of the process (below) followed by one record per device.
constexpr uint8_t kMd2S[256] = {
    41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161, 236, 240, 6,   19,  98,  167, 5,   243, 192, 199,
    115, 140, 152, 147, 43,  217, 188, 76,  130, 202, 30,  155, 87,  60,  253, 212, 224, 22,  103, 66,  111, 24,
    138, 23,  229, 18,  190, 78,  196, 214, 218, 158, 222, 73,  160, 251, 245, 142, 187, 47,  238, 122, 169, 104,
    121, 145, 21,  178, 7,   63,  148, 194, 16,  137, 11,  34,  95,  33,  128, 127, 93,  154, 90,  144, 50,  39,
    53,  62,  204, 231, 191, 247, 151, 3,   255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,  172, 86,
    170, 198, 79,  184, 56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4,   241, 69,  157, 112, 89,
    100, 113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,   27,  96,  37,  173, 174, 176, 185, 246, 28,  70,
    97,  105, 52,  64,  126, 15,  85,  71,  163, 35,  221, 81,  175, 58,  195, 92,  249, 206, 186, 197, 234, 38,
    44,  83,  13,  110, 133, 40,  132, 9,   211, 223, 205, 244, 65,  129, 77,  82,  106, 220, 55,  200, 108, 193,
    171, 250, 36,  225, 123, 8,   12,  189, 177, 74,  120, 136, 149, 139, 227, 99,  232, 109, 233, 203, 213, 254,
    59,  0,   29,  57,  242, 239, 183, 14,  102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,  49,  68,
    80,  180, 143, 237, 31,  26,  219, 153, 141, 51,  159, 17,  131, 20};

class Md2 {
 public:
  void update(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
      block_[fill_++] = p[i];
      if (fill_ == 16) compress();
    }
  }
  std::array<uint8_t, 16> finish() {
    uint8_t pad = uint8_t(16 - fill_);
    std::vector<uint8_t> padding(pad, pad);
    update(padding.data(), padding.size());
    std::array<uint8_t, 16> checksum = checksum_;
    update(checksum.data(), checksum.size());
    std::array<uint8_t, 16> out;
    std::memcpy(out.data(), x_.data(), 16);
    return out;
  }

 private:
  void compress() {
    for (int j = 0; j < 16; ++j) {
      x_[16 + j] = block_[j];
      x_[32 + j] = uint8_t(block_[j] ^ x_[j]);
      checksum_[j] ^= kMd2S[block_[j] ^ last_];
      last_ = checksum_[j];
    }
    uint8_t t = 0;
    for (int round = 0; round < 18; ++round) {
      for (int k = 0; k < 48; ++k) t = x_[k] ^= kMd2S[t];
      t = uint8_t(t + round);
    }
    fill_ = 0;
  }
  std::array<uint8_t, 48> x_{};
  std::array<uint8_t, 16> checksum_{};
  std::array<uint8_t, 16> block_{};
  size_t fill_ = 0;
  uint8_t last_ = 0;
};

struct IntegrityProcessRecord {
  uint32_t driver_version;
  uint32_t runtime_version;
  uint32_t process;
  uint32_t thread;
  const void* cudart_table;
  const void* integrity_table;
  const void* function;
  uint64_t unix_seconds;
};
static_assert(sizeof(IntegrityProcessRecord) == 48);
struct IntegrityDeviceRecord {
  CUuuid uuid;
  int32_t pci_domain;
  int32_t pci_bus;
  int32_t pci_device;
};
static_assert(sizeof(IntegrityDeviceRecord) == 28);

void* g_tables[kTableCount][kMaxSlots];

CUresult CUDAAPI integrityCheck(uint32_t version, uint64_t unix_seconds, uint64_t* result) {
  if (tracing()) std::fprintf(stderr, "kfuse stand-in trace: integrity check (version %u)\n", version);
  if (!result) return CUDA_ERROR_INVALID_VALUE;
  if (version % 10 == 0 || version % 10 == 1) {
    result[0] = version % 10 == 0 ? 0x3341181c03cb675cull : 0x1841181c03cb675cull;
    result[1] = 0x8ed383aa1f4cd1e8ull;
    return CUDA_SUCCESS;
  }
  constexpr uint8_t kKey[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
  uint8_t ipad[16], opad[16];
  for (int i = 0; i < 16; ++i) ipad[i] = kKey[i] ^ 0x36, opad[i] = kKey[i] ^ 0x5c;
  Md2 inner;
  inner.update(ipad, 16);
  int driver = 0;
  cuDriverGetVersion(&driver);
  IntegrityProcessRecord proc{};
  proc.driver_version = uint32_t(driver);
  proc.runtime_version = version;
  proc.process = uint32_t(getpid());
  proc.thread = uint32_t(uintptr_t(pthread_self()));
  proc.cudart_table = g_tables[kCudartInterface];
  proc.integrity_table = g_tables[kIntegrityCheck];
  proc.function = reinterpret_cast<const void*>(&integrityCheck);
  proc.unix_seconds = unix_seconds;
  inner.update(&proc, sizeof proc);
  int count = 0;
  if (cuDeviceGetCount(&count) != CUDA_SUCCESS) return CUDA_ERROR_NOT_INITIALIZED;
  for (int d = 0; d < count; ++d) {
    IntegrityDeviceRecord rec{};
    cuDeviceGetUuid(&rec.uuid, d);
    cuDeviceGetAttribute(&rec.pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    cuDeviceGetAttribute(&rec.pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    cuDeviceGetAttribute(&rec.pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    inner.update(&rec, sizeof rec);
  }
  auto inner_digest = inner.finish();
  Md2 outer;
  outer.update(opad, 16);
  outer.update(inner_digest.data(), 16);
  auto digest = outer.finish();
  std::memcpy(result, digest.data(), 16);
  return CUDA_SUCCESS;
}

// ---- context-create bypass ------------------------------------------------------------------------------------
CUresult CUDAAPI ctxCreateBypass(CUcontext* ctx, unsigned flags, CUdevice device) {
  CUctxCreateParams params{};
  return cuCtxCreate(ctx, &params, flags, device);
}

// ---- assembling the tables ------------------------------------------------------------------------------------
template <int T>
void fillStubs() {
  static const auto stubs = stubsFor<T>(std::make_index_sequence<kMaxSlots>());
  for (size_t s = 0; s < kTables[T].slots; ++s) g_tables[T][s] = stubs[s];
  if (kTables[T].size_header) g_tables[T][0] = reinterpret_cast<void*>(uintptr_t(kTables[T].slots * sizeof(void*)));
}

bool buildTables() {
  fillStubs<kCudartInterface>();
  fillStubs<kToolsTls>();
  fillStubs<kToolsRuntimeHooks>();
  fillStubs<kContextLocalStorage>();
  fillStubs<kContextChecks>();
  fillStubs<kIntegrityCheck>();
  fillStubs<kCtxCreateBypass>();
  fillStubs<kHeapAccess>();
  fillStubs<kDeviceExtended>();
  auto set = [](TableId t, size_t slot, auto fn) { g_tables[t][slot] = reinterpret_cast<void*>(fn); };
  set(kCudartInterface, 1, &moduleFromWrapper);
  set(kCudartInterface, 2, &primaryContext);
  set(kCudartInterface, 6, &moduleFromWrapperEx);
  set(kCudartInterface, 7, &cudartSlot7);
  set(kCudartInterface, 8, &moduleFromFatbin);
  set(kToolsTls, 2, &toolsCurrentContext);
  set(kToolsRuntimeHooks, 2, &hooksBuffer1);
  set(kToolsRuntimeHooks, 6, &hooksBuffer2);
  set(kContextLocalStorage, 0, &clsPut);
  set(kContextLocalStorage, 1, &clsRemove);
  set(kContextLocalStorage, 2, &clsGet);
  set(kContextChecks, 2, &contextCheck);
  set(kContextChecks, 3, &contextCheckGlobal);
  set(kIntegrityCheck, 1, &integrityCheck);
  set(kCtxCreateBypass, 1, &ctxCreateBypass);
  return true;
}

}  // namespace

CUresult exportTable(const void** table, const CUuuid* id) {
  static const bool built = buildTables();
  (void)built;
  if (!table || !id) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  if (tracing()) std::fprintf(stderr, "kfuse stand-in trace: cuGetExportTable %s\n", uuidText(id).c_str());
  for (int t = 0; t < kTableCount; ++t) {
    if (std::memcmp(kTables[t].bytes.data(), id->bytes, 16) == 0) {
      *table = g_tables[t];
      return CUDA_SUCCESS;
    }
  }
  for (const auto& declined : kDeclinedTables)
    if (std::memcmp(declined.data(), id->bytes, 16) == 0) return CUDA_ERROR_NOT_FOUND;
  logOnce("cuGetExportTable: unknown private driver table " + uuidText(id) + " (returns CUDA_ERROR_NOT_FOUND)");
  return CUDA_ERROR_NOT_FOUND;
}

void destroyContextLocalStorage(CUcontext ctx) {
  std::vector<std::pair<void*, ClsValue>> doomed;
  {
    std::lock_guard lock(cls().mu);
    for (auto it = cls().values.begin(); it != cls().values.end();) {
      if (it->first.first == ctx) {
        doomed.emplace_back(it->first.second, it->second);
        it = cls().values.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Outside the lock: a destructor may call back into the table.
  for (auto& [key, v] : doomed)
    if (v.destructor) v.destructor(ctx, key, v.value);
}

}  // namespace kfuse::standin
