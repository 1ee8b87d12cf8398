// Injector: construction, the modules it has seen, loading the fused kernels, statistics, and the hooks. The
// launch path is in plan_matching.cpp, deferral and flushes in deferral.cpp, --validate in shadow_validation.cpp.
#include "kfuse/inject/injector.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "injector_impl.h"
#include "kfuse/core/trace.h"
#include "kfuse/hooks/module_image.h"

namespace kfuse::inject {
namespace {

using hooks::DriverTable;
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

}  // namespace

const char* flushReasonName(FlushReason r) {
  return kFlushNames[static_cast<int>(r)];
}

// ---- construction ----

Injector::Impl::Impl(Injector& s, std::vector<RuntimePlan> ps, InjectorOptions o)
    : self(s), options(o), slots(o.stream_slots) {
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

// ---- modules ----

void Injector::Impl::noteModule(uint64_t handle, const void* image) {
  if (hashes.empty() || !handle) return;
  const hooks::ImageInfo info = hooks::inspectModuleImage(image);
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

int Injector::Impl::moduleHash(uint64_t handle) {
  std::lock_guard lock(modules_mu);
  for (const auto& [m, idx] : modules) {
    if (m == handle) return idx;
  }
  return -1;
}

void Injector::Impl::forgetModule(uint64_t handle) {
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

// ---- fused kernels ----

CUfunction Injector::Impl::fusedFunction(size_t pi) {
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

CUfunction Injector::Impl::load(PlanState& st) {
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
      r = reinterpret_cast<Fn>(hooks::Interposer::wrapper(hooks::Api::ModuleLoadData, 0))(&module, p.fused_ptx.c_str());
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

std::string Injector::Impl::errorName(CUresult r) {
  return "CUresult " + std::to_string(static_cast<int>(r));
}

void Injector::Impl::disableLocked(PlanState& st, const std::string& why) {
  if (!st.enabled.exchange(false)) return;
  st.disabled = why;
  std::fprintf(stderr, "kfuse run: fusion disabled for %s: %s; the application runs as without it\n",
               st.plan.dir.c_str(), why.c_str());
}

void Injector::Impl::disable(PlanState& st, const std::string& why) {
  std::lock_guard lock(st.mu);
  disableLocked(st, why);
}

void Injector::Impl::warn(const char* fmt, const char* arg) {
  std::fprintf(stderr, "kfuse run: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n");
}

// ---- statistics ----

InjectorStats Injector::Impl::snapshot() const {
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
  s.graphs_rewritten = graphs_rewritten.load();
  s.graph_chains_fused = graph_chains_fused.load();
  s.graph_chains_refused = graph_chains_refused.load();
  s.graph_execs_unfused = graph_execs_unfused.load();
  for (const auto& st : plans) {
    PlanStats ps;
    ps.dir = st->plan.dir;
    ps.label = st->plan.label;
    ps.fused_name = st->plan.fused_name;
    ps.occurrences_fused = st->fused.load();
    for (int i = 0; i < 5; ++i) ps.predicate_failures[i] = st->predicate_failures[i].load();
    ps.validations_passed = st->validations_passed.load();
    ps.validations_failed = st->validations_failed.load();
    ps.timed_originals_ns = st->timed_originals_ns.load();
    ps.timed_fused_ns = st->timed_fused_ns.load();
    {
      std::lock_guard lock(st->mu);
      ps.disabled = st->disabled;
      ps.not_timed = st->not_timed;
    }
    s.plans.push_back(std::move(ps));
  }
  return s;
}

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
  j["graphs"] = {{"rewritten", s.graphs_rewritten},
                 {"chains_fused", s.graph_chains_fused},
                 {"chains_refused", s.graph_chains_refused},
                 {"execs_unfused", s.graph_execs_unfused}};
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
                     {"timing", p.timed_fused_ns ? nlohmann::json{{"originals_ns", p.timed_originals_ns},
                                                                  {"fused_ns", p.timed_fused_ns}}
                                                 : nlohmann::json(nullptr)},
                     {"not_timed", p.not_timed.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.not_timed)},
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
  if (s.graphs_rewritten || s.graph_chains_refused) {
    std::snprintf(buf, sizeof buf,
                  "kfuse run:   graphs: %" PRIu64 " instantiated rewritten, %" PRIu64 " node chains fused, %" PRIu64
                  " left unchanged; %" PRIu64 " rewritten executable graphs back to the application's\n",
                  s.graphs_rewritten, s.graph_chains_fused, s.graph_chains_refused, s.graph_execs_unfused);
    out += buf;
  }
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
    if (p.timed_fused_ns) {
      std::snprintf(buf, sizeof buf, ", timed %.1f us fused vs %.1f us originals",
                    static_cast<double>(p.timed_fused_ns) / 1e3, static_cast<double>(p.timed_originals_ns) / 1e3);
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
    const std::vector<uint8_t> image = hooks::readModuleFile(fname, uint64_t{1} << 30);
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
  if (r == CUDA_SUCCESS) impl_->noteMapping(ptr, size, handle, offset);
  return r;
}
CUresult Injector::MemCreate(int variant, CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  const CUresult r = HookClient::MemCreate(variant, handle, size, prop, flags);
  if (r == CUDA_SUCCESS && handle) impl_->noteHandle(*handle);
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
  impl_->forgetMappings(ptr, size);
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
    Injector::GraphLaunch(int variant, CUgraphExec graph, CUstream stream) {
  const CUresult flushed = impl_->beforeStreamWork(stream, variant, FlushReason::kGraph);
  // Outside `Inside`: under --validate, the first launches check the fused chains with launches of their own.
  const CUgraphExec target = impl_->checkedLaunchTarget(graph, stream, variant);
  CUresult r;
  {
    Inside inside;
    r = HookClient::GraphLaunch(variant, target, stream);
  }
  return flushed != CUDA_SUCCESS ? flushed : r;
}
CUresult Injector::StreamBeginCapture(int variant, CUstream stream, CUstreamCaptureMode mode) {
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
// Graphs: a rewritten clone instantiated beside the application's graph and launched in its place for as long as
// the per-node setters the application makes allow (graph_execs.cpp).
CUresult Injector::GraphInstantiateWithFlags(int variant, CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  return impl_->instantiateGraph(exec, graph, flags, [&](CUgraphExec* out, CUgraph g) {
    return HookClient::GraphInstantiateWithFlags(variant, out, g, flags);
  });
}
CUresult Injector::GraphInstantiateWithParams(int variant, CUgraphExec* exec, CUgraph graph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return impl_->instantiateGraph(exec, graph, params ? params->flags : 0, [&](CUgraphExec* out, CUgraph g) {
    return HookClient::GraphInstantiateWithParams(variant, out, g, params);
  });
}
CUresult Injector::GraphExecUpdate(int variant, CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  return impl_->updateExec(exec, graph, [&] { return HookClient::GraphExecUpdate(variant, exec, graph, info); });
}
CUresult Injector::GraphExecUpdateV1(int variant, CUgraphExec exec, CUgraph graph, CUgraphNode* error_node,
                                     CUgraphExecUpdateResult* result) {
  return impl_->updateExec(exec, graph,
                           [&] { return HookClient::GraphExecUpdateV1(variant, exec, graph, error_node, result); });
}
CUresult Injector::GraphExecDestroy(int variant, CUgraphExec exec) {
  return impl_->destroyExec(exec, [&] { return HookClient::GraphExecDestroy(variant, exec); });
}
CUresult Injector::GraphUpload(int variant, CUgraphExec exec, CUstream stream) {
  const CUresult flushed = impl_->beforeStreamWork(stream, variant, FlushReason::kGraph);
  CUresult r;
  {
    Inside inside;
    r = HookClient::GraphUpload(variant, impl_->launchTarget(exec), stream);
  }
  return flushed != CUDA_SUCCESS ? flushed : r;
}

// Per-node exec setters: the application's exec, then the rewritten one with the clone's node.
#define KFUSE_EXEC_SETTER(ID, ENABLED_CHANGE, PARAMS, ARGS)                                         \
  CUresult Injector::ID(int variant, CUgraphExec exec, CUgraphNode node, KFUSE_UNPAREN PARAMS) {    \
    return impl_->setExecNode(exec, node, ENABLED_CHANGE, [&](CUgraphExec target, CUgraphNode at) { \
      return HookClient::ID(variant, target, at, KFUSE_UNPAREN ARGS);                               \
    });                                                                                             \
  }
#define KFUSE_UNPAREN(...) __VA_ARGS__
KFUSE_EXEC_SETTER(GraphExecKernelNodeSetParams, false, (const CUDA_KERNEL_NODE_PARAMS* params), (params))
KFUSE_EXEC_SETTER(GraphExecKernelNodeSetParamsV1, false, (const CUDA_KERNEL_NODE_PARAMS_v1* params), (params))
KFUSE_EXEC_SETTER(GraphExecMemcpyNodeSetParams, false, (const CUDA_MEMCPY3D* copy, CUcontext ctx), (copy, ctx))
KFUSE_EXEC_SETTER(GraphExecMemsetNodeSetParams, false, (const CUDA_MEMSET_NODE_PARAMS* params, CUcontext ctx),
                  (params, ctx))
KFUSE_EXEC_SETTER(GraphExecHostNodeSetParams, false, (const CUDA_HOST_NODE_PARAMS* params), (params))
KFUSE_EXEC_SETTER(GraphExecChildGraphNodeSetParams, false, (CUgraph child), (child))
KFUSE_EXEC_SETTER(GraphExecEventRecordNodeSetEvent, false, (CUevent event), (event))
KFUSE_EXEC_SETTER(GraphExecEventWaitNodeSetEvent, false, (CUevent event), (event))
KFUSE_EXEC_SETTER(GraphExecExternalSemaphoresSignalNodeSetParams, false,
                  (const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* params), (params))
KFUSE_EXEC_SETTER(GraphExecExternalSemaphoresWaitNodeSetParams, false, (const CUDA_EXT_SEM_WAIT_NODE_PARAMS* params),
                  (params))
KFUSE_EXEC_SETTER(GraphExecBatchMemOpNodeSetParams, false, (const CUDA_BATCH_MEM_OP_NODE_PARAMS* params), (params))
KFUSE_EXEC_SETTER(GraphNodeSetEnabled, true, (unsigned enabled), (enabled))
KFUSE_EXEC_SETTER(GraphExecNodeSetParams, false, (CUgraphNodeParams * params), (params))
#undef KFUSE_UNPAREN
#undef KFUSE_EXEC_SETTER

CUresult Injector::CtxDestroy(int variant, CUcontext ctx){
    KFUSE_GLOBAL(kContextTeardown,
                 HookClient::CtxDestroy(variant, ctx))} CUresult Injector::DevicePrimaryCtxRelease(int variant,
                                                                                                   CUdevice dev){
    KFUSE_GLOBAL(kContextTeardown, HookClient::DevicePrimaryCtxRelease(variant, dev))} CUresult
    Injector::DevicePrimaryCtxReset(int variant, CUdevice dev) {
  KFUSE_GLOBAL(kContextTeardown, HookClient::DevicePrimaryCtxReset(variant, dev))
}

}  // namespace kfuse::inject
