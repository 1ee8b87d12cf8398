// libkfuse_inject.so: the injector as it runs inside an application (`kfuse run --plan`, or LD_PRELOAD by hand).
// Configuration comes from the environment (docs/injector.md):
//   KFUSE_PLANS       plan directories, separated by ':' (unset or empty: the library does nothing)
//   KFUSE_DISABLE     "1": do nothing at all (kill switch)
//   KFUSE_VALIDATE    N: check the first N occurrences of each plan against the original launches
//   KFUSE_RUN_STATS   write the statistics there as JSON at exit (schemas/run_stats.schema.json)
//   KFUSE_RUN_QUIET   "1": no summary on stderr at exit
//   KFUSE_INJECT_LOG  "1": one stderr line per fused occurrence and per flush
//   KFUSE_REWRITE_GRAPHS "0": leave CUDA graphs as they are (InjectorOptions::rewrite_graphs; on otherwise)
// Nothing here throws into the application: plan errors are printed and the plan is left out.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "kfuse/core/files.h"
#include "kfuse/hooks/driver_hooks.h"
#include "kfuse/inject/injector.h"
#include "kfuse/inject/runtime_plan.h"

using kfuse::hooks::DriverTable;
using kfuse::hooks::Interposer;
using kfuse::inject::Injector;

namespace kfuse_preload {
bool wanted();
}  // namespace kfuse_preload

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::once_flag g_once;
std::atomic<Injector*> g_injector{nullptr};
std::atomic<bool> g_forked_child{false};
std::atomic<bool> g_exited{false};

void resolveQueries(void* handle) {
  DriverTable& t = Interposer::driver();
  if (handle && !t.FuncGetName.load()) {
    t.resolveQueries([](const char* sym, void* h) { return kfuse::hooks::realDlsym(h, sym); }, handle);
  }
}

void writeStats(const Injector& injector) {
  const kfuse::inject::InjectorStats s = injector.stats();
  if (!env("KFUSE_RUN_QUIET")) std::fputs(Injector::statsSummary(s).c_str(), stderr);
  const char* path = env("KFUSE_RUN_STATS");
  if (!path) return;
  if (const kfuse::Status w = kfuse::core::writeFileAtomically(path, Injector::statsJson(s)); !w.ok()) {
    std::fprintf(stderr, "kfuse run: cannot write the statistics: %s\n", w.message().c_str());
  }
}

void atExit() {
  Injector* injector = g_injector.load();
  if (!injector || g_forked_child.load() || g_exited.exchange(true)) return;
  injector->flushAll(kfuse::inject::FlushReason::kExit);
  writeStats(*injector);
}

void atForkChild() {
  // The deferred launches belong to the parent; the child runs without kfuse.
  g_forked_child.store(true);
  Interposer::install(nullptr);
}

void activate() {
  std::call_once(g_once, [] {
    std::vector<kfuse::inject::RuntimePlan> plans;
    std::string list = env("KFUSE_PLANS") ? env("KFUSE_PLANS") : "";
    size_t start = 0;
    while (start <= list.size()) {
      const size_t end = std::min(list.find(':', start), list.size());
      const std::string dir = list.substr(start, end - start);
      start = end + 1;
      if (dir.empty()) continue;
      auto plan = kfuse::inject::loadRuntimePlan(dir);
      if (!plan.ok()) {
        std::fprintf(stderr, "kfuse run: plan %s left out: %s\n", dir.c_str(), plan.status().message().c_str());
        continue;
      }
      plans.push_back(std::move(*plan));
    }
    if (plans.empty()) {
      std::fprintf(stderr, "kfuse run: no usable plan; the application runs without kfuse\n");
      return;
    }
    kfuse::inject::InjectorOptions options;
    if (const char* v = env("KFUSE_VALIDATE")) options.validate = std::max(0, std::atoi(v));
    options.log = env("KFUSE_INJECT_LOG") && std::strcmp(env("KFUSE_INJECT_LOG"), "1") == 0;
    options.rewrite_graphs = !env("KFUSE_REWRITE_GRAPHS") || std::strcmp(env("KFUSE_REWRITE_GRAPHS"), "0") != 0;
    auto* injector = new (std::nothrow) Injector(Interposer::driver(), std::move(plans), options);  // never freed
    if (!injector) return;
    g_injector.store(injector);
    Interposer::install(injector);
    pthread_atfork(nullptr, nullptr, &atForkChild);
    std::atexit(&atExit);
  });
}

// Where the wrappers find the driver's function for a direct export: the next definition after this library in
// the global scope (a recording collector preloaded after us, or a driver the program linked against), so that
// kfuse libraries chain; else the driver's own (a driver the program dlopen'ed privately, as cudart does, is not
// in the global scope).
void* fallbackLookup(const char* symbol) {
  void* driver = kfuse::hooks::driverHandle(/*load=*/true);
  if (kfuse_preload::wanted()) {
    resolveQueries(driver);
    activate();
  }
  if (void* next = kfuse::hooks::realDlsym(RTLD_NEXT, symbol)) return next;
  return driver ? kfuse::hooks::realDlsym(driver, symbol) : nullptr;
}

}  // namespace

namespace kfuse_preload {

bool wanted() {
  static const bool on = [] {
    const char* disable = env("KFUSE_DISABLE");
    return env("KFUSE_PLANS") && !(disable && std::strcmp(disable, "0") != 0);
  }();
  return on;
}

void driverReached(void* handle) {
  resolveQueries(handle);
  activate();
}

}  // namespace kfuse_preload

#include "kfuse/hooks/preload_exports.h"

namespace {

__attribute__((constructor)) void kfuseInjectLoad() {
  Interposer::setOwnObject(reinterpret_cast<const void*>(&kfuseInjectLoad));
  Interposer::setFallbackLookup(&fallbackLookup);
}

}  // namespace
