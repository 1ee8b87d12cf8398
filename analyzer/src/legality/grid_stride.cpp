// Grid-stride kernels as one element per thread; see grid_stride.h.
#include "legality/grid_stride.h"

#include "graph/footprint.h"

namespace kfuse::analyzer::gridstride {
namespace {

bool writes(core::AccessMode m) {
  return m == core::AccessMode::kWrite || m == core::AccessMode::kReadWrite;
}

constexpr int64_t kIndexLimit = int64_t{1} << 31;

}  // namespace

ElementPart elementPart(const epilogue::Part& p) {
  ElementPart out;
  const KernelFacts& k = *p.facts;
  if (!k.element_view || !k.element_view->facts) return out;
  const KernelFacts& one = *k.element_view->facts;
  auto refuse = [&](std::string why) {
    out.why = k.name + " is a grid-stride loop, " + std::move(why);
    return out;
  };
  const locality::Shape& s = p.shape;
  if (s.grid.y != 1 || s.grid.z != 1 || s.block.y != 1 || s.block.z != 1 || s.block.x == 0 || s.grid.x == 0)
    return refuse("but its launch is not 1-D");
  const auto n = p.values.find("param" + std::to_string(k.element_view->bound_param));
  if (n == p.values.end())
    return refuse("but the value of its bound (argument " + std::to_string(k.element_view->bound_param) +
                  ") is not known");
  const int64_t threads = int64_t{s.grid.x} * s.block.x;
  if (n->second < 0 || n->second >= kIndexLimit - threads) {
    return refuse("but its bound " + std::to_string(n->second) + " plus its " + std::to_string(threads) +
                  " threads does not stay in [0, 2^31): its index arithmetic could wrap");
  }
  locality::Shape shape = s;
  shape.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, (n->second + s.block.x - 1) / s.block.x));

  // No two iterations may touch a common byte with one of them writing: in the element view, no two threads.
  for (size_t i = 0; i < p.uses.size(); ++i) {
    for (size_t j = i; j < p.uses.size(); ++j) {
      const BufferUse& ua = p.uses[i];
      const BufferUse& ub = p.uses[j];
      if (!ua.overlaps(ub) || (!writes(ua.mode) && !writes(ub.mode))) continue;
      const std::string buf = "allocation " + std::to_string(ua.allocation_id);
      if (ua.in_struct || ub.in_struct || ua.param_index < 0 || ub.param_index < 0 ||
          static_cast<size_t>(ua.param_index) >= one.params.size() ||
          static_cast<size_t>(ub.param_index) >= one.params.size()) {
        return refuse("and which of its iterations touch " + buf + " is not known");
      }
      const ParamFacts& pa = one.params[static_cast<size_t>(ua.param_index)];
      const ParamFacts& pb = one.params[static_cast<size_t>(ub.param_index)];
      if (!fullyFollowed(pa) || !fullyFollowed(pb))
        return refuse("and its iterations access " + buf + " at addresses the PTX analysis could not follow");
      for (const ParamMemoryAccess& ma : pa.accesses) {
        for (const ParamMemoryAccess& mb : pb.accesses) {
          if (!ma.is_write && !mb.is_write) continue;
          const std::string lines = " (lines " + std::to_string(ma.line) + " and " + std::to_string(mb.line) + ")";
          if (ma.atomic || mb.atomic) return refuse("and it updates " + buf + " with atomics" + lines);
          std::string why;
          const auto fa = ma.offset_form ? locality::bind(*ma.offset_form, shape, p.values, &why) : std::nullopt;
          const auto fb = mb.offset_form ? locality::bind(*mb.offset_form, shape, p.values, &why) : std::nullopt;
          if (!fa || !fb) {
            return refuse("and where its iterations access " + buf + lines + " cannot be evaluated" +
                          (why.empty() ? std::string() : ": " + why));
          }
          const locality::Access xa{*fa, static_cast<int64_t>(ua.offset), ma.bytes,
                                    locality::bindGuard(ma.guard_conditions, shape, p.values)};
          const locality::Access xb{*fb, static_cast<int64_t>(ub.offset), mb.bytes,
                                    locality::bindGuard(mb.guard_conditions, shape, p.values)};
          const locality::PairVerdict v = locality::checkPair(xa, xb, shape);
          if (v.verdict != locality::Verdict::kThreadLocal) {
            return refuse("and two of its iterations may touch a common byte of " + buf + lines +
                          ", one of them writing: run one per thread, they could run in another order (" + v.why + ")");
          }
        }
      }
    }
  }
  out.part = epilogue::Part{&one, shape, p.values, p.uses};
  return out;
}

}  // namespace kfuse::analyzer::gridstride
