// Plans the rewriter's tests share: the vertical fusion of `scale` and `add` of
// examples/driver_api/elementwise_chain.cu, with the hand-written fused kernel of testdata/scale_add_fused.ptx,
// and a copy of it on disk laid out as `kfuse rewrite` would write it.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kfuse/core/trace.h"
#include "kfuse/rewriter/plan.h"

namespace kfuse::rewriter::testing {

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void writeFile(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

inline std::vector<uint8_t> le32(uint32_t v) {
  return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 24)};
}

inline ArgValue ptrArg(int buffer) {
  ArgValue v;
  v.pointer = true;
  v.buffer = buffer;
  return v;
}
inline ArgValue scalarArg(std::vector<uint8_t> bytes) {
  ArgValue v;
  v.bytes = std::move(bytes);
  return v;
}

inline core::LaunchShape shape1d(uint32_t grid, uint32_t block) {
  core::LaunchShape s;
  s.grid = {grid, 1, 1};
  s.block = {block, 1, 1};
  return s;
}

// scale(x, y, alpha, n) then add(y, b, c, n) over buffers x=0, y=1, b=2, c=3 of `n` floats, block 256.
inline ArgumentSet scaleAddArguments(uint32_t n, const std::string& origin) {
  ArgumentSet s;
  s.origin = origin;
  s.buffer_bytes = {4ull * n, 4ull * n, 4ull * n, 4ull * n};
  float alpha = 1.75f;
  uint32_t alpha_bits;
  std::memcpy(&alpha_bits, &alpha, 4);
  s.args = {{ptrArg(0), ptrArg(1), scalarArg(le32(alpha_bits)), scalarArg(le32(n))},
            {ptrArg(1), ptrArg(2), ptrArg(3), scalarArg(le32(n))}};
  uint32_t grid = (n + 255) / 256;
  s.shapes = {shape1d(grid, 256), shape1d(grid, 256)};
  s.fused_shape = shape1d(grid, 256);
  return s;
}

inline constexpr core::AccessMode kRead = core::AccessMode::kRead;
inline constexpr core::AccessMode kWrite = core::AccessMode::kWrite;

inline PlanParam param(int index, uint32_t offset, uint32_t size, bool pointer, std::optional<core::AccessMode> access,
                       std::string type) {
  return PlanParam{index, offset, size, pointer, access, std::move(type)};
}

// The plan, without argument sets beyond one ragged size; `module_hash` is the originals' module hash.
inline Plan scaleAddPlan(const std::string& module_hash) {
  Plan p;
  p.source_trace = "elementwise_chain.sqlite";
  p.candidate_rank = 1;
  p.fusion = core::FusionKind::kThreadLocal;
  std::string ptx_file = "originals/" + module_hash.substr(0, 16) + ".ptx";
  PlanKernel scale{"scale",
                   module_hash,
                   ptx_file,
                   shape1d(128, 256),
                   {param(0, 0, 8, true, kRead, "f32"), param(1, 8, 8, true, kWrite, "f32"),
                    param(2, 16, 4, false, std::nullopt, ""), param(3, 20, 4, false, std::nullopt, "")}};
  PlanKernel add{"add",
                 module_hash,
                 ptx_file,
                 shape1d(128, 256),
                 {param(0, 0, 8, true, kRead, "f32"), param(1, 8, 8, true, kRead, "f32"),
                  param(2, 16, 8, true, kWrite, "f32"), param(3, 24, 4, false, std::nullopt, "")}};
  p.kernels = {scale, add};
  Predicate eq;
  eq.kind = Predicate::Kind::kArgEqual;
  eq.a = {0, 1};
  eq.b = {1, 0};
  Predicate n_eq = eq;
  n_eq.a = {0, 3};
  n_eq.b = {1, 3};
  Predicate disjoint;
  disjoint.kind = Predicate::Kind::kNoOverlap;
  disjoint.buffers = {{0, 0}, {0, 1}, {1, 1}, {1, 2}};
  disjoint.bytes = {131072, 131072, 131072, 131072};
  Predicate same;
  same.kind = Predicate::Kind::kSameLaunchConfig;
  p.predicates = {eq, n_eq, disjoint, same};
  p.fused.name = "kfuse_scale_add";
  p.fused.arch = "sm_90";
  p.fused.params = {{"kfuse_scale_add_x", {{0, 0}}},     {"kfuse_scale_add_y", {{0, 1}, {1, 0}}},
                    {"kfuse_scale_add_alpha", {{0, 2}}}, {"kfuse_scale_add_n", {{0, 3}, {1, 3}}},
                    {"kfuse_scale_add_b", {{1, 1}}},     {"kfuse_scale_add_c", {{1, 2}}}};
  p.fused.shape = shape1d(128, 256);
  p.targets = {"sm_80", "sm_90"};
  p.argument_sets = {scaleAddArguments(32768, "launches 0-1 of the trace"),
                     scaleAddArguments(1000, "ragged: n = 1000 with block 256")};
  p.notes = {"hand-written fused kernel (rewriter/testdata/scale_add_fused.ptx)"};
  return p;
}

// Writes PLAN_DIR as `kfuse rewrite` lays it out: plan.json, fused.ptx (from `fused_ptx_file` under testdata),
// originals/<hash>.ptx (the examples' nvcc PTX). Returns the plan.
inline Plan writeScaleAddPlanDir(const std::filesystem::path& dir, const std::string& fused_ptx_file) {
  std::string originals = readFile(std::filesystem::path(KFUSE_EXAMPLE_PTX_DIR) / "elementwise_chain.ptx");
  std::string hash = core::sha256Hex(reinterpret_cast<const uint8_t*>(originals.data()), originals.size());
  Plan plan = scaleAddPlan(hash);
  writeFile(dir / plan.kernels[0].ptx_file, originals);
  writeFile(dir / "fused.ptx", readFile(std::filesystem::path(KFUSE_REWRITER_TESTDATA) / fused_ptx_file));
  (void)writePlan(dir.string(), plan);
  return plan;
}

// The whole chain scale -> add -> relu -> mul over buffers x=0, t1=1, bias=2, t2=3, t3=4, gate=5, out=6 of `n`
// floats, block 256, with the hand-written fused kernel of testdata/elementwise_chain_fused.ptx.
inline ArgumentSet chainArguments(uint32_t n, const std::string& origin) {
  ArgumentSet s;
  s.origin = origin;
  s.buffer_bytes.assign(7, 4ull * n);
  float alpha = 1.75f;
  uint32_t alpha_bits;
  std::memcpy(&alpha_bits, &alpha, 4);
  s.args = {{ptrArg(0), ptrArg(1), scalarArg(le32(alpha_bits)), scalarArg(le32(n))},
            {ptrArg(1), ptrArg(2), ptrArg(3), scalarArg(le32(n))},
            {ptrArg(3), ptrArg(4), scalarArg(le32(n))},
            {ptrArg(4), ptrArg(5), ptrArg(6), scalarArg(le32(n))}};
  uint32_t grid = (n + 255) / 256;
  s.shapes.assign(4, shape1d(grid, 256));
  s.fused_shape = shape1d(grid, 256);
  return s;
}

inline Plan writeChainPlanDir(const std::filesystem::path& dir, std::vector<ArgumentSet> sets) {
  std::string originals = readFile(std::filesystem::path(KFUSE_EXAMPLE_PTX_DIR) / "elementwise_chain.ptx");
  std::string hash = core::sha256Hex(reinterpret_cast<const uint8_t*>(originals.data()), originals.size());
  Plan p = scaleAddPlan(hash);
  PlanKernel relu{"relu",
                  hash,
                  p.kernels[0].ptx_file,
                  shape1d(128, 256),
                  {param(0, 0, 8, true, kRead, "f32"), param(1, 8, 8, true, kWrite, "f32"),
                   param(2, 16, 4, false, std::nullopt, "")}};
  PlanKernel mul = p.kernels[1];
  mul.mangled_name = "mul";
  p.kernels.push_back(relu);
  p.kernels.push_back(mul);
  p.predicates.clear();
  p.fused.name = "kfuse_elementwise_chain";
  p.fused.params = {{"kfuse_chain_x", {{0, 0}}},          {"kfuse_chain_t1", {{0, 1}, {1, 0}}},
                    {"kfuse_chain_alpha", {{0, 2}}},      {"kfuse_chain_n", {{0, 3}, {1, 3}, {2, 2}, {3, 3}}},
                    {"kfuse_chain_bias", {{1, 1}}},       {"kfuse_chain_t2", {{1, 2}, {2, 0}}},
                    {"kfuse_chain_t3", {{2, 1}, {3, 0}}}, {"kfuse_chain_gate", {{3, 1}}},
                    {"kfuse_chain_out", {{3, 2}}}};
  p.argument_sets = std::move(sets);
  writeFile(dir / p.kernels[0].ptx_file, originals);
  writeFile(dir / "fused.ptx",
            readFile(std::filesystem::path(KFUSE_REWRITER_TESTDATA) / "elementwise_chain_fused.ptx"));
  (void)writePlan(dir.string(), p);
  return p;
}

}  // namespace kfuse::rewriter::testing
