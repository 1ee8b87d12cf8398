// The injector's state behind Injector (injector.h), private to the injector: stream slots holding deferred launches,
// plans flattened for the launch path, the functions, modules and allocations it has seen, and its counters. Its
// members are defined by concern:
//   - plan_matching.cpp: the launch path, which plan kernel a function is, per-stream matching of launch sequences,
//     the allocations it tracks and the predicate checks (proven argument values included);
//   - deferral.cpp: stream slots holding launches back until a pattern is complete, issuing them (unchanged or
//     fused) and flushing them before work that must follow them;
//   - shadow_validation.cpp: `--validate`, the originals and the fused kernel run on the same inputs and compared;
//   - injector.cpp: construction, modules, loading the fused kernels, statistics and the hooks.
// Owned by its Injector and as long-lived. Thread-safety as in injector.h: every member may be called from any
// thread; a stream slot's deferred launches are guarded by its own lock (members that say "Caller holds s.mu" expect
// it held).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kfuse/hooks/driver_hooks.h"
#include "kfuse/hooks/mapping_table.h"
#include "kfuse/inject/injector.h"
#include "kfuse/inject/runtime_plan.h"

namespace kfuse::inject {

inline constexpr int kPerThread = hooks::kPerThread;
inline constexpr uint64_t kLegacyKey = 1;  // stream keys: real streams are pointers (even); per-thread ones odd (> 1)
inline constexpr uint64_t kTombstone = ~uint64_t{0};
inline constexpr size_t kFunctionSlots = 4096;  // power of two
inline constexpr int kUnknownIdentity = -1;

// Per-thread state, one of each for all of the injector's files (inline variables).
// The calling thread's id, once read (threadId()).
__attribute__((tls_model("initial-exec"))) inline thread_local int64_t t_tid = 0;
// Set while kfuse itself calls through the hooks (loading the fused module): no matching, no flushing.
__attribute__((tls_model("initial-exec"))) inline thread_local bool t_inside = false;
// Time this thread spent in the driver on kfuse's behalf (issuing launches): not kfuse's own cost.
__attribute__((tls_model("initial-exec"))) inline thread_local uint64_t t_driver_ns = 0;
// Whether the current launch is one of the sampled ones whose time is measured.
__attribute__((tls_model("initial-exec"))) inline thread_local bool t_timed = false;

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

inline int64_t threadId() {
  if (t_tid == 0) t_tid = static_cast<int64_t>(syscall(SYS_gettid));
  return t_tid;
}

inline uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

inline uint64_t streamKey(CUstream stream, int variant) {
  const auto h = reinterpret_cast<uint64_t>(stream);
  if (h == reinterpret_cast<uint64_t>(CU_STREAM_LEGACY) || (h == 0 && variant == 0)) return kLegacyKey;
  if (h == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD) || h == 0) {
    return (static_cast<uint64_t>(threadId()) << 1) | 1;
  }
  return h;
}

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
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
inline constexpr size_t kStripes = 16;
// Launches are timed one in kTimedEvery (clock reads would cost more than much of the work they time); the
// statistics scale the samples up.
inline constexpr uint64_t kTimedEvery = 64;

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
  std::atomic<uint64_t> timed_originals_ns{0}, timed_fused_ns{0};
  std::string not_timed;  // under mu
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
  std::atomic<uint64_t> allocations_version{1};  // changes with every tracked allocation and free
  // Virtual memory management (cuMemCreate, cuMemMap): the predicates refuse pointers into a mapped range whose bytes
  // another live range may also show (hooks::MappingTable says which).
  hooks::MappingTable mappings;
  std::vector<std::pair<uint64_t, int>> modules;  // module / library handle -> hash index (-1: no plan's)
  std::atomic<int> pending_streams{0};
  std::atomic<int> legacy_pending{0};
  std::atomic<int> captures_open{0};

  Stripe stripes[kStripes];
  std::atomic<uint64_t> fused_launches{0}, deferred{0}, flushed_launches{0};
  std::atomic<uint64_t> flushes[static_cast<int>(FlushReason::kCount)] = {};
  std::atomic<uint64_t> unknown_functions{0}, streams_over_capacity{0};

  Impl(Injector& s, std::vector<RuntimePlan> ps, InjectorOptions o);

  hooks::DriverTable& table() { return self.table(); }
  Stripe& stripe() { return stripes[static_cast<size_t>(threadId()) & (kStripes - 1)]; }
  uint64_t sum(std::atomic<uint64_t> Stripe::*field) const {
    uint64_t n = 0;
    for (const Stripe& st : stripes) n += (st.*field).load(std::memory_order_relaxed);
    return n;
  }

  // Where an argument of a plan's pattern lies in a stream slot's argument storage, and its size.
  uint32_t at(const RuntimePlan& p, rewriter::ArgRef r) const {
    return static_cast<uint32_t>(static_cast<size_t>(r.kernel) * arg_stride +
                                 p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].offset);
  }
  static uint32_t sizeOf(const RuntimePlan& p, rewriter::ArgRef r) {
    return p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].size;
  }
  uint8_t* argsOf(StreamSlot& s, int pos) { return s.args + static_cast<size_t>(pos) * arg_stride; }
  const uint8_t* argBytes(StreamSlot& s, const RuntimePlan& p, rewriter::ArgRef r) {
    return argsOf(s, r.kernel) + p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].offset;
  }
  uint32_t argSize(const RuntimePlan& p, rewriter::ArgRef r) {
    return p.kernels[static_cast<size_t>(r.kernel)].params[static_cast<size_t>(r.param)].size;
  }
  uint64_t pointerArg(StreamSlot& s, const RuntimePlan& p, rewriter::ArgRef r) {
    uint64_t v = 0;
    std::memcpy(&v, argBytes(s, p, r), std::min<uint32_t>(8, argSize(p, r)));
    return v;
  }
  // The layout of the kernel deferred at `pos` (the viable plans agree on the kernels deferred so far).
  const RuntimeKernel* layoutAt(const StreamSlot& s, int pos) const {
    const int plan = std::countr_zero(s.viable);
    return &plans[static_cast<size_t>(plan)]->plan.kernels[static_cast<size_t>(pos)];
  }

  // ---- plan matching (plan_matching.cpp) ----

  // A launch as the application made it.
  struct Incoming {
    PendingLaunch l;
    void** params;
    void** extra;
  };

  // The launch path: every cuLaunchKernel / cuLaunchKernelEx without attributes comes here.
  CUresult onLaunch(const Incoming& in);
  // Defers the launch if it begins or continues a plan's pattern on its stream (flushing what it does not
  // continue), fuses when a pattern completes, else passes it through.
  CUresult match(const Incoming& in, int id);
  CUresult passThrough(const Incoming& in, CUresult flushed);
  CUresult forward(const Incoming& in);
  // Whether `stream` is being captured into a graph (true when the driver cannot say).
  bool capturing(CUstream stream);
  // After a launch joined the deferred pattern: fuse if a plan is complete and holds, flush if nothing can
  // complete any more. Caller holds s.mu.
  CUresult tryComplete(StreamSlot& s);
  // Copies a launch's arguments into the slot's storage at `pos`. False if they cannot be read.
  bool capture(StreamSlot& s, int pos, const RuntimeKernel& k, void** params, void** extra);
  // Plans still enabled, as a set of bits.
  uint64_t enabledMask() const;

  // Which plan kernel `f` is, or -1. First sight asks the driver (module, name, parameter layout).
  int identify(CUfunction f);
  // identify() on a miss: describes `f` under describe_mu and remembers the answer in `functions`.
  int describe(CUfunction f, uint64_t key, size_t start);
  int describeUncached(CUfunction f);
  // Whether the driver's parameter layout of `f` is the plan's (true when the driver cannot say).
  bool layoutMatches(CUfunction f, const RuntimeKernel& k);

  // Flattens a plan's predicates for the launch path (PlanState::checks).
  void compile(PlanState& st) const;
  // Which predicate of plan `pi` fails for the deferred launches, or -1 if all hold. An occurrence identical to
  // the last one that passed (arguments, shapes, no allocation or free since) passes without being re-checked.
  // Allocates nothing. Caller holds s.mu.
  int failingPredicateMemo(StreamSlot& s, size_t pi, int* row);
  // Which predicate of `plan` fails for the deferred launches, or -1 if all hold. `reusable`: the answer depends
  // only on the arguments, the shapes and the tracked allocations. `row`: which proven argument tuple matched (0
  // without a proven_values predicate). Allocates nothing.
  int failingPredicate(StreamSlot& s, const PlanState& st, bool* reusable, int* row);

  // Device allocations made through the hooks.
  void noteAllocation(uint64_t base, uint64_t size);
  void forgetAllocation(uint64_t base);
  void noteHandle(CUmemGenericAllocationHandle handle);
  void noteMapping(uint64_t base, uint64_t size, CUmemGenericAllocationHandle handle, uint64_t offset);
  void forgetMappings(uint64_t base, uint64_t size);  // cuMemUnmap: every mapping inside the range
  void untrack(uint64_t base);                        // the tracked allocation at `base`; caller holds allocations_mu
  // Caller holds allocations_mu (shared).
  bool trackedAllocation(uint64_t ptr, uint64_t& base, uint64_t& size) const;
  // The allocation holding `ptr`: from the tracked ones when the caller holds allocations_mu (shared), else or if
  // it is not tracked from the driver (then *asked_driver is set). False if neither knows it.
  bool allocationOf(uint64_t ptr, uint64_t& base, uint64_t& size, bool tracked_locked = false,
                    bool* asked_driver = nullptr);
  // Bytes from `ptr` the kernels may touch: to the end of its allocation (an access beyond it is out of bounds in
  // the original program already), or what the plan recorded when the allocation is unknown.
  uint64_t extent(uint64_t ptr, uint64_t recorded);

  // ---- deferral (deferral.cpp) ----

  // The slot of a stream key, or nullptr; claimSlot takes a free one (nullptr when all are taken).
  StreamSlot* findSlot(uint64_t key);
  StreamSlot* claimSlot(uint64_t key);
  // Frees a destroyed stream's slot for other streams (the stream's deferred launches were flushed).
  void releaseSlot(uint64_t key);

  // Issues the launch deferred at `pos` unchanged. Caller holds s.mu.
  CUresult issueOriginal(StreamSlot& s, int pos);
  // Launches `f` the way `l` was launched (cuLaunchKernel or cuLaunchKernelEx, its stream and variant), through
  // the next layer; launch() counts the driver's time as not kfuse's own.
  CUresult launch(const PendingLaunch& l, CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                  void** ptrs);
  CUresult launchUntimed(const PendingLaunch& l, CUfunction f, const unsigned grid[3], const unsigned block[3],
                         unsigned shmem, void** ptrs);
  // Launches plan `pi`'s fused kernel for the deferred pattern in `s`. Caller holds s.mu.
  // `occurrence`: an occurrence the application made (counted as fused), not a timing run of --validate.
  CUresult launchFused(StreamSlot& s, size_t pi, CUfunction fn, bool occurrence = true);

  // Issues the slot's deferred launches unchanged and forgets them. Caller holds s.mu.
  CUresult flushLocked(StreamSlot& s, FlushReason why);
  // Issues the slot's deferred launches unchanged, keeping them. Caller holds s.mu.
  CUresult issueOriginals(StreamSlot& s, FlushReason why);
  // flushLocked() under the slot's lock (nothing for nullptr); on every slot but `except`'s.
  CUresult flushSlot(StreamSlot* s, FlushReason why);
  CUresult flushAllExcept(uint64_t except, FlushReason why);
  // Before work enqueued on `stream`: issue what must run before it. Returns the first error a flushed launch gave.
  CUresult beforeStreamWork(CUstream stream, int variant, FlushReason why);
  // Before work that orders against every stream: issue everything deferred.
  CUresult beforeGlobalWork(FlushReason why);
  // Whether a launch deferred on `s` may touch [lo, hi): one of its pointer arguments lies in an allocation that
  // overlaps it (or in memory the driver cannot place). Caller holds s.mu.
  bool deferredMayTouch(StreamSlot& s, uint64_t lo, uint64_t hi);
  // Before a synchronous host-to-device copy (legacy stream): deferred launches stay deferred unless they may touch
  // the allocation it writes.
  CUresult beforeHostToDeviceCopy(uint64_t dst, uint64_t bytes);

  // ---- shadow validation (shadow_validation.cpp) ----

  // Whether argument tuple `row` of plan `st` is met for the first time (and marks it met).
  static bool firstOfTuple(PlanState& st, int row);
  // What validateAndLaunch leaves behind. kOccurrence: the deferred launches of an occurrence ran (the buffers hold
  // the originals' results, as the application expects). kCheckOnly: a graph's fused chain was checked outside its
  // graph, which runs next: the buffers hold what they held before, and nothing of the check counts as fused.
  enum class ShadowMode { kOccurrence, kCheckOnly };
  // --validate: run the originals, keep their results, restore the buffers, run the fused kernel, compare. On a
  // mismatch the originals' results are put back and the plan is disabled. Synchronous; allocates (it is a
  // debugging mode, off the normal launch path).
  CUresult validateAndLaunch(StreamSlot& s, size_t pi, CUfunction fn, ShadowMode mode = ShadowMode::kOccurrence);
  // On a GPU, after a passed validation: times the originals and the fused kernel on the occurrence's stream (each
  // run preceded by `restore`, which puts the inputs back) and disables the plan when the fused kernel's median is
  // not below the originals' (rewriter::medianEventNs, options.time_runs runs each). The buffers are left as
  // `restore` then `finish` leave them.
  void timeAgainstOriginals(StreamSlot& s, size_t pi, CUfunction fn, const std::function<CUresult()>& restore,
                            const std::function<CUresult()>& finish);

  // ---- graphs (graph_rewrite.cpp, graph_execs.cpp) ----

  std::atomic<uint64_t> graphs_rewritten{0}, graph_chains_fused{0}, graph_chains_refused{0}, graph_execs_unfused{0};

  // A chain a fused node replaced, as --validate checks it: the plan, and the nodes' kernels, shapes and arguments
  // laid out as a stream slot holds deferred launches.
  struct GraphChain {
    size_t plan = 0;
    int count = 0;
    PendingLaunch launches[kMaxPatternKernels];
    std::vector<uint8_t> args;  // [count][arg_stride]
  };

  // A clone of an application's graph in which every node chain matching a plan whose predicates hold for the
  // nodes' parameters is one fused kernel node, and where the application's nodes went in it.
  struct RewrittenClone {
    CUgraph graph = nullptr;  // owned by whoever holds it (GraphDestroyDirect)
    // The application graph's nodes (not those inside child graphs) -> their node in the clone; the nodes of a
    // replaced chain are not in it.
    std::unordered_map<CUgraphNode, CUgraphNode> nodes;
    int chains = 0;
    std::vector<GraphChain> checks;  // under --validate: every replaced chain, child graphs' included
  };
  // Clones and rewrites `graph`. False, keeping nothing, when rewriting is off, nothing matched, or the graph cannot
  // be cloned, read or changed (a one-line message when logging).
  bool rewriteClone(CUgraph graph, RewrittenClone* out);
  // Replaces the matching chains of `g` (a clone kfuse owns) and of its child graphs by fused kernel nodes, in
  // place. Returns how many it replaced; -1 when the graph cannot be read or changed, kUntouchable when it must be
  // left as it is (then `g` is discarded). `removed`, when given: the nodes of `g` itself that were replaced.
  static constexpr int kUntouchable = -2;
  // `checks`, when given: each replaced chain is added to it (--validate).
  int rewriteInPlace(CUgraph g, int depth, std::unordered_set<CUgraphNode>* removed, std::vector<GraphChain>* checks);

  // An application's executable graph made while a rewritten clone of its graph was instantiated beside it: the
  // application's exec is the driver's own, made from the application's graph, and receives every call the
  // application makes on it; launches and uploads go to `rewritten` instead while `active`. A per-node setter the
  // driver accepted on the application's exec is repeated on `rewritten` with the clone's node; a setter on a node
  // that a fused node replaced (or that the clone does not know), or one that `rewritten` refuses, clears `active`
  // for good (until an exec update rewrites again): the application's exec, which has seen every setter, runs from
  // then on, exactly as without kfuse.
  struct RewrittenExec {
    std::mutex mu;  // serialises setters and updates of one exec (the driver requires the application to as well)
    CUgraphExec rewritten = nullptr;
    RewrittenClone clone;          // kept alive: `rewritten`'s setters name its nodes
    unsigned long long flags = 0;  // the instantiate flags, to instantiate again after an exec update
    bool enabled_changed = false;  // cuGraphNodeSetEnabled was used: an exec update no longer rewrites
    std::atomic<bool> active{false};
    std::atomic<int> validated{0};  // launches checked under --validate (see launchTarget)
  };
  std::shared_mutex execs_mu;
  std::unordered_map<CUgraphExec, std::shared_ptr<RewrittenExec>> execs;  // under execs_mu
  std::atomic<size_t> execs_alive{0};

  // Instantiates `graph` through `call` (which writes the exec it makes), and beside it, when rewriting applies, a
  // rewritten clone, registered under the application's exec. The CUresult and the exec the application sees are
  // those of its own graph's instantiation.
  CUresult instantiateGraph(CUgraphExec* exec, CUgraph graph, unsigned long long flags,
                            const std::function<CUresult(CUgraphExec*, CUgraph)>& call);
  // An exec update: `call` updates the application's exec; when it succeeds and the exec is registered, its
  // rewritten exec follows (updated from a rewritten clone of `graph`, or instantiated again), or stops being used.
  CUresult updateExec(CUgraphExec exec, CUgraph graph, const std::function<CUresult()>& call);
  // A per-node exec setter: `set(exec, node)` on the application's exec, then on the rewritten one (see
  // RewrittenExec). Returns what the driver returned for the application's exec.
  CUresult setExecNode(CUgraphExec exec, CUgraphNode node, bool enabled_change,
                       const std::function<CUresult(CUgraphExec, CUgraphNode)>& set);
  // What a launch or upload of the application's `exec` runs.
  CUgraphExec launchTarget(CUgraphExec exec);
  // What a launch of `exec` on `stream` runs. Under --validate the first launches of a rewritten exec first check
  // each fused chain against its nodes' kernels on `stream` (validateAndLaunch, ShadowMode::kCheckOnly); a chain
  // that fails, or a plan of one that is disabled, makes the application's exec run from then on.
  CUgraphExec checkedLaunchTarget(CUgraphExec exec, CUstream stream, int variant);
  // cuGraphExecDestroy: `call` destroys the application's exec; the rewritten one and its clone go with it.
  CUresult destroyExec(CUgraphExec exec, const std::function<CUresult()>& call);
  std::shared_ptr<RewrittenExec> findExec(CUgraphExec exec);
  // Stops launching `e.rewritten` (e.mu held). `why` says what the application did.
  void unfuse(RewrittenExec& e, const char* why);
  void release(RewrittenExec& e);                   // destroys the rewritten exec and clone
  CUresult(CUDAAPI* execDestroyer())(CUgraphExec);  // the driver's cuGraphExecDestroy, or nullptr

  // ---- modules, fused kernels, statistics (injector.cpp) ----

  // Module (or library) handles and the plan module hash each was loaded from.
  void noteModule(uint64_t handle, const void* image);
  int moduleHash(uint64_t handle);
  void forgetModule(uint64_t handle);

  // The fused kernel of plan `pi` in the current context, loading it on first use; nullptr when unavailable.
  CUfunction fusedFunction(size_t pi);
  // Caller holds st.mu.
  CUfunction load(PlanState& st);
  static std::string errorName(CUresult r);
  // Stops using a plan and says why on stderr (once); disableLocked() with st.mu held.
  void disableLocked(PlanState& st, const std::string& why);
  void disable(PlanState& st, const std::string& why);
  void warn(const char* fmt, const char* arg);

  InjectorStats snapshot() const;
};

}  // namespace kfuse::inject
