// Injector::Impl, plan matching: the launch path, which plan kernel a function is, per-stream matching of launch
// sequences against the plans' patterns, the predicate checks (proven argument values included) and the allocations
// they read.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <shared_mutex>

#include "injector_impl.h"

namespace kfuse::inject {
namespace {

using core::LaunchShape;
using rewriter::ArgRef;
using rewriter::Predicate;

// Pointer arguments whose allocations one predicate check looks up, at most (the check allocates nothing).
constexpr size_t kMaxCheckedPointers = 32;

// A scalar argument as the analyzer pins it: 1, 2, 4 or 8 bytes, sign-extended; INT64_MIN for other sizes (the
// analyzer never proves with such an argument pinned).
int64_t scalarValue(const uint8_t* p, uint32_t size) {
  if (size == 1) return static_cast<int8_t>(p[0]);
  if (size == 2) {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  if (size == 4) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (size == 8) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  return INT64_MIN;
}

}  // namespace

// ---- the launch path ----

CUresult Injector::Impl::onLaunch(const Incoming& in) {
  Stripe& counters = stripe();
  counters.seen.fetch_add(1, std::memory_order_relaxed);
  const bool timed = counters.calls.fetch_add(1, std::memory_order_relaxed) % kTimedEvery == 0;
  const uint64_t t0 = timed ? nowNs() : 0;
  const uint64_t driver_before = t_driver_ns;
  t_timed = timed;
  const int id = identify(in.l.f);
  // No plan's kernel and nothing deferred anywhere: the launch goes straight through.
  const CUresult r =
      id < 0 && pending_streams.load(std::memory_order_acquire) == 0 ? passThrough(in, CUDA_SUCCESS) : match(in, id);
  if (timed) {
    const uint64_t spent = nowNs() - t0 - (t_driver_ns - driver_before);
    counters.time_ns.fetch_add(spent * kTimedEvery, std::memory_order_relaxed);
    t_timed = false;
  }
  return r;
}

CUresult Injector::Impl::match(const Incoming& in, int id) {
  const uint64_t key = streamKey(in.l.stream, in.l.variant);
  CUresult flushed = CUDA_SUCCESS;
  if (key == kLegacyKey) {
    flushed = flushAllExcept(key, FlushReason::kLegacyStream);
  } else if (legacy_pending.load(std::memory_order_acquire)) {
    flushed = flushSlot(findSlot(kLegacyKey), FlushReason::kLegacyStream);
  }
  if (captures_open.load(std::memory_order_acquire) > 0 && capturing(in.l.stream)) {
    const CUresult r = flushSlot(findSlot(key), FlushReason::kGraph);
    if (flushed == CUDA_SUCCESS) flushed = r;
    return passThrough(in, flushed);
  }
  StreamSlot* s = id >= 0 ? claimSlot(key) : findSlot(key);
  if (!s) return passThrough(in, flushed);
  std::unique_lock lock(s->mu);
  const Identity* ident = id >= 0 ? &identities[static_cast<size_t>(id)] : nullptr;
  if (s->count > 0) {
    const uint64_t viable = ident ? (s->viable & ident->at[s->count] & enabledMask()) : 0;
    const RuntimeKernel* k =
        viable ? &plans[static_cast<size_t>(std::countr_zero(viable))]->plan.kernels[s->count] : nullptr;
    if (viable && capture(*s, s->count, *k, in.params, in.extra)) {
      s->launches[s->count] = in.l;
      s->count++;
      s->viable = viable;
      deferred.fetch_add(1, std::memory_order_relaxed);
      const CUresult r = tryComplete(*s);
      if (flushed == CUDA_SUCCESS) flushed = r;
      return flushed;
    }
    const CUresult r = flushLocked(*s, FlushReason::kOtherKernel);
    if (flushed == CUDA_SUCCESS) flushed = r;
  }
  const uint64_t starts = ident ? ident->starts & enabledMask() : 0;
  if (starts) {
    const RuntimeKernel& k = plans[static_cast<size_t>(std::countr_zero(starts))]->plan.kernels[0];
    s->viable = starts;  // before capture: layoutAt reads it
    if (capture(*s, 0, k, in.params, in.extra)) {
      s->launches[0] = in.l;
      s->count = 1;
      pending_streams.fetch_add(1, std::memory_order_release);
      if (key == kLegacyKey) legacy_pending.store(1, std::memory_order_release);
      deferred.fetch_add(1, std::memory_order_relaxed);
      return flushed;
    }
    s->viable = 0;
  }
  lock.unlock();
  return passThrough(in, flushed);
}

CUresult Injector::Impl::passThrough(const Incoming& in, CUresult flushed) {
  stripe().issued.fetch_add(1, std::memory_order_relaxed);
  Inside inside;
  CUresult r;
  if (t_timed) {
    const uint64_t t0 = nowNs();
    r = forward(in);
    t_driver_ns += nowNs() - t0;
  } else {
    r = forward(in);
  }
  return flushed != CUDA_SUCCESS ? flushed : r;
}

CUresult Injector::Impl::forward(const Incoming& in) {
  const PendingLaunch& l = in.l;
  if (l.via == Via::kLaunchKernelEx) {
    CUlaunchConfig c{};
    c.gridDimX = l.grid[0], c.gridDimY = l.grid[1], c.gridDimZ = l.grid[2];
    c.blockDimX = l.block[0], c.blockDimY = l.block[1], c.blockDimZ = l.block[2];
    c.sharedMemBytes = l.shmem;
    c.hStream = l.stream;
    return self.HookClient::LaunchKernelEx(l.variant, &c, l.f, in.params, in.extra);
  }
  return self.HookClient::LaunchKernel(l.variant, l.f, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                                       l.block[2], l.shmem, l.stream, in.params, in.extra);
}

bool Injector::Impl::capturing(CUstream stream) {
  auto is_capturing = table().StreamIsCapturing.load();
  if (!is_capturing) return true;  // cannot tell: never fuse while any capture is open
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return is_capturing(stream, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUresult Injector::Impl::tryComplete(StreamSlot& s) {
  uint64_t complete = 0;
  for (uint64_t m = s.viable; m; m &= m - 1) {
    const int pi = std::countr_zero(m);
    if (plans[static_cast<size_t>(pi)]->plan.kernels.size() == static_cast<size_t>(s.count)) {
      complete |= uint64_t{1} << pi;
    }
  }
  bool predicate_failed = false;
  for (uint64_t m = complete; m; m &= m - 1) {
    const size_t pi = static_cast<size_t>(std::countr_zero(m));
    PlanState& st = *plans[pi];
    int row = 0;
    const int failed = failingPredicateMemo(s, pi, &row);
    if (failed >= 0) {
      predicate_failed = true;
      st.predicate_failures[static_cast<int>(st.plan.predicates[static_cast<size_t>(failed)].kind)].fetch_add(1);
      if (options.log) {
        std::fprintf(stderr, "kfuse run: %s: predicate %d (%s) does not hold\n", st.plan.dir.c_str(), failed,
                     rewriter::predicateKindName(st.plan.predicates[static_cast<size_t>(failed)].kind));
      }
      continue;
    }
    CUfunction fn = fusedFunction(pi);
    if (!fn) continue;
    // --validate=N: the first N occurrences, and the first occurrence of every proven argument tuple after them.
    bool validate = false;
    if (options.validate > 0) {
      const bool first_n = st.validations_started.fetch_add(1) < options.validate;
      validate = firstOfTuple(st, row) || first_n;
    }
    CUresult r = validate ? validateAndLaunch(s, pi, fn) : launchFused(s, pi, fn);
    if (r != CUDA_SUCCESS && !validate) {
      // A launch the driver refuses (the fused kernel's PTX does not JIT, too many resources) did not run: the
      // occurrence runs the originals, and the plan is not tried again. The application sees their result.
      disable(st,
              "the fused kernel failed to launch (" + errorName(r) + "); that occurrence ran the original launches");
      r = issueOriginals(s, FlushReason::kUnavailable);
    } else if (options.log) {
      std::fprintf(stderr, "kfuse run: %s: fused %d launches\n", st.plan.dir.c_str(), s.count);
    }
    if (s.key.load(std::memory_order_relaxed) == kLegacyKey) legacy_pending.store(0, std::memory_order_relaxed);
    s.count = 0;
    s.viable = 0;
    pending_streams.fetch_sub(1, std::memory_order_relaxed);
    return r;
  }
  const uint64_t longer = s.viable & ~complete & enabledMask();
  if (longer) {
    s.viable = longer;  // a longer pattern may still complete
    return CUDA_SUCCESS;
  }
  return flushLocked(s, predicate_failed ? FlushReason::kPredicate : FlushReason::kUnavailable);
}

bool Injector::Impl::capture(StreamSlot& s, int pos, const RuntimeKernel& k, void** params, void** extra) {
  uint8_t* dst = argsOf(s, pos);
  if (params) {
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (!params[i]) return false;
      std::memcpy(dst + k.params[i].offset, params[i], k.params[i].size);
    }
    return true;
  }
  if (!extra) return k.params.empty();
  const void* buffer = nullptr;
  size_t size = 0;
  for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = e[1];
    if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE && e[1]) std::memcpy(&size, e[1], sizeof size);
  }
  if (!buffer || size < k.arg_bytes) return false;
  std::memcpy(dst, buffer, k.arg_bytes);
  return true;
}

uint64_t Injector::Impl::enabledMask() const {
  uint64_t m = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i]->enabled.load(std::memory_order_relaxed)) m |= uint64_t{1} << i;
  }
  return m;
}

// ---- which plan kernel a function is ----

int Injector::Impl::identify(CUfunction f) {
  const auto key = reinterpret_cast<uint64_t>(f);
  if (identities.empty() || !key) return kUnknownIdentity;
  const size_t start = mix(key) & (kFunctionSlots - 1);
  for (size_t n = 0; n < 16; ++n) {
    FunctionSlot& s = functions[(start + n) & (kFunctionSlots - 1)];
    const uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) return s.identity.load(std::memory_order_relaxed);
    if (k == 0) break;
  }
  return describe(f, key, start);
}

int Injector::Impl::describe(CUfunction f, uint64_t key, size_t start) {
  std::lock_guard lock(describe_mu);
  const int id = describeUncached(f);
  for (size_t n = 0; n < 16; ++n) {
    FunctionSlot& s = functions[(start + n) & (kFunctionSlots - 1)];
    const uint64_t k = s.key.load(std::memory_order_relaxed);
    if (k == key) return s.identity.load(std::memory_order_relaxed);
    if (k == 0 || k == kTombstone) {
      s.identity.store(id, std::memory_order_relaxed);
      s.key.store(key, std::memory_order_release);
      return id;
    }
  }
  return id;  // table crowded here: asked again next time
}

// The CUDA runtime launches CUkernel handles, which a GPU driver's cuFunc* queries refuse: functionModule and
// functionName ask the cuKernel* ones then (seen on an H100: no <<<>>> kernel was ever matched to its plan).
int Injector::Impl::describeUncached(CUfunction f) {
  const CUmodule module = table().functionModule(f);
  const char* name = table().functionName(f);
  if (!module || !name) return kUnknownIdentity;
  const int h = moduleHash(reinterpret_cast<uint64_t>(module));
  if (h < 0) {
    // A kernel a plan names, from a module image the plan was not made from (the application was rebuilt, or the
    // module was loaded before kfuse was): never fused, and counted.
    for (const Identity& id : identities) {
      if (id.name == name) {
        unknown_functions.fetch_add(1, std::memory_order_relaxed);
        warn("kernel %s: its module is not the one the plan was made from; it is never fused", name);
        break;
      }
    }
    return kUnknownIdentity;
  }
  for (size_t i = 0; i < identities.size(); ++i) {
    const Identity& id = identities[i];
    if (id.hash != h || id.name != name) continue;
    if (!layoutMatches(f, *id.layout)) {
      unknown_functions.fetch_add(1, std::memory_order_relaxed);
      warn("kernel %s: its parameter layout differs from the plan's; it is never fused", name);
      return kUnknownIdentity;
    }
    return static_cast<int>(i);
  }
  return kUnknownIdentity;
}

bool Injector::Impl::layoutMatches(CUfunction f, const RuntimeKernel& k) {
  auto func_info = table().FuncGetParamInfo.load();
  auto kernel_info = table().KernelGetParamInfo.load();
  if (!func_info && !kernel_info) return true;  // an older driver: the module hash already pins the signature
  // The kernel's identity (its name and its module image's hash) already fixes its parameters; this only checks the
  // ones the plan uses against what the driver says, and never asks past the last one: a refused query shows as an
  // API error in the user's program under compute-sanitizer.
  if (k.params.empty()) return true;
  size_t offset = 0, size = 0;
  // A CUkernel is asked through cuKernelGetParamInfo when cuFuncGetParamInfo refuses it.
  const bool as_kernel = !func_info || (func_info(f, 0, &offset, &size) != CUDA_SUCCESS && kernel_info &&
                                        kernel_info(reinterpret_cast<CUkernel>(f), 0, &offset, &size) == CUDA_SUCCESS);
  auto info = [&](size_t i, size_t* o, size_t* n) {
    return as_kernel ? kernel_info(reinterpret_cast<CUkernel>(f), i, o, n) : func_info(f, i, o, n);
  };
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (info(i, &offset, &size) != CUDA_SUCCESS) return false;
    if (offset != k.params[i].offset || size != k.params[i].size) return false;
  }
  return true;
}

// ---- predicates ----

void Injector::Impl::compile(PlanState& st) const {
  const RuntimePlan& p = st.plan;
  CompiledPredicates& c = st.checks;
  for (size_t i = 0; i < p.predicates.size(); ++i) {
    const Predicate& pr = p.predicates[i];
    const int index = static_cast<int>(i);
    switch (pr.kind) {
      case Predicate::Kind::kSameLaunchConfig: c.same_shape = index; break;
      case Predicate::Kind::kArgEqual:
        // Arguments of different sizes are never equal: a size of 0 marks that.
        c.equal.push_back({index, at(p, pr.a), at(p, pr.b), sizeOf(p, pr.a) == sizeOf(p, pr.b) ? sizeOf(p, pr.a) : 0});
        break;
      case Predicate::Kind::kArgValue: c.values.push_back({index, at(p, pr.a), sizeOf(p, pr.a), pr.value}); break;
      case Predicate::Kind::kNoOverlap: {
        CompiledPredicates::Disjoint d{index, {}, pr.bytes};
        for (const ArgRef& b : pr.buffers) d.pointer.push_back(c.pointerIndex(at(p, b)));
        c.disjoint.push_back(std::move(d));
        break;
      }
      case Predicate::Kind::kProvenValues: {
        CompiledPredicates::Proven v{index, {}, {}, {}, {}, {}};
        for (const auto& a : pr.proof_args) {
          v.at.push_back(at(p, a.arg));
          v.size.push_back(sizeOf(p, a.arg));
          v.pointer.push_back(a.pointer_offset || a.allocation ? c.pointerIndex(at(p, a.arg)) : -1);
          v.allocation.push_back(a.allocation ? 1 : 0);
        }
        for (const auto& t : pr.tuples) v.tuples.insert(v.tuples.end(), t.begin(), t.end());
        c.proven.push_back(std::move(v));
        break;
      }
    }
  }
}

int Injector::Impl::failingPredicateMemo(StreamSlot& s, size_t pi, int* row) {
  const size_t bytes = static_cast<size_t>(s.count) * arg_stride;
  const uint64_t version = allocations_version.load(std::memory_order_acquire);
  unsigned shape[kMaxPatternKernels][7];
  for (int k = 0; k < s.count; ++k) {
    const PendingLaunch& l = s.launches[k];
    const unsigned v[7] = {l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.shmem};
    std::memcpy(shape[k], v, sizeof v);
  }
  const size_t shape_bytes = static_cast<size_t>(s.count) * sizeof shape[0];
  if (s.verified_plan == static_cast<int>(pi) && s.verified_version == version &&
      std::memcmp(s.verified, s.args, bytes) == 0 && std::memcmp(s.verified_shape, shape, shape_bytes) == 0) {
    *row = s.verified_row;
    return -1;
  }
  bool reusable = false;
  const int failed = failingPredicate(s, *plans[pi], &reusable, row);
  if (failed < 0 && reusable) {
    s.verified_row = *row;
    std::memcpy(s.verified, s.args, bytes);
    std::memcpy(s.verified_shape, shape, shape_bytes);
    s.verified_plan = static_cast<int>(pi);
    s.verified_version = version;
  }
  return failed;
}

int Injector::Impl::failingPredicate(StreamSlot& s, const PlanState& st, bool* reusable, int* row) {
  *row = 0;
  const RuntimePlan& p = st.plan;
  const CompiledPredicates& c = st.checks;
  const uint8_t* args = s.args;
  if (c.same_shape >= 0) {
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      const PendingLaunch& l = s.launches[k];
      const LaunchShape& want = p.kernels[k].shape;
      for (int d = 0; d < 3; ++d) {
        if (l.grid[d] != want.grid[d] || l.block[d] != want.block[d]) return c.same_shape;
      }
      if (l.shmem != want.dynamic_shared_bytes) return c.same_shape;
    }
  }
  for (const auto& e : c.equal) {
    if (e.size == 0 || std::memcmp(args + e.a, args + e.b, e.size) != 0) return e.index;
  }
  for (const auto& v : c.values) {
    if (v.bytes.size() != v.size || std::memcmp(args + v.at, v.bytes.data(), v.size) != 0) return v.index;
  }
  // Every pointer's allocation, once (equal pointers share a lookup).
  const size_t np = c.pointers.size();
  if (np > kMaxCheckedPointers) return c.disjoint.empty() ? c.proven.front().index : c.disjoint.front().index;
  bool asked_driver = false;
  std::shared_lock allocations_lock(allocations_mu, std::defer_lock);
  uint64_t ptr[kMaxCheckedPointers], base[kMaxCheckedPointers], size[kMaxCheckedPointers];
  bool known[kMaxCheckedPointers];
  if (np) allocations_lock.lock();
  for (size_t i = 0; i < np; ++i) {
    std::memcpy(&ptr[i], args + c.pointers[i], 8);
    size_t same = 0;
    while (same < i && ptr[same] != ptr[i]) ++same;
    if (same < i) {
      base[i] = base[same], size[i] = size[same], known[i] = known[same];
    } else {
      known[i] = allocationOf(ptr[i], base[i], size[i], /*tracked_locked=*/true, &asked_driver);
    }
  }
  // A pointer into memory that another address range also shows (mapped twice): the plan's proof took distinct
  // addresses for distinct bytes, so no predicate over it can hold.
  if (!mappings.empty()) {
    for (size_t i = 0; i < np; ++i) {
      if (!known[i] || !mappings.shared(base[i])) continue;
      for (const auto& d : c.disjoint) {
        if (std::find(d.pointer.begin(), d.pointer.end(), i) != d.pointer.end()) return d.index;
      }
      for (const auto& v : c.proven) {
        if (std::find(v.pointer.begin(), v.pointer.end(), static_cast<int>(i)) != v.pointer.end()) return v.index;
      }
    }
  }
  for (const auto& d : c.disjoint) {
    const size_t n = d.pointer.size();
    uint64_t lo[kMaxCheckedPointers], hi[kMaxCheckedPointers];
    if (n > kMaxCheckedPointers) return d.index;
    for (size_t b = 0; b < n; ++b) {
      const size_t i = d.pointer[b];
      lo[b] = ptr[i];
      // Bytes the kernels may touch, as extent() says: to the end of the allocation, or what the plan recorded.
      // Not more: a layer's weights at an offset inside one allocation must not reach into the next allocation.
      const bool inside = known[i] && ptr[i] >= base[i] && ptr[i] - base[i] <= size[i];
      hi[b] = lo[b] + (inside ? base[i] + size[i] - ptr[i] : d.bytes[b]);
    }
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        if (lo[a] < hi[b] && lo[b] < hi[a]) return d.index;
      }
    }
  }
  int64_t values[kMaxPatternKernels * kMaxParams];
  for (const auto& v : c.proven) {
    const size_t n = v.at.size();
    if (n == 0 || n > sizeof values / sizeof values[0]) return v.index;
    uint64_t bases[sizeof values / sizeof values[0]];  // distinct allocations so far, in proof_args order
    size_t distinct = 0;
    for (size_t a = 0; a < n; ++a) {
      if (v.pointer[a] >= 0) {
        const size_t i = static_cast<size_t>(v.pointer[a]);
        if (!known[i] || ptr[i] < base[i]) return v.index;
        if (v.allocation[a]) {
          size_t j = 0;
          while (j < distinct && bases[j] != base[i]) ++j;
          if (j == distinct) bases[distinct++] = base[i];
          values[a] = static_cast<int64_t>(j);
        } else {
          values[a] = static_cast<int64_t>(ptr[i] - base[i]);
        }
      } else {
        values[a] = scalarValue(args + v.at[a], v.size[a]);
      }
    }
    bool any = false;
    for (size_t r = 0; r + n <= v.tuples.size() && !any; r += n) {
      any = std::equal(values, values + n, v.tuples.begin() + static_cast<ptrdiff_t>(r));
      if (any) *row = static_cast<int>(r / n);
    }
    if (!any) return v.index;
  }
  *reusable = !asked_driver;
  return -1;
}

// ---- allocations ----

void Injector::Impl::noteAllocation(uint64_t base, uint64_t size) {
  std::unique_lock lock(allocations_mu);
  allocations_version.fetch_add(1, std::memory_order_release);
  auto it = std::lower_bound(allocations.begin(), allocations.end(), std::make_pair(base, uint64_t{0}));
  if (it != allocations.end() && it->first == base) {
    it->second = size;  // freed where kfuse did not see it, and handed out again
  } else {
    allocations.insert(it, {base, size});
  }
}

void Injector::Impl::untrack(uint64_t base) {
  auto it = std::lower_bound(allocations.begin(), allocations.end(), std::make_pair(base, uint64_t{0}));
  if (it != allocations.end() && it->first == base) allocations.erase(it);
}

void Injector::Impl::forgetAllocation(uint64_t base) {
  std::unique_lock lock(allocations_mu);
  allocations_version.fetch_add(1, std::memory_order_release);
  untrack(base);
}

void Injector::Impl::noteHandle(CUmemGenericAllocationHandle handle) {
  std::unique_lock lock(allocations_mu);
  mappings.noteHandle(handle);
}

void Injector::Impl::noteMapping(uint64_t base, uint64_t size, CUmemGenericAllocationHandle handle, uint64_t offset) {
  noteAllocation(base, size);
  std::unique_lock lock(allocations_mu);
  allocations_version.fetch_add(1, std::memory_order_release);
  mappings.map(base, size, handle, offset);
}

void Injector::Impl::forgetMappings(uint64_t base, uint64_t size) {
  std::unique_lock lock(allocations_mu);
  allocations_version.fetch_add(1, std::memory_order_release);
  for (uint64_t gone : mappings.unmap(base, size)) untrack(gone);
}

bool Injector::Impl::trackedAllocation(uint64_t ptr, uint64_t& base, uint64_t& size) const {
  auto it = std::upper_bound(allocations.begin(), allocations.end(), ptr,
                             [](uint64_t p, const std::pair<uint64_t, uint64_t>& a) { return p < a.first; });
  if (it == allocations.begin()) return false;
  --it;
  if (ptr >= it->first + std::max<uint64_t>(it->second, 1)) return false;
  base = it->first;
  size = it->second;
  return true;
}

bool Injector::Impl::allocationOf(uint64_t ptr, uint64_t& base, uint64_t& size, bool tracked_locked,
                                  bool* asked_driver) {
  if (tracked_locked && trackedAllocation(ptr, base, size)) return true;
  if (asked_driver) *asked_driver = true;
  auto range = table().MemGetAddressRange.load();
  CUdeviceptr b = 0;
  size_t n = 0;
  const bool known = range && range(&b, &n, static_cast<CUdeviceptr>(ptr)) == CUDA_SUCCESS;
  base = b;
  size = n;
  return known;
}

uint64_t Injector::Impl::extent(uint64_t ptr, uint64_t recorded) {
  uint64_t base = 0, size = 0;
  if (allocationOf(ptr, base, size) && ptr >= base && ptr - base <= size) return base + size - ptr;
  return recorded;
}

}  // namespace kfuse::inject
