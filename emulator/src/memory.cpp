#include <cstdio>
#include <cstring>
#include <mutex>

#include "memory_impl.h"

namespace kfuse::emulator {

namespace {
std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

std::string Memory::Impl::describe(uint64_t addr, uint64_t len) const {
  // Prefer the freed allocation containing the address, then the nearest live one.
  auto fit = freed.upper_bound(addr);
  if (fit != freed.begin()) {
    --fit;
    if (addr >= fit->first && addr < fit->first + fit->second + kGuardBytes) {
      if (addr < fit->first + fit->second)
        return "address is inside freed allocation " + hex(fit->first) + " (" + std::to_string(fit->second) + " bytes)";
    }
  }
  auto it = live.upper_bound(addr);
  if (it != live.begin()) {
    auto prev = std::prev(it);
    uint64_t end = prev->first + prev->second.size;
    if (addr >= prev->first && addr < end)
      return "access of " + std::to_string(len) + " bytes runs " + std::to_string(addr + len - end) +
             " bytes past the end of allocation " + hex(prev->first) + " (" + std::to_string(prev->second.size) +
             " bytes)";
    if (addr >= end && addr - end < (1u << 20))
      return "address is " + std::to_string(addr - end) + " bytes past the end of allocation " + hex(prev->first) +
             " (" + std::to_string(prev->second.size) + " bytes)";
  }
  if (it != live.end() && it->first - addr < (1u << 20))
    return "address is " + std::to_string(it->first - addr) + " bytes before allocation " + hex(it->first) + " (" +
           std::to_string(it->second.size) + " bytes)";
  if (addr == 0) return "null pointer";
  return "address is not inside any allocation";
}

Memory::Memory() : impl_(std::make_unique<Impl>()) {}
Memory::~Memory() = default;

Expected<DevicePtr> Memory::allocate(uint64_t bytes, std::string tag) {
  if (bytes > (uint64_t{1} << 36))
    return invalidArgument("allocation of " + std::to_string(bytes) + " bytes is too large for the emulator");
  std::unique_lock lock(impl_->mu);
  uint64_t size = bytes == 0 ? 1 : bytes;
  Impl::Alloc a;
  a.size = bytes;
  a.owner.reset(static_cast<uint8_t*>(std::calloc(size, 1)), [](uint8_t* p) { std::free(p); });
  a.data = a.owner.get();
  if (!a.data) return internalError("host out of memory allocating " + std::to_string(bytes) + " bytes");
  a.tag = std::move(tag);
  const uint64_t base = impl_->place(size, kAllocAlign);
  impl_->next = (base + size + kGuardBytes + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
  impl_->live.emplace(base, std::move(a));
  impl_->in_use += bytes;
  impl_->rebuild();
  return base;
}

Status Memory::free(DevicePtr ptr) {
  std::unique_lock lock(impl_->mu);
  auto it = impl_->live.find(ptr);
  if (it == impl_->live.end()) {
    if (impl_->freed.count(ptr)) return invalidArgument("double free of device pointer " + hex(ptr));
    return invalidArgument("free of " + hex(ptr) + ", which is not the start of an allocation");
  }
  if (it->second.mapping) return invalidArgument("free of " + hex(ptr) + ", which is a mapping (unmap it instead)");
  if (it->second.host) return invalidArgument("free of " + hex(ptr) + ", which is host memory");
  impl_->freed[ptr] = it->second.size;
  impl_->in_use -= it->second.size;
  impl_->live.erase(it);
  impl_->rebuild();
  return {};
}

namespace {
Status badRange(const Memory::Impl& m, const char* what, uint64_t addr, uint64_t len) {
  return invalidArgument(std::string(what) + " of " + std::to_string(len) + " bytes at " + hex(addr) + ": " +
                         m.describe(addr, len));
}
}  // namespace

Status Memory::copyToDevice(DevicePtr dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return {};
  std::shared_lock lock(impl_->mu);
  const Region* r = impl_->find(dst, bytes);
  if (!r) return badRange(*impl_, "host-to-device copy", dst, bytes);
  std::memcpy(r->host + (dst - r->base), src, bytes);
  return {};
}

Status Memory::copyToHost(void* dst, DevicePtr src, uint64_t bytes) {
  if (bytes == 0) return {};
  std::shared_lock lock(impl_->mu);
  const Region* r = impl_->find(src, bytes);
  if (!r) return badRange(*impl_, "device-to-host copy", src, bytes);
  std::memcpy(dst, r->host + (src - r->base), bytes);
  return {};
}

Status Memory::copyDeviceToDevice(DevicePtr dst, DevicePtr src, uint64_t bytes) {
  if (bytes == 0) return {};
  std::shared_lock lock(impl_->mu);
  const Region* s = impl_->find(src, bytes);
  if (!s) return badRange(*impl_, "device-to-device copy source", src, bytes);
  const Region* d = impl_->find(dst, bytes);
  if (!d) return badRange(*impl_, "device-to-device copy destination", dst, bytes);
  std::memmove(d->host + (dst - d->base), s->host + (src - s->base), bytes);
  return {};
}

Status Memory::fill(DevicePtr dst, uint32_t value, uint32_t element_bytes, uint64_t count) {
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4)
    return invalidArgument("memset element size must be 1, 2 or 4");
  uint64_t bytes = count * element_bytes;
  if (bytes == 0) return {};
  std::shared_lock lock(impl_->mu);
  const Region* r = impl_->find(dst, bytes);
  if (!r) return badRange(*impl_, "memset", dst, bytes);
  uint8_t* p = r->host + (dst - r->base);
  if (element_bytes == 1) {
    std::memset(p, static_cast<int>(value & 0xff), bytes);
  } else {
    for (uint64_t i = 0; i < count; ++i) std::memcpy(p + i * element_bytes, &value, element_bytes);
  }
  return {};
}

Status Memory::rangeOf(DevicePtr ptr, DevicePtr* base, uint64_t* size) const {
  std::shared_lock lock(impl_->mu);
  const Region* r = impl_->find(ptr, 0);
  if (!r || r->host_memory) return notFound("no allocation contains " + hex(ptr));
  if (base) *base = r->base;
  if (size) *size = r->size;
  return {};
}

Expected<Memory::Physical> Memory::createPhysical(uint64_t bytes) {
  if (bytes == 0 || bytes > (uint64_t{1} << 36))
    return invalidArgument("physical allocation of " + std::to_string(bytes) + " bytes is not supported");
  Physical p(static_cast<uint8_t*>(std::calloc(bytes, 1)), [](uint8_t* q) { std::free(q); });
  if (!p) return internalError("host out of memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

Expected<DevicePtr> Memory::reserve(uint64_t bytes) {
  if (bytes == 0 || bytes > (uint64_t{1} << 40))
    return invalidArgument("reservation of " + std::to_string(bytes) + " bytes is not supported");
  std::unique_lock lock(impl_->mu);
  // Mappings are aligned like the driver's granularity so that programs rounding addresses still work.
  constexpr uint64_t kAlign = uint64_t{2} << 20;
  const uint64_t base = impl_->place(bytes, kAlign);
  impl_->next = base + bytes + kGuardBytes;
  impl_->reserved.emplace(base, bytes);
  return base;
}

Status Memory::releaseReservation(DevicePtr base, uint64_t bytes) {
  std::unique_lock lock(impl_->mu);
  auto it = impl_->reserved.find(base);
  if (it == impl_->reserved.end() || it->second != bytes)
    return invalidArgument("no reservation of " + std::to_string(bytes) + " bytes at " + hex(base));
  auto m = impl_->live.lower_bound(base);
  if (m != impl_->live.end() && m->first < base + bytes)
    return invalidArgument("reservation at " + hex(base) + " still has a mapping at " + hex(m->first));
  impl_->reserved.erase(it);
  return {};
}

Status Memory::map(DevicePtr va, uint64_t bytes, Physical physical, uint64_t physical_bytes, uint64_t offset) {
  if (!physical || bytes == 0 || offset > physical_bytes || bytes > physical_bytes - offset)
    return invalidArgument("mapping of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                           " does not fit its physical allocation of " + std::to_string(physical_bytes) + " bytes");
  std::unique_lock lock(impl_->mu);
  auto r = impl_->reserved.upper_bound(va);
  if (r == impl_->reserved.begin() || va < std::prev(r)->first ||
      va - std::prev(r)->first + bytes > std::prev(r)->second)
    return invalidArgument("mapping at " + hex(va) + " is not inside a reserved address range");
  if (auto other = impl_->overlapping(va, va + bytes))
    return invalidArgument("mapping at " + hex(va) + " overlaps the mapping at " + hex(*other));
  Impl::Alloc a;
  a.size = bytes;
  a.data = physical.get() + offset;
  a.owner = std::move(physical);
  a.mapping = true;
  impl_->live.emplace(va, std::move(a));
  impl_->freed.erase(va);
  impl_->in_use += bytes;
  impl_->rebuild();
  return {};
}

Status Memory::unmap(DevicePtr va, uint64_t bytes) {
  std::unique_lock lock(impl_->mu);
  auto it = impl_->live.find(va);
  if (it == impl_->live.end() || !it->second.mapping)
    return invalidArgument("unmap at " + hex(va) + ", where no mapping starts");
  while (it != impl_->live.end() && it->first < va + bytes && it->second.mapping) {
    impl_->freed[it->first] = it->second.size;
    impl_->in_use -= it->second.size;
    it = impl_->live.erase(it);
  }
  impl_->rebuild();
  return {};
}

Status Memory::mapHost(void* p, uint64_t bytes) {
  const auto base = reinterpret_cast<uint64_t>(p);
  if (!p || bytes == 0 || base + bytes < base) return invalidArgument("host range at " + hex(base) + " is empty");
  const uint64_t end = base + bytes;
  if (base < kFunctionWindow + kWindowSize && end > kSharedWindow)
    return invalidArgument("host range at " + hex(base) + " meets the emulator's address windows");
  std::unique_lock lock(impl_->mu);
  if (base < impl_->next && end > kGlobalBase)
    return invalidArgument("host range at " + hex(base) + " meets the emulator's device allocations");
  if (impl_->overlapping(base, end))
    return invalidArgument("host range at " + hex(base) + " overlaps one already mapped");
  Impl::Alloc a;
  a.size = bytes;
  a.data = static_cast<uint8_t*>(p);
  a.host = true;
  impl_->live.emplace(base, std::move(a));
  impl_->rebuild();
  return {};
}

Status Memory::unmapHost(void* p) {
  std::unique_lock lock(impl_->mu);
  auto it = impl_->live.find(reinterpret_cast<uint64_t>(p));
  if (it == impl_->live.end() || !it->second.host)
    return invalidArgument("no host range starts at " + hex(reinterpret_cast<uint64_t>(p)));
  impl_->live.erase(it);
  impl_->rebuild();
  return {};
}

uint64_t Memory::bytesInUse() const {
  std::shared_lock lock(impl_->mu);
  return impl_->in_use;
}

}  // namespace kfuse::emulator
