// Horizontal fusion: independent kernels share one launch, either side by side in the grid (block-partitioned)
// or side by side in every block (thread-partitioned, HFuse's layout).
//
// The fused entry is laid out as
//
//     <declarations of every part, plus the registers below>
//     part 0:  range check (which blocks / threads run it)  -> skip to the end of part 0 when outside
//              the part's own %tid/%ctaid/%ntid/%nctaid computed into fresh registers
//              part 0's body, renamed apart, special registers replaced by those registers
//     $kfuse_h_end0:
//     part 1:  ...
//     $kfuse_h_end<N-1>:
//     ret;
//
// Why a part's `ret`/`exit` stays as it is: in both layouts every thread of the fused launch runs at most one
// part (the range checks are disjoint), so when a thread of part k returns it has no other work left, exactly as
// it had none when the original kernel returned; turning it into a branch would gain nothing. Barriers: a part's
// CTA barriers become named barriers counting exactly the threads the original barrier counted (the part's own
// block), so threads of the other parts neither wait for them nor are waited for. An exited thread never arrives
// at a counted barrier: a part whose threads all exit together (a block-uniform early return) leaves its barrier
// unused, as before. A part where *some* threads exit and the rest synchronise was already outside CUDA's rules
// (`__syncthreads` must be reached by all threads of the block or none); on hardware it may have worked because a
// whole-CTA barrier stops expecting warps that exited, which a counted barrier does not: the fused kernel would
// hang there. That cannot be told from the PTX alone (the guard usually depends on the arguments); the emulator
// reports it as a barrier deadlock, so the differential validation refuses such a fusion.
// A fall-through at the end of a part (no `ret`) reaches the next part's range check, which fails for every
// thread of this part, and so ends at the final `ret`.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kfuse/ptx/analysis.h"
#include "kfuse/ptx/builder.h"
#include "kfuse/ptx/special_registers.h"
#include "kfuse/rewriter/fusion.h"
#include "rename.h"

namespace kfuse::rewriter {

namespace {

using ptx::Function;
using ptx::Instruction;
using ptx::Mod;
using ptx::Opcode;
using ptx::Operand;
using ptx::OperandKind;
using ptx::Statement;
using ptx::StatementKind;
using ptx::StateSpace;
using ptx::VariableDecl;

constexpr uint32_t kMaxThreadsPerBlock = 1024;
constexpr int kMaxNamedBarriers = 16;
constexpr uint64_t kMaxGridX = 0x7fffffff;
constexpr uint32_t kDynamicSharedAlign = 16;

// The launch-geometry special registers a part may need to see with its own values: %tid.x .. %nctaid.z, indexed
// family * 3 + axis (the order of ptx::SpecialRegister and ptx::GeometryFamily).
enum Family { kTid = 0, kNtid = 1, kCtaid = 2, kNctaid = 3 };
constexpr int kGeometryRegisters = 12;

std::string geometryName(int i) {
  return ptx::specialRegisterName(static_cast<ptx::SpecialRegister>(i));
}

// "%ctaid.y" -> "ctaid_y": the part of the name of the register that holds a part's value.
std::string geometrySuffix(int i) {
  std::string s = geometryName(i).substr(1);
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

std::optional<int> geometryIndex(std::optional<ptx::SpecialRegister> r) {
  if (!r) return std::nullopt;
  auto c = ptx::geometryComponent(*r);
  if (!c) return std::nullopt;
  return static_cast<int>(c->family) * 3 + c->axis;
}

// Special registers whose meaning the fused launch changes in a way no per-part value can restore: the cluster's,
// the sizes of the launch's shared memory besides the dynamic part's, the executing graph, and a whole vector
// (`%tid`), which cannot be replaced component-wise.
bool refusedSpecialRegister(std::optional<ptx::SpecialRegister> r) {
  using R = ptx::SpecialRegister;
  if (!r) return false;
  if (*r >= R::kClusterIdX && *r <= R::kIsExplicitCluster) return true;
  return *r == R::kTotalSmemSize || *r == R::kAggrSmemSize || *r == R::kCurrentGraphExec || ptx::isGeometryVector(*r);
}

// Device-runtime entry points: a kernel that launches kernels (dynamic parallelism) or uses device graphs.
bool isDeviceRuntimeCall(std::string_view callee) {
  return callee.rfind("cudaLaunchDevice", 0) == 0 || callee.rfind("cudaGetParameterBuffer", 0) == 0 ||
         callee.rfind("cudaCGGet", 0) == 0 || callee.rfind("cudaGraph", 0) == 0;
}

// Operand positions of a CTA barrier: `bar.sync a{, b}`, `bar.arrive a, b`, `bar.red.op d, a{, b}, {!}c`.
struct BarrierOperands {
  size_t id = 0;
  bool has_count = false;
  size_t count = 1;  // where the count is (or goes)
};
BarrierOperands barrierOperands(const Instruction& in) {
  BarrierOperands b;
  if (in.has(Mod::kRed)) {
    b.id = 1;
    b.count = 2;
    b.has_count = in.operands.size() >= 4;
  } else {
    b.id = 0;
    b.count = 1;
    b.has_count = in.operands.size() >= 2;
  }
  return b;
}

std::string dims(const core::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

// Where references to a shared variable go in a part: another variable, at a byte offset into it.
struct Relocation {
  std::string to;
  int64_t offset = 0;
};
using Relocations = std::map<std::string, Relocation, std::less<>>;

// What one part needs and where it runs.
struct Part {
  int index = 0;
  const Function* f = nullptr;
  core::LaunchShape shape;
  std::string tag;  // renaming tag "k<index>_"
  uint64_t first_block = 0;
  uint32_t first_thread = 0;
  std::array<bool, kGeometryRegisters> reads{};  // geometry special registers the body reads
  bool reads_dynamic_smem_size = false;
  bool rewrite_thread_geometry = false;  // %tid/%ntid get the part's own values
  bool rewrite_block_geometry = false;   // %ctaid/%nctaid get the part's own values
  std::set<int64_t> barrier_ids;         // immediate ids of its CTA barriers
  bool has_barriers = false;
  bool warp_synchronous = false;  // shfl / vote / match / redux / activemask
  bool register_barrier_id = false;
  uint32_t dynamic_offset = 0;  // thread-partitioned: where its dynamic shared memory starts
  Relocations shared;           // its .shared variables: copies (thread-partitioned) or places in the overlay (block)
  std::map<int64_t, int64_t> barrier_map;  // original id -> fused id
};

// Checks a part for what horizontal fusion cannot keep, and records what it reads.
Status inspectPart(const ptx::Module& module, Part& p) {
  const Function& f = *p.f;
  const std::string who = "kernel " + f.name;
  ptx::UsageSummary usage = ptx::summarizeUsage(&module, f);
  if (usage.grid_sync) {
    return unsupported(who + " uses a grid-wide barrier (cooperative groups); a fused launch changes the grid " +
                       "that barrier spans");
  }
  if (usage.indirect_calls) return unsupported(who + " makes an indirect call; its callee cannot be checked");
  p.warp_synchronous = usage.shuffles > 0 || usage.votes > 0;
  // Callees see the fused launch's special registers and barriers unchanged: refuse those that read them.
  std::vector<std::string> pending = usage.callees;
  std::set<std::string> seen;
  while (!pending.empty()) {
    std::string callee = pending.back();
    pending.pop_back();
    if (!seen.insert(callee).second) continue;
    if (isDeviceRuntimeCall(callee)) {
      return unsupported(who + " calls " + callee + " (dynamic parallelism / device runtime)");
    }
    const Function* c = module.findFunction(callee);
    if (c == nullptr || !c->has_body) continue;
    ptx::UsageSummary cu = ptx::summarizeUsage(&module, *c);
    if (cu.barriers > 0) return unsupported(who + " calls .func " + callee + ", which synchronises the CTA");
    if (cu.indirect_calls) return unsupported(who + " calls .func " + callee + ", which makes an indirect call");
    for (const Statement& s : c->body) {
      if (s.kind != StatementKind::kInstruction) continue;
      Instruction in = s.inst;
      std::string bad;
      detail::forEachOperand(in, [&](Operand& o) {
        if (o.kind != OperandKind::kRegister) return;
        const auto special = ptx::specialRegister(o.name);
        if (geometryIndex(special) || special == ptx::SpecialRegister::kDynamicSmemSize ||
            refusedSpecialRegister(special)) {
          bad = o.name;
        }
      });
      if (!bad.empty()) {
        return unsupported(who + " calls .func " + callee + ", which reads " + bad +
                           " (special registers are rewritten in the fused entry only)");
      }
    }
    pending.insert(pending.end(), cu.callees.begin(), cu.callees.end());
  }
  for (const Statement& s : f.body) {
    if (s.kind != StatementKind::kInstruction) continue;
    Instruction in = s.inst;
    std::string line = s.inst.loc.line ? " (line " + std::to_string(s.inst.loc.line) + ")" : "";
    std::string refused;
    detail::forEachOperand(in, [&](Operand& o) {
      if (o.kind != OperandKind::kRegister) return;
      const auto special = ptx::specialRegister(o.name);
      if (auto g = geometryIndex(special)) p.reads[*g] = true;
      if (special == ptx::SpecialRegister::kDynamicSmemSize) p.reads_dynamic_smem_size = true;
      if (refusedSpecialRegister(special)) refused = o.name;
    });
    if (!refused.empty()) return unsupported(who + " reads " + refused + line + ", which a fused launch changes");
    if (in.opcode == Opcode::kBarrier && in.has(Mod::kCluster)) {
      return unsupported(who + " synchronises its cluster" + line);
    }
    if (!detail::isCtaBarrier(in)) continue;
    p.has_barriers = true;
    BarrierOperands b = barrierOperands(in);
    if (b.id >= in.operands.size()) {
      p.barrier_ids.insert(0);
    } else if (auto id = in.operands[b.id].intValue()) {
      p.barrier_ids.insert(*id);
    } else {
      p.register_barrier_id = true;
    }
  }
  return {};
}

// Emits into `out` the code that computes a part's values; `decls` receives the registers it declares.
class PartCode {
 public:
  PartCode(int k, std::vector<Statement>* out, std::vector<Statement>* decls)
      : builder_("%kh" + std::to_string(k) + "_", out, decls) {}

  std::string newReg(const std::string& name, ptx::DataType type = ptx::DataType::kB32) {
    return builder_.declare(name, type).name;
  }
  void emit(Instruction in) { builder_.emit(std::move(in)); }
  // `dst = src` (a register or a constant).
  std::string value(const std::string& name, Operand src) {
    std::string r = newReg(name);
    emit(ptx::makeInstruction(Opcode::kMov, {".u32"}, {ptx::registerOperand(r), std::move(src)}));
    return r;
  }
  // Skips to `label` when `value >= limit` (unsigned).
  void skipUnlessBelow(const std::string& name, const Operand& value, uint64_t limit, const std::string& label) {
    std::string p = newReg(name, ptx::DataType::kPred);
    emit(ptx::makeInstruction(Opcode::kSetp, {".ge", ".u32"},
                              {ptx::registerOperand(p), value, ptx::integerOperand(limit)}));
    emit(ptx::branchTo(label, p));
  }
  // Splits a linear index into x, y, z of `shape` (x fastest), into the registers of `family` the part reads.
  void split(const std::string& linear, const core::Dim3& shape, int family,
             const std::array<bool, kGeometryRegisters>& reads, std::map<std::string, std::string>* renames) {
    const int base = family * 3;
    auto want = [&](int dim) { return reads[base + dim]; };
    auto name = [&](int dim) { return geometrySuffix(base + dim); };
    if (shape[1] == 1 && shape[2] == 1) {
      if (want(0)) (*renames)[geometryName(base)] = value(name(0), ptx::registerOperand(linear));
      if (want(1)) (*renames)[geometryName(base + 1)] = value(name(1), ptx::integerOperand(0));
      if (want(2)) (*renames)[geometryName(base + 2)] = value(name(2), ptx::integerOperand(0));
      return;
    }
    if (want(0)) {
      std::string x = newReg(name(0));
      emit(
          ptx::makeInstruction(Opcode::kRem, {".u32"},
                               {ptx::registerOperand(x), ptx::registerOperand(linear), ptx::integerOperand(shape[0])}));
      (*renames)[geometryName(base)] = x;
    }
    if (!want(1) && !want(2)) return;
    std::string rest = newReg(name(0) + "_rest");
    emit(ptx::makeInstruction(
        Opcode::kDiv, {".u32"},
        {ptx::registerOperand(rest), ptx::registerOperand(linear), ptx::integerOperand(shape[0])}));
    if (want(1)) {
      std::string y = newReg(name(1));
      emit(ptx::makeInstruction(Opcode::kRem, {".u32"},
                                {ptx::registerOperand(y), ptx::registerOperand(rest), ptx::integerOperand(shape[1])}));
      (*renames)[geometryName(base + 1)] = y;
    }
    if (want(2)) {
      std::string z = newReg(name(2));
      emit(ptx::makeInstruction(Opcode::kDiv, {".u32"},
                                {ptx::registerOperand(z), ptx::registerOperand(rest), ptx::integerOperand(shape[1])}));
      (*renames)[geometryName(base + 2)] = z;
    }
  }
  // Constants of `family` (ntid or nctaid) from `shape`.
  void constants(const core::Dim3& shape, int family, const std::array<bool, kGeometryRegisters>& reads,
                 std::map<std::string, std::string>* renames) {
    for (int dim = 0; dim < 3; ++dim) {
      int i = family * 3 + dim;
      if (reads[i]) (*renames)[geometryName(i)] = value(geometrySuffix(i), ptx::integerOperand(shape[dim]));
    }
  }

 private:
  ptx::Builder builder_;
};

// The linear index of the thread in the fused block (`%tid.x` when the fused block is 1-D).
// Special registers are first moved into ordinary registers: ptxas accepts them as `mov` sources only.
std::string fusedLinearThread(PartCode& code, const core::Dim3& block) {
  std::string x = code.value("fused_tid_x", ptx::specialOperand(ptx::SpecialRegister::kTidX));
  if (block[1] == 1 && block[2] == 1) return x;
  std::string y = code.value("fused_tid_y", ptx::specialOperand(ptx::SpecialRegister::kTidY));
  std::string z = code.value("fused_tid_z", ptx::specialOperand(ptx::SpecialRegister::kTidZ));
  std::string yz = code.newReg("lin_yz");
  code.emit(ptx::makeInstruction(
      Opcode::kMad, {".lo", ".u32"},
      {ptx::registerOperand(yz), ptx::registerOperand(z), ptx::integerOperand(block[1]), ptx::registerOperand(y)}));
  std::string lin = code.newReg("lin_thread");
  code.emit(ptx::makeInstruction(
      Opcode::kMad, {".lo", ".u32"},
      {ptx::registerOperand(lin), ptx::registerOperand(yz), ptx::integerOperand(block[0]), ptx::registerOperand(x)}));
  return lin;
}

// Rewrites every reference to a relocated variable (`sym`, `sym+k`, `[sym+k]`).
void relocate(Operand& o, const Relocations& relocations) {
  if (o.kind == OperandKind::kAddress && !o.elements.empty() && o.elements[0].kind == OperandKind::kSymbol) {
    if (auto it = relocations.find(o.elements[0].name); it != relocations.end()) {
      o.elements[0].name = it->second.to;
      o.offset += it->second.offset;  // the parser keeps `[sym+k]`'s k on the address, not on the symbol
      return;
    }
  } else if (o.kind == OperandKind::kSymbol) {
    if (auto it = relocations.find(o.name); it != relocations.end()) {
      o.name = it->second.to;
      o.offset += it->second.offset;
      return;
    }
  }
  for (Operand& e : o.elements) relocate(e, relocations);
}

uint64_t alignUp(uint64_t v, uint64_t a) {
  return a <= 1 ? v : (v + a - 1) / a * a;
}

}  // namespace

Expected<FusionResult> fuseHorizontal(ptx::Module& module, const HorizontalFusion& spec) {
  const bool thread_layout = spec.layout == HorizontalLayout::kThreadPartitioned;
  const std::string layout_name = horizontalLayoutName(spec.layout);
  if (spec.kernels.size() < 2) return invalidArgument("horizontal fusion needs at least 2 kernels");
  if (spec.shapes.size() != spec.kernels.size()) {
    return invalidArgument("horizontal fusion: " + std::to_string(spec.kernels.size()) + " kernels but " +
                           std::to_string(spec.shapes.size()) + " launch shapes");
  }

  // ---- the parts and what they read ----
  std::vector<Part> parts(spec.kernels.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    Part& p = parts[k];
    p.index = static_cast<int>(k);
    p.f = module.findFunction(spec.kernels[k]);
    if (p.f == nullptr || !p.f->is_entry || !p.f->has_body) {
      return notFound("horizontal fusion: no .entry " + spec.kernels[k] + " with a body in the module");
    }
    p.shape = spec.shapes[k];
    p.tag = "k" + std::to_string(k) + "_";
    for (int d = 0; d < 3; ++d) {
      if (p.shape.grid[d] == 0 || p.shape.block[d] == 0) {
        return invalidArgument("horizontal fusion: kernel " + p.f->name + " has an empty launch shape (grid " +
                               dims(p.shape.grid) + ", block " + dims(p.shape.block) + ")");
      }
    }
    if (p.shape.threads() > kMaxThreadsPerBlock) {
      return invalidArgument("horizontal fusion: kernel " + p.f->name + " has " + std::to_string(p.shape.threads()) +
                             " threads per block (more than 1024)");
    }
    KFUSE_RETURN_IF_ERROR(inspectPart(module, p));
  }
  std::string fused_name = spec.fused_name;
  if (fused_name.empty()) {
    fused_name = "kfuse_horizontal";
    for (const std::string& k : spec.kernels) fused_name += "_" + k;
  }
  if (module.findFunction(fused_name) != nullptr) {
    return invalidArgument("horizontal fusion: the module already has a function called " + fused_name);
  }

  FusionResult result;
  result.fused_name = fused_name;

  // ---- the fused launch shape and each part's place in it ----
  core::LaunchShape& shape = result.shape;
  if (thread_layout) {
    uint64_t threads = 0, blocks = 0;
    for (Part& p : parts) {
      if (p.shape.threads() % 32 != 0) {
        return unsupported("thread-partitioned fusion: kernel " + p.f->name + " runs " +
                           std::to_string(p.shape.threads()) + " threads per block, not a multiple of 32 (each " +
                           "part must be whole warps so that warps and named barriers do not mix parts)");
      }
      p.first_thread = static_cast<uint32_t>(threads);
      threads += p.shape.threads();
      blocks = std::max(blocks, p.shape.blocks());
    }
    if (threads > kMaxThreadsPerBlock) {
      return unsupported("thread-partitioned fusion needs " + std::to_string(threads) +
                         " threads per block, more than 1024");
    }
    if (blocks > kMaxGridX) return unsupported("thread-partitioned fusion: grid too large");
    shape.block = {static_cast<uint32_t>(threads), 1, 1};
    shape.grid = {static_cast<uint32_t>(blocks), 1, 1};
    // Each part's dynamic shared memory starts at the alignment its `.extern .shared` arrays declare (at least
    // 16 bytes, what the driver guarantees for the start of dynamic shared memory).
    uint64_t align = kDynamicSharedAlign;
    for (const VariableDecl& v : module.variables) {
      if (ptx::baseSpace(v.space) == StateSpace::kShared && v.linkage == ptx::Linkage::kExtern) {
        align = std::max<uint64_t>(align, v.align);
      }
    }
    uint64_t dynamic = 0;
    for (Part& p : parts) {
      if (p.shape.dynamic_shared_bytes == 0) continue;
      dynamic = alignUp(dynamic, align);
      p.dynamic_offset = static_cast<uint32_t>(dynamic);
      dynamic += p.shape.dynamic_shared_bytes;
    }
    if (dynamic > UINT32_MAX) return unsupported("thread-partitioned fusion: too much dynamic shared memory");
    shape.dynamic_shared_bytes = static_cast<uint32_t>(dynamic);
    for (Part& p : parts) {
      p.rewrite_thread_geometry = true;
      p.rewrite_block_geometry = p.shape.grid != shape.grid;
    }
  } else {
    uint64_t blocks = 0;
    const Part* largest = &parts[0];
    for (Part& p : parts) {
      p.first_block = blocks;
      blocks += p.shape.blocks();
      if (p.shape.threads() > largest->shape.threads()) largest = &p;
      shape.dynamic_shared_bytes = std::max(shape.dynamic_shared_bytes, p.shape.dynamic_shared_bytes);
    }
    if (blocks > kMaxGridX) {
      return unsupported("block-partitioned fusion needs " + std::to_string(blocks) + " blocks, more than 2^31-1");
    }
    shape.grid = {static_cast<uint32_t>(blocks), 1, 1};
    shape.block = largest->shape.block;
    for (Part& p : parts) {
      p.rewrite_block_geometry = true;
      p.rewrite_thread_geometry = p.shape.block != shape.block;
    }
  }

  // ---- barriers ----
  int next_barrier = 0;
  for (Part& p : parts) {
    if (!p.has_barriers) continue;
    const bool smaller = p.shape.threads() < shape.threads();
    if (thread_layout && p.register_barrier_id) {
      return unsupported("thread-partitioned fusion: kernel " + p.f->name +
                         " names a barrier by a register; its ids cannot be remapped per part");
    }
    if ((thread_layout || smaller) && p.shape.threads() % 32 != 0) {
      return unsupported(layout_name + " fusion: kernel " + p.f->name + " synchronises its " +
                         std::to_string(p.shape.threads()) + " threads, which a named barrier cannot count " +
                         "(not a multiple of 32)");
    }
    for (int64_t id : p.barrier_ids) {
      if (id < 0 || id >= kMaxNamedBarriers) {
        return badFormat("kernel " + p.f->name + " uses barrier id " + std::to_string(id) + " (PTX allows 0-15)");
      }
      p.barrier_map[id] = thread_layout ? next_barrier++ : id;
    }
  }
  if (next_barrier > kMaxNamedBarriers) {
    return unsupported("thread-partitioned fusion needs " + std::to_string(next_barrier) +
                       " named barriers, more than 16");
  }

  // ---- .reqntid / .maxntid of the parts against the fused block ----
  for (const Part& p : parts) {
    for (const ptx::PerfDirective& d : p.f->directives) {
      if (d.name != ".reqntid" && d.name != ".maxntid") continue;
      uint64_t n = 1;
      for (int64_t v : d.values) n *= static_cast<uint64_t>(std::max<int64_t>(v, 1));
      bool violated = d.name == ".reqntid" ? n != shape.threads() : shape.threads() > n;
      if (violated) {
        return unsupported(layout_name + " fusion: kernel " + p.f->name + " declares " + d.name + " " +
                           std::to_string(n) + " but the fused block has " + std::to_string(shape.threads()) +
                           " threads");
      }
    }
  }

  // ---- shared memory ----
  std::set<std::string, std::less<>> dynamic_shared, static_shared;
  for (const VariableDecl& v : module.variables) {
    if (ptx::baseSpace(v.space) != StateSpace::kShared) continue;
    (v.linkage == ptx::Linkage::kExtern ? dynamic_shared : static_shared).insert(v.name);
  }
  std::map<std::string, int, std::less<>> taken;
  for (const VariableDecl& v : module.variables) taken.emplace(v.name, 0);
  for (const Function& f : module.functions) taken.emplace(f.name, 0);
  taken.emplace(fused_name, 0);
  std::vector<VariableDecl> new_variables;
  // Module-scope .shared variables that device functions use: the fused entry cannot move, copy or offset them,
  // since the callees would keep using the original.
  std::set<std::string, std::less<>> shared_used_by_callees;
  for (const Function& f : module.functions) {
    if (f.is_entry || !f.has_body) continue;
    for (const Statement& s : f.body) {
      if (s.kind != StatementKind::kInstruction) continue;
      Instruction in = s.inst;
      detail::forEachOperand(in, [&](Operand& o) {
        if (o.kind == OperandKind::kSymbol && (static_shared.count(o.name) || dynamic_shared.count(o.name))) {
          shared_used_by_callees.insert(o.name);
        }
      });
    }
  }
  // The module-scope static .shared variables each part reads.
  std::vector<std::set<std::string, std::less<>>> module_shared_used(parts.size());
  for (Part& p : parts) {
    for (const Statement& s : p.f->body) {
      if (s.kind != StatementKind::kInstruction) continue;
      Instruction in = s.inst;
      detail::forEachOperand(in, [&](Operand& o) {
        if (o.kind == OperandKind::kSymbol && static_shared.count(o.name)) module_shared_used[p.index].insert(o.name);
      });
    }
    if (thread_layout && p.dynamic_offset != 0) {
      for (const std::string& name : dynamic_shared) {
        if (shared_used_by_callees.count(name)) {
          return unsupported("thread-partitioned fusion: kernel " + p.f->name + " needs its dynamic shared memory " +
                             "at an offset, but device functions address " + name + " from its start");
        }
        p.shared[name] = Relocation{name, p.dynamic_offset};
      }
    }
  }
  auto moduleVariable = [&](const std::string& name) -> const VariableDecl& {
    for (const VariableDecl& v : module.variables) {
      if (v.name == name) return v;
    }
    KFUSE_CHECK(false);
    return module.variables.front();
  };
  std::optional<VariableDecl> overlay;  // block-partitioned: the one buffer all parts' static shared share
  if (!thread_layout) {
    // A block runs one part only, so the parts' static .shared variables can overlap: each part's variables are
    // laid out from offset 0 of one buffer as large as the largest part needs (ptxas never overlays two
    // variables by itself, and the sum would lower occupancy for nothing). Body-local declarations (nvcc's form)
    // and module-scope variables are both moved; a part with an unsized one keeps its own.
    std::vector<std::vector<std::pair<std::string, VariableDecl>>> vars(parts.size());
    size_t parts_with_shared = 0;
    uint64_t bytes = 0;
    uint32_t align = 1;
    for (Part& p : parts) {
      auto& v = vars[p.index];
      for (const Statement& s : p.f->body) {
        if (s.kind == StatementKind::kDeclaration && ptx::baseSpace(s.decl->space) == StateSpace::kShared &&
            s.decl->linkage != ptx::Linkage::kExtern) {
          v.emplace_back(detail::renamedVariable(s.decl->name, p.tag), *s.decl);
        }
      }
      for (const std::string& name : module_shared_used[p.index]) v.emplace_back(name, moduleVariable(name));
      bool sized = std::all_of(v.begin(), v.end(), [&](const auto& e) {
        return e.second.byteSize() > 0 && !shared_used_by_callees.count(e.first);
      });
      if (v.empty() || !sized) {
        v.clear();
        continue;
      }
      ++parts_with_shared;
      uint64_t offset = 0;
      for (const auto& [name, decl] : v) {
        uint32_t a = std::max<uint32_t>({decl.align, decl.elementSize(), 1});
        offset = alignUp(offset, a);
        p.shared[name] = Relocation{"", static_cast<int64_t>(offset)};
        offset += decl.byteSize();
        align = std::max(align, a);
      }
      bytes = std::max(bytes, offset);
    }
    if (parts_with_shared >= 2) {
      VariableDecl d;
      d.space = StateSpace::kShared;
      d.align = align;
      d.type = ptx::DataType::kB8;
      d.name = detail::uniqueName("kfuse_h_shared", taken);
      d.dims = {static_cast<int64_t>(bytes)};
      for (Part& p : parts) {
        for (auto& [name, r] : p.shared) r.to = d.name;
      }
      result.notes.push_back("static shared memory of the parts overlaid in " + d.name + " (" + std::to_string(bytes) +
                             " bytes)");
      overlay = std::move(d);
    } else {
      for (Part& p : parts) p.shared.clear();
    }
  }
  if (thread_layout) {
    // Two parts run in the same block: a static .shared buffer read by both must become two buffers.
    std::set<std::string, std::less<>> used_before;
    for (Part& p : parts) {
      const std::set<std::string, std::less<>>& used = module_shared_used[p.index];
      for (const std::string& name : used) {
        if (!used_before.count(name)) continue;
        if (shared_used_by_callees.count(name)) {
          return unsupported("thread-partitioned fusion: kernel " + p.f->name + " uses the shared variable " + name +
                             " that an earlier part uses too, and device functions use it as well: the " +
                             "parts cannot get a copy each");
        }
        VariableDecl copy = moduleVariable(name);
        copy.name = detail::uniqueName(name + "_" + p.tag + "kfuse", taken);
        p.shared[name] = Relocation{copy.name, 0};
        result.notes.push_back("shared variable " + name + " duplicated as " + copy.name + " for part " +
                               std::to_string(p.index) + " (" + p.f->name + ")");
        new_variables.push_back(std::move(copy));
      }
      used_before.insert(used.begin(), used.end());
    }
  }

  // ---- parameters: concatenated, equal arguments merged ----
  std::vector<const Function*> part_functions;
  for (const Part& p : parts) part_functions.push_back(p.f);
  auto merged = detail::mergeParameters(part_functions, spec.equal_args, fused_name);
  if (!merged.ok()) return merged.status().withContext("horizontal fusion");
  Function fused = detail::fusedEntry(fused_name, std::move(merged->decls));
  result.params = std::move(merged->params);
  std::vector<detail::BodyRenaming> renamings(parts.size());
  for (Part& p : parts) {
    renamings[p.index].tag = p.tag;
    renamings[p.index].params = std::move(merged->names[static_cast<size_t>(p.index)]);
  }

  // ---- the body ----
  std::vector<Statement> decls, code;
  for (Part& p : parts) {
    const std::string end_label = "$kfuse_h_end" + std::to_string(p.index);
    PartCode pc(p.index, &code, &decls);
    std::map<std::string, std::string> specials;  // special register -> the part's register
    FusionResult::Part rp;
    rp.kernel = p.index;
    rp.blocks = p.shape.blocks();
    rp.threads = static_cast<uint32_t>(p.shape.threads());
    std::string linear_block, linear_thread;
    if (thread_layout) {
      rp.first_thread = p.first_thread;
      std::string tid = pc.value("fused_tid_x", ptx::specialOperand(ptx::SpecialRegister::kTidX));
      linear_thread = pc.newReg("thread");
      pc.emit(ptx::makeInstruction(
          Opcode::kSub, {".u32"},
          {ptx::registerOperand(linear_thread), ptx::registerOperand(tid), ptx::integerOperand(p.first_thread)}));
      pc.skipUnlessBelow("not_mine", ptx::registerOperand(linear_thread), p.shape.threads(), end_label);
      linear_block = pc.value("block", ptx::specialOperand(ptx::SpecialRegister::kCtaidX));
      if (p.shape.blocks() < shape.blocks()) {
        pc.skipUnlessBelow("beyond_grid", ptx::registerOperand(linear_block), p.shape.blocks(), end_label);
      }
    } else {
      rp.first_block = p.first_block;
      std::string cta = pc.value("fused_ctaid_x", ptx::specialOperand(ptx::SpecialRegister::kCtaidX));
      linear_block = pc.newReg("block");
      pc.emit(ptx::makeInstruction(
          Opcode::kSub, {".u32"},
          {ptx::registerOperand(linear_block), ptx::registerOperand(cta), ptx::integerOperand(p.first_block)}));
      pc.skipUnlessBelow("not_mine", ptx::registerOperand(linear_block), p.shape.blocks(), end_label);
      if (p.rewrite_thread_geometry) {
        linear_thread = fusedLinearThread(pc, shape.block);
        if (p.shape.threads() < shape.threads()) {
          pc.skipUnlessBelow("beyond_block", ptx::registerOperand(linear_thread), p.shape.threads(), end_label);
        }
      }
    }
    if (p.rewrite_thread_geometry) {
      pc.split(linear_thread, p.shape.block, kTid, p.reads, &specials);
      pc.constants(p.shape.block, kNtid, p.reads, &specials);
    }
    if (p.rewrite_block_geometry) {
      pc.split(linear_block, p.shape.grid, kCtaid, p.reads, &specials);
      pc.constants(p.shape.grid, kNctaid, p.reads, &specials);
    }
    if (p.reads_dynamic_smem_size) {
      specials[ptx::specialRegisterName(ptx::SpecialRegister::kDynamicSmemSize)] =
          pc.value("dynamic_smem_size", ptx::integerOperand(p.shape.dynamic_shared_bytes));
    }

    std::vector<Statement> body = detail::renamedBody(*p.f, renamings[p.index]);
    std::vector<Statement> part_decls;
    detail::hoistDeclarations(body, &part_decls);
    for (Statement& d : part_decls) {
      // Overlaid static shared variables now live in the overlay buffer.
      if (overlay && p.shared.count(d.decl->name)) continue;
      decls.push_back(std::move(d));
    }
    const bool count_barriers = thread_layout || p.shape.threads() < shape.threads();
    for (Statement& s : body) {
      if (s.kind != StatementKind::kInstruction) continue;
      Instruction& in = s.inst;
      detail::forEachOperand(in, [&](Operand& o) {
        if (o.kind != OperandKind::kRegister) return;
        if (auto it = specials.find(o.name); it != specials.end()) o.name = it->second;
      });
      if (!p.shared.empty()) {
        for (Operand& o : in.operands) relocate(o, p.shared);
      }
      if (!detail::isCtaBarrier(in)) continue;
      BarrierOperands b = barrierOperands(in);
      if (b.id >= in.operands.size()) in.operands.push_back(ptx::integerOperand(0));
      if (auto id = in.operands[b.id].intValue()) {
        int64_t mapped = p.barrier_map.at(*id);
        in.operands[b.id] = ptx::integerOperand(static_cast<uint64_t>(mapped));
        if (rp.barrier_id < 0 || mapped < rp.barrier_id) rp.barrier_id = static_cast<int>(mapped);
      }
      if (count_barriers && !b.has_count) {
        in.operands.insert(in.operands.begin() + static_cast<std::ptrdiff_t>(b.count),
                           ptx::integerOperand(p.shape.threads()));
      }
    }
    if (!count_barriers && !thread_layout) rp.barrier_id = -1;
    code.insert(code.end(), std::make_move_iterator(body.begin()), std::make_move_iterator(body.end()));
    code.push_back(ptx::labelStatement(end_label));

    std::string where =
        thread_layout
            ? "threads [" + std::to_string(p.first_thread) + ", " + std::to_string(p.first_thread + p.shape.threads()) +
                  ") of blocks [0, " + std::to_string(p.shape.blocks()) + ")"
            : "blocks [" + std::to_string(p.first_block) + ", " + std::to_string(p.first_block + p.shape.blocks()) +
                  "), threads [0, " + std::to_string(p.shape.threads()) + ")";
    result.notes.push_back("part " + std::to_string(p.index) + " (" + p.f->name + ", grid " + dims(p.shape.grid) +
                           ", block " + dims(p.shape.block) + "): " + where);
    if (rp.barrier_id >= 0) {
      result.notes.push_back("part " + std::to_string(p.index) + ": CTA barriers become named barrier " +
                             std::to_string(rp.barrier_id) + " counting " + std::to_string(p.shape.threads()) +
                             " threads");
    }
    if (p.warp_synchronous) {
      // Warps are formed from the linear thread index. Thread-partitioned parts start at a multiple of 32 and
      // hold whole warps; block-partitioned parts start at thread 0 of their block, and a part whose thread
      // count is not a multiple of 32 has the same partial last warp it had in its own launch (the fused
      // block's extra lanes skip the part), so full-mask shuffles and votes see the same lanes as before.
      result.notes.push_back("part " + std::to_string(p.index) + ": warp-synchronous code keeps its warps (part " +
                             "starts at thread " + std::to_string(p.first_thread) + ")");
    }
    if (p.dynamic_offset != 0) {
      result.notes.push_back("part " + std::to_string(p.index) + ": dynamic shared memory at byte offset " +
                             std::to_string(p.dynamic_offset));
    }
    if (!p.f->directives.empty()) {
      result.notes.push_back("part " + std::to_string(p.index) + ": performance directives of " + p.f->name +
                             " are not carried to the fused kernel");
    }
    result.parts.push_back(rp);
  }
  code.push_back(ptx::instructionStatement(ptx::makeInstruction(Opcode::kRet, {}, {})));

  if (overlay) {
    Statement d;
    d.kind = StatementKind::kDeclaration;
    d.decl = std::move(*overlay);
    decls.insert(decls.begin(), std::move(d));
  }
  fused.body = std::move(decls);
  fused.body.insert(fused.body.end(), std::make_move_iterator(code.begin()), std::make_move_iterator(code.end()));
  KFUSE_RETURN_IF_ERROR(ptx::verify(fused).withContext("horizontal fusion produced an invalid kernel"));

  // Copied shared variables go just before the fused kernel; the fused kernel after everything else.
  for (VariableDecl& v : new_variables) {
    module.variables.push_back(std::move(v));
    module.order.push_back({ptx::TopLevelKind::kVariable, module.variables.size() - 1});
  }
  module.functions.push_back(std::move(fused));
  module.order.push_back({ptx::TopLevelKind::kFunction, module.functions.size() - 1});
  result.notes.insert(result.notes.begin(), layout_name + ": grid " + dims(shape.grid) + ", block " +
                                                dims(shape.block) + ", " + std::to_string(shape.dynamic_shared_bytes) +
                                                " bytes of dynamic shared memory");
  return result;
}

}  // namespace kfuse::rewriter
