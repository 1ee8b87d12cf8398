// Grid-stride kernels as one element per thread; see grid_stride.h.
#include "legality/grid_stride.h"

#include "graph/footprint.h"
#include "kfuse/ptx/loops.h"

namespace kfuse::analyzer::gridstride {
namespace {

bool writes(core::AccessMode m) {
  return m == core::AccessMode::kWrite || m == core::AccessMode::kReadWrite;
}

constexpr int64_t kIndexLimit = int64_t{1} << 31;

}  // namespace

std::optional<int64_t> boundValue(const KernelFacts::ElementView& v, const std::map<std::string, int64_t>& values) {
  if (v.bound_params.empty()) return std::nullopt;
  int64_t n = 1;
  for (int p : v.bound_params) {
    const auto it = values.find("param" + std::to_string(p));
    if (it == values.end() || it->second < 0 || it->second >= kIndexLimit) return std::nullopt;
    n *= it->second;  // each factor below 2^31, the running product too: no overflow
    if (n >= kIndexLimit) return std::nullopt;
  }
  return n;
}

std::string boundArguments(const KernelFacts::ElementView& v) {
  std::string out = v.bound_params.size() == 1 ? "argument " : "arguments ";
  for (size_t i = 0; i < v.bound_params.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == v.bound_params.size() ? " and " : ", ") + std::to_string(v.bound_params[i]);
  }
  return out;
}

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
  const auto n = boundValue(*k.element_view, p.values);
  if (!n) {
    return refuse("but the value of its bound (" + boundArguments(*k.element_view) +
                  ") is not known or not below 2^31");
  }
  // The index arithmetic is exact while every index the loop forms (i plus a few elements) stays below 2^31.
  const int64_t threads = int64_t{s.grid.x} * s.block.x;
  if (*n + threads + 4 * ptx::kGridStrideIndexMargin > kIndexLimit) {
    return refuse("but its bound " + std::to_string(*n) + " plus its " + std::to_string(threads) +
                  " threads comes within 2^22 of 2^31: its index arithmetic could wrap");
  }
  for (int sp : k.element_view->small_params) {
    const auto v = p.values.find("param" + std::to_string(sp));
    if (v == p.values.end() || v->second < -ptx::kGridStrideIndexMargin || v->second > ptx::kGridStrideIndexMargin) {
      return refuse("but argument " + std::to_string(sp) + ", an offset of its index, is " +
                    (v == p.values.end() ? std::string("not known") : std::to_string(v->second)) +
                    ": its unrolled copies are shown to be one body only for offsets within 2^20");
    }
  }
  locality::Shape shape = s;
  shape.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, (*n + s.block.x - 1) / s.block.x));

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
  // The view's bytes: its footprints are exact where the loop's are not (intervals follow an unrolled loop up to
  // three steps past n). Both bound the same accesses, so each use keeps the tighter.
  std::vector<BufferUse> uses = p.uses;
  core::Launch view_launch;
  view_launch.grid = shape.grid;
  view_launch.block = shape.block;
  for (BufferUse& u : uses) {
    if (u.in_struct || u.param_index < 0 || static_cast<size_t>(u.param_index) >= one.params.size()) continue;
    const ByteRange r = footprint(&one, view_launch, u.param_index, p.values).at(u.offset);
    u.lo = std::max(u.lo, r.lo);
    u.hi = std::max(u.lo, std::min(u.hi, r.hi));
  }
  out.part = epilogue::Part{&one, shape, p.values, std::move(uses)};
  return out;
}

}  // namespace kfuse::analyzer::gridstride
