// Element-remapped (epilogue) fusion legality; see epilogue.h for the rules.
#include "legality/epilogue.h"

#include "graph/footprint.h"

#include <algorithm>

namespace kfuse::analyzer::epilogue {
namespace {

bool reads(core::AccessMode m) {
  return m == core::AccessMode::kRead || m == core::AccessMode::kReadWrite;
}
bool writes(core::AccessMode m) {
  return m == core::AccessMode::kWrite || m == core::AccessMode::kReadWrite;
}

const ParamFacts* param(const Part& k, int index) {
  if (index < 0 || static_cast<size_t>(index) >= k.facts->params.size()) return nullptr;
  return &k.facts->params[static_cast<size_t>(index)];
}

// Threads of a launch, saturating (a damaged trace may hold any six 32-bit sizes).
uint64_t threads(const locality::Shape& s) {
  __extension__ unsigned __int128 n = 1;
  for (uint32_t d : {s.grid.x, s.grid.y, s.grid.z, s.block.x, s.block.y, s.block.z}) {
    n *= d;
    if (n > UINT64_MAX) return UINT64_MAX;
  }
  return static_cast<uint64_t>(n);
}

std::string line(const ParamMemoryAccess& a) {
  return "line " + std::to_string(a.line);
}

std::string threadText(const locality::Thread& t) {
  return "block (" + std::to_string(t[locality::kCtaidX]) + "," + std::to_string(t[locality::kCtaidY]) + "," +
         std::to_string(t[locality::kCtaidZ]) + ") thread (" + std::to_string(t[locality::kTidX]) + "," +
         std::to_string(t[locality::kTidY]) + "," + std::to_string(t[locality::kTidZ]) + ")";
}

Result refuse(Legality l, std::string why) {
  Result r;
  r.legality = l;
  r.why = std::move(why);
  return r;
}

// Calls fn(thread) for every thread of the launch, stopping when it returns false.
template <typename Fn>
bool forEachThread(const locality::Shape& s, Fn&& fn) {
  locality::Thread t{};
  for (t[locality::kCtaidZ] = 0; t[locality::kCtaidZ] < s.grid.z; ++t[locality::kCtaidZ])
    for (t[locality::kCtaidY] = 0; t[locality::kCtaidY] < s.grid.y; ++t[locality::kCtaidY])
      for (t[locality::kCtaidX] = 0; t[locality::kCtaidX] < s.grid.x; ++t[locality::kCtaidX])
        for (t[locality::kTidZ] = 0; t[locality::kTidZ] < s.block.z; ++t[locality::kTidZ])
          for (t[locality::kTidY] = 0; t[locality::kTidY] < s.block.y; ++t[locality::kTidY])
            for (t[locality::kTidX] = 0; t[locality::kTidX] < s.block.x; ++t[locality::kTidX])
              if (!fn(t)) return false;
  return true;
}

}  // namespace

Result check(const Part& producer, const std::vector<Part>& consumers, uint64_t* enumerated) {
  uint64_t unused = 0;
  uint64_t& visited = enumerated ? *enumerated : unused;  // threads enumerated, for the caller's budget
  visited = 0;
  const KernelFacts& pk = *producer.facts;
  if (consumers.empty()) return refuse(Legality::kBlocked, "an epilogue fusion needs a consumer");
  if (pk.grid_sync) return refuse(Legality::kBlocked, pk.name + " synchronizes the whole grid");
  const locality::Shape& cshape = consumers.front().shape;
  for (const Part& c : consumers) {
    const KernelFacts& ck = *c.facts;
    if (c.shape.block.y != 1 || c.shape.block.z != 1 || c.shape.grid.y != 1 || c.shape.grid.z != 1) {
      return refuse(Legality::kBlocked, ck.name +
                                            " runs on a multi-dimensional launch: only 1-D element-wise "
                                            "consumers are remapped to the producer's elements");
    }
    if (!(c.shape.grid == cshape.grid) || !(c.shape.block == cshape.block)) {
      return refuse(Legality::kBlocked, "the consumers have different launch shapes");
    }
    if (ck.barriers > 0 || ck.uses_shared) {
      return refuse(Legality::kBlocked, ck.name +
                                            (ck.barriers > 0 ? " synchronizes its block" : " uses shared memory") +
                                            ": it is not element-wise, so it cannot run per element inside the "
                                            "producer (block-level fusion is not implemented)");
    }
    if (ck.shuffles > 0) return refuse(Legality::kBlocked, ck.name + " exchanges values between threads (shfl)");
    if (ck.atomics > 0) return refuse(Legality::kBlocked, ck.name + " uses atomics");
    if (ck.grid_sync) return refuse(Legality::kBlocked, ck.name + " synchronizes the whole grid");
  }

  // The intermediate: the bytes the producer writes through one argument and a consumer reads (tensors inside one
  // allocation are told apart by their byte ranges).
  const BufferUse* pu = nullptr;
  int intermediates = 0;
  for (const BufferUse& u : producer.uses) {
    if (!writes(u.mode)) continue;
    bool read = false;
    for (const Part& c : consumers) {
      for (const BufferUse& v : c.uses) read = read || (reads(v.mode) && u.overlaps(v));
    }
    if (!read) continue;
    ++intermediates;
    if (!pu) pu = &u;
  }
  if (!pu) return refuse(Legality::kBlocked, "no consumer reads what " + pk.name + " writes");
  if (intermediates > 1) {
    return refuse(Legality::kLikely, pk.name + " writes " + std::to_string(intermediates) +
                                         " buffers the consumers read: only one intermediate is remapped");
  }
  const std::string xs =
      "allocation " + std::to_string(pu->allocation_id) +
      (pu->wholeAllocation() ? std::string()
                             : " bytes [" + std::to_string(pu->lo) + ", " + std::to_string(pu->hi) + ")");
  bool consumers_write_x = false;
  for (const Part& c : consumers) {
    for (const BufferUse& v : c.uses) {
      if (!writes(v.mode)) continue;
      consumers_write_x = consumers_write_x || v.overlaps(*pu);
      for (const BufferUse& u : producer.uses) {
        if (&u == pu || !u.overlaps(v)) continue;
        return refuse(Legality::kBlocked,
                      pk.name + (writes(u.mode) ? " and a consumer both write" : " reads") + " allocation " +
                          std::to_string(u.allocation_id) + " (argument " + std::to_string(u.param_index) + ")" +
                          (writes(u.mode) ? std::string()
                                          : ", which a consumer writes: consumers running inside the producer would "
                                            "change what its other threads read"));
      }
    }
  }
  for (const BufferUse& u : producer.uses) {
    if (&u != pu && u.overlaps(*pu)) {
      return refuse(Legality::kLikely, pk.name + " passes two pointers into the bytes of " + xs + ": not remapped");
    }
  }

  const Store st = producerStore(producer, param(producer, pu->param_index), xs,
                                 consumers_write_x ? "), which the consumers write: its other threads could see "
                                                     "their results"
                                                   : "");
  if (!st.access) return refuse(st.legality, st.why);
  const uint32_t s = st.access->bytes;
  const locality::LinearForm* pform = &st.form;
  const locality::Domain& pdomain = st.domain;
  std::string why;

  // Every consumer access to X: its own element, s bytes, at one common base.
  Result r;
  bool have_ref = false;
  int64_t ref = 0;  // byte offset in X of consumer element 0
  for (size_t j = 0; j < consumers.size(); ++j) {
    const Part& c = consumers[j];
    const KernelFacts& ck = *c.facts;
    for (const BufferUse& u : c.uses) {
      if (!u.overlaps(*pu)) continue;
      const ParamFacts* cp = param(c, u.param_index);
      if (!cp || !fullyFollowed(*cp)) {
        return refuse(Legality::kBlocked, ck.name + " accesses " + xs +
                                              " at an address the PTX analysis could not "
                                              "follow (not affine in its thread index, or inside a loop): it "
                                              "may read elements other threads write");
      }
      for (const ParamMemoryAccess& a : cp->accesses) {
        if (!a.offset_form) {
          return refuse(Legality::kBlocked, ck.name + " accesses " + xs +
                                                " at an address that is not affine in its "
                                                "thread index (" +
                                                line(a) + "): it may read other elements");
        }
        if (a.loop_steps) {
          return refuse(Legality::kBlocked, ck.name + " accesses " + xs + " inside a loop (" + line(a) +
                                                "): a consumer thread steps through several elements, where "
                                                "consumer thread e must touch only element e");
        }
        const auto f = locality::bind(*a.offset_form, c.shape, c.values, &why);
        if (!f) return refuse(Legality::kLikely, ck.name + "'s address into " + xs + " cannot be evaluated: " + why);
        locality::LinearForm own;
        own.coef[locality::kTidX] = s;
        own.coef[locality::kCtaidX] = int64_t{s} * c.shape.block.x;
        if (!f->sameLinearPart(own) || a.bytes != s) {
          return refuse(Legality::kBlocked, ck.name + " accesses " + xs + " at byte offset " + f->toString() + ", " +
                                                std::to_string(a.bytes) + " bytes (" + line(a) +
                                                "), not at its own element (" + own.toString() + ", " +
                                                std::to_string(s) + " bytes as " + pk.name +
                                                " writes them): "
                                                "consumer thread e must touch only element e");
        }
        const int64_t base = static_cast<int64_t>(u.offset) + f->constant;
        if (!have_ref) {
          have_ref = true;
          ref = base;
          r.consumer = static_cast<int>(j);
          r.consumer_param = u.param_index;
          r.consumer_offset = f->constant;
        } else if (base != ref) {
          return refuse(Legality::kBlocked, ck.name + " accesses " + xs + " " + std::to_string(base - ref) +
                                                " bytes away from the element the first consumer reads (" + line(a) +
                                                "): consumer thread e must touch only element e");
        }
      }
    }
  }
  if (!have_ref) return refuse(Legality::kBlocked, "no consumer access to " + xs + " was found");
  // Enumerate the producer's threads: which element each writes, and that no element is written twice.
  const uint64_t np = threads(producer.shape), nc = threads(cshape);
  if (np > kMaxThreads || nc > kMaxThreads) {
    return refuse(Legality::kLikely, "the launches have " + std::to_string(std::max(np, nc)) +
                                         " threads, more than "
                                         "the " +
                                         std::to_string(kMaxThreads) + " the element map is checked for");
  }
  std::vector<char> written(nc, 0);
  std::string failure;
  uint64_t count = 0;
  const int64_t pbase = static_cast<int64_t>(pu->offset);
  forEachThread(producer.shape, [&](const locality::Thread& t) {
    ++visited;
    if (!locality::contains(pdomain, t)) return true;
    const int64_t rel = pbase + locality::evaluate(*pform, t) - ref;
    if (rel % s != 0) {
      failure = pk.name + " " + threadText(t) + " writes " + xs +
                " at a byte offset that is not a whole element "
                "of the consumers' (" +
                std::to_string(s) + " bytes)";
      return false;
    }
    if (rel < 0 || static_cast<uint64_t>(rel / s) >= nc) return true;  // no consumer thread owns it
    const uint64_t e = static_cast<uint64_t>(rel / s);
    if (written[e]) {
      failure = pk.name + " writes element " + std::to_string(e) + " of " + xs + " from two threads (one is " +
                threadText(t) + "): the consumers cannot run after a single writer";
      return false;
    }
    written[e] = 1;
    ++count;
    return true;
  });
  if (!failure.empty()) return refuse(Legality::kBlocked, failure);

  // Every consumer thread with an effect must own an element the producer writes.
  for (const Part& c : consumers) {
    const KernelFacts& ck = *c.facts;
    for (const ParamFacts& p : ck.params) {
      if (p.ptx_writes == 0) continue;
      if (!fullyFollowed(p)) {
        return refuse(Legality::kLikely, ck.name + " writes through argument " + std::to_string(p.index) +
                                             " at addresses the PTX analysis could not follow: which of its threads "
                                             "write is not known");
      }
      for (const ParamMemoryAccess& a : p.accesses) {
        if (!a.is_write) continue;
        const locality::Domain d = locality::bindGuard(a.guard_conditions, c.shape, c.values);
        const uint32_t ntid = c.shape.block.x;
        for (uint64_t e = 0; e < nc; ++e) {
          ++visited;
          if (written[e]) continue;
          const locality::Thread t{static_cast<int64_t>(e % ntid), 0, 0, static_cast<int64_t>(e / ntid), 0, 0};
          if (!locality::contains(d, t)) continue;
          return refuse(Legality::kBlocked, ck.name + " thread " + std::to_string(e) + " writes (" + line(a) +
                                                ") but " + pk.name + " never writes element " + std::to_string(e) +
                                                " of " + xs +
                                                ": that consumer thread would not run in the fused kernel");
        }
      }
    }
  }

  r.legality = Legality::kProven;
  r.producer_param = pu->param_index;
  r.element_bytes = s;
  r.elements = count;
  std::string names;
  for (size_t j = 0; j < consumers.size(); ++j) {
    names += (j == 0 ? "" : j + 1 == consumers.size() ? " and " : ", ") + consumers[j].facts->name;
  }
  r.why = "epilogue: " + pk.name + " writes each of " + std::to_string(count) + " elements of " + xs + " (" +
          std::to_string(s) + " bytes) exactly once, in one store outside any loop, and " + names +
          " touch only element e of it in thread e, and every consumer thread that writes owns an element it "
          "writes: the consumers run per element right after that store";
  return r;
}

Store producerStore(const Part& producer, const ParamFacts* pp, const std::string& xs,
                    const std::string& read_refusal) {
  const KernelFacts& pk = *producer.facts;
  Store out;
  auto refused = [&](Legality l, std::string why) {
    out.access = nullptr;
    out.legality = l;
    out.why = std::move(why);
    return out;
  };
  if (!pp) return refused(Legality::kLikely, pk.name + ": the pointer into " + xs + " is not a parameter the PTX has");
  if (!fullyFollowed(*pp)) {
    return refused(Legality::kBlocked, pk.name + " accesses " + xs +
                                           " at an address the PTX analysis could not "
                                           "follow: which element each thread writes is not known");
  }
  const ParamMemoryAccess* store = nullptr;
  for (const ParamMemoryAccess& a : pp->accesses) {
    if (a.is_read && !read_refusal.empty()) {
      return refused(Legality::kBlocked, pk.name + " reads " + xs + " (" + line(a) + read_refusal);
    }
    if (!a.is_write) continue;
    if (store) {
      return refused(Legality::kBlocked, pk.name + " stores to " + xs + " more than once (" + line(*store) + ", " +
                                             line(a) + "): each element must have one last store to hand on");
    }
    store = &a;
  }
  if (!store) return refused(Legality::kBlocked, pk.name + " does not store to " + xs);
  if (store->atomic) return refused(Legality::kBlocked, pk.name + " updates " + xs + " with atomics");
  if (store->in_loop) {
    return refused(Legality::kBlocked, pk.name + " stores to " + xs + " inside a loop (" + line(*store) +
                                           "): a thread writes several elements, one store cannot hand each on");
  }
  if (!store->offset_form) {
    return refused(Legality::kBlocked, pk.name + " stores to " + xs +
                                           " at an address that is not affine in its "
                                           "thread index (" +
                                           line(*store) +
                                           "): which element each thread "
                                           "writes is not known");
  }
  if (store->bytes == 0) return refused(Legality::kLikely, "the width of " + pk.name + "'s store is not known");
  if (!store->guard_exact) {
    return refused(Legality::kLikely, "the conditions under which " + pk.name + " stores to " + xs + " (" +
                                          line(*store) +
                                          ") are not fully understood: which elements it writes is "
                                          "not known exactly");
  }
  std::string why;
  const auto form = locality::bind(*store->offset_form, producer.shape, producer.values, &why);
  if (!form) return refused(Legality::kLikely, pk.name + "'s store address cannot be evaluated: " + why);
  out.domain = locality::bindGuard(store->guard_conditions, producer.shape, producer.values);
  if (!out.domain.exact) {
    return refused(Legality::kLikely, "the guard of " + pk.name + "'s store (" + store->guard +
                                          ") cannot be bound for these arguments: which elements it writes is not "
                                          "known exactly");
  }
  out.form = *form;
  out.access = store;
  out.legality = Legality::kProven;
  return out;
}

}  // namespace kfuse::analyzer::epilogue
