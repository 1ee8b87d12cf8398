// Prologue fusion legality; see prologue.h for the rules.
#include "legality/prologue.h"

#include <algorithm>

#include "graph/footprint.h"

namespace kfuse::analyzer::prologue {
namespace {

bool writes(core::AccessMode m) {
  return m == core::AccessMode::kWrite || m == core::AccessMode::kReadWrite;
}

const ParamFacts* param(const epilogue::Part& k, int index) {
  if (index < 0 || static_cast<size_t>(index) >= k.facts->params.size()) return nullptr;
  return &k.facts->params[static_cast<size_t>(index)];
}

std::string line(const ParamMemoryAccess& a) {
  return "line " + std::to_string(a.line);
}

Result refuse(Legality l, std::string why) {
  Result r;
  r.legality = l;
  r.why = std::move(why);
  return r;
}

bool oneDimensional(const locality::Shape& s) {
  return s.grid.y == 1 && s.grid.z == 1 && s.block.y == 1 && s.block.z == 1;
}

std::string bufferText(const BufferUse& u) {
  return "allocation " + std::to_string(u.allocation_id) +
         (u.wholeAllocation() ? std::string() : " bytes [" + std::to_string(u.lo) + ", " + std::to_string(u.hi) + ")");
}

}  // namespace

Result check(const epilogue::Part& producer, const epilogue::Part& consumer, uint64_t* enumerated) {
  uint64_t unused = 0;
  uint64_t& visited = enumerated ? *enumerated : unused;  // threads enumerated, for the caller's budget
  visited = 0;
  const KernelFacts& pk = *producer.facts;
  const KernelFacts& ck = *consumer.facts;
  const std::string not_elementwise = ": only an element-wise producer can be recomputed at the consumer's loads";
  if (!oneDimensional(producer.shape)) {
    return refuse(Legality::kBlocked, pk.name + " runs on a multi-dimensional launch" + not_elementwise);
  }
  if (pk.barriers > 0 || pk.uses_shared) {
    return refuse(Legality::kBlocked,
                  pk.name + (pk.barriers > 0 ? " synchronizes its block" : " uses shared memory") + not_elementwise);
  }
  if (pk.shuffles > 0)
    return refuse(Legality::kBlocked, pk.name + " exchanges values between threads (shfl)" + not_elementwise);
  if (pk.atomics > 0) return refuse(Legality::kBlocked, pk.name + " uses atomics" + not_elementwise);
  if (pk.grid_sync || ck.grid_sync) {
    return refuse(Legality::kBlocked, (pk.grid_sync ? pk.name : ck.name) + " synchronizes the whole grid");
  }

  // The intermediate: what the producer writes and the consumer reads. The producer writes nothing else.
  const BufferUse* pu = nullptr;
  for (const BufferUse& u : producer.uses) {
    if (!writes(u.mode)) continue;
    if (pu) {
      return refuse(Legality::kBlocked, pk.name + " writes two buffers (arguments " + std::to_string(pu->param_index) +
                                            " and " + std::to_string(u.param_index) +
                                            "): recomputed at the "
                                            "consumer's loads, it can hand on only one");
    }
    pu = &u;
  }
  if (!pu) return refuse(Legality::kBlocked, pk.name + " writes no buffer");
  const std::string xs = bufferText(*pu);
  const BufferUse* cu = nullptr;
  for (const BufferUse& v : consumer.uses) {
    if (!v.overlaps(*pu)) continue;
    if (writes(v.mode)) {
      return refuse(Legality::kBlocked, ck.name + " writes " + xs + " (argument " + std::to_string(v.param_index) +
                                            "), which " + pk.name + " writes: a prologue fusion only replaces reads");
    }
    if (cu) {
      return refuse(Legality::kLikely, ck.name + " reads " + xs + " through two pointers (arguments " +
                                           std::to_string(cu->param_index) + " and " + std::to_string(v.param_index) +
                                           "): only one is remapped");
    }
    cu = &v;
  }
  if (!cu) return refuse(Legality::kBlocked, ck.name + " does not read what " + pk.name + " writes");
  for (const BufferUse& v : consumer.uses) {
    if (!writes(v.mode)) continue;
    for (const BufferUse& u : producer.uses) {
      if (&u == pu || !u.overlaps(v)) continue;
      return refuse(Legality::kBlocked, ck.name + " writes " + bufferText(v) + " (argument " +
                                            std::to_string(v.param_index) + "), which " + pk.name +
                                            " reads (argument " + std::to_string(u.param_index) + "): recomputing " +
                                            pk.name + " inside it would read values it has already changed");
    }
  }
  for (const BufferUse& u : producer.uses) {
    if (&u != pu && u.overlaps(*pu)) {
      return refuse(Legality::kBlocked, pk.name + " reads the bytes of " + xs + " it writes (argument " +
                                            std::to_string(u.param_index) + ")" + not_elementwise);
    }
  }

  // The producer's one store: element p of X in thread p.
  const epilogue::Store st =
      epilogue::producerStore(producer, param(producer, pu->param_index), xs, ")" + not_elementwise);
  if (!st.access) return refuse(st.legality, st.why);
  const ParamMemoryAccess* store = st.access;
  // A vector store writes `lanes` consecutive elements: thread p the elements p * lanes ... p * lanes + lanes - 1.
  const uint32_t lanes = store->vector;
  const uint32_t s = lanes ? store->bytes / lanes : 0;
  if ((s != 2 && s != 4 && s != 8) || (lanes != 1 && lanes != 2 && lanes != 4)) {
    return refuse(Legality::kLikely, pk.name + " stores " + std::to_string(store->bytes) + " bytes at a time to " + xs +
                                         ": only 2-, 4- and 8-byte elements, alone or as vectors of 2 or 4, are "
                                         "handed to the consumer's loads");
  }
  const uint32_t chunk = s * lanes;  // bytes per producer thread
  const locality::LinearForm* pform = &st.form;
  locality::LinearForm own;
  own.coef[locality::kTidX] = chunk;
  own.coef[locality::kCtaidX] = int64_t{chunk} * producer.shape.block.x;
  if (!pform->sameLinearPart(own)) {
    return refuse(Legality::kBlocked, pk.name + " stores to " + xs + " at byte offset " + pform->toString() + " (" +
                                          line(*store) + "), not at its own element" + (lanes > 1 ? "s" : "") + " (" +
                                          own.toString() + "): thread p must write element" +
                                          (lanes > 1 ? "s p * " + std::to_string(lanes) + " onwards" : " p") +
                                          not_elementwise);
  }
  const locality::Domain& pdomain = st.domain;
  const int64_t ref = static_cast<int64_t>(pu->offset) + pform->constant;  // element 0, from the allocation's start
  if (ref < 0 || ref % s != 0) {
    return refuse(Legality::kLikely, pk.name + "'s element 0 is at byte " + std::to_string(ref) + " of " + xs +
                                         ", not a multiple of the element size: loads would straddle elements");
  }

  // The consumer's loads of X: s bytes each, no writes, no atomics.
  const ParamFacts* cp = param(consumer, cu->param_index);
  if (!cp) return refuse(Legality::kLikely, ck.name + ": the pointer into " + xs + " is not a parameter the PTX has");
  // Every memory instruction of the consumer through that pointer, loop accesses included (block_accesses lists
  // every one, with the one pointer parameter it derives from).
  if (cp->ptx_writes > 0) {
    return refuse(Legality::kBlocked, ck.name + " writes through its pointer into " + xs +
                                          ": a prologue fusion only "
                                          "replaces reads");
  }
  for (const KernelFacts::BlockAccess& a : ck.block_accesses) {
    if (a.via_param != cu->param_index) continue;
    const std::string at = "line " + std::to_string(a.line);
    if (a.is_write || a.atomic) {
      return refuse(Legality::kBlocked, ck.name + (a.atomic ? " updates " : " writes ") + xs + " (" + at +
                                            "): a prologue fusion only replaces reads");
    }
    if (a.bytes != s * a.vector || (a.vector != 1 && a.vector != 2 && a.vector != 4)) {
      return refuse(Legality::kBlocked, ck.name + " loads " + std::to_string(a.bytes) + " bytes of " + xs +
                                            " at a time (" + at + "), where " + pk.name + " writes " +
                                            std::to_string(s) +
                                            "-byte elements: a load must be one element, or a vector of 2 or 4");
    }
  }
  for (const KernelFacts::BlockAccess& a : ck.block_accesses) {
    if (a.via_param >= 0) continue;
    return refuse(Legality::kLikely, ck.name + " accesses memory at line " + std::to_string(a.line) +
                                         " through an "
                                         "address not derived from one pointer parameter: it might load " +
                                         xs);
  }
  if (cu->wholeAllocation()) {
    return refuse(Legality::kBlocked, "which bytes of " + xs + " " + ck.name +
                                          " reads could not be bounded: it may "
                                          "read elements " +
                                          pk.name + " never writes");
  }

  // Which elements the producer writes, and that the consumer's footprint lies inside them.
  const uint64_t np = producer.shape.grid.x * uint64_t{producer.shape.block.x};
  if (np > kMaxThreads) {
    return refuse(Legality::kLikely, pk.name + " runs " + std::to_string(np) + " threads, more than the " +
                                         std::to_string(kMaxThreads) + " the element map is checked for");
  }
  const uint64_t elements = np * lanes;
  const int64_t lo = static_cast<int64_t>(cu->lo) - ref, hi = static_cast<int64_t>(cu->hi) - ref;
  if (lo < 0 || hi > static_cast<int64_t>(elements * s)) {
    return refuse(Legality::kBlocked, ck.name + " may read " + xs + " at bytes [" + std::to_string(cu->lo) + ", " +
                                          std::to_string(cu->hi) + "), beyond the " + std::to_string(elements) +
                                          " elements " + pk.name + "'s threads can write");
  }
  uint64_t count = 0;
  const uint32_t ntid = producer.shape.block.x;
  for (uint64_t p = 0; p < np; ++p) {
    ++visited;
    const locality::Thread t{static_cast<int64_t>(p % ntid), 0, 0, static_cast<int64_t>(p / ntid), 0, 0};
    const bool written = locality::contains(pdomain, t);
    count += written ? lanes : 0;
    const int64_t at = static_cast<int64_t>(p) * chunk;
    if (!written && at + static_cast<int64_t>(chunk) > lo && at < hi) {
      const int64_t first = std::max<int64_t>(at, lo / s * s) / s;
      return refuse(Legality::kBlocked, ck.name + " may read element " + std::to_string(first) + " of " + xs +
                                            " (its loads span bytes [" + std::to_string(cu->lo) + ", " +
                                            std::to_string(cu->hi) + ")), which " + pk.name + " never writes (" +
                                            store->guard + ")");
    }
  }

  Result r;
  r.legality = Legality::kProven;
  r.producer_param = pu->param_index;
  r.consumer_param = cu->param_index;
  r.consumer_offset = ref - static_cast<int64_t>(cu->offset);
  r.element_bytes = s;
  r.producer_lanes = lanes;
  r.elements = count;
  r.why = "prologue: " + pk.name + " writes " +
          (lanes == 1 ? "element p"
                      : "elements " + std::to_string(lanes) + "p to " + std::to_string(lanes) + "p + " +
                            std::to_string(lanes - 1)) +
          " of " + xs + " (" + std::to_string(s) + " bytes each) in thread p, " +
          "in one store outside any loop, reading nothing the consumer writes; every byte " + ck.name +
          " may load from it (bytes [" + std::to_string(cu->lo) + ", " + std::to_string(cu->hi) +
          ")) lies in one of "
          "the " +
          std::to_string(count) + " elements it writes: each load recomputes its element";
  return r;
}

}  // namespace kfuse::analyzer::prologue
