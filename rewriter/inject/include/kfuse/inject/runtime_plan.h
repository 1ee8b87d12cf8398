// A plan as the injector runs it: read from PLAN_DIR (plan.json + fused.ptx), checked once, flattened into what
// the launch path needs (argument layouts, predicates, the fused kernel's argument sources).
//
// Plain values; loadRuntimePlan is thread-safe on distinct directories.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/rewriter/plan.h"

namespace kfuse::inject {

// Limits of the launch path's fixed storage (no allocation while matching): longer patterns, kernels with more
// parameters or larger argument buffers are refused at load with a message.
inline constexpr int kMaxPatternKernels = 8;
inline constexpr int kMaxParams = 128;
inline constexpr uint32_t kMaxArgBytes = 4096;
inline constexpr int kMaxPlans = 64;  // plans are sets of bits on the launch path

struct RuntimeParam {
  uint32_t offset = 0, size = 0;
  bool pointer = false;
};

struct RuntimeKernel {
  std::string name;         // mangled
  std::string module_hash;  // hex SHA-256 of the module image
  core::LaunchShape shape;
  std::vector<RuntimeParam> params;
  uint32_t arg_bytes = 0;  // end of the last parameter
};

struct RuntimePlan {
  std::string dir;
  std::string label;  // "DIR (vertical, 4 kernels: scale, add, relu, mul)"
  core::FusionKind fusion = core::FusionKind::kThreadLocal;
  std::vector<RuntimeKernel> kernels;  // the pattern, in launch order
  std::vector<rewriter::Predicate> predicates;
  std::string fused_name;
  std::string fused_ptx;  // NUL-terminated when handed to the driver (std::string keeps the NUL)
  core::LaunchShape fused_shape;
  std::vector<rewriter::ArgRef> fused_args;  // the original argument each fused parameter takes
  std::vector<std::string> targets;          // "sm_90", ...
  // The fused kernel leaves out stores of intermediates the recorded launches showed dead afterwards (--aggressive):
  // proven for the launch order, not for a graph's other nodes and later replays, so never applied to graph nodes.
  bool drops_stores = false;
};

// Reads PLAN_DIR and checks it can run: plan.json parses and matches the schema's rules, it was validated
// ("passed" on the emulator or on a GPU), fused.ptx is readable and names the fused kernel, every reference in the
// predicates and fused parameters is in range, and the pattern fits the limits above. Errors name the directory
// and say what to do.
Expected<RuntimePlan> loadRuntimePlan(const std::string& dir);

}  // namespace kfuse::inject
