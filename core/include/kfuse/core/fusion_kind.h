// How the kernels of a fusion share the fused launch: the analyzer proves a candidate for one of these, the rewriter
// builds it, and plans and reports name it (docs/analyzer.md, "Fusion kinds").
#pragma once

#include <span>

#include "kfuse/core/enum_names.h"

namespace kfuse::core {

//  thread-local  vertical, one launch shape: each thread runs every kernel's body for itself;
//  epilogue      vertical, the producer's launch: each consumer runs per element right after the producer's store
//                of that element (element-remapped; the consumers are element-wise and 1-D);
//  horizontal    independent kernels side by side in one launch;
//  block-level   vertical, one launch shape: each block runs the producer's body, a barrier, then the consumer's
//                (each consumer block touches only what no other producer block touches);
//  prologue      vertical, the consumer's launch: each consumer load of the intermediate recomputes its element
//                with the producer's body (an element-wise 1-D producer; any consumer shape).
enum class FusionKind { kThreadLocal, kEpilogue, kHorizontal, kBlockLevel, kPrologue };

inline constexpr EnumName<FusionKind> kFusionKindNames[] = {{FusionKind::kThreadLocal, "thread-local"},
                                                            {FusionKind::kEpilogue, "epilogue"},
                                                            {FusionKind::kHorizontal, "horizontal"},
                                                            {FusionKind::kBlockLevel, "block-level"},
                                                            {FusionKind::kPrologue, "prologue"}};
constexpr std::span<const EnumName<FusionKind>> nameTable(FusionKind) {
  return kFusionKindNames;
}

// "horizontal" for independent kernels side by side, "vertical" for every kind that chains a producer and a
// consumer.
constexpr const char* fusionDirection(FusionKind k) {
  return k == FusionKind::kHorizontal ? "horizontal" : "vertical";
}

}  // namespace kfuse::core
