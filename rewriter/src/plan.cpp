// Plans as JSON (schemas/plan.schema.json, version 2), read back with a JSON path in every error, and their
// README. The reader never lets an nlohmann exception out: it checks each value's type before converting it, and
// a last catch turns anything it missed into a bad-format Status.
#include "kfuse/rewriter/plan.h"

#include <unistd.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "kfuse/core/files.h"
#include "kfuse/core/json_reader.h"
#include "kfuse/core/text.h"

namespace kfuse::rewriter {

namespace {

using json = nlohmann::json;

constexpr const char* kFormatName = "kfuse-plan";

// ---- writing ----

std::string hexBytes(const std::vector<uint8_t>& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

json argRefJson(const ArgRef& r) {
  return json{{"kernel", r.kernel}, {"arg", r.param}};
}

json argRefsJson(const std::vector<ArgRef>& refs) {
  json a = json::array();
  for (const ArgRef& r : refs) a.push_back(argRefJson(r));
  return a;
}

json dimJson(const core::Dim3& d) {
  return json::array({d.x, d.y, d.z});
}

void putShape(json& j, const core::LaunchShape& s) {
  j["grid"] = dimJson(s.grid);
  j["block"] = dimJson(s.block);
  j["dynamic_shared_bytes"] = s.dynamic_shared_bytes;
}

json shapeJson(const core::LaunchShape& s) {
  json j = json::object();
  putShape(j, s);
  return j;
}

json predicateJson(const Predicate& p) {
  json j{{"kind", predicateKindName(p.kind)}};
  switch (p.kind) {
    case Predicate::Kind::kArgEqual:
      j["a"] = argRefJson(p.a);
      j["b"] = argRefJson(p.b);
      break;
    case Predicate::Kind::kNoOverlap:
      j["buffers"] = argRefsJson(p.buffers);
      j["bytes"] = p.bytes;
      break;
    case Predicate::Kind::kSameLaunchConfig: break;
    case Predicate::Kind::kArgValue:
      j["a"] = argRefJson(p.a);
      j["value"] = hexBytes(p.value);
      break;
    case Predicate::Kind::kProvenValues: {
      json args = json::array();
      for (const Predicate::ProofRef& r : p.proof_args) {
        json a = argRefJson(r.arg);
        a["pointer_offset"] = r.pointer_offset;
        if (r.allocation) a["allocation"] = true;
        args.push_back(std::move(a));
      }
      j["proof_args"] = std::move(args);
      j["tuples"] = p.tuples;
      break;
    }
  }
  return j;
}

json argumentSetJson(const ArgumentSet& s) {
  json args = json::array();
  for (const auto& kernel : s.args) {
    json k = json::array();
    for (const ArgValue& v : kernel) {
      if (v.pointer) {
        k.push_back(json{{"buffer", v.buffer}, {"offset", v.offset}});
      } else {
        k.push_back(json{{"bytes", hexBytes(v.bytes)}});
      }
    }
    args.push_back(std::move(k));
  }
  json shapes = json::array();
  for (const core::LaunchShape& sh : s.shapes) shapes.push_back(shapeJson(sh));
  json j{{"origin", s.origin}, {"buffer_bytes", s.buffer_bytes}, {"args", std::move(args)}, {"shapes", shapes}};
  if (s.fused_shape) j["fused_shape"] = shapeJson(*s.fused_shape);
  return j;
}

// ---- reading ----

bool isHex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

using core::JsonReader;
std::string join(const std::string& path, const std::string& name) {
  return JsonReader::join(path, name);
}
std::string indexed(const std::string& path, size_t i) {
  return JsonReader::indexed(path, i);
}

// Reads typed fields out of plan JSON: core::JsonReader plus the plan's own shapes.
class Reader : public core::JsonReader {
 public:
  using JsonReader::JsonReader;

  void argRef(const json& j, const std::string& path, ArgRef& out) {
    if (!object(j, path, {"kernel", "arg"})) return;
    integer(j, path, "kernel", out.kernel, true, 0, 1u << 20);
    integer(j, path, "arg", out.param, true, 0, 1u << 20);
  }

  void argRefMember(const json& j, const std::string& path, const char* name, ArgRef& out) {
    const json* v = member(j, path, name, true);
    if (v) argRef(*v, join(path, name), out);
  }

  void argRefs(const json& j, const std::string& path, const char* name, std::vector<ArgRef>& out,
               bool required = false) {
    array(j, path, name, required, [&](const json& e, const std::string& p) {
      ArgRef r;
      argRef(e, p, r);
      out.push_back(r);
    });
  }

  void dim(const json& j, const std::string& path, const char* name, core::Dim3& out) {
    const json* v = member(j, path, name, true);
    if (!v) return;
    std::string p = join(path, name);
    if (!v->is_array() || v->size() != 3) return fail(p, "expected an array of 3 positive integers");
    for (size_t i = 0; i < 3 && ok(); ++i) {
      integerValue((*v)[i], indexed(p, i), out[i], 1, std::numeric_limits<uint32_t>::max());
    }
  }

  // grid, block and dynamic_shared_bytes of `j` (which may hold other fields too).
  void shapeFields(const json& j, const std::string& path, core::LaunchShape& out) {
    dim(j, path, "grid", out.grid);
    dim(j, path, "block", out.block);
    integer(j, path, "dynamic_shared_bytes", out.dynamic_shared_bytes);
  }

  void shape(const json& j, const std::string& path, core::LaunchShape& out) {
    if (!object(j, path, {"grid", "block", "dynamic_shared_bytes"})) return;
    shapeFields(j, path, out);
  }

  void hex(const json& j, const std::string& path, const char* name, std::vector<uint8_t>& out, bool required) {
    std::string text;
    str(j, path, name, text, required);
    if (!ok()) return;
    if (text.size() % 2 != 0 || !isHex(text)) {
      return fail(join(path, name), "expected bytes as an even number of lowercase hex digits");
    }
    out.clear();
    for (size_t i = 0; i < text.size(); i += 2)
      out.push_back(static_cast<uint8_t>(std::stoul(text.substr(i, 2), nullptr, 16)));
  }

  // Checks that `value` is one of `allowed`.
  void oneOf(const std::string& value, const std::string& path, std::initializer_list<const char*> allowed) {
    if (!ok()) return;
    std::string list;
    for (const char* a : allowed) {
      if (value == a) return;
      list += std::string(list.empty() ? "" : ", ") + "\"" + a + "\"";
    }
    fail(path, "expected one of " + list + ", got \"" + value + "\"");
  }
};

bool validArch(const std::string& a) {
  if (a.size() < 4 || a.compare(0, 3, "sm_") != 0) return false;
  size_t end = a.size();
  if (a.back() == 'a' || a.back() == 'f') --end;
  if (end <= 3) return false;
  for (size_t i = 3; i < end; ++i) {
    if (a[i] < '0' || a[i] > '9') return false;
  }
  return true;
}

void readKernel(Reader& r, const json& j, const std::string& path, PlanKernel& k) {
  if (!r.object(j, path,
                {"mangled_name", "module_hash", "ptx_file", "grid", "block", "dynamic_shared_bytes", "params"})) {
    return;
  }
  r.str(j, path, "mangled_name", k.mangled_name, true);
  if (r.ok() && k.mangled_name.empty()) r.fail(join(path, "mangled_name"), "expected a kernel name");
  r.str(j, path, "module_hash", k.module_hash, true);
  if (r.ok() && (k.module_hash.size() != 64 || !isHex(k.module_hash))) {
    r.fail(join(path, "module_hash"), "expected 64 hex digits");
  }
  r.str(j, path, "ptx_file", k.ptx_file, true);
  r.shapeFields(j, path, k.shape);
  r.array(j, path, "params", false, [&](const json& e, const std::string& p) {
    PlanParam pp;
    if (!r.object(e, p, {"index", "offset", "size", "pointer", "access", "element_type"})) return;
    r.integer(e, p, "index", pp.index, true, 0, 1u << 20);
    r.integer(e, p, "offset", pp.offset, true);
    r.integer(e, p, "size", pp.size, true);
    r.boolean(e, p, "pointer", pp.pointer, true);
    r.str(e, p, "access", pp.access);
    if (r.ok() && !pp.access.empty()) {
      r.oneOf(pp.access, join(p, "access"), {"read", "write", "read-write", "not-accessed", "unknown"});
    }
    r.str(e, p, "element_type", pp.element_type);
    k.params.push_back(std::move(pp));
  });
}

void readPredicate(Reader& r, const json& j, const std::string& path, Predicate& p) {
  if (!r.object(j, path, {"kind", "a", "b", "buffers", "bytes", "value", "proof_args", "tuples"})) return;
  std::string kind;
  r.str(j, path, "kind", kind, true);
  if (!r.ok()) return;
  if (kind == "arg_equal") {
    p.kind = Predicate::Kind::kArgEqual;
    r.argRefMember(j, path, "a", p.a);
    r.argRefMember(j, path, "b", p.b);
  } else if (kind == "no_overlap") {
    p.kind = Predicate::Kind::kNoOverlap;
    r.argRefs(j, path, "buffers", p.buffers, true);
    r.array(j, path, "bytes", false, [&](const json& e, const std::string& ep) {
      uint64_t b = 0;
      r.integerValue(e, ep, b);
      p.bytes.push_back(b);
    });
    if (r.ok() && p.buffers.size() < 2) r.fail(join(path, "buffers"), "expected at least 2 buffers");
    if (r.ok() && !p.bytes.empty() && p.bytes.size() != p.buffers.size()) {
      r.fail(join(path, "bytes"), "expected one size per buffer");
    }
  } else if (kind == "same_launch_config") {
    p.kind = Predicate::Kind::kSameLaunchConfig;
  } else if (kind == "arg_value") {
    p.kind = Predicate::Kind::kArgValue;
    r.argRefMember(j, path, "a", p.a);
    r.hex(j, path, "value", p.value, true);
  } else if (kind == "proven_values") {
    p.kind = Predicate::Kind::kProvenValues;
    r.array(j, path, "proof_args", true, [&](const json& e, const std::string& ep) {
      Predicate::ProofRef pr;
      if (!r.object(e, ep, {"kernel", "arg", "pointer_offset", "allocation"})) return;
      r.integer(e, ep, "kernel", pr.arg.kernel, true, 0, 1u << 20);
      r.integer(e, ep, "arg", pr.arg.param, true, 0, 1u << 20);
      r.boolean(e, ep, "pointer_offset", pr.pointer_offset);
      r.boolean(e, ep, "allocation", pr.allocation);
      if (pr.pointer_offset && pr.allocation) r.fail(ep, "pointer_offset and allocation exclude each other");
      p.proof_args.push_back(pr);
    });
    if (r.ok() && p.proof_args.empty()) r.fail(join(path, "proof_args"), "expected at least one argument");
    r.array(j, path, "tuples", true, [&](const json& e, const std::string& ep) {
      if (!e.is_array() || e.size() != p.proof_args.size()) {
        return r.fail(ep, "expected an array of " + std::to_string(p.proof_args.size()) + " integers");
      }
      std::vector<int64_t> tuple(e.size());
      for (size_t i = 0; i < e.size() && r.ok(); ++i) {
        r.integerValue(e[i], indexed(ep, i), tuple[i], std::numeric_limits<int64_t>::min());
      }
      p.tuples.push_back(std::move(tuple));
    });
  } else {
    r.oneOf(kind, join(path, "kind"), {"arg_equal", "no_overlap", "same_launch_config", "arg_value", "proven_values"});
  }
}

void readFused(Reader& r, const json& j, const std::string& path, Plan::Fused& f) {
  if (!r.object(j, path, {"name", "ptx_file", "arch", "params", "grid", "block", "dynamic_shared_bytes", "parts"})) {
    return;
  }
  r.str(j, path, "name", f.name, true);
  if (r.ok() && f.name.empty()) r.fail(join(path, "name"), "expected a kernel name");
  r.str(j, path, "ptx_file", f.ptx_file, true);
  r.str(j, path, "arch", f.arch);
  if (r.ok() && !f.arch.empty() && !validArch(f.arch)) r.fail(join(path, "arch"), "expected sm_<digits>, e.g. sm_90");
  r.array(j, path, "params", true, [&](const json& e, const std::string& p) {
    FusedParam fp;
    if (!r.object(e, p, {"name", "sources"})) return;
    r.str(e, p, "name", fp.name, true);
    r.argRefs(e, p, "sources", fp.sources, true);
    if (r.ok() && fp.sources.empty()) r.fail(join(p, "sources"), "expected at least one source argument");
    f.params.push_back(std::move(fp));
  });
  r.shapeFields(j, path, f.shape);
  r.array(j, path, "parts", false, [&](const json& e, const std::string& p) {
    FusionResult::Part part;
    if (!r.object(e, p, {"kernel", "first_block", "blocks", "first_thread", "threads", "barrier_id"})) return;
    r.integer(e, p, "kernel", part.kernel, true, 0, 1u << 20);
    r.integer(e, p, "first_block", part.first_block);
    r.integer(e, p, "blocks", part.blocks);
    r.integer(e, p, "first_thread", part.first_thread);
    r.integer(e, p, "threads", part.threads);
    r.integer(e, p, "barrier_id", part.barrier_id, false, -1, 15);
    f.parts.push_back(part);
  });
}

void readResources(Reader& r, const json& j, const std::string& path, KernelResources& k) {
  if (!r.object(j, path,
                {"kernel", "arch", "registers", "barriers", "spill_store_bytes", "spill_load_bytes", "stack_bytes",
                 "static_shared_bytes", "threads_per_block", "occupancy", "occupancy_limiter"})) {
    return;
  }
  r.str(j, path, "kernel", k.kernel, true);
  r.str(j, path, "arch", k.arch, true);
  if (r.ok() && !validArch(k.arch)) r.fail(join(path, "arch"), "expected sm_<digits>, e.g. sm_90");
  r.integer(j, path, "registers", k.registers, true);
  r.integer(j, path, "barriers", k.barriers);
  r.integer(j, path, "spill_store_bytes", k.spill_store_bytes);
  r.integer(j, path, "spill_load_bytes", k.spill_load_bytes);
  r.integer(j, path, "stack_bytes", k.stack_bytes);
  r.integer(j, path, "static_shared_bytes", k.static_shared_bytes);
  r.integer(j, path, "threads_per_block", k.threads_per_block);
  r.number(j, path, "occupancy", k.occupancy);
  if (r.ok() && (k.occupancy < 0 || k.occupancy > 1)) r.fail(join(path, "occupancy"), "expected a number in [0, 1]");
  r.str(j, path, "occupancy_limiter", k.occupancy_limiter);
}

void readArgumentSet(Reader& r, const json& j, const std::string& path, ArgumentSet& s) {
  if (!r.object(j, path, {"origin", "buffer_bytes", "args", "shapes", "fused_shape"})) return;
  r.str(j, path, "origin", s.origin);
  r.array(j, path, "buffer_bytes", true, [&](const json& e, const std::string& p) {
    uint64_t b = 0;
    r.integerValue(e, p, b);
    s.buffer_bytes.push_back(b);
  });
  r.array(j, path, "args", true, [&](const json& kernel, const std::string& kp) {
    if (!kernel.is_array()) return r.fail(kp, "expected an array of arguments");
    std::vector<ArgValue> values;
    for (size_t i = 0; i < kernel.size() && r.ok(); ++i) {
      std::string p = indexed(kp, i);
      ArgValue v;
      if (!r.object(kernel[i], p, {"buffer", "offset", "bytes"})) return;
      if (kernel[i].contains("buffer")) {
        v.pointer = true;
        r.integer(kernel[i], p, "buffer", v.buffer, true, 0, 1u << 30);
        r.integer(kernel[i], p, "offset", v.offset);
        if (r.ok() && static_cast<size_t>(v.buffer) >= s.buffer_bytes.size()) {
          r.fail(join(p, "buffer"), "no buffer " + std::to_string(v.buffer) + " (the set has " +
                                        std::to_string(s.buffer_bytes.size()) + ")");
        }
        if (r.ok() && kernel[i].contains("bytes")) r.fail(join(p, "bytes"), "a pointer argument has no bytes");
      } else {
        r.hex(kernel[i], p, "bytes", v.bytes, true);
        if (r.ok() && kernel[i].contains("offset")) r.fail(join(p, "offset"), "a scalar argument has no offset");
      }
      values.push_back(std::move(v));
    }
    s.args.push_back(std::move(values));
  });
  r.array(j, path, "shapes", false, [&](const json& e, const std::string& p) {
    core::LaunchShape sh;
    r.shape(e, p, sh);
    s.shapes.push_back(sh);
  });
  if (const json* fs = r.member(j, path, "fused_shape", false)) {
    core::LaunchShape sh;
    r.shape(*fs, join(path, "fused_shape"), sh);
    s.fused_shape = sh;
  }
}

void readValidation(Reader& r, const json& j, const std::string& path, PlanValidation& v) {
  if (!r.object(j, path, {"ptxas_ok", "ptxas_archs", "emulator", "gpu", "seed", "runs", "mismatch", "validated_at"})) {
    return;
  }
  r.boolean(j, path, "ptxas_ok", v.ptxas_ok);
  r.strings(j, path, "ptxas_archs", v.ptxas_archs);
  r.str(j, path, "emulator", v.emulator);
  r.oneOf(v.emulator, join(path, "emulator"), {"passed", "failed", "not-run"});
  r.str(j, path, "gpu", v.gpu);
  r.oneOf(v.gpu, join(path, "gpu"), {"passed", "failed", "not-run"});
  r.integer(j, path, "seed", v.seed);
  r.integer(j, path, "runs", v.runs);
  r.str(j, path, "mismatch", v.mismatch);
  r.str(j, path, "validated_at", v.validated_at);
}

// Cross-references that the field-by-field reader cannot see: every ArgRef must name a kernel and a parameter
// of the pattern, and every argument set must give each kernel its arguments.
void checkReferences(Reader& r, const Plan& plan) {
  auto ref = [&](const ArgRef& a, const std::string& path) {
    if (!r.ok()) return;
    if (a.kernel < 0 || static_cast<size_t>(a.kernel) >= plan.kernels.size()) {
      return r.fail(path + ".kernel", "no kernel " + std::to_string(a.kernel) + " in the pattern (it has " +
                                          std::to_string(plan.kernels.size()) + ")");
    }
    const PlanKernel& k = plan.kernels[static_cast<size_t>(a.kernel)];
    if (!k.params.empty() && static_cast<size_t>(a.param) >= k.params.size()) {
      r.fail(path + ".arg", "kernel " + std::to_string(a.kernel) + " (" + k.mangled_name + ") has " +
                                std::to_string(k.params.size()) + " parameters");
    }
  };
  for (size_t i = 0; i < plan.predicates.size(); ++i) {
    const Predicate& p = plan.predicates[i];
    std::string path = indexed("pattern.predicates", i);
    if (p.kind == Predicate::Kind::kArgEqual || p.kind == Predicate::Kind::kArgValue) ref(p.a, path + ".a");
    if (p.kind == Predicate::Kind::kArgEqual) ref(p.b, path + ".b");
    for (size_t b = 0; b < p.buffers.size(); ++b) ref(p.buffers[b], indexed(path + ".buffers", b));
    for (size_t a = 0; a < p.proof_args.size(); ++a) ref(p.proof_args[a].arg, indexed(path + ".proof_args", a));
  }
  for (size_t i = 0; i < plan.fused.params.size(); ++i) {
    for (size_t s = 0; s < plan.fused.params[i].sources.size(); ++s) {
      ref(plan.fused.params[i].sources[s], indexed(indexed("fused_kernel.params", i) + ".sources", s));
    }
  }
  for (size_t i = 0; i < plan.fused.parts.size(); ++i) {
    ArgRef a{plan.fused.parts[i].kernel, 0};
    if (r.ok() && static_cast<size_t>(a.kernel) >= plan.kernels.size()) {
      r.fail(indexed("fused_kernel.parts", i) + ".kernel", "no kernel " + std::to_string(a.kernel) + " in the pattern");
    }
  }
  for (size_t i = 0; i < plan.dropped_buffers.size(); ++i) ref(plan.dropped_buffers[i], indexed("dropped_buffers", i));
  for (size_t i = 0; i < plan.argument_sets.size() && r.ok(); ++i) {
    const ArgumentSet& s = plan.argument_sets[i];
    std::string path = indexed("argument_sets", i);
    if (s.args.size() != plan.kernels.size()) {
      r.fail(path + ".args", "expected the arguments of " + std::to_string(plan.kernels.size()) + " kernels, got " +
                                 std::to_string(s.args.size()));
    }
    if (r.ok() && !s.shapes.empty() && s.shapes.size() != plan.kernels.size()) {
      r.fail(path + ".shapes", "expected " + std::to_string(plan.kernels.size()) + " launch shapes or none");
    }
    for (size_t k = 0; k < s.args.size() && r.ok(); ++k) {
      const PlanKernel& kernel = plan.kernels[k];
      if (!kernel.params.empty() && s.args[k].size() != kernel.params.size()) {
        r.fail(indexed(path + ".args", k), "kernel " + kernel.mangled_name + " takes " +
                                               std::to_string(kernel.params.size()) + " arguments, got " +
                                               std::to_string(s.args[k].size()));
      }
    }
  }
}

Plan readPlanJson(Reader& r, const json& j) {
  Plan plan;
  if (!r.object(j, "",
                {"format", "version", "source_trace", "candidate_rank", "kind", "layout", "pattern", "fused_kernel",
                 "targets", "resources", "aggressive", "dropped_buffers", "prediction", "argument_sets", "validation",
                 "notes"})) {
    return plan;
  }
  std::string format;
  r.str(j, "", "format", format, true);
  if (r.ok() && format != kFormatName) r.fail("format", "expected \"kfuse-plan\", got \"" + format + "\"");
  r.integer(j, "", "version", plan.version, true, 0, 1u << 20);
  if (r.ok() && plan.version != kPlanVersion) {
    r.fail("",
           "plan version " + std::to_string(plan.version) + " is not supported by this kfuse (reads version " +
               std::to_string(kPlanVersion) + "); re-run kfuse rewrite",
           ErrorCode::kUnsupportedVersion);
  }
  r.str(j, "", "source_trace", plan.source_trace);
  r.integer(j, "", "candidate_rank", plan.candidate_rank);
  r.str(j, "", "kind", plan.kind, true);
  r.oneOf(plan.kind, "kind", {"vertical", "horizontal"});
  r.str(j, "", "layout", plan.layout);
  if (r.ok() && !plan.layout.empty())
    r.oneOf(plan.layout, "layout", {"block-partitioned", "thread-partitioned", "epilogue", "block-level", "prologue"});

  if (const json* pattern = r.member(j, "", "pattern", true)) {
    if (r.object(*pattern, "pattern", {"kernels", "predicates"})) {
      r.array(*pattern, "pattern", "kernels", true, [&](const json& e, const std::string& p) {
        PlanKernel k;
        readKernel(r, e, p, k);
        plan.kernels.push_back(std::move(k));
      });
      if (r.ok() && plan.kernels.empty()) r.fail("pattern.kernels", "expected at least one kernel");
      r.array(*pattern, "pattern", "predicates", false, [&](const json& e, const std::string& p) {
        Predicate pred;
        readPredicate(r, e, p, pred);
        plan.predicates.push_back(std::move(pred));
      });
    }
  }
  if (const json* fused = r.member(j, "", "fused_kernel", true)) readFused(r, *fused, "fused_kernel", plan.fused);
  r.strings(j, "", "targets", plan.targets);
  for (size_t i = 0; i < plan.targets.size() && r.ok(); ++i) {
    if (!validArch(plan.targets[i])) r.fail(indexed("targets", i), "expected sm_<digits>, e.g. sm_90");
  }
  r.array(j, "", "resources", false, [&](const json& e, const std::string& p) {
    KernelResources k;
    readResources(r, e, p, k);
    plan.resources.push_back(std::move(k));
  });
  r.boolean(j, "", "aggressive", plan.aggressive);
  r.argRefs(j, "", "dropped_buffers", plan.dropped_buffers);
  if (const json* pred = r.member(j, "", "prediction", false)) {
    Prediction& p = plan.prediction;
    if (r.object(*pred, "prediction",
                 {"gpu", "cost_model_version", "measured_ns", "fused_ns", "saving_ns", "occurrences", "total_saving_ns",
                  "note"})) {
      r.str(*pred, "prediction", "gpu", p.gpu);
      r.integer(*pred, "prediction", "cost_model_version", p.cost_model_version);
      r.number(*pred, "prediction", "measured_ns", p.measured_ns);
      r.number(*pred, "prediction", "fused_ns", p.fused_ns);
      r.number(*pred, "prediction", "saving_ns", p.saving_ns);
      r.integer(*pred, "prediction", "occurrences", p.occurrences);
      r.number(*pred, "prediction", "total_saving_ns", p.total_saving_ns);
      r.str(*pred, "prediction", "note", p.note);
    }
  }
  r.array(j, "", "argument_sets", false, [&](const json& e, const std::string& p) {
    ArgumentSet s;
    readArgumentSet(r, e, p, s);
    plan.argument_sets.push_back(std::move(s));
  });
  if (const json* v = r.member(j, "", "validation", false)) readValidation(r, *v, "validation", plan.validation);
  r.strings(j, "", "notes", plan.notes);
  if (r.ok()) checkReferences(r, plan);
  return plan;
}

std::string shapeText(const core::LaunchShape& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "grid (%u, %u, %u), block (%u, %u, %u), %u B dynamic shared", s.grid.x, s.grid.y,
                s.grid.z, s.block.x, s.block.y, s.block.z, s.dynamic_shared_bytes);
  return buf;
}

std::string argRefText(const Plan& plan, const ArgRef& r) {
  std::string name = r.kernel >= 0 && static_cast<size_t>(r.kernel) < plan.kernels.size()
                         ? plan.kernels[static_cast<size_t>(r.kernel)].mangled_name
                         : "kernel " + std::to_string(r.kernel);
  return "argument " + std::to_string(r.param) + " of `" + name + "`";
}

}  // namespace

const char* predicateKindName(Predicate::Kind k) {
  switch (k) {
    case Predicate::Kind::kArgEqual: return "arg_equal";
    case Predicate::Kind::kNoOverlap: return "no_overlap";
    case Predicate::Kind::kSameLaunchConfig: return "same_launch_config";
    case Predicate::Kind::kArgValue: return "arg_value";
    case Predicate::Kind::kProvenValues: return "proven_values";
  }
  return "unknown";
}

nlohmann::json planToJson(const Plan& plan) {
  json kernels = json::array();
  for (const PlanKernel& k : plan.kernels) {
    json params = json::array();
    for (const PlanParam& p : k.params) {
      params.push_back(json{{"index", p.index},
                            {"offset", p.offset},
                            {"size", p.size},
                            {"pointer", p.pointer},
                            {"access", p.access},
                            {"element_type", p.element_type}});
    }
    json jk{{"mangled_name", k.mangled_name}, {"module_hash", k.module_hash}, {"ptx_file", k.ptx_file}};
    putShape(jk, k.shape);
    jk["params"] = std::move(params);
    kernels.push_back(std::move(jk));
  }
  json predicates = json::array();
  for (const Predicate& p : plan.predicates) predicates.push_back(predicateJson(p));

  json fparams = json::array();
  for (const FusedParam& p : plan.fused.params)
    fparams.push_back(json{{"name", p.name}, {"sources", argRefsJson(p.sources)}});
  json parts = json::array();
  for (const FusionResult::Part& p : plan.fused.parts) {
    parts.push_back(json{{"kernel", p.kernel},
                         {"first_block", p.first_block},
                         {"blocks", p.blocks},
                         {"first_thread", p.first_thread},
                         {"threads", p.threads},
                         {"barrier_id", p.barrier_id}});
  }
  json fused{{"name", plan.fused.name},
             {"ptx_file", plan.fused.ptx_file},
             {"arch", plan.fused.arch},
             {"params", std::move(fparams)}};
  putShape(fused, plan.fused.shape);
  fused["parts"] = std::move(parts);

  json resources = json::array();
  for (const KernelResources& k : plan.resources) {
    resources.push_back(json{{"kernel", k.kernel},
                             {"arch", k.arch},
                             {"registers", k.registers},
                             {"barriers", k.barriers},
                             {"spill_store_bytes", k.spill_store_bytes},
                             {"spill_load_bytes", k.spill_load_bytes},
                             {"stack_bytes", k.stack_bytes},
                             {"static_shared_bytes", k.static_shared_bytes},
                             {"threads_per_block", k.threads_per_block},
                             {"occupancy", std::isfinite(k.occupancy) ? k.occupancy : 0.0},
                             {"occupancy_limiter", k.occupancy_limiter}});
  }
  auto finite = [](double d) { return std::isfinite(d) ? d : 0.0; };
  const Prediction& pr = plan.prediction;
  json prediction{{"gpu", pr.gpu},
                  {"cost_model_version", pr.cost_model_version},
                  {"measured_ns", finite(pr.measured_ns)},
                  {"fused_ns", finite(pr.fused_ns)},
                  {"saving_ns", finite(pr.saving_ns)},
                  {"occurrences", pr.occurrences},
                  {"total_saving_ns", finite(pr.total_saving_ns)},
                  {"note", pr.note}};
  json sets = json::array();
  for (const ArgumentSet& s : plan.argument_sets) sets.push_back(argumentSetJson(s));
  const PlanValidation& v = plan.validation;
  json validation{{"ptxas_ok", v.ptxas_ok}, {"ptxas_archs", v.ptxas_archs},
                  {"emulator", v.emulator}, {"gpu", v.gpu},
                  {"seed", v.seed},         {"runs", v.runs},
                  {"mismatch", v.mismatch}, {"validated_at", v.validated_at}};
  json j{{"format", kFormatName},
         {"version", kPlanVersion},
         {"source_trace", plan.source_trace},
         {"candidate_rank", plan.candidate_rank},
         {"kind", plan.kind}};
  if (!plan.layout.empty()) j["layout"] = plan.layout;
  j["pattern"] = json{{"kernels", std::move(kernels)}, {"predicates", std::move(predicates)}};
  j["fused_kernel"] = std::move(fused);
  j["targets"] = plan.targets;
  j["resources"] = std::move(resources);
  j["aggressive"] = plan.aggressive;
  j["dropped_buffers"] = argRefsJson(plan.dropped_buffers);
  j["prediction"] = std::move(prediction);
  j["argument_sets"] = std::move(sets);
  j["validation"] = std::move(validation);
  j["notes"] = plan.notes;
  return j;
}

Expected<Plan> planFromJson(const nlohmann::json& j, const std::string& source) {
  Reader r(source);
  Plan plan;
  try {
    plan = readPlanJson(r, j);
  } catch (const std::exception& e) {
    // The reader checks types before every conversion; this is the net for anything it missed.
    return badFormat(source + ": " + e.what());
  }
  if (!r.ok()) return r.status();
  return plan;
}

Expected<Plan> readPlan(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return notFound(dir + ": no such plan directory");
  std::string path = (fs::path(dir) / "plan.json").string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(path + ": cannot open (not a plan directory?)");
  json j = json::parse(in, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return badFormat(path + ": not valid JSON");
  return planFromJson(j, path);
}

Status writePlan(const std::string& dir, const Plan& plan) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ioError(dir + ": cannot create the plan directory: " + ec.message());
  fs::path final_path = fs::path(dir) / "plan.json";
  std::string text;
  try {
    text = core::dumpJson(planToJson(plan), 1) + "\n";
  } catch (const std::exception& e) {
    return invalidArgument(final_path.string() + ": cannot write the plan: " + e.what());
  }
  return core::writeFileAtomically(final_path.string(), text);
}

std::string planReadme(const Plan& plan) {
  std::ostringstream o;
  o << "# kfuse plan: `" << plan.fused.name << "`\n\n";
  o << "A " << (plan.kind.empty() ? "fusion" : plan.kind + " fusion");
  if (!plan.layout.empty()) o << " (" << plan.layout << ")";
  o << " of " << plan.kernels.size() << " kernels";
  if (!plan.source_trace.empty()) o << ", candidate " << plan.candidate_rank << " of `" << plan.source_trace << "`";
  o << ". `plan.json` holds the same facts for kfuse (schemas/plan.schema.json, version " << kPlanVersion << ").\n\n";

  o << "## Pattern\n\nThe injector replaces these launches, in this order:\n\n";
  o << "| # | kernel | module (SHA-256) | launch |\n|---|---|---|---|\n";
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const PlanKernel& k = plan.kernels[i];
    o << "| " << i << " | `" << k.mangled_name << "` | `" << k.module_hash.substr(0, 16) << "…` | "
      << shapeText(k.shape) << " |\n";
  }
  o << "\n## Predicates\n\n";
  if (plan.predicates.empty())
    o << "None: the pattern alone decides.\n";
  else
    o << "The fused kernel is launched only when all of these hold; otherwise the original launches run unchanged.\n\n";
  for (const Predicate& p : plan.predicates) {
    switch (p.kind) {
      case Predicate::Kind::kArgEqual:
        o << "- " << argRefText(plan, p.a) << " equals " << argRefText(plan, p.b) << "\n";
        break;
      case Predicate::Kind::kNoOverlap: {
        o << "- these buffers do not overlap:";
        for (size_t i = 0; i < p.buffers.size(); ++i) {
          o << (i ? ";" : "") << " " << argRefText(plan, p.buffers[i]);
          if (i < p.bytes.size()) o << " (" << p.bytes[i] << " bytes)";
        }
        o << "\n";
        break;
      }
      case Predicate::Kind::kSameLaunchConfig:
        o << "- every kernel is launched with the grid and block shown above\n";
        break;
      case Predicate::Kind::kArgValue:
        o << "- " << argRefText(plan, p.a) << " has the value 0x" << hexBytes(p.value) << " (little-endian bytes)\n";
        break;
      case Predicate::Kind::kProvenValues: {
        o << "- (";
        for (size_t i = 0; i < p.proof_args.size(); ++i) {
          o << (i ? ", " : "")
            << (p.proof_args[i].pointer_offset ? "the byte offset of "
                : p.proof_args[i].allocation   ? "the allocation of "
                                               : "")
            << argRefText(plan, p.proof_args[i].arg);
        }
        o << ") is one of the values the legality proof covers:";
        for (size_t t = 0; t < p.tuples.size() && t < 8; ++t) {
          o << (t ? "," : "") << " (";
          for (size_t i = 0; i < p.tuples[t].size(); ++i) o << (i ? ", " : "") << p.tuples[t][i];
          o << ")";
        }
        if (p.tuples.size() > 8) o << " and " << p.tuples.size() - 8 << " more";
        if (std::any_of(p.proof_args.begin(), p.proof_args.end(), [](const auto& a) { return a.allocation; })) {
          o << " (allocations are numbered 0, 1, ... in the order the listed pointers first point into them: equal "
               "numbers mean one allocation)";
        }
        o << "\n";
        break;
      }
    }
  }
  o << "\n## Fused kernel\n\n`" << plan.fused.name << "` in `" << plan.fused.ptx_file << "`";
  if (!plan.fused.arch.empty()) o << ", loaded for " << plan.fused.arch;
  o << "; launched with " << shapeText(plan.fused.shape) << ".\n\n";
  o << "### Parameter mapping\n\n| fused parameter | takes the value of |\n|---|---|\n";
  for (const FusedParam& p : plan.fused.params) {
    o << "| `" << p.name << "` | ";
    for (size_t i = 0; i < p.sources.size(); ++i) o << (i ? " = " : "") << argRefText(plan, p.sources[i]);
    o << " |\n";
  }
  o << "\n### Launch mapping\n\n";
  if (plan.fused.parts.empty()) {
    o << "Every thread of the fused launch runs each original kernel's body for the same thread, in order.\n";
  } else {
    o << "| kernel | blocks | threads | named barrier |\n|---|---|---|---|\n";
    for (const FusionResult::Part& p : plan.fused.parts) {
      std::string name = p.kernel >= 0 && static_cast<size_t>(p.kernel) < plan.kernels.size()
                             ? plan.kernels[static_cast<size_t>(p.kernel)].mangled_name
                             : std::to_string(p.kernel);
      o << "| `" << name << "` | [" << p.first_block << ", " << p.first_block + p.blocks << ") | [" << p.first_thread
        << ", " << p.first_thread + p.threads << ") | " << (p.barrier_id < 0 ? "-" : std::to_string(p.barrier_id))
        << " |\n";
    }
  }
  if (plan.aggressive) {
    o << "\n**Aggressive**: the stores of these intermediates were dropped (the trace shows they are overwritten "
         "before anything reads them):";
    for (const ArgRef& r : plan.dropped_buffers) o << " " << argRefText(plan, r) << ";";
    o << "\n";
  }
  o << "\n## Resources\n\n";
  if (plan.resources.empty()) {
    o << "Not measured.\n";
  } else {
    o << "| kernel | arch | registers | spills (store/load B) | stack B | static shared B | threads/block | "
         "occupancy | limited by |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const KernelResources& k : plan.resources) {
      char occ[32];
      std::snprintf(occ, sizeof occ, "%.0f%%", k.occupancy * 100);
      o << "| `" << k.kernel << "` | " << k.arch << " | " << k.registers << " | " << k.spill_store_bytes << "/"
        << k.spill_load_bytes << " | " << k.stack_bytes << " | " << k.static_shared_bytes << " | "
        << k.threads_per_block << " | " << occ << " | " << k.occupancy_limiter << " |\n";
    }
  }
  if (!plan.targets.empty()) {
    o << "\nCompiled for:";
    for (const std::string& t : plan.targets) o << " " << t;
    o << "\n";
  }
  const Prediction& pr = plan.prediction;
  o << "\n## Prediction\n\n";
  if (pr.gpu.empty() && pr.occurrences == 0) {
    o << "None.\n";
  } else {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "On %s (cost model v%d): %.0f ns for the originals, %.0f ns predicted fused, %.0f ns saved per "
                  "occurrence; %" PRIu64 " occurrences, %.0f ns in total.\n",
                  pr.gpu.c_str(), pr.cost_model_version, pr.measured_ns, pr.fused_ns, pr.saving_ns, pr.occurrences,
                  pr.total_saving_ns);
    o << buf;
    if (!pr.note.empty()) o << "\n" << pr.note << "\n";
  }
  const PlanValidation& v = plan.validation;
  o << "\n## Validation\n\n";
  o << "- ptxas: " << (v.ptxas_ok ? "compiled" : "not compiled");
  for (const std::string& a : v.ptxas_archs) o << " " << a;
  o << "\n- emulator: " << v.emulator << "\n- gpu: " << v.gpu << "\n";
  if (v.runs > 0) o << "- " << v.runs << " runs, seed " << v.seed << "\n";
  if (!v.validated_at.empty()) o << "- at " << v.validated_at << "\n";
  if (!v.mismatch.empty()) o << "- first mismatch: " << v.mismatch << "\n";
  o << "\n" << plan.argument_sets.size() << " argument sets:\n";
  for (const ArgumentSet& s : plan.argument_sets) o << "- " << (s.origin.empty() ? "(unnamed)" : s.origin) << "\n";
  if (!plan.notes.empty()) {
    o << "\n## Notes\n\n";
    for (const std::string& n : plan.notes) o << "- " << n << "\n";
  }
  return o.str();
}

}  // namespace kfuse::rewriter
