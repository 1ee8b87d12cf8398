#include "kfuse/inject/runtime_plan.h"

#include <fstream>
#include <sstream>

#include "kfuse/core/trace.h"

namespace kfuse::inject {
namespace {

Status checkRef(const rewriter::ArgRef& r, const std::vector<RuntimeKernel>& kernels, const std::string& what) {
  if (r.kernel < 0 || static_cast<size_t>(r.kernel) >= kernels.size() || r.param < 0 ||
      static_cast<size_t>(r.param) >= kernels[static_cast<size_t>(r.kernel)].params.size()) {
    return badFormat(what + " refers to argument " + std::to_string(r.param) + " of kernel " +
                     std::to_string(r.kernel) + ", which the pattern does not have");
  }
  return Status::okStatus();
}

}  // namespace

Expected<RuntimePlan> loadRuntimePlan(const std::string& dir) {
  KFUSE_ASSIGN_OR_RETURN(rewriter::Plan plan, rewriter::readPlan(dir));
  using rewriter::ValidationVerdict;
  const bool validated =
      plan.validation.emulator == ValidationVerdict::kPassed || plan.validation.gpu == ValidationVerdict::kPassed;
  if (!validated) {
    return invalidArgument(dir + ": the plan was not validated (emulator: " + core::enumName(plan.validation.emulator) +
                           ", gpu: " + core::enumName(plan.validation.gpu) + "); run `kfuse validate " + dir +
                           "` first");
  }
  // A GPU's verdict outranks the emulator's: a fused kernel that differed there, or was measured no faster than the
  // launches it replaces, is not injected.
  if (plan.validation.gpu == ValidationVerdict::kFailed) {
    return invalidArgument(dir + ": the plan failed validation on the GPU" +
                           (plan.validation.mismatch.empty() ? std::string() : " (" + plan.validation.mismatch + ")") +
                           "; it is left out");
  }
  if (!plan.validation.ptxas_ok) return invalidArgument(dir + ": the fused kernel did not compile with ptxas");
  if (plan.kernels.size() < 2 || plan.kernels.size() > static_cast<size_t>(kMaxPatternKernels)) {
    return unsupported(dir + ": the pattern has " + std::to_string(plan.kernels.size()) +
                       " kernels; the injector runs patterns of 2 to " + std::to_string(kMaxPatternKernels));
  }
  RuntimePlan rp;
  rp.dir = dir;
  rp.fusion = plan.fusion;
  rp.label = dir + " (" + core::fusionDirection(plan.fusion) + ", " + std::to_string(plan.kernels.size()) + " kernels:";
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const rewriter::PlanKernel& k = plan.kernels[i];
    rp.label += (i ? ", " : " ") + k.mangled_name;
    RuntimeKernel rk;
    rk.name = k.mangled_name;
    rk.module_hash = k.module_hash;
    rk.shape = k.shape;
    if (k.params.size() > static_cast<size_t>(kMaxParams)) {
      return unsupported(dir + ": kernel " + k.mangled_name + " has " + std::to_string(k.params.size()) +
                         " parameters; the injector handles up to " + std::to_string(kMaxParams));
    }
    for (size_t p = 0; p < k.params.size(); ++p) {
      const rewriter::PlanParam& pp = k.params[p];
      if (pp.index != static_cast<int>(p)) {
        return badFormat(dir + "/plan.json: pattern.kernels[" + std::to_string(i) + "].params[" + std::to_string(p) +
                         "].index is " + std::to_string(pp.index));
      }
      if (pp.size == 0 || uint64_t{pp.offset} + pp.size > kMaxArgBytes) {
        return unsupported(dir + ": kernel " + k.mangled_name + " parameter " + std::to_string(p) +
                           " lies outside the injector's " + std::to_string(kMaxArgBytes) + "-byte argument buffer");
      }
      rk.params.push_back({pp.offset, pp.size, pp.pointer});
      rk.arg_bytes = std::max(rk.arg_bytes, pp.offset + pp.size);
    }
    rp.kernels.push_back(std::move(rk));
  }
  rp.label += ")";
  for (size_t i = 0; i < plan.predicates.size(); ++i) {
    const rewriter::Predicate& p = plan.predicates[i];
    const std::string what = dir + "/plan.json: predicate " + std::to_string(i);
    using K = rewriter::Predicate::Kind;
    if (p.kind == K::kArgEqual) {
      KFUSE_RETURN_IF_ERROR(checkRef(p.a, rp.kernels, what));
      KFUSE_RETURN_IF_ERROR(checkRef(p.b, rp.kernels, what));
    } else if (p.kind == K::kArgValue) {
      KFUSE_RETURN_IF_ERROR(checkRef(p.a, rp.kernels, what));
    } else if (p.kind == K::kNoOverlap) {
      if (p.bytes.size() != p.buffers.size()) return badFormat(what + ": buffers and bytes differ in length");
      for (const auto& b : p.buffers) KFUSE_RETURN_IF_ERROR(checkRef(b, rp.kernels, what));
    } else if (p.kind == K::kProvenValues) {
      for (const auto& a : p.proof_args) KFUSE_RETURN_IF_ERROR(checkRef(a.arg, rp.kernels, what));
      for (const auto& t : p.tuples) {
        if (t.size() != p.proof_args.size()) return badFormat(what + ": a tuple's length differs from proof_args");
      }
    }
    rp.predicates.push_back(p);
  }
  rp.fused_name = plan.fused.name;
  rp.fused_shape = plan.fused.shape;
  rp.targets = plan.targets;
  rp.drops_stores = !plan.dropped_buffers.empty();
  for (size_t i = 0; i < plan.fused.params.size(); ++i) {
    const rewriter::FusedParam& fp = plan.fused.params[i];
    if (fp.sources.empty()) return badFormat(dir + "/plan.json: fused parameter " + fp.name + " has no source");
    KFUSE_RETURN_IF_ERROR(checkRef(fp.sources.front(), rp.kernels, dir + "/plan.json: fused parameter " + fp.name));
    rp.fused_args.push_back(fp.sources.front());
  }
  if (rp.fused_args.size() > static_cast<size_t>(kMaxParams)) {
    return unsupported(dir + ": the fused kernel has more than " + std::to_string(kMaxParams) + " parameters");
  }
  const std::string ptx_path = dir + "/" + plan.fused.ptx_file;
  std::ifstream in(ptx_path, std::ios::binary);
  if (!in) return notFound(ptx_path + ": cannot read the fused kernel's PTX");
  std::stringstream ss;
  ss << in.rdbuf();
  rp.fused_ptx = ss.str();
  if (rp.fused_ptx.find(".entry " + rp.fused_name) == std::string::npos) {
    return badFormat(ptx_path + ": no .entry named " + rp.fused_name + " (the plan's fused kernel)");
  }
  // The fused kernel must be the one validation ran (plans since file hashes were recorded).
  const std::string suffix = "  " + plan.fused.ptx_file;
  for (const std::string& f : plan.validation.files) {
    if (f.size() != 64 + suffix.size() || f.compare(64, std::string::npos, suffix) != 0) continue;
    const std::string now = core::sha256Hex(reinterpret_cast<const uint8_t*>(rp.fused_ptx.data()), rp.fused_ptx.size());
    if (f.compare(0, 64, now) != 0) {
      return badFormat(ptx_path + ": changed since it was validated (sha256 " + now.substr(0, 12) + "..., validated " +
                       f.substr(0, 12) + "...): run `kfuse validate " + dir + "` to validate it again");
    }
  }
  return rp;
}

}  // namespace kfuse::inject
