// Memory: device allocations, memory pools (accounting only), pitched allocations, pinned host memory, and
// pointer attributes.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "driver_graph.h"
#include "driver_state.h"
#include "standin_internal.h"

using kfuse::emulator::DevicePtr;
using kfuse::standin::current;
using kfuse::standin::dev;
using kfuse::standin::logOnce;
using kfuse::standin::notSupported;
using kfuse::standin::st;

extern "C" {

// ---- memory --------------------------------------------------------------------------------------------------
// Host memory the device may access (page-locked or registered). Where its address meets the emulator's own address
// space the host still has it, and kernels fault on it, as the message says.
static void mapForDevice(void* p, size_t bytes) {
  if (auto s = dev()->memory().mapHost(p, bytes); !s.ok())
    logOnce("host memory at an address the emulator cannot map for kernels: " + s.message());
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytes) {
  KF_REQUIRE_CTX();
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = kfuse::standin::checkUnsafeCall(); r != CUDA_SUCCESS) return r;
  auto p = dev()->memory().allocate(bytes);
  if (!p.ok()) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = *p;
  return CUDA_SUCCESS;
}
static void releaseFromPool(CUdeviceptr dptr);
CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  KF_REQUIRE_CTX();
  if (dptr == 0) return CUDA_SUCCESS;
  if (CUresult r = kfuse::standin::checkUnsafeCall(); r != CUDA_SUCCESS) return r;
  if (!dev()->memory().free(dptr).ok()) return CUDA_ERROR_INVALID_VALUE;
  releaseFromPool(dptr);  // an allocation from a pool may be freed either way
  return CUDA_SUCCESS;
}
// ---- memory pools: accounting only (every allocation is an ordinary one; nothing is cached for reuse) ---------
}  // extern "C"
namespace {
struct Pools {
  std::mutex mu;
  CUmemPoolHandle_st default_pool;
  CUmemoryPool current = nullptr;  // the device's pool for cuMemAllocAsync; null: the default one
  std::set<CUmemoryPool> created;
  std::unordered_map<uint64_t, std::pair<CUmemoryPool, size_t>> owner;  // allocation -> pool, size
};
Pools& pools() {
  static auto* p = [] {
    auto* q = new Pools();
    q->default_pool.is_default = true;
    return q;
  }();
  return *p;
}
bool validPool(CUmemoryPool pool) {
  return pool && (pool == &pools().default_pool || pools().created.count(pool));
}
CUresult allocFromPool(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool) {
  CUresult r = cuMemAlloc(dptr, bytes);
  if (r != CUDA_SUCCESS) return r;
  std::lock_guard lock(pools().mu);
  pools().owner[*dptr] = {pool, bytes};
  pool->used += bytes;
  pool->used_high = std::max(pool->used_high, pool->used);
  return CUDA_SUCCESS;
}
}  // namespace
static void releaseFromPool(CUdeviceptr dptr) {
  std::lock_guard lock(pools().mu);
  auto it = pools().owner.find(dptr);
  if (it == pools().owner.end()) return;
  it->second.first->used -= it->second.second;
  pools().owner.erase(it);
}
extern "C" {
// Stream-ordered allocations cannot be captured (no memory allocation nodes): refused on a capturing stream.
static CUresult refuseAllocationInCapture(CUstream s) {
  CUresult r = kfuse::standin::refuseOnCapturingStream(s);
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    kfuse::standin::logOnce(
        "stream-ordered allocation during stream capture is not supported by the emulator "
        "(no memory allocation nodes; the capture is invalidated)");
  return r;
}
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream s) {
  if (CUresult r = refuseAllocationInCapture(s); r != CUDA_SUCCESS) return r;
  {
    std::lock_guard lock(pools().mu);
    if (!validPool(pool)) return CUDA_ERROR_INVALID_VALUE;
  }
  return allocFromPool(dptr, bytes, pool);
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  if (CUresult r = refuseAllocationInCapture(s); r != CUDA_SUCCESS) return r;
  CUmemoryPool pool;
  {
    std::lock_guard lock(pools().mu);
    pool = pools().current ? pools().current : &pools().default_pool;
  }
  return cuMemAllocFromPoolAsync(dptr, bytes, pool, s);
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  if (CUresult r = refuseAllocationInCapture(s); r != CUDA_SUCCESS) return r;
  return cuMemFree(dptr);
}
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  *pool = &pools().default_pool;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice d) {
  KF_REQUIRE_INIT();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(pools().mu);
  *pool = pools().current ? pools().current : &pools().default_pool;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceSetMemPool(CUdevice d, CUmemoryPool pool) {
  KF_REQUIRE_INIT();
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(pools().mu);
  if (!validPool(pool)) return CUDA_ERROR_INVALID_VALUE;
  pools().current = pool;
  return CUDA_SUCCESS;
}
static bool deviceLocation(const CUmemLocation* location, CUmemAllocationType type) {
  return location && location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0 &&
         type == CU_MEM_ALLOCATION_TYPE_PINNED;
}
CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  if (!deviceLocation(location, type)) return notSupported("cuMemGetDefaultMemPool (other than device 0 memory)");
  return cuDeviceGetDefaultMemPool(pool, 0);
}
CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  if (!deviceLocation(location, type)) return notSupported("cuMemGetMemPool (other than device 0 memory)");
  return cuDeviceGetMemPool(pool, 0);
}
CUresult CUDAAPI cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  if (!deviceLocation(location, type)) return notSupported("cuMemSetMemPool (other than device 0 memory)");
  return cuDeviceSetMemPool(0, pool);
}
CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  KF_REQUIRE_INIT();
  if (!pool || !props) return CUDA_ERROR_INVALID_VALUE;
  if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id != 0 ||
      props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
    return notSupported("cuMemPoolCreate (other than device 0 memory)");
  auto* p = new CUmemPoolHandle_st();
  std::lock_guard lock(pools().mu);
  pools().created.insert(p);
  *pool = p;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  std::lock_guard lock(pools().mu);
  if (!pools().created.erase(pool)) return CUDA_ERROR_INVALID_VALUE;
  if (pools().current == pool) pools().current = nullptr;
  for (auto& [ptr, owner] : pools().owner)
    if (owner.first == pool) owner.first = &pools().default_pool;  // still live: accounted to the default pool
  delete pool;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  (void)keep;
  std::lock_guard lock(pools().mu);
  return validPool(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  std::lock_guard lock(pools().mu);
  if (!validPool(pool) || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *static_cast<int*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      pool->release_threshold = *static_cast<cuuint64_t*>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;  // only resets are allowed
      pool->used_high = pool->used;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  std::lock_guard lock(pools().mu);
  if (!validPool(pool) || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = pool->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *static_cast<cuuint64_t*>(value) = pool->release_threshold;
      return CUDA_SUCCESS;
    // Nothing is cached, so what the pool reserves is what is in use.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *static_cast<cuuint64_t*>(value) = pool->used; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *static_cast<cuuint64_t*>(value) = pool->used_high; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  std::lock_guard lock(pools().mu);
  if (!validPool(pool) || (count && !map)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].location.id != 0)
      return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool, CUmemLocation* location) {
  std::lock_guard lock(pools().mu);
  if (!flags || !location || !validPool(pool)) return CUDA_ERROR_INVALID_VALUE;
  *flags = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                                                              : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total) {
  KF_REQUIRE_CTX();
  size_t tot = size_t(16) << 30, used = dev()->memory().bytesInUse();
  if (free_bytes) *free_bytes = used < tot ? tot - used : 0;
  if (total) *total = tot;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  KF_REQUIRE_CTX();
  DevicePtr b = 0;
  uint64_t s = 0;
  if (!dev()->memory().rangeOf(dptr, &b, &s).ok()) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = b;
  if (size) *size = s;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocHost(void** pp, size_t bytes) {
  KF_REQUIRE_CTX();
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = kfuse::standin::checkUnsafeCall(); r != CUDA_SUCCESS) return r;
  *pp = std::calloc(1, bytes ? bytes : 1);
  if (!*pp) return CUDA_ERROR_OUT_OF_MEMORY;
  mapForDevice(*pp, bytes ? bytes : 1);  // page-locked memory is mapped for the device under unified addressing
  std::lock_guard lock(st().mu);
  st().host_allocs[reinterpret_cast<uintptr_t>(*pp)] = bytes;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  (void)flags;
  return cuMemAllocHost(pp, bytes);
}
CUresult CUDAAPI cuMemFreeHost(void* p) {
  KF_REQUIRE_INIT();
  {
    std::lock_guard lock(st().mu);
    if (!st().host_allocs.erase(reinterpret_cast<uintptr_t>(p))) return CUDA_ERROR_INVALID_VALUE;
  }
  (void)dev()->memory().unmapHost(p);
  std::free(p);
  return CUDA_SUCCESS;
}
// Registered host memory: the device reaches it at its own address (unified addressing), through every mapping the
// program made of it, so two virtual ranges of one file or memfd alias for kernels as they do for the host.
CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytes, unsigned int flags) {
  KF_REQUIRE_CTX();
  constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                              CU_MEMHOSTREGISTER_READ_ONLY;
  if (!p || bytes == 0 || (flags & ~kKnown)) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(st().mu);
    const auto b = reinterpret_cast<uintptr_t>(p);
    for (const auto& [base, n] : st().host_allocs) {
      if (b < base + std::max<size_t>(n, 1) && base < b + bytes) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    st().host_allocs[b] = bytes;
  }
  mapForDevice(p, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostUnregister(void* p) {
  KF_REQUIRE_CTX();
  {
    std::lock_guard lock(st().mu);
    if (!st().host_allocs.erase(reinterpret_cast<uintptr_t>(p))) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  (void)dev()->memory().unmapHost(p);
  return CUDA_SUCCESS;
}

// ---- virtual memory management: physical allocations, reserved address ranges, mappings -----------------------
// A handle names a physical allocation (Memory::createPhysical); mapping it twice makes two address ranges over the
// same bytes, as on a GPU. Sizes, offsets and addresses must be multiples of the granularity, as the driver asks.
}  // extern "C"
namespace {
constexpr size_t kVmmGranularity = size_t{2} << 20;
struct PhysicalAllocation {
  kfuse::emulator::Memory::Physical bytes;
  size_t size = 0;
  CUmemAllocationProp prop{};
  int refs = 1;  // cuMemCreate and each cuMemRetainAllocationHandle; cuMemRelease drops one
};
struct Vmm {
  std::mutex mu;
  std::unordered_map<CUmemGenericAllocationHandle, PhysicalAllocation> handles;
  std::map<CUdeviceptr, std::pair<size_t, CUmemGenericAllocationHandle>> mappings;  // va -> size, handle
  CUmemGenericAllocationHandle next = 0x1000;
};
Vmm& vmm() {
  static auto* v = new Vmm();
  return *v;
}
bool validDeviceProp(const CUmemAllocationProp* prop) {
  return prop && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
         prop->location.id == 0;
}
bool granular(uint64_t v) {
  return v % kVmmGranularity == 0;
}
// The mapping that contains `ptr`, or mappings.end(). Caller holds vmm().mu.
auto mappingAt(CUdeviceptr ptr) {
  auto& m = vmm().mappings;
  auto it = m.upper_bound(ptr);
  if (it == m.begin() || ptr >= std::prev(it)->first + std::prev(it)->second.first) return m.end();
  return std::prev(it);
}
}  // namespace
extern "C" {
CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  KF_REQUIRE_INIT();
  if (!granularity || !validDeviceProp(prop)) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                             unsigned long long flags) {
  KF_REQUIRE_CTX();
  if (!handle || !validDeviceProp(prop) || flags != 0 || size == 0 || !granular(size)) return CUDA_ERROR_INVALID_VALUE;
  auto bytes = kfuse::emulator::Memory::createPhysical(size);
  if (!bytes.ok()) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(vmm().mu);
  const CUmemGenericAllocationHandle h = vmm().next++;
  vmm().handles[h] = PhysicalAllocation{std::move(*bytes), size, *prop, 1};
  *handle = h;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  KF_REQUIRE_INIT();
  std::lock_guard lock(vmm().mu);
  auto it = vmm().handles.find(handle);
  if (it == vmm().handles.end()) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.refs == 0) vmm().handles.erase(it);  // mappings keep the bytes until they are unmapped
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) {
  KF_REQUIRE_INIT();
  std::lock_guard lock(vmm().mu);
  auto it = vmm().handles.find(handle);
  if (!prop || it == vmm().handles.end()) return CUDA_ERROR_INVALID_VALUE;
  *prop = it->second.prop;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
  KF_REQUIRE_CTX();
  (void)addr;  // a hint only
  if (!ptr || size == 0 || !granular(size) || flags != 0 || (alignment && alignment & (alignment - 1)))
    return CUDA_ERROR_INVALID_VALUE;
  if (alignment > kVmmGranularity) return CUDA_ERROR_INVALID_VALUE;  // reservations are 2 MiB aligned here
  auto base = dev()->memory().reserve(size);
  if (!base.ok()) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = *base;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  KF_REQUIRE_CTX();
  return dev()->memory().releaseReservation(ptr, size).ok() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  KF_REQUIRE_CTX();
  if (flags != 0 || size == 0 || !granular(ptr) || !granular(size) || !granular(offset))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(vmm().mu);
  auto it = vmm().handles.find(handle);
  if (it == vmm().handles.end()) return CUDA_ERROR_INVALID_VALUE;
  if (!dev()->memory().map(ptr, size, it->second.bytes, it->second.size, offset).ok()) return CUDA_ERROR_INVALID_VALUE;
  vmm().mappings[ptr] = {size, handle};
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  KF_REQUIRE_CTX();
  if (size == 0 || !granular(ptr) || !granular(size)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(vmm().mu);
  if (!dev()->memory().unmap(ptr, size).ok()) return CUDA_ERROR_INVALID_VALUE;
  for (auto it = vmm().mappings.lower_bound(ptr); it != vmm().mappings.end() && it->first < ptr + size;)
    it = vmm().mappings.erase(it);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  KF_REQUIRE_CTX();
  if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id != 0)
      return CUDA_ERROR_INVALID_DEVICE;
  }
  // The emulated device always has access to what is mapped; every byte of the range must be mapped.
  std::lock_guard lock(vmm().mu);
  CUdeviceptr at = ptr;
  for (auto it = mappingAt(ptr); at < ptr + size; ++it) {
    if (it == vmm().mappings.end() || it->first > at || it->first + it->second.first <= at)
      return CUDA_ERROR_INVALID_VALUE;
    at = it->first + it->second.first;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  KF_REQUIRE_CTX();
  if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(vmm().mu);
  if (mappingAt(ptr) == vmm().mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  const bool device = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0;
  *flags = device ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  KF_REQUIRE_INIT();
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  const auto ptr = reinterpret_cast<CUdeviceptr>(addr);
  std::lock_guard lock(vmm().mu);
  const auto it = mappingAt(ptr);
  if (it == vmm().mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  auto h = vmm().handles.find(it->second.second);
  if (h == vmm().handles.end()) return CUDA_ERROR_INVALID_VALUE;  // released: only the mapping holds the bytes
  ++h->second.refs;
  *handle = h->first;
  return CUDA_SUCCESS;
}

// Pitched allocations (cudaMallocPitch): rows padded to 256 bytes.
CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int elem) {
  if (!pitch || (elem != 4 && elem != 8 && elem != 16)) return CUDA_ERROR_INVALID_VALUE;
  *pitch = (width + 255) / 256 * 256;
  return cuMemAlloc(dptr, *pitch * std::max<size_t>(height, 1));
}

// The pinned host allocation containing `p` (base and size), if any.
static bool hostAllocation(uint64_t p, uint64_t* base, size_t* size) {
  std::lock_guard lock(st().mu);
  for (auto& [b, n] : st().host_allocs)
    if (p >= b && p < b + std::max<size_t>(n, 1)) {
      *base = b, *size = n;
      return true;
    }
  return false;
}
static CUresult pointerAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr, bool many) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  uint64_t base = 0, size = 0;
  bool d = dev()->memory().rangeOf(ptr, &base, &size).ok();
  size_t host_size = 0;
  bool h = !d && hostAllocation(ptr, &base, &host_size);
  if (h) size = host_size;
  // cuPointerGetAttributes answers for unknown (unregistered host) pointers too; cuPointerGetAttribute fails.
  if (!d && !h && !many) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = d ? CU_MEMORYTYPE_DEVICE : h ? CU_MEMORYTYPE_HOST : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (!d && !h) return many ? (*static_cast<CUdeviceptr*>(data) = 0, CUDA_SUCCESS) : CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = ptr;  // unified addressing: pinned host memory has the same address
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = h ? reinterpret_cast<void*>(ptr) : nullptr;
      return h || many ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = d || h ? current() : nullptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = d || h ? 0 : -2; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<int*>(data) = 0; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<int*>(data) = d || h; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = base; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = size; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = base;  // allocations are never reused, so the base is unique
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<int*>(data) = 1; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: *static_cast<int*>(data) = 0; return CUDA_SUCCESS;
    default:
      logOnce("cuPointerGetAttribute(s): attribute " + std::to_string(int(attribute)) + " is not supported");
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}
CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  KF_REQUIRE_INIT();
  return pointerAttribute(data, attribute, ptr, /*many=*/false);
}
CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attributes, void** data, CUdeviceptr ptr) {
  KF_REQUIRE_INIT();
  if (!attributes || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i)
    if (CUresult r = pointerAttribute(data[i], attributes[i], ptr, /*many=*/true); r != CUDA_SUCCESS) return r;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* dptr, void* p, unsigned int flags) {
  KF_REQUIRE_INIT();
  (void)flags;
  uint64_t base;
  size_t size;
  if (!dptr || !hostAllocation(reinterpret_cast<uint64_t>(p), &base, &size)) return CUDA_ERROR_INVALID_VALUE;
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostGetFlags(unsigned int* flags, void* p) {
  KF_REQUIRE_INIT();
  uint64_t base;
  size_t size;
  if (!flags || !hostAllocation(reinterpret_cast<uint64_t>(p), &base, &size)) return CUDA_ERROR_INVALID_VALUE;
  *flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
  return CUDA_SUCCESS;
}

// Per-thread-default-stream entry points (programs built with CUDA_API_PER_THREAD_DEFAULT_STREAM): the same
// operations, since everything here is synchronous.
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* d, size_t n, CUstream s) {
  return cuMemAllocAsync(d, n, s);
}
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s) {
  return cuMemFreeAsync(d, s);
}

}  // extern "C"
