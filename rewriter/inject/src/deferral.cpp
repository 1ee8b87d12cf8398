// Injector::Impl, deferral: stream slots holding launches back until a pattern is complete, issuing them (unchanged
// or as the fused kernel) and flushing them, in order, before work on their stream (or on every stream) that must
// follow them.
#include <algorithm>
#include <cstdio>

#include "injector_impl.h"

namespace kfuse::inject {
namespace {

using core::LaunchShape;
using rewriter::ArgRef;

}  // namespace

// ---- stream slots ----

StreamSlot* Injector::Impl::findSlot(uint64_t key) {
  const size_t n = slots.size();
  const size_t start = mix(key) % n;
  for (size_t i = 0; i < n; ++i) {
    StreamSlot& s = slots[(start + i) % n];
    const uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) return &s;
    if (k == 0) return nullptr;
  }
  return nullptr;
}

StreamSlot* Injector::Impl::claimSlot(uint64_t key) {
  if (StreamSlot* s = findSlot(key)) return s;
  std::lock_guard lock(claim_mu);
  if (StreamSlot* s = findSlot(key)) return s;
  const size_t n = slots.size();
  const size_t start = mix(key) % n;
  StreamSlot* reuse = nullptr;
  for (size_t i = 0; i < n; ++i) {
    StreamSlot& s = slots[(start + i) % n];
    const uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == kTombstone && !reuse) reuse = &s;
    if (k == 0) {
      if (!reuse) reuse = &s;
      break;
    }
  }
  if (!reuse) {
    streams_over_capacity.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  reuse->key.store(key, std::memory_order_release);
  return reuse;
}

void Injector::Impl::releaseSlot(uint64_t key) {
  StreamSlot* s = findSlot(key);
  if (!s || key == kLegacyKey) return;
  std::lock_guard claim(claim_mu);
  std::lock_guard lock(s->mu);
  if (s->count == 0) s->key.store(kTombstone, std::memory_order_release);
}

// ---- issuing ----

CUresult Injector::Impl::issueOriginal(StreamSlot& s, int pos) {
  const PendingLaunch& l = s.launches[pos];
  const RuntimeKernel& k = *layoutAt(s, pos);
  void* ptrs[kMaxParams];
  uint8_t* args = argsOf(s, pos);
  for (size_t i = 0; i < k.params.size(); ++i) ptrs[i] = args + k.params[i].offset;
  stripe().issued.fetch_add(1, std::memory_order_relaxed);
  return launch(l, l.f, l.grid, l.block, l.shmem, ptrs);
}

CUresult Injector::Impl::launch(const PendingLaunch& l, CUfunction f, const unsigned grid[3], const unsigned block[3],
                                unsigned shmem, void** ptrs) {
  Inside inside;
  if (!t_timed) return launchUntimed(l, f, grid, block, shmem, ptrs);
  const uint64_t t0 = nowNs();
  const CUresult r = launchUntimed(l, f, grid, block, shmem, ptrs);
  t_driver_ns += nowNs() - t0;
  return r;
}

CUresult Injector::Impl::launchUntimed(const PendingLaunch& l, CUfunction f, const unsigned grid[3],
                                       const unsigned block[3], unsigned shmem, void** ptrs) {
  if (l.via == Via::kLaunchKernelEx) {
    CUlaunchConfig c{};
    c.gridDimX = grid[0], c.gridDimY = grid[1], c.gridDimZ = grid[2];
    c.blockDimX = block[0], c.blockDimY = block[1], c.blockDimZ = block[2];
    c.sharedMemBytes = shmem;
    c.hStream = l.stream;
    return self.HookClient::LaunchKernelEx(l.variant, &c, f, ptrs, nullptr);
  }
  return self.HookClient::LaunchKernel(l.variant, f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem,
                                       l.stream, ptrs, nullptr);
}

CUresult Injector::Impl::launchFused(StreamSlot& s, size_t pi, CUfunction fn, bool occurrence) {
  PlanState& st = *plans[pi];
  const RuntimePlan& p = st.plan;
  void* ptrs[kMaxParams];
  for (size_t i = 0; i < p.fused_args.size(); ++i) ptrs[i] = const_cast<uint8_t*>(argBytes(s, p, p.fused_args[i]));
  const PendingLaunch& last = s.launches[s.count - 1];
  const LaunchShape& shape = p.fused_shape;
  stripe().issued.fetch_add(1, std::memory_order_relaxed);
  const CUresult r =
      launch(last, fn, shape.grid.axes().data(), shape.block.axes().data(), shape.dynamic_shared_bytes, ptrs);
  if (occurrence && r == CUDA_SUCCESS) {
    fused_launches.fetch_add(1, std::memory_order_relaxed);
    st.fused.fetch_add(1, std::memory_order_relaxed);
  }
  return r;
}

// ---- flushing ----

CUresult Injector::Impl::flushLocked(StreamSlot& s, FlushReason why) {
  if (s.count == 0) return CUDA_SUCCESS;
  const CUresult first = issueOriginals(s, why);
  if (s.key.load(std::memory_order_relaxed) == kLegacyKey) legacy_pending.store(0, std::memory_order_relaxed);
  s.count = 0;
  s.viable = 0;
  pending_streams.fetch_sub(1, std::memory_order_relaxed);
  return first;
}

CUresult Injector::Impl::issueOriginals(StreamSlot& s, FlushReason why) {
  CUresult first = CUDA_SUCCESS;
  for (int i = 0; i < s.count; ++i) {
    const CUresult r = issueOriginal(s, i);
    if (first == CUDA_SUCCESS) first = r;
  }
  flushes[static_cast<int>(why)].fetch_add(1, std::memory_order_relaxed);
  flushed_launches.fetch_add(static_cast<uint64_t>(s.count), std::memory_order_relaxed);
  if (options.log) {
    std::fprintf(stderr, "kfuse run: %d deferred launch(es) issued unchanged: %s\n", s.count, flushReasonName(why));
  }
  return first;
}

CUresult Injector::Impl::flushSlot(StreamSlot* s, FlushReason why) {
  if (!s) return CUDA_SUCCESS;
  std::lock_guard lock(s->mu);
  return flushLocked(*s, why);
}

CUresult Injector::Impl::flushAllExcept(uint64_t except, FlushReason why) {
  if (pending_streams.load(std::memory_order_acquire) == 0) return CUDA_SUCCESS;
  CUresult first = CUDA_SUCCESS;
  for (StreamSlot& s : slots) {
    const uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == 0 || k == kTombstone || k == except) continue;
    const CUresult r = flushSlot(&s, why);
    if (first == CUDA_SUCCESS) first = r;
  }
  return first;
}

CUresult Injector::Impl::beforeStreamWork(CUstream stream, int variant, FlushReason why) {
  if (t_inside || pending_streams.load(std::memory_order_acquire) == 0) return CUDA_SUCCESS;
  const uint64_t key = streamKey(stream, variant);
  CUresult r = CUDA_SUCCESS;
  if (key == kLegacyKey) {
    r = flushAllExcept(key, FlushReason::kLegacyStream);
  } else if (legacy_pending.load(std::memory_order_acquire)) {
    r = flushSlot(findSlot(kLegacyKey), FlushReason::kLegacyStream);
  }
  const CUresult own = flushSlot(findSlot(key), why);
  return r != CUDA_SUCCESS ? r : own;
}

CUresult Injector::Impl::beforeGlobalWork(FlushReason why) {
  if (t_inside) return CUDA_SUCCESS;
  return flushAllExcept(0, why);
}

bool Injector::Impl::deferredMayTouch(StreamSlot& s, uint64_t lo, uint64_t hi) {
  if (s.count == 0 || s.viable == 0) return s.count != 0;
  const RuntimePlan& p = plans[static_cast<size_t>(__builtin_ctzll(s.viable))]->plan;  // its first kernels match
  for (int k = 0; k < s.count && static_cast<size_t>(k) < p.kernels.size(); ++k) {
    for (size_t a = 0; a < p.kernels[static_cast<size_t>(k)].params.size(); ++a) {
      if (!p.kernels[static_cast<size_t>(k)].params[a].pointer) continue;
      const uint64_t v = pointerArg(s, p, ArgRef{k, static_cast<int>(a)});
      if (v == 0) continue;
      uint64_t base = 0, size = 0;
      if (!allocationOf(v, base, size) || v < base || v - base >= size) return true;
      if (base < hi && lo < base + size) return true;
    }
  }
  return false;
}

// A copy into memory none of the deferred launches uses cannot observe or change what they do, in whichever order
// the two run (seen on an H100: each buffer's upload flushed the launch before it, so the many-small-kernels pattern
// was never fused).
CUresult Injector::Impl::beforeHostToDeviceCopy(uint64_t dst, uint64_t bytes) {
  if (t_inside || pending_streams.load(std::memory_order_acquire) == 0) return CUDA_SUCCESS;
  uint64_t lo = dst, hi = dst + std::max<uint64_t>(bytes, 1);
  if (uint64_t base = 0, size = 0; allocationOf(dst, base, size) && dst >= base && dst - base < size) {
    lo = base;
    hi = std::max(hi, base + size);
  }
  CUresult first = CUDA_SUCCESS;
  for (StreamSlot& s : slots) {
    const uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == 0 || k == kTombstone) continue;
    std::lock_guard lock(s.mu);
    if (s.count == 0 || !deferredMayTouch(s, lo, hi)) continue;
    const CUresult r = flushLocked(s, FlushReason::kMemcpy);
    if (first == CUDA_SUCCESS) first = r;
  }
  return first;
}

}  // namespace kfuse::inject
