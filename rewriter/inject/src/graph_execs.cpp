// Injector::Impl, executable graphs: the application's exec is always the driver's own, made from the application's
// graph, so every call the application makes on it (setters, getters, updates, device-side launches) behaves as
// without kfuse. Beside it, a rewritten clone is instantiated and launched in its place for as long as the two
// compute the same: every per-node setter the driver accepts on the application's exec is repeated on the rewritten
// one with the clone's node. A setter on a node a fused node replaced has no counterpart there; from then on the
// application's exec, which has seen every setter, is what runs. No setter is ever replayed, and the CUresult the
// application sees is always the driver's answer for its own exec.
#include <cstdio>
#include <mutex>
#include <shared_mutex>

#include "injector_impl.h"

namespace kfuse::inject {

std::shared_ptr<Injector::Impl::RewrittenExec> Injector::Impl::findExec(CUgraphExec exec) {
  if (execs_alive.load(std::memory_order_acquire) == 0) return nullptr;
  std::shared_lock lock(execs_mu);
  const auto it = execs.find(exec);
  return it == execs.end() ? nullptr : it->second;
}

CUresult(CUDAAPI* Injector::Impl::execDestroyer())(CUgraphExec) {
  // The direct one: an application resolves cuGraphExecDestroy only when it first destroys an exec.
  auto destroy = table().GraphExecDestroyDirect.load();
  return destroy ? destroy : table().GraphExecDestroy[0].load();
}

void Injector::Impl::release(RewrittenExec& e) {
  auto destroy_exec = execDestroyer();
  auto destroy_graph = table().GraphDestroyDirect.load();
  Inside inside;
  if (e.rewritten && destroy_exec) (void)destroy_exec(e.rewritten);
  if (e.clone.graph && destroy_graph) (void)destroy_graph(e.clone.graph);
  e.rewritten = nullptr;
  e.clone = RewrittenClone{};
  e.active.store(false, std::memory_order_release);
}

void Injector::Impl::unfuse(RewrittenExec& e, const char* why) {
  if (!e.active.exchange(false, std::memory_order_acq_rel)) return;
  graph_execs_unfused.fetch_add(1, std::memory_order_relaxed);
  if (options.log) std::fprintf(stderr, "kfuse run: %s: the graph runs unfused from now on\n", why);
}

CUresult Injector::Impl::instantiateGraph(CUgraphExec* exec, CUgraph graph, unsigned long long flags,
                                          const std::function<CUresult(CUgraphExec*, CUgraph)>& call) {
  const auto direct = [&] {
    Inside inside;
    return call(exec, graph);
  };
  // A graph launched from the device is launched by its handle, which kfuse cannot redirect.
  if (!exec || (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) || !execDestroyer()) return direct();
  RewrittenClone clone;
  if (!rewriteClone(graph, &clone)) return direct();
  // The rewritten one first: a trace recorded under kfuse run numbers it before the application's.
  CUgraphExec rewritten = nullptr;
  CUresult r;
  {
    Inside inside;
    r = call(&rewritten, clone.graph);
  }
  auto e = std::make_shared<RewrittenExec>();
  e->clone = std::move(clone);
  e->rewritten = r == CUDA_SUCCESS ? rewritten : nullptr;
  if (r != CUDA_SUCCESS || !rewritten) {
    if (options.log) {
      std::fprintf(stderr, "kfuse run: the driver refused the rewritten graph (%s); the original is used\n",
                   errorName(r).c_str());
    }
    release(*e);
    return direct();
  }
  r = direct();
  if (r != CUDA_SUCCESS || !*exec) {
    release(*e);
    return r;
  }
  e->flags = flags;
  e->active.store(true, std::memory_order_release);
  graphs_rewritten.fetch_add(1, std::memory_order_relaxed);
  graph_chains_fused.fetch_add(static_cast<uint64_t>(e->clone.chains), std::memory_order_relaxed);
  std::shared_ptr<RewrittenExec> stale;
  {
    std::unique_lock lock(execs_mu);
    auto& slot = execs[*exec];
    stale = std::move(slot);  // a handle the driver reuses after a destroy kfuse did not see
    slot = std::move(e);
    execs_alive.store(execs.size(), std::memory_order_release);
  }
  if (stale) {
    std::lock_guard lock(stale->mu);
    release(*stale);
  }
  return r;
}

CUresult Injector::Impl::updateExec(CUgraphExec exec, CUgraph graph, const std::function<CUresult()>& call) {
  CUresult r;
  {
    Inside inside;
    r = call();
  }
  const std::shared_ptr<RewrittenExec> e = r == CUDA_SUCCESS && !t_inside ? findExec(exec) : nullptr;
  if (!e) return r;
  std::lock_guard lock(e->mu);
  RewrittenClone clone;
  if (e->enabled_changed || !rewriteClone(graph, &clone)) {
    // Nothing to fuse in the new graph, or nodes disabled on the application's exec (an update keeps that state,
    // which a fresh instantiation would not): the application's exec runs.
    unfuse(*e, "an exec update of a rewritten graph");
    release(*e);
    return r;
  }
  auto update = table().GraphExecUpdate[0].load();
  auto instantiate = table().GraphInstantiateWithFlags[0].load();
  Inside inside;
  CUresult mine = CUDA_ERROR_NOT_SUPPORTED;
  if (e->rewritten && update) {
    CUgraphExecUpdateResultInfo info{};
    mine = update(e->rewritten, clone.graph, &info);
  }
  if (mine != CUDA_SUCCESS) {
    // Another rewrite than the exec's (one chain fused in one, not in the other): instantiated again.
    CUgraphExec fresh = nullptr;
    // Uploading at instantiate needs cuGraphInstantiateWithParams' stream: the launch uploads it instead.
    const unsigned long long flags = e->flags & ~static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    if (instantiate && instantiate(&fresh, clone.graph, flags) == CUDA_SUCCESS && fresh) {
      RewrittenExec old;
      old.rewritten = e->rewritten;
      old.clone = std::move(e->clone);
      release(old);
      e->rewritten = fresh;
      mine = CUDA_SUCCESS;
    }
  } else if (auto destroy = table().GraphDestroyDirect.load(); destroy && e->clone.graph) {
    (void)destroy(e->clone.graph);
  }
  if (mine != CUDA_SUCCESS) {
    unfuse(*e, "the driver refused to update the rewritten graph");
    if (auto destroy = table().GraphDestroyDirect.load()) (void)destroy(clone.graph);
    return r;
  }
  e->clone = std::move(clone);
  graphs_rewritten.fetch_add(1, std::memory_order_relaxed);
  graph_chains_fused.fetch_add(static_cast<uint64_t>(e->clone.chains), std::memory_order_relaxed);
  e->active.store(true, std::memory_order_release);
  return r;
}

CUresult Injector::Impl::setExecNode(CUgraphExec exec, CUgraphNode node, bool enabled_change,
                                     const std::function<CUresult(CUgraphExec, CUgraphNode)>& set) {
  CUresult r;
  {
    Inside inside;
    r = set(exec, node);
  }
  const std::shared_ptr<RewrittenExec> e = r == CUDA_SUCCESS && !t_inside ? findExec(exec) : nullptr;
  if (!e) return r;
  std::lock_guard lock(e->mu);
  e->enabled_changed = e->enabled_changed || enabled_change;
  if (!e->active.load(std::memory_order_acquire)) return r;
  const auto it = e->clone.nodes.find(node);
  if (it == e->clone.nodes.end()) {
    unfuse(*e, "a node that a fused node replaced was changed in an executable graph");
    return r;
  }
  Inside inside;
  if (const CUresult mine = set(e->rewritten, it->second); mine != CUDA_SUCCESS) {
    if (options.log) {
      std::fprintf(stderr, "kfuse run: the rewritten graph refused a node update (%s)\n", errorName(mine).c_str());
    }
    unfuse(*e, "a node update the rewritten graph refused");
  }
  return r;
}

CUgraphExec Injector::Impl::launchTarget(CUgraphExec exec) {
  if (execs_alive.load(std::memory_order_acquire) == 0) return exec;
  std::shared_lock lock(execs_mu);
  const auto it = execs.find(exec);
  if (it == execs.end() || !it->second->active.load(std::memory_order_acquire)) return exec;
  return it->second->rewritten;
}

CUgraphExec Injector::Impl::checkedLaunchTarget(CUgraphExec exec, CUstream stream, int variant) {
  if (options.validate <= 0 || t_inside) return launchTarget(exec);
  const std::shared_ptr<RewrittenExec> e = findExec(exec);
  if (!e || !e->active.load(std::memory_order_acquire) ||
      e->validated.load(std::memory_order_acquire) >= options.validate) {
    return launchTarget(exec);
  }
  // Under the exec's lock, counted once done: a launch of the same exec from another thread waits for the checks
  // (they change and put back the buffers the graph uses) instead of running beside them.
  std::lock_guard lock(e->mu);
  if (e->active.load(std::memory_order_acquire) && e->validated.load() < options.validate) {
    for (GraphChain& c : e->clone.checks) {
      const uint64_t bit = uint64_t{1} << c.plan;
      CUfunction fn = (enabledMask() & bit) ? fusedFunction(c.plan) : nullptr;
      if (fn) {
        StreamSlot s;
        s.count = c.count;
        s.viable = bit;
        s.args = c.args.data();
        for (int k = 0; k < c.count; ++k) {
          s.launches[k] = c.launches[k];
          s.launches[k].stream = stream;
          s.launches[k].variant = variant;
        }
        (void)validateAndLaunch(s, c.plan, fn, ShadowMode::kCheckOnly);
      }
      if (!(enabledMask() & bit)) {
        unfuse(*e, "the plan of a fused node was disabled under --validate");
        break;
      }
    }
    e->validated.fetch_add(1, std::memory_order_release);
  }
  return e->active.load(std::memory_order_acquire) ? e->rewritten : exec;
}

CUresult Injector::Impl::destroyExec(CUgraphExec exec, const std::function<CUresult()>& call) {
  std::shared_ptr<RewrittenExec> e;
  if (execs_alive.load(std::memory_order_acquire) != 0 && !t_inside) {
    std::unique_lock lock(execs_mu);
    if (const auto it = execs.find(exec); it != execs.end()) {
      e = std::move(it->second);
      execs.erase(it);
      execs_alive.store(execs.size(), std::memory_order_release);
    }
  }
  CUresult r;
  {
    Inside inside;
    r = call();
  }
  if (e) {
    std::lock_guard lock(e->mu);
    release(*e);
  }
  return r;
}

}  // namespace kfuse::inject
