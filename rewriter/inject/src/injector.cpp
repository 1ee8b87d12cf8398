#include "kfuse/inject/injector.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <shared_mutex>

#include <nlohmann/json.hpp>

#include "kfuse/collector/module_image.h"
#include "kfuse/core/trace.h"

namespace kfuse::inject {
namespace {

using collector::DriverTable;
using rewriter::ArgRef;
using rewriter::LaunchShape;
using rewriter::Predicate;

constexpr const char* kFlushNames[] = {"launch of another kernel",
                                       "predicate failed",
                                       "legacy default stream",
                                       "stream synchronize",
                                       "stream query",
                                       "context synchronize",
                                       "event record",
                                       "event synchronize",
                                       "event query",
                                       "stream wait event",
                                       "memcpy",
                                       "memset",
                                       "free",
                                       "host function",
                                       "graph launch or capture",
                                       "module unload",
                                       "context destroy or reset",
                                       "cooperative launch",
                                       "cuLaunchKernelEx with attributes",
                                       "stream destroy",
                                       "plan unavailable",
                                       "process exit"};
static_assert(sizeof kFlushNames / sizeof kFlushNames[0] == static_cast<size_t>(FlushReason::kCount));

constexpr int kPerThread = collector::kPerThread;
constexpr uint64_t kLegacyKey = 1;  // stream keys: real streams are pointers (even); per-thread ones odd (> 1)
constexpr uint64_t kTombstone = ~uint64_t{0};
constexpr size_t kFunctionSlots = 4096;  // power of two
constexpr int kUnknownIdentity = -1;

__attribute__((tls_model("initial-exec"))) thread_local int64_t t_tid = 0;
// Set while kfuse itself calls through the hooks (loading the fused module): no matching, no flushing.
__attribute__((tls_model("initial-exec"))) thread_local bool t_inside = false;
// Time this thread spent in the driver on kfuse's behalf (issuing launches): not kfuse's own cost.
__attribute__((tls_model("initial-exec"))) thread_local uint64_t t_driver_ns = 0;
// Whether the current launch is one of the sampled ones whose time is measured.
__attribute__((tls_model("initial-exec"))) thread_local bool t_timed = false;

// Marks kfuse's own calls into the next layer: a driver that calls its own exported functions (kfuse's stand-in
// does, through the PLT) comes back into the hooks, which must then pass straight through instead of matching or
// flushing again (and taking a stream's lock twice).
struct Inside {
  bool entered;
  Inside() : entered(!t_inside) { t_inside = true; }
  ~Inside() {
    if (entered) t_inside = false;
  }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

int64_t threadId() {
  if (t_tid == 0) t_tid = static_cast<int64_t>(syscall(SYS_gettid));
  return t_tid;
}

uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

uint64_t streamKey(CUstream stream, int variant) {
  const auto h = reinterpret_cast<uint64_t>(stream);
  if (h == reinterpret_cast<uint64_t>(CU_STREAM_LEGACY) || (h == 0 && variant == 0)) return kLegacyKey;
  if (h == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD) || h == 0) {
    return (static_cast<uint64_t>(threadId()) << 1) | 1;
  }
  return h;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

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

enum class Via : uint8_t { kLaunchKernel, kLaunchKernelEx };

struct PendingLaunch {
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shmem = 0;
  CUstream stream = nullptr;
  int variant = 0;
  Via via = Via::kLaunchKernel;
};

struct StreamSlot {
  std::atomic<uint64_t> key{0};
  std::mutex mu;
  int count = 0;        // deferred launches
  uint64_t viable = 0;  // plans whose pattern the deferred launches begin
  PendingLaunch launches[kMaxPatternKernels];
  uint8_t* args = nullptr;  // [kMaxPatternKernels][arg_stride]
  // The last occurrence whose predicates all held, to skip re-checking an identical one (a loop launching the
  // same pattern on the same buffers): its arguments, shapes, plan, and the allocation map's version then.
  uint8_t* verified = nullptr;  // [kMaxPatternKernels][arg_stride]
  unsigned verified_shape[kMaxPatternKernels][7] = {};
  int verified_plan = -1;
  uint64_t verified_version = 0;
  int verified_row = 0;  // which proven argument tuple it matched
};

// Counters every launch touches, one cache line per stripe of threads: 8 launching threads do not share a line.
struct alignas(64) Stripe {
  std::atomic<uint64_t> seen{0}, issued{0}, time_ns{0}, calls{0};
};
constexpr size_t kStripes = 16;
// Launches are timed one in kTimedEvery (clock reads would cost more than much of the work they time); the
// statistics scale the samples up.
constexpr uint64_t kTimedEvery = 64;

struct FunctionSlot {
  std::atomic<uint64_t> key{0};
  std::atomic<int> identity{kUnknownIdentity};
};

// A kernel some plan names: (mangled name, module hash).
struct Identity {
  std::string name;
  int hash = -1;                         // index into Impl::hashes
  uint64_t starts = 0;                   // plans whose first kernel this is
  uint64_t at[kMaxPatternKernels] = {};  // plans with this kernel at position i
  const RuntimeKernel* layout = nullptr;
};

struct LoadedFused {
  CUcontext ctx = nullptr;
  CUfunction fn = nullptr;
};

// A plan's predicates flattened for the launch path: every argument is a byte position in a stream slot's
// argument storage (kernel * stride + parameter offset), checked cheapest first.
struct CompiledPredicates {
  struct Equal {
    int index;  // in the plan's predicate list (for the statistics)
    uint32_t a, b, size;
  };
  struct Value {
    int index;
    uint32_t at, size;
    std::vector<uint8_t> bytes;
  };
  struct Disjoint {
    int index;
    std::vector<uint16_t> pointer;  // into `pointers`
    std::vector<uint64_t> bytes;
  };
  struct Proven {
    int index;
    std::vector<uint32_t> at, size;
    std::vector<int32_t> pointer;     // into `pointers` for a pointer's offset or allocation, else -1
    std::vector<uint8_t> allocation;  // 1: the value is which allocation the pointer shares (see ProofRef)
    std::vector<int64_t> tuples;      // row-major, at.size() values each
  };
  int same_shape = -1;
  // The argument positions holding pointers whose allocations the predicates need: each is looked up once per
  // check (a pointer passed to several kernels, once).
  std::vector<uint32_t> pointers;
  uint16_t pointerIndex(uint32_t at) {
    auto it = std::find(pointers.begin(), pointers.end(), at);
    if (it == pointers.end()) it = pointers.insert(pointers.end(), at);
    return static_cast<uint16_t>(it - pointers.begin());
  }
  std::vector<Equal> equal;
  std::vector<Value> values;
  std::vector<Disjoint> disjoint;
  std::vector<Proven> proven;
};

struct PlanState {
  RuntimePlan plan;
  CompiledPredicates checks;
  std::atomic<bool> enabled{true};
  std::atomic<uint64_t> fused{0};
  std::atomic<uint64_t> predicate_failures[5] = {};
  std::atomic<uint64_t> validations_passed{0}, validations_failed{0};
  std::atomic<int> validations_started{0};
  // --validate: the proven argument tuples (rows of the proven_values predicate) seen validated at least once.
  std::mutex validated_mu;
  std::vector<int> validated_rows;
  std::mutex mu;  // load, disable
  std::string disabled;
  LoadedFused loaded[8];
  int n_loaded = 0;
  uint64_t bytes_for[kMaxPatternKernels][kMaxParams] = {};  // no_overlap extents from the plan, per argument
};

}  // namespace

const char* flushReasonName(FlushReason r) {
  return kFlushNames[static_cast<int>(r)];
}

struct Injector::Impl {
  Injector& self;
  InjectorOptions options;
  std::vector<std::unique_ptr<PlanState>> plans;
  std::vector<std::string> hashes;
  std::vector<Identity> identities;
  size_t arg_stride = 0;
  std::vector<StreamSlot> slots;
  std::unique_ptr<uint8_t[]> arg_storage;
  std::unique_ptr<FunctionSlot[]> functions{new FunctionSlot[kFunctionSlots]};
  std::mutex claim_mu, describe_mu, modules_mu;
  // Device allocations made through the hooks: base -> size, sorted by base. Read on the launch path (one shared
  // lock per checked occurrence), written by allocations and frees.
  std::shared_mutex allocations_mu;
  std::vector<std::pair<uint64_t, uint64_t>> allocations;
  std::atomic<uint64_t> allocations_version{1};   // changes with every tracked allocation and free
  std::vector<std::pair<uint64_t, int>> modules;  // module / library handle -> hash index (-1: no plan's)
  std::atomic<int> pending_streams{0};
  std::atomic<int> legacy_pending{0};
  std::atomic<int> captures_open{0};

  Stripe stripes[kStripes];
  std::atomic<uint64_t> fused_launches{0}, deferred{0}, flushed_launches{0};
  std::atomic<uint64_t> flushes[static_cast<int>(FlushReason::kCount)] = {};
  std::atomic<uint64_t> unknown_functions{0}, streams_over_capacity{0};

  Stripe& stripe() { return stripes[static_cast<size_t>(threadId()) & (kStripes - 1)]; }
  uint64_t sum(std::atomic<uint64_t> Stripe::*field) const {
    uint64_t n = 0;
    for (const Stripe& st : stripes) n += (st.*field).load(std::memory_order_relaxed);
    return n;
  }

  Impl(Injector& s, std::vector<RuntimePlan> ps, InjectorOptions o) : self(s), options(o), slots(o.stream_slots) {
    for (RuntimePlan& p : ps) {
      if (plans.size() == static_cast<size_t>(kMaxPlans)) {
        std::fprintf(stderr, "kfuse run: more than %d plans: %s ignored\n", kMaxPlans, p.dir.c_str());
        continue;
      }
      auto st = std::make_unique<PlanState>();
      st->plan = std::move(p);
      plans.push_back(std::move(st));
    }
    for (size_t pi = 0; pi < plans.size(); ++pi) {
      PlanState& st = *plans[pi];
      for (size_t k = 0; k < st.plan.kernels.size(); ++k) {
        const RuntimeKernel& rk = st.plan.kernels[k];
        arg_stride = std::max<size_t>(arg_stride, rk.arg_bytes);
        int h = static_cast<int>(std::find(hashes.begin(), hashes.end(), rk.module_hash) - hashes.begin());
        if (h == static_cast<int>(hashes.size())) hashes.push_back(rk.module_hash);
        auto it = std::find_if(identities.begin(), identities.end(),
                               [&](const Identity& id) { return id.hash == h && id.name == rk.name; });
        if (it == identities.end()) {
          identities.push_back(Identity{rk.name, h, 0, {}, &rk});
          it = identities.end() - 1;
        }
        it->at[k] |= uint64_t{1} << pi;
        if (k == 0) it->starts |= uint64_t{1} << pi;
      }
      for (const Predicate& p : st.plan.predicates) {
        if (p.kind != Predicate::Kind::kNoOverlap) continue;
        for (size_t b = 0; b < p.buffers.size(); ++b) {
          st.bytes_for[p.buffers[b].kernel][p.buffers[b].param] = p.bytes[b];
        }
      }
    }
    arg_stride = (arg_stride + 15) & ~size_t{15};
    for (auto& st : plans) compile(*st);
    const size_t per_slot = kMaxPatternKernels * arg_stride;
    arg_storage.reset(new uint8_t[std::max<size_t>(1, slots.size() * 2 * per_slot)]());
    for (size_t i = 0; i < slots.size(); ++i) {
      slots[i].args = arg_storage.get() + i * 2 * per_slot;
      slots[i].verified = slots[i].args + per_slot;
    }
  }

  DriverTable& table() { return self.table(); }

  uint32_t at(const RuntimePlan& p, ArgRef r) const {
    return static_cast<uint32_t>(static_cast<size_t>(r.kernel) * arg_stride +
                                 p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].offset);
  }
  static uint32_t sizeOf(const RuntimePlan& p, ArgRef r) {
    return p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].size;
  }

  void compile(PlanState& st) const {
    const RuntimePlan& p = st.plan;
    CompiledPredicates& c = st.checks;
    for (size_t i = 0; i < p.predicates.size(); ++i) {
      const Predicate& pr = p.predicates[i];
      const int index = static_cast<int>(i);
      switch (pr.kind) {
        case Predicate::Kind::kSameLaunchConfig: c.same_shape = index; break;
        case Predicate::Kind::kArgEqual:
          // Arguments of different sizes are never equal: a size of 0 marks that.
          c.equal.push_back(
              {index, at(p, pr.a), at(p, pr.b), sizeOf(p, pr.a) == sizeOf(p, pr.b) ? sizeOf(p, pr.a) : 0});
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

  uint64_t enabledMask() const {
    uint64_t m = 0;
    for (size_t i = 0; i < plans.size(); ++i) {
      if (plans[i]->enabled.load(std::memory_order_relaxed)) m |= uint64_t{1} << i;
    }
    return m;
  }

  // ---- modules and functions ----

  void noteModule(uint64_t handle, const void* image) {
    if (hashes.empty() || !handle) return;
    const collector::ImageInfo info = collector::inspectModuleImage(image);
    int h = -1;
    if (info.size) {
      const std::string hex = core::sha256Hex(info.data, info.size);
      const auto it = std::find(hashes.begin(), hashes.end(), hex);
      if (it != hashes.end()) h = static_cast<int>(it - hashes.begin());
    }
    std::lock_guard lock(modules_mu);
    for (auto& [m, idx] : modules) {
      if (m == handle) {
        idx = h;
        return;
      }
    }
    modules.emplace_back(handle, h);
  }

  int moduleHash(uint64_t handle) {
    std::lock_guard lock(modules_mu);
    for (const auto& [m, idx] : modules) {
      if (m == handle) return idx;
    }
    return -1;
  }

  void forgetModule(uint64_t handle) {
    {
      std::lock_guard lock(modules_mu);
      std::erase_if(modules, [&](const auto& e) { return e.first == handle; });
    }
    // Function handles of the module may come back for another module: forget them all (rare).
    std::lock_guard lock(describe_mu);
    for (size_t i = 0; i < kFunctionSlots; ++i) {
      if (functions[i].key.load(std::memory_order_relaxed) > 1) functions[i].key.store(kTombstone);
    }
  }

  // Which plan kernel `f` is, or -1. First sight asks the driver (module, name, parameter layout).
  int identify(CUfunction f) {
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

  int describe(CUfunction f, uint64_t key, size_t start) {
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
  int describeUncached(CUfunction f) {
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

  bool layoutMatches(CUfunction f, const RuntimeKernel& k) {
    auto func_info = table().FuncGetParamInfo.load();
    auto kernel_info = table().KernelGetParamInfo.load();
    if (!func_info && !kernel_info) return true;  // an older driver: the module hash already pins the signature
    size_t offset = 0, size = 0;
    // A CUkernel is asked through cuKernelGetParamInfo when cuFuncGetParamInfo refuses it.
    const bool as_kernel =
        !func_info || (func_info(f, 0, &offset, &size) != CUDA_SUCCESS && kernel_info &&
                       kernel_info(reinterpret_cast<CUkernel>(f), 0, &offset, &size) == CUDA_SUCCESS);
    auto info = [&](size_t i, size_t* o, size_t* n) {
      return as_kernel ? kernel_info(reinterpret_cast<CUkernel>(f), i, o, n) : func_info(f, i, o, n);
    };
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (info(i, &offset, &size) != CUDA_SUCCESS) return false;
      if (offset != k.params[i].offset || size != k.params[i].size) return false;
    }
    return info(k.params.size(), &offset, &size) != CUDA_SUCCESS;  // no parameter beyond the plan's
  }

  // ---- stream slots ----

  StreamSlot* findSlot(uint64_t key) {
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

  StreamSlot* claimSlot(uint64_t key) {
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

  // Frees a destroyed stream's slot for other streams (the stream's deferred launches were flushed).
  void releaseSlot(uint64_t key) {
    StreamSlot* s = findSlot(key);
    if (!s || key == kLegacyKey) return;
    std::lock_guard claim(claim_mu);
    std::lock_guard lock(s->mu);
    if (s->count == 0) s->key.store(kTombstone, std::memory_order_release);
  }

  uint8_t* argsOf(StreamSlot& s, int pos) { return s.args + static_cast<size_t>(pos) * arg_stride; }

  // ---- issuing ----

  CUresult issueOriginal(StreamSlot& s, int pos) {
    const PendingLaunch& l = s.launches[pos];
    const RuntimeKernel& k = *layoutAt(s, pos);
    void* ptrs[kMaxParams];
    uint8_t* args = argsOf(s, pos);
    for (size_t i = 0; i < k.params.size(); ++i) ptrs[i] = args + k.params[i].offset;
    stripe().issued.fetch_add(1, std::memory_order_relaxed);
    return launch(l, l.f, l.grid, l.block, l.shmem, ptrs);
  }

  CUresult launch(const PendingLaunch& l, CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                  void** ptrs) {
    Inside inside;
    if (!t_timed) return launchUntimed(l, f, grid, block, shmem, ptrs);
    const uint64_t t0 = nowNs();
    const CUresult r = launchUntimed(l, f, grid, block, shmem, ptrs);
    t_driver_ns += nowNs() - t0;
    return r;
  }

  CUresult launchUntimed(const PendingLaunch& l, CUfunction f, const unsigned grid[3], const unsigned block[3],
                         unsigned shmem, void** ptrs) {
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

  const RuntimeKernel* layoutAt(const StreamSlot& s, int pos) const {
    const int plan = std::countr_zero(s.viable);
    return &plans[static_cast<size_t>(plan)]->plan.kernels[static_cast<size_t>(pos)];
  }

  // Issues the slot's deferred launches unchanged and forgets them. Caller holds s.mu.
  CUresult flushLocked(StreamSlot& s, FlushReason why) {
    if (s.count == 0) return CUDA_SUCCESS;
    const CUresult first = issueOriginals(s, why);
    if (s.key.load(std::memory_order_relaxed) == kLegacyKey) legacy_pending.store(0, std::memory_order_relaxed);
    s.count = 0;
    s.viable = 0;
    pending_streams.fetch_sub(1, std::memory_order_relaxed);
    return first;
  }

  // Issues the slot's deferred launches unchanged, keeping them. Caller holds s.mu.
  CUresult issueOriginals(StreamSlot& s, FlushReason why) {
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

  CUresult flushSlot(StreamSlot* s, FlushReason why) {
    if (!s) return CUDA_SUCCESS;
    std::lock_guard lock(s->mu);
    return flushLocked(*s, why);
  }

  CUresult flushAllExcept(uint64_t except, FlushReason why) {
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

  // Before work enqueued on `stream`: issue what must run before it. Returns the first error a flushed launch gave.
  CUresult beforeStreamWork(CUstream stream, int variant, FlushReason why) {
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

  CUresult beforeGlobalWork(FlushReason why) {
    if (t_inside) return CUDA_SUCCESS;
    return flushAllExcept(0, why);
  }

  // Whether a launch deferred on `s` may touch [lo, hi): one of its pointer arguments lies in an allocation that
  // overlaps it (or in memory the driver cannot place). Caller holds s.mu.
  bool deferredMayTouch(StreamSlot& s, uint64_t lo, uint64_t hi) {
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

  // Before a synchronous host-to-device copy (legacy stream): deferred launches stay deferred unless they may touch
  // the allocation it writes. A copy into memory none of them uses cannot observe or change what they do, in
  // whichever order the two run (seen on an H100: each buffer's upload flushed the launch before it, so the
  // many-small-kernels pattern was never fused).
  CUresult beforeHostToDeviceCopy(uint64_t dst, uint64_t bytes) {
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

  // ---- matching ----

  struct Incoming {
    PendingLaunch l;
    void** params;
    void** extra;
  };

  bool capture(StreamSlot& s, int pos, const RuntimeKernel& k, void** params, void** extra) {
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

  const uint8_t* argBytes(StreamSlot& s, const RuntimePlan& p, ArgRef r) {
    return argsOf(s, r.kernel) + p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].offset;
  }
  uint32_t argSize(const RuntimePlan& p, ArgRef r) {
    return p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].size;
  }
  uint64_t pointerArg(StreamSlot& s, const RuntimePlan& p, ArgRef r) {
    uint64_t v = 0;
    std::memcpy(&v, argBytes(s, p, r), std::min<uint32_t>(8, argSize(p, r)));
    return v;
  }

  static constexpr size_t kMaxCheckedPointers = 32;

  void noteAllocation(uint64_t base, uint64_t size) {
    std::unique_lock lock(allocations_mu);
    allocations_version.fetch_add(1, std::memory_order_release);
    auto it = std::lower_bound(allocations.begin(), allocations.end(), std::make_pair(base, uint64_t{0}));
    if (it != allocations.end() && it->first == base) {
      it->second = size;  // freed where kfuse did not see it, and handed out again
    } else {
      allocations.insert(it, {base, size});
    }
  }
  void forgetAllocation(uint64_t base) {
    std::unique_lock lock(allocations_mu);
    allocations_version.fetch_add(1, std::memory_order_release);
    auto it = std::lower_bound(allocations.begin(), allocations.end(), std::make_pair(base, uint64_t{0}));
    if (it != allocations.end() && it->first == base) allocations.erase(it);
  }
  // Caller holds allocations_mu (shared).
  bool trackedAllocation(uint64_t ptr, uint64_t& base, uint64_t& size) const {
    auto it = std::upper_bound(allocations.begin(), allocations.end(), ptr,
                               [](uint64_t p, const std::pair<uint64_t, uint64_t>& a) { return p < a.first; });
    if (it == allocations.begin()) return false;
    --it;
    if (ptr >= it->first + std::max<uint64_t>(it->second, 1)) return false;
    base = it->first;
    size = it->second;
    return true;
  }

  // The allocation holding `ptr`: from the tracked ones when the caller holds allocations_mu (shared), else or if
  // it is not tracked from the driver (then *asked_driver is set). False if neither knows it.
  bool allocationOf(uint64_t ptr, uint64_t& base, uint64_t& size, bool tracked_locked = false,
                    bool* asked_driver = nullptr) {
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

  // Bytes from `ptr` the kernels may touch: to the end of its allocation (an access beyond it is out of bounds in
  // the original program already), or what the plan recorded when the allocation is unknown.
  uint64_t extent(uint64_t ptr, uint64_t recorded) {
    uint64_t base = 0, size = 0;
    if (allocationOf(ptr, base, size) && ptr >= base && ptr - base <= size) return base + size - ptr;
    return recorded;
  }

  // Which predicate of plan `pi` fails for the deferred launches, or -1 if all hold. An occurrence identical to
  // the last one that passed (arguments, shapes, no allocation or free since) passes without being re-checked.
  // Allocates nothing. Caller holds s.mu.
  int failingPredicateMemo(StreamSlot& s, size_t pi, int* row) {
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

  // Which predicate of `plan` fails for the deferred launches, or -1 if all hold. `reusable`: the answer depends
  // only on the arguments, the shapes and the tracked allocations. `row`: which proven argument tuple matched (0
  // without a proven_values predicate). Allocates nothing.
  int failingPredicate(StreamSlot& s, const PlanState& st, bool* reusable, int* row) {
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

  // The fused kernel of plan `pi` in the current context, loading it on first use; nullptr when unavailable.
  CUfunction fusedFunction(size_t pi) {
    PlanState& st = *plans[pi];
    auto get_ctx = table().CtxGetCurrent.load();
    CUcontext ctx = nullptr;
    if (get_ctx && get_ctx(&ctx) != CUDA_SUCCESS) ctx = nullptr;
    std::lock_guard lock(st.mu);
    for (int i = 0; i < st.n_loaded; ++i) {
      if (st.loaded[i].ctx == ctx) return st.loaded[i].fn;
    }
    if (!st.enabled.load()) return nullptr;
    if (st.n_loaded == static_cast<int>(sizeof st.loaded / sizeof st.loaded[0])) return nullptr;
    CUfunction fn = load(st);
    if (!fn) return nullptr;
    st.loaded[st.n_loaded++] = {ctx, fn};
    return fn;
  }

  // Caller holds st.mu.
  CUfunction load(PlanState& st) {
    const RuntimePlan& p = st.plan;
    std::string arch = "unknown";
    auto get_dev = table().CtxGetDevice.load();
    auto get_attr = table().DeviceGetAttribute.load();
    CUdevice dev = 0;
    int major = 0, minor = 0;
    if (get_dev && get_attr && get_dev(&dev) == CUDA_SUCCESS &&
        get_attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
        get_attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS) {
      arch = "sm_" + std::to_string(major) + std::to_string(minor);
    }
    if (std::find(p.targets.begin(), p.targets.end(), arch) == p.targets.end()) {
      std::string targets;
      for (const auto& t : p.targets) targets += (targets.empty() ? "" : ",") + t;
      disableLocked(st, "the device is " + arch + ", the plan was compiled and validated for " + targets +
                            " (rewrite with --arch " + arch + ")");
      return nullptr;
    }
    CUmodule module = nullptr;
    // Through the next layer (a recording collector sees the fused module too); through our own export when the
    // application never loaded a module that way (the wrapper finds the driver's function).
    CUresult r;
    {
      Inside inside;
      if (table().ModuleLoadData[0].load()) {
        r = self.HookClient::ModuleLoadData(0, &module, p.fused_ptx.c_str());
      } else {
        using Fn = DriverTable::ModuleLoadDataFn;
        r = reinterpret_cast<Fn>(collector::Interposer::wrapper(collector::Api::ModuleLoadData, 0))(
            &module, p.fused_ptx.c_str());
      }
    }
    if (r == CUDA_ERROR_NOT_INITIALIZED) {
      disableLocked(st, "cuModuleLoadData is not reachable through the hooks");
      return nullptr;
    }
    if (r != CUDA_SUCCESS) {
      disableLocked(st, "loading the fused kernel failed: " + errorName(r));
      return nullptr;
    }
    auto get_fn = table().ModuleGetFunction.load();
    CUfunction fn = nullptr;
    if (!get_fn || (r = get_fn(&fn, module, p.fused_name.c_str())) != CUDA_SUCCESS || !fn) {
      disableLocked(st, "cuModuleGetFunction(" + p.fused_name + ") failed: " + errorName(r));
      return nullptr;
    }
    return fn;
  }

  static std::string errorName(CUresult r) { return "CUresult " + std::to_string(static_cast<int>(r)); }

  void disableLocked(PlanState& st, const std::string& why) {
    if (!st.enabled.exchange(false)) return;
    st.disabled = why;
    std::fprintf(stderr, "kfuse run: fusion disabled for %s: %s; the application runs as without it\n",
                 st.plan.dir.c_str(), why.c_str());
  }
  void disable(PlanState& st, const std::string& why) {
    std::lock_guard lock(st.mu);
    disableLocked(st, why);
  }

  void warn(const char* fmt, const char* arg) {
    std::fprintf(stderr, "kfuse run: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, "\n");
  }

  // Launches plan `pi`'s fused kernel for the deferred pattern in `s`. Caller holds s.mu.
  CUresult launchFused(StreamSlot& s, size_t pi, CUfunction fn) {
    PlanState& st = *plans[pi];
    const RuntimePlan& p = st.plan;
    void* ptrs[kMaxParams];
    for (size_t i = 0; i < p.fused_args.size(); ++i) ptrs[i] = const_cast<uint8_t*>(argBytes(s, p, p.fused_args[i]));
    const PendingLaunch& last = s.launches[s.count - 1];
    const LaunchShape& shape = p.fused_shape;
    stripe().issued.fetch_add(1, std::memory_order_relaxed);
    fused_launches.fetch_add(1, std::memory_order_relaxed);
    st.fused.fetch_add(1, std::memory_order_relaxed);
    return launch(last, fn, shape.grid.data(), shape.block.data(), shape.dynamic_shared_bytes, ptrs);
  }

  CUresult onLaunch(const Incoming& in) {
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

  CUresult match(const Incoming& in, int id) {
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

  CUresult passThrough(const Incoming& in, CUresult flushed) {
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

  CUresult forward(const Incoming& in) {
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

  bool capturing(CUstream stream) {
    auto is_capturing = table().StreamIsCapturing.load();
    if (!is_capturing) return true;  // cannot tell: never fuse while any capture is open
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    return is_capturing(stream, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
  }

  // After a launch joined the deferred pattern: fuse if a plan is complete and holds, flush if nothing can
  // complete any more. Caller holds s.mu.
  CUresult tryComplete(StreamSlot& s) {
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
      const CUresult r = validate ? validateAndLaunch(s, pi, fn) : launchFused(s, pi, fn);
      if (options.log) std::fprintf(stderr, "kfuse run: %s: fused %d launches\n", st.plan.dir.c_str(), s.count);
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

  // Whether argument tuple `row` of plan `st` is met for the first time (and marks it met).
  static bool firstOfTuple(PlanState& st, int row) {
    std::lock_guard lock(st.validated_mu);
    if (std::find(st.validated_rows.begin(), st.validated_rows.end(), row) != st.validated_rows.end()) return false;
    st.validated_rows.push_back(row);
    return true;
  }

  // --validate: run the originals, keep their results, restore the buffers, run the fused kernel, compare. On a
  // mismatch the originals' results are put back and the plan is disabled. Synchronous; allocates (it is a
  // debugging mode, off the normal launch path).
  CUresult validateAndLaunch(StreamSlot& s, size_t pi, CUfunction fn) {
    PlanState& st = *plans[pi];
    const RuntimePlan& p = st.plan;
    DriverTable& t = table();
    auto sync = t.CtxSynchronizeDirect.load();
    auto alloc = t.MemAllocDirect.load();
    auto free_ = t.MemFreeDirect.load();
    auto d2d = t.MemcpyDtoDDirect.load();
    auto d2h = t.MemcpyDtoHDirect.load();
    auto h2d = t.MemcpyHtoDDirect.load();
    if (!sync || !alloc || !free_ || !d2d || !d2h || !h2d) {
      disable(st, "--validate needs cuCtxSynchronize, cuMemAlloc, cuMemFree and cuMemcpy from the driver");
      return issueOriginals(s, FlushReason::kUnavailable);
    }
    // The bytes each pointer argument may reach, one shadow per allocation: a copy must lie inside one allocation
    // (a GPU driver refuses a range running into the next one, however adjacent the two are in address space).
    struct Range {
      uint64_t lo, hi;
      uint64_t allocation;  // base of the allocation holding the range, 0 when the driver cannot say
      ArgRef first;
    };
    std::vector<Range> ranges;
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      for (size_t a = 0; a < p.kernels[k].params.size(); ++a) {
        if (!p.kernels[k].params[a].pointer) continue;
        const ArgRef ref{static_cast<int>(k), static_cast<int>(a)};
        const uint64_t lo = pointerArg(s, p, ref);
        const uint64_t n = extent(lo, st.bytes_for[k][a]);
        if (!lo || !n) continue;
        uint64_t base = 0, size = 0;
        if (allocationOf(lo, base, size) && lo >= base && lo - base < size) {
          ranges.push_back({lo, std::min(lo + n, base + size), base, ref});
        } else {
          ranges.push_back({lo, lo + n, 0, ref});
        }
      }
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
    std::vector<Range> merged;
    for (const Range& r : ranges) {
      const bool same_allocation = !merged.empty() && r.allocation == merged.back().allocation &&
                                   (r.allocation ? r.lo <= merged.back().hi : r.lo < merged.back().hi);
      if (same_allocation) {
        merged.back().hi = std::max(merged.back().hi, r.hi);
      } else {
        merged.push_back(r);
      }
    }
    const int count = s.count;
    CUresult r = sync();
    std::string failed_call = r == CUDA_SUCCESS ? "" : "cuCtxSynchronize";
    std::vector<CUdeviceptr> before(merged.size(), 0);
    for (size_t i = 0; i < merged.size() && r == CUDA_SUCCESS; ++i) {
      const uint64_t n = merged[i].hi - merged[i].lo;
      r = alloc(&before[i], n);
      if (r != CUDA_SUCCESS) {
        failed_call = "cuMemAlloc of " + std::to_string(n) + " bytes";
        break;
      }
      r = d2d(before[i], merged[i].lo, n);
      if (r != CUDA_SUCCESS) {
        const ArgRef& a = merged[i].first;
        failed_call = "cuMemcpyDtoD of " + std::to_string(n) + " bytes from argument " + std::to_string(a.param) +
                      " of " + p.kernels[a.kernel].name;
      }
    }
    std::vector<std::vector<uint8_t>> want(merged.size()), got(merged.size());
    if (r == CUDA_SUCCESS) {
      for (int i = 0; i < count && r == CUDA_SUCCESS; ++i) r = issueOriginal(s, i);
      if (r == CUDA_SUCCESS) r = sync();
      for (size_t i = 0; i < merged.size() && r == CUDA_SUCCESS; ++i) {
        want[i].resize(merged[i].hi - merged[i].lo);
        r = d2h(want[i].data(), merged[i].lo, want[i].size());
        if (r == CUDA_SUCCESS) r = d2d(merged[i].lo, before[i], want[i].size());
      }
    } else {
      // Not enough memory for the shadows: this occurrence runs unchanged.
      for (CUdeviceptr b : before) {
        if (b) free_(b);
      }
      disable(st, "--validate could not make shadow copies (" + failed_call + ": " + errorName(r) + ")");
      return issueOriginals(s, FlushReason::kUnavailable);
    }
    std::string mismatch;
    if (r == CUDA_SUCCESS) {
      r = launchFused(s, pi, fn);
      if (r == CUDA_SUCCESS) r = sync();
      for (size_t i = 0; i < merged.size() && r == CUDA_SUCCESS; ++i) {
        got[i].resize(want[i].size());
        r = d2h(got[i].data(), merged[i].lo, got[i].size());
        if (r == CUDA_SUCCESS && mismatch.empty() && got[i] != want[i]) {
          const size_t at =
              static_cast<size_t>(std::mismatch(got[i].begin(), got[i].end(), want[i].begin()).first - got[i].begin());
          char buf[256];
          std::snprintf(buf, sizeof buf,
                        "byte %zu of the buffer passed as argument %d of %s differs (fused 0x%02x, originals 0x%02x)",
                        at, merged[i].first.param, p.kernels[static_cast<size_t>(merged[i].first.kernel)].name.c_str(),
                        got[i][at], want[i][at]);
          mismatch = buf;
        }
      }
    }
    if (!mismatch.empty() || r != CUDA_SUCCESS) {
      for (size_t i = 0; i < merged.size(); ++i) {
        if (!want[i].empty()) h2d(merged[i].lo, want[i].data(), want[i].size());
      }
      st.validations_failed.fetch_add(1);
      disable(st, mismatch.empty() ? "validation run failed: " + errorName(r)
                                   : "validation failed at occurrence " +
                                         std::to_string(st.validations_passed.load() + 1) + ": " + mismatch);
    } else {
      st.validations_passed.fetch_add(1);
    }
    for (CUdeviceptr b : before) {
      if (b) free_(b);
    }
    return r;
  }

  InjectorStats snapshot() const {
    InjectorStats s;
    s.launches_seen = sum(&Stripe::seen);
    s.launches_issued = sum(&Stripe::issued);
    s.fused_launches = fused_launches.load();
    s.deferred = deferred.load();
    for (int i = 0; i < static_cast<int>(FlushReason::kCount); ++i) s.flushes[i] = flushes[i].load();
    s.flushed_launches = flushed_launches.load();
    s.unknown_functions = unknown_functions.load();
    s.streams_over_capacity = streams_over_capacity.load();
    s.time_in_kfuse_ns = sum(&Stripe::time_ns);
    for (const auto& st : plans) {
      PlanStats ps;
      ps.dir = st->plan.dir;
      ps.label = st->plan.label;
      ps.fused_name = st->plan.fused_name;
      ps.occurrences_fused = st->fused.load();
      for (int i = 0; i < 5; ++i) ps.predicate_failures[i] = st->predicate_failures[i].load();
      ps.validations_passed = st->validations_passed.load();
      ps.validations_failed = st->validations_failed.load();
      {
        std::lock_guard lock(st->mu);
        ps.disabled = st->disabled;
      }
      s.plans.push_back(std::move(ps));
    }
    return s;
  }
};

Injector::Injector(DriverTable& table, std::vector<RuntimePlan> plans, InjectorOptions options)
    : HookClient(table), impl_(std::make_unique<Impl>(*this, std::move(plans), options)) {}

Injector::~Injector() = default;

void Injector::flushAll(FlushReason why) {
  (void)impl_->flushAllExcept(0, why);
}

InjectorStats Injector::stats() const {
  return impl_->snapshot();
}

std::string Injector::statsJson(const InjectorStats& s) {
  nlohmann::json j;
  j["format"] = "kfuse-run-stats";
  j["version"] = 1;
  j["launches_seen"] = s.launches_seen;
  j["launches_issued"] = s.launches_issued;
  j["fused_launches"] = s.fused_launches;
  j["deferred_launches"] = s.deferred;
  j["flushed_launches"] = s.flushed_launches;
  nlohmann::json flushes = nlohmann::json::object();
  for (int i = 0; i < static_cast<int>(FlushReason::kCount); ++i) {
    if (s.flushes[i]) flushes[flushReasonName(static_cast<FlushReason>(i))] = s.flushes[i];
  }
  j["flushes"] = flushes;
  j["unknown_functions"] = s.unknown_functions;
  j["streams_over_capacity"] = s.streams_over_capacity;
  j["time_in_kfuse_ns"] = s.time_in_kfuse_ns;
  nlohmann::json plans = nlohmann::json::array();
  for (const PlanStats& p : s.plans) {
    nlohmann::json failures = nlohmann::json::object();
    for (int i = 0; i < 5; ++i) {
      if (p.predicate_failures[i]) {
        failures[rewriter::predicateKindName(static_cast<Predicate::Kind>(i))] = p.predicate_failures[i];
      }
    }
    plans.push_back({{"dir", p.dir},
                     {"label", p.label},
                     {"fused_kernel", p.fused_name},
                     {"occurrences_fused", p.occurrences_fused},
                     {"predicate_failures", failures},
                     {"validations_passed", p.validations_passed},
                     {"validations_failed", p.validations_failed},
                     {"disabled", p.disabled.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.disabled)}});
  }
  j["plans"] = plans;
  return j.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string Injector::statsSummary(const InjectorStats& s) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "kfuse run: %" PRIu64 " launches seen, %" PRIu64 " issued to the driver (%" PRIu64
                " fused kernels); %" PRIu64 " deferred launches issued unchanged; %.1f us in kfuse\n",
                s.launches_seen, s.launches_issued, s.fused_launches, s.flushed_launches,
                static_cast<double>(s.time_in_kfuse_ns) / 1e3);
  std::string out = buf;
  for (int i = 0; i < static_cast<int>(FlushReason::kCount); ++i) {
    if (!s.flushes[i]) continue;
    std::snprintf(buf, sizeof buf, "kfuse run:   flushed %" PRIu64 "x: %s\n", s.flushes[i],
                  flushReasonName(static_cast<FlushReason>(i)));
    out += buf;
  }
  for (const PlanStats& p : s.plans) {
    std::snprintf(buf, sizeof buf, "kfuse run:   %s: fused %" PRIu64 " occurrence(s)", p.dir.c_str(),
                  p.occurrences_fused);
    out += buf;
    for (int i = 0; i < 5; ++i) {
      if (!p.predicate_failures[i]) continue;
      std::snprintf(buf, sizeof buf, ", %s failed %" PRIu64 "x",
                    rewriter::predicateKindName(static_cast<Predicate::Kind>(i)), p.predicate_failures[i]);
      out += buf;
    }
    if (p.validations_passed || p.validations_failed) {
      std::snprintf(buf, sizeof buf, ", validated %" PRIu64 " passed / %" PRIu64 " failed", p.validations_passed,
                    p.validations_failed);
      out += buf;
    }
    if (!p.disabled.empty()) out += ", disabled: " + p.disabled;
    out += "\n";
  }
  return out;
}

// ---- hooks ----

CUresult Injector::LaunchKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream stream, void** params,
                                void** extra) {
  if (t_inside) return HookClient::LaunchKernel(variant, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
  Impl::Incoming in{{f, {gx, gy, gz}, {bx, by, bz}, shmem, stream, variant, Via::kLaunchKernel}, params, extra};
  return impl_->onLaunch(in);
}

CUresult Injector::LaunchKernelEx(int variant, const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  if (t_inside || !c) return HookClient::LaunchKernelEx(variant, c, f, params, extra);
  if (c->numAttrs != 0) {
    // Clusters, cooperative launches, programmatic serialisation, priorities: never part of a pattern.
    const CUresult flushed = impl_->beforeStreamWork(c->hStream, variant, FlushReason::kLaunchAttributes);
    impl_->stripe().seen.fetch_add(1, std::memory_order_relaxed);
    impl_->stripe().issued.fetch_add(1, std::memory_order_relaxed);
    CUresult r;
    {
      Inside inside;
      r = HookClient::LaunchKernelEx(variant, c, f, params, extra);
    }
    return flushed != CUDA_SUCCESS ? flushed : r;
  }
  Impl::Incoming in{{f,
                     {c->gridDimX, c->gridDimY, c->gridDimZ},
                     {c->blockDimX, c->blockDimY, c->blockDimZ},
                     c->sharedMemBytes,
                     c->hStream,
                     variant,
                     Via::kLaunchKernelEx},
                    params,
                    extra};
  return impl_->onLaunch(in);
}

#define KFUSE_AFTER(FLUSH, CALL)     \
  const CUresult flushed_ = (FLUSH); \
  CUresult r_;                       \
  {                                  \
    Inside inside_;                  \
    r_ = CALL;                       \
  }                                  \
  return flushed_ != CUDA_SUCCESS ? flushed_ : r_;

#define KFUSE_STREAM(WHY, STREAM, CALL) KFUSE_AFTER(impl_->beforeStreamWork(STREAM, variant, FlushReason::WHY), CALL)
#define KFUSE_GLOBAL(WHY, CALL) KFUSE_AFTER(impl_->beforeGlobalWork(FlushReason::WHY), CALL)
// A synchronous copy or set is ordered on the legacy default stream (so after every blocking stream's work), or,
// called through its _ptds function, on the calling thread's per-thread default stream only.
#define KFUSE_SYNC_COPY(WHY, CALL)                                                                \
  KFUSE_AFTER(variant == kPerThread ? impl_->beforeStreamWork(nullptr, variant, FlushReason::WHY) \
                                    : impl_->beforeGlobalWork(FlushReason::WHY),                  \
              CALL)

CUresult Injector::LaunchCooperativeKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                           unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream stream,
                                           void** params) {
  impl_->stripe().seen.fetch_add(1, std::memory_order_relaxed);
  impl_->stripe().issued.fetch_add(1, std::memory_order_relaxed);
  KFUSE_STREAM(kCooperativeLaunch, stream,
               HookClient::LaunchCooperativeKernel(variant, f, gx, gy, gz, bx, by, bz, shmem, stream, params))
}

CUresult Injector::ModuleLoadData(int variant, CUmodule* module, const void* image) {
  const CUresult r = HookClient::ModuleLoadData(variant, module, image);
  if (r == CUDA_SUCCESS && module) impl_->noteModule(reinterpret_cast<uint64_t>(*module), image);
  return r;
}
CUresult Injector::ModuleLoadDataEx(int variant, CUmodule* module, const void* image, unsigned n, CUjit_option* options,
                                    void** values) {
  const CUresult r = HookClient::ModuleLoadDataEx(variant, module, image, n, options, values);
  if (r == CUDA_SUCCESS && module) impl_->noteModule(reinterpret_cast<uint64_t>(*module), image);
  return r;
}
CUresult Injector::ModuleLoadFatBinary(int variant, CUmodule* module, const void* image) {
  const CUresult r = HookClient::ModuleLoadFatBinary(variant, module, image);
  if (r == CUDA_SUCCESS && module) impl_->noteModule(reinterpret_cast<uint64_t>(*module), image);
  return r;
}
// A module from a file: identified by the file's contents, as the trace recorded them.
CUresult Injector::ModuleLoad(int variant, CUmodule* module, const char* fname) {
  const CUresult r = HookClient::ModuleLoad(variant, module, fname);
  if (r == CUDA_SUCCESS && module) {
    const std::vector<uint8_t> image = collector::readModuleFile(fname, uint64_t{1} << 30);
    if (!image.empty()) impl_->noteModule(reinterpret_cast<uint64_t>(*module), image.data());
  }
  return r;
}
CUresult Injector::LibraryLoadData(int variant, CUlibrary* library, const void* code, CUjit_option* jit_options,
                                   void** jit_values, unsigned n_jit, CUlibraryOption* library_options,
                                   void** library_values, unsigned n_library) {
  const CUresult r = HookClient::LibraryLoadData(variant, library, code, jit_options, jit_values, n_jit,
                                                 library_options, library_values, n_library);
  if (r == CUDA_SUCCESS && library) {
    // Launches name functions of the library's module in the current context: that module is what they report.
    impl_->noteModule(reinterpret_cast<uint64_t>(*library), code);
    if (auto get_module = table().LibraryGetModule.load()) {
      CUmodule m = nullptr;
      if (get_module(&m, *library) == CUDA_SUCCESS && m) impl_->noteModule(reinterpret_cast<uint64_t>(m), code);
    }
  }
  return r;
}
CUresult Injector::ModuleUnload(int variant, CUmodule module) {
  const CUresult flushed = impl_->beforeGlobalWork(FlushReason::kModuleUnload);
  const CUresult r = HookClient::ModuleUnload(variant, module);
  if (r == CUDA_SUCCESS) impl_->forgetModule(reinterpret_cast<uint64_t>(module));
  return flushed != CUDA_SUCCESS ? flushed : r;
}
CUresult Injector::MemAlloc(int variant, CUdeviceptr* dptr, size_t bytes) {
  const CUresult r = HookClient::MemAlloc(variant, dptr, bytes);
  if (r == CUDA_SUCCESS && dptr) impl_->noteAllocation(*dptr, bytes);
  return r;
}
CUresult Injector::MemAllocPitch(int variant, CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                 unsigned elem) {
  const CUresult r = HookClient::MemAllocPitch(variant, dptr, pitch, width, height, elem);
  if (r == CUDA_SUCCESS && dptr && pitch) impl_->noteAllocation(*dptr, uint64_t{*pitch} * height);
  return r;
}
CUresult Injector::MemAllocManaged(int variant, CUdeviceptr* dptr, size_t bytes, unsigned flags) {
  const CUresult r = HookClient::MemAllocManaged(variant, dptr, bytes, flags);
  if (r == CUDA_SUCCESS && dptr) impl_->noteAllocation(*dptr, bytes);
  return r;
}
CUresult Injector::MemAllocAsync(int variant, CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  const CUresult r = HookClient::MemAllocAsync(variant, dptr, bytes, stream);
  if (r == CUDA_SUCCESS && dptr) impl_->noteAllocation(*dptr, bytes);
  return r;
}
CUresult Injector::MemMap(int variant, CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  const CUresult r = HookClient::MemMap(variant, ptr, size, offset, handle, flags);
  if (r == CUDA_SUCCESS) impl_->noteAllocation(ptr, size);
  return r;
}
CUresult Injector::MemFree(int variant, CUdeviceptr dptr) {
  impl_->forgetAllocation(dptr);
  KFUSE_GLOBAL(kFree, HookClient::MemFree(variant, dptr))
}
CUresult Injector::MemFreeAsync(int variant, CUdeviceptr dptr, CUstream stream) {
  impl_->forgetAllocation(dptr);
  KFUSE_GLOBAL(kFree, HookClient::MemFreeAsync(variant, dptr, stream))
}
CUresult Injector::MemFreeHost(int variant, void* p){
    KFUSE_GLOBAL(kFree, HookClient::MemFreeHost(variant, p))} CUresult Injector::MemUnmap(int variant, CUdeviceptr ptr,
                                                                                          size_t size) {
  impl_->forgetAllocation(ptr);
  KFUSE_GLOBAL(kFree, HookClient::MemUnmap(variant, ptr, size))
}
CUresult Injector::Memcpy(int variant, CUdeviceptr dst, CUdeviceptr src,
                          size_t bytes){KFUSE_SYNC_COPY(kMemcpy, HookClient::Memcpy(variant, dst, src, bytes))} CUresult
    Injector::MemcpyAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream){
        KFUSE_STREAM(kMemcpy, stream, HookClient::MemcpyAsync(variant, dst, src, bytes, stream))} CUresult
    Injector::MemcpyHtoD(int variant, CUdeviceptr dst, const void* src, size_t bytes){
        KFUSE_AFTER(variant == kPerThread ? impl_->beforeStreamWork(nullptr, variant, FlushReason::kMemcpy)
                                          : impl_->beforeHostToDeviceCopy(dst, bytes),
                    HookClient::MemcpyHtoD(variant, dst, src, bytes))} CUresult Injector::MemcpyDtoH(int variant,
                                                                                                     void* dst,
                                                                                                     CUdeviceptr src,
                                                                                                     size_t bytes){
        KFUSE_SYNC_COPY(kMemcpy, HookClient::MemcpyDtoH(variant, dst, src, bytes))} CUresult
    Injector::MemcpyDtoD(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes){
        KFUSE_SYNC_COPY(kMemcpy, HookClient::MemcpyDtoD(variant, dst, src, bytes))} CUresult
    Injector::MemcpyHtoDAsync(int variant, CUdeviceptr dst, const void* src, size_t bytes, CUstream stream){
        KFUSE_STREAM(kMemcpy, stream, HookClient::MemcpyHtoDAsync(variant, dst, src, bytes, stream))} CUresult
    Injector::MemcpyDtoHAsync(int variant, void* dst, CUdeviceptr src, size_t bytes, CUstream stream){
        KFUSE_STREAM(kMemcpy, stream, HookClient::MemcpyDtoHAsync(variant, dst, src, bytes, stream))} CUresult
    Injector::MemcpyDtoDAsync(int variant, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream){
        KFUSE_STREAM(kMemcpy, stream, HookClient::MemcpyDtoDAsync(variant, dst, src, bytes, stream))} CUresult
    Injector::Memcpy2D(int variant, const CUDA_MEMCPY2D* copy){
        KFUSE_SYNC_COPY(kMemcpy, HookClient::Memcpy2D(variant, copy))} CUresult
    Injector::Memcpy2DAsync(int variant, const CUDA_MEMCPY2D* copy, CUstream stream){
        KFUSE_STREAM(kMemcpy, stream, HookClient::Memcpy2DAsync(variant, copy, stream))} CUresult
    Injector::Memcpy3D(int variant, const CUDA_MEMCPY3D* copy){
        KFUSE_SYNC_COPY(kMemcpy, HookClient::Memcpy3D(variant, copy))} CUresult
    Injector::Memcpy3DAsync(int variant, const CUDA_MEMCPY3D* copy, CUstream stream){
        KFUSE_STREAM(kMemcpy, stream, HookClient::Memcpy3DAsync(variant, copy, stream))} CUresult
    Injector::MemcpyPeer(int variant, CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                         size_t bytes){
        KFUSE_SYNC_COPY(kMemcpy, HookClient::MemcpyPeer(variant, dst, dst_ctx, src, src_ctx, bytes))} CUresult
    Injector::MemcpyPeerAsync(int variant, CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                              size_t bytes, CUstream stream){
        KFUSE_STREAM(kMemcpy, stream,
                     HookClient::MemcpyPeerAsync(variant, dst, dst_ctx, src, src_ctx, bytes,
                                                 stream))} CUresult Injector::MemsetD8(int variant, CUdeviceptr dst,
                                                                                       unsigned char value, size_t n){
        KFUSE_SYNC_COPY(kMemset, HookClient::MemsetD8(variant, dst, value,
                                                      n))} CUresult Injector::MemsetD16(int variant, CUdeviceptr dst,
                                                                                        unsigned short value, size_t n){
        KFUSE_SYNC_COPY(kMemset, HookClient::MemsetD16(variant, dst, value,
                                                       n))} CUresult Injector::MemsetD32(int variant, CUdeviceptr dst,
                                                                                         unsigned int value, size_t n){
        KFUSE_SYNC_COPY(kMemset, HookClient::MemsetD32(variant, dst, value, n))} CUresult
    Injector::MemsetD8Async(int variant, CUdeviceptr dst, unsigned char value, size_t n, CUstream stream){
        KFUSE_STREAM(kMemset, stream, HookClient::MemsetD8Async(variant, dst, value, n, stream))} CUresult
    Injector::MemsetD16Async(int variant, CUdeviceptr dst, unsigned short value, size_t n, CUstream stream){
        KFUSE_STREAM(kMemset, stream, HookClient::MemsetD16Async(variant, dst, value, n, stream))} CUresult
    Injector::MemsetD32Async(int variant, CUdeviceptr dst, unsigned int value, size_t n, CUstream stream){
        KFUSE_STREAM(kMemset, stream,
                     HookClient::MemsetD32Async(variant, dst, value, n,
                                                stream))} CUresult Injector::CtxSynchronize(int variant){
        KFUSE_GLOBAL(kContextSync,
                     HookClient::CtxSynchronize(variant))} CUresult Injector::CtxSynchronizeV2(int variant,
                                                                                               CUcontext ctx){
        KFUSE_GLOBAL(kContextSync,
                     HookClient::CtxSynchronizeV2(variant, ctx))} CUresult Injector::StreamSynchronize(int variant,
                                                                                                       CUstream stream){
        KFUSE_STREAM(kStreamSync, stream,
                     HookClient::StreamSynchronize(variant, stream))} CUresult Injector::StreamQuery(int variant,
                                                                                                     CUstream stream){
        KFUSE_STREAM(kStreamQuery, stream,
                     HookClient::StreamQuery(variant, stream))} CUresult Injector::StreamDestroy(int variant,
                                                                                                 CUstream stream) {
  const CUresult flushed = impl_->beforeStreamWork(stream, variant, FlushReason::kStreamDestroy);
  impl_->releaseSlot(streamKey(stream, variant));  // its handle may come back for another stream
  const CUresult r = HookClient::StreamDestroy(variant, stream);
  return flushed != CUDA_SUCCESS ? flushed : r;
}
CUresult Injector::EventSynchronize(int variant, CUevent event){
    KFUSE_GLOBAL(kEventSync,
                 HookClient::EventSynchronize(variant, event))} CUresult Injector::EventQueryHook(int variant,
                                                                                                  CUevent event){
    KFUSE_GLOBAL(kEventQuery,
                 HookClient::EventQueryHook(variant, event))} CUresult Injector::EventRecord(int variant, CUevent event,
                                                                                             CUstream stream){
    KFUSE_STREAM(kEventRecord, stream, HookClient::EventRecord(variant, event, stream))} CUresult
    Injector::EventRecordWithFlags(int variant, CUevent event, CUstream stream, unsigned flags){
        KFUSE_STREAM(kEventRecord, stream, HookClient::EventRecordWithFlags(variant, event, stream, flags))} CUresult
    Injector::StreamWaitEvent(int variant, CUstream stream, CUevent event, unsigned flags){
        KFUSE_STREAM(kStreamWaitEvent, stream, HookClient::StreamWaitEvent(variant, stream, event, flags))} CUresult
    Injector::LaunchHostFunc(int variant, CUstream stream, CUhostFn host_fn, void* data){
        KFUSE_STREAM(kHostFunc, stream, HookClient::LaunchHostFunc(variant, stream, host_fn, data))} CUresult
    Injector::StreamAddCallback(int variant, CUstream stream, CUstreamCallback callback, void* data, unsigned flags){
        KFUSE_STREAM(kHostFunc, stream, HookClient::StreamAddCallback(variant, stream, callback, data, flags))} CUresult
    Injector::GraphLaunch(int variant, CUgraphExec graph, CUstream stream){
        KFUSE_STREAM(kGraph, stream, HookClient::GraphLaunch(variant, graph, stream))} CUresult
    Injector::StreamBeginCapture(int variant, CUstream stream, CUstreamCaptureMode mode) {
  const CUresult flushed = impl_->beforeStreamWork(stream, variant, FlushReason::kGraph);
  const CUresult r = HookClient::StreamBeginCapture(variant, stream, mode);
  if (r == CUDA_SUCCESS) impl_->captures_open.fetch_add(1, std::memory_order_release);
  return flushed != CUDA_SUCCESS ? flushed : r;
}
CUresult Injector::StreamBeginCaptureToGraph(int variant, CUstream stream, CUgraph graph, const CUgraphNode* deps,
                                             const CUgraphEdgeData* edges, size_t n, CUstreamCaptureMode mode) {
  const CUresult flushed = impl_->beforeStreamWork(stream, variant, FlushReason::kGraph);
  const CUresult r = HookClient::StreamBeginCaptureToGraph(variant, stream, graph, deps, edges, n, mode);
  if (r == CUDA_SUCCESS) impl_->captures_open.fetch_add(1, std::memory_order_release);
  return flushed != CUDA_SUCCESS ? flushed : r;
}
CUresult Injector::StreamEndCapture(int variant, CUstream stream, CUgraph* graph) {
  const CUresult flushed = impl_->beforeStreamWork(stream, variant, FlushReason::kGraph);
  const CUresult r = HookClient::StreamEndCapture(variant, stream, graph);
  if (r == CUDA_SUCCESS && impl_->captures_open.load() > 0) impl_->captures_open.fetch_sub(1);
  return flushed != CUDA_SUCCESS ? flushed : r;
}
CUresult Injector::CtxDestroy(int variant, CUcontext ctx){
    KFUSE_GLOBAL(kContextTeardown,
                 HookClient::CtxDestroy(variant, ctx))} CUresult Injector::DevicePrimaryCtxRelease(int variant,
                                                                                                   CUdevice dev){
    KFUSE_GLOBAL(kContextTeardown, HookClient::DevicePrimaryCtxRelease(variant, dev))} CUresult
    Injector::DevicePrimaryCtxReset(int variant, CUdevice dev) {
  KFUSE_GLOBAL(kContextTeardown, HookClient::DevicePrimaryCtxReset(variant, dev))
}

}  // namespace kfuse::inject
