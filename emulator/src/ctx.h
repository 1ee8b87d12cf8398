// Private: per-worker execution context and the memory-access fast paths used by the instruction handlers.
#pragma once

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <span>
#include <string>

#include "interp.h"

namespace kfuse::emulator {

// Read-only during a launch, shared by all workers.
struct LaunchShared {
  const Memory::Impl* mem = nullptr;
  std::span<const uint8_t> params;
  core::LaunchShape cfg;
  uint32_t shared_bytes = 0;  // static + dynamic
  uint32_t local_stride = 0;  // per-thread local memory
  const DecodedFunction* entry = nullptr;
  const Program::Impl* prog = nullptr;
  const std::function<void(std::string_view)>* printf_sink = nullptr;
  std::mutex* printf_mu = nullptr;
  std::atomic<bool>* stop = nullptr;
  // The instruction budget: warp instructions all workers have run so far (added once per warp slice), and the
  // most the launch may run (0: no budget).
  std::atomic<uint64_t>* warp_instructions = nullptr;
  uint64_t max_warp_instructions = 0;
};

struct Ctx {
  // Current frame.
  uint64_t* r = nullptr;
  uint32_t* p = nullptr;
  uint8_t* fparam = nullptr;  // per-lane .param storage of this frame: lane * fparam_stride + offset
  uint32_t fparam_stride = 0;
  uint32_t local_base = 0;
  const DecodedFunction* fn = nullptr;
  uint32_t pc = 0;
  int depth = 0;
  // Block.
  uint8_t* shared = nullptr;
  uint32_t shared_size = 0;
  uint8_t* local = nullptr;
  uint32_t warp_index = 0;
  uint32_t block_threads = 0;
  core::Dim3 ctaid;
  uint64_t block_linear = 0;
  uint32_t warp_exited = 0;  // lanes of the current warp that have exited (for activemask etc.)
  // Launch.
  const LaunchShared* L = nullptr;
  const Region* cache = nullptr;  // last global region hit
  LaunchCounters cnt;
  std::string error;

  // Records an error for lane `lane` of the current instruction; returns false for `return c.fail(...)`.
  bool fail(int lane, const std::string& what);
  bool memFail(int lane, const char* space, bool store, uint64_t addr, uint32_t size, const std::string& why);
  // memFail for resolve(): returns nullptr; `why` is followed by "<bytes> bytes" when `bytes` is given. Out of
  // line and cold so that the inlined resolve() holds no std::string code (see resolve()).
  [[gnu::cold, gnu::noinline]] uint8_t* memFault(int lane, const char* space, bool store, uint64_t addr, uint32_t size,
                                                 const char* why, int64_t bytes = -1);
  uint8_t* globalSlow(uint64_t addr, uint32_t size, int lane, bool store);
  uint8_t* genericSlow(uint64_t addr, uint32_t size, int lane, bool store);
};

// Host pointer for `size` bytes at `addr` in space S for `lane`, or nullptr after recording an error. Always
// inlined: it is on every load and store, and GCC stopped inlining the global case into the memory handlers once
// they moved to a file of their own (4.6% more instructions on the elementwise benchmark, callgrind). Its error
// paths only call the cold Ctx::memFault and build no std::string here: with the messages built inline, the
// param and shared cases were too large to inline (before the split: a call per lane) and, once forced, made the
// handlers' per-lane lambdas too large to inline into the lane loop (a call per lane again, plus the captures
// read through memory): most of the elementwise benchmark's +2.1% instructions over the code before the split.
template <Space S>
[[gnu::always_inline]] inline uint8_t* resolve(Ctx& c, uint64_t addr, uint32_t size, int lane, bool store) {
  if constexpr (S == Space::kGlobal || S == Space::kConst) {
    const Region* r = c.cache;
    if (r && addr >= r->base && addr - r->base + size <= r->size) {
      if ((addr & (size - 1)) != 0) return c.memFault(lane, "global", store, addr, size, "misaligned address");
      return r->host + (addr - r->base);
    }
    return c.globalSlow(addr, size, lane, store);
  } else if constexpr (S == Space::kShared) {
    if (addr + size > c.shared_size || addr >= c.shared_size)
      return c.memFault(lane, "shared", store, addr, size, "shared memory of this block is ", c.shared_size);
    if ((addr & (size - 1)) != 0) return c.memFault(lane, "shared", store, addr, size, "misaligned address");
    return c.shared + addr;
  } else if constexpr (S == Space::kLocal) {
    if (addr + size > c.L->local_stride || addr >= c.L->local_stride)
      return c.memFault(lane, "local", store, addr, size, "local memory of a thread is ", c.L->local_stride);
    return c.local + (size_t(c.warp_index) * 32 + lane) * c.L->local_stride + addr;
  } else if constexpr (S == Space::kKernelParam) {
    uint64_t off = addr - kParamWindow;
    if (addr < kParamWindow || off + size > c.L->params.size())
      return c.memFault(lane, "param", store, addr, size, "kernel parameters are ", int64_t(c.L->params.size()));
    if (store) return c.memFault(lane, "param", store, addr, size, "kernel parameters are read-only");
    return const_cast<uint8_t*>(c.L->params.data()) + off;
  } else if constexpr (S == Space::kFrameParam) {
    if (addr >= c.fparam_stride || addr + size > c.fparam_stride)
      return c.memFault(lane, "param", store, addr, size, "outside the function's parameter area");
    return c.fparam + size_t(lane) * c.fparam_stride + addr;
  } else {
    if (addr >= kGlobalBase) return resolve<Space::kGlobal>(c, addr, size, lane, store);
    return c.genericSlow(addr, size, lane, store);
  }
}

}  // namespace kfuse::emulator
