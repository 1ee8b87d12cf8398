// The special registers of PTX (PTX ISA 9.0, "Special Registers"), typed: which one an operand names and the facts
// passes ask of it (launch geometry and its axis, timers, shared-memory sizes). Their spellings live here only:
// code asks `specialRegister(operand.name)` and switches on the enum instead of comparing strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kfuse::ptx {

enum class SpecialRegister : uint8_t {
  // Launch geometry, one component each (%tid.x ...), then the .v4.u32 vectors the bare names are (%tid ...).
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kTid,
  kNtid,
  kCtaid,
  kNctaid,
  // Thread-block clusters (sm_90): the same per component, then the vectors, ranks and the explicit flag.
  kClusterIdX,
  kClusterIdY,
  kClusterIdZ,
  kNClusterIdX,
  kNClusterIdY,
  kNClusterIdZ,
  kClusterCtaIdX,
  kClusterCtaIdY,
  kClusterCtaIdZ,
  kClusterNCtaIdX,
  kClusterNCtaIdY,
  kClusterNCtaIdZ,
  kClusterId,
  kNClusterId,
  kClusterCtaId,
  kClusterNCtaId,
  kClusterCtaRank,
  kClusterNCtaRank,
  kIsExplicitCluster,
  // Where a thread runs.
  kLaneId,
  kWarpId,
  kNWarpId,
  kSmId,
  kNSmId,
  kGridId,
  kLaneMaskEq,
  kLaneMaskLe,
  kLaneMaskLt,
  kLaneMaskGe,
  kLaneMaskGt,
  // Time.
  kClock,
  kClockHi,
  kClock64,
  kGlobalTimer,
  kGlobalTimerLo,
  kGlobalTimerHi,
  // Numbered families (the number is returned beside the kind): %pm0..%pm7, %pm0_64..%pm7_64, %envreg0..%envreg31.
  kPerfMonitor,
  kPerfMonitor64,
  kEnvReg,
  // Shared memory sizes and the driver's reserved window.
  kDynamicSmemSize,
  kTotalSmemSize,
  kAggrSmemSize,
  kReservedSmemOffsetBegin,
  kReservedSmemOffsetEnd,
  kReservedSmemOffsetCap,
  kReservedSmemOffset0,
  kReservedSmemOffset1,
  // CUDA graphs: the executing graph's handle.
  kCurrentGraphExec,
};

// The special register `name` spells ("%tid.x", "%envreg3"), or nothing when it is not one (an ordinary register,
// or a spelling PTX does not define). `number` receives the index of a numbered family (%pm3 -> 3), else 0.
std::optional<SpecialRegister> specialRegister(std::string_view name, int* number = nullptr);
// The spelling: "%tid.x"; for a numbered family, with `number` ("%envreg3").
std::string specialRegisterName(SpecialRegister r, int number = 0);

// The launch-geometry families and the component a geometry register reads.
enum class GeometryFamily : uint8_t { kTid, kNtid, kCtaid, kNctaid };
struct GeometryComponent {
  GeometryFamily family = GeometryFamily::kTid;
  int axis = 0;  // 0, 1, 2 for .x, .y, .z
};
// %tid.x ... %nctaid.z; nothing for the vectors and everything else.
std::optional<GeometryComponent> geometryComponent(SpecialRegister r);
// The register of one family and axis: (kCtaid, 1) -> kCtaidY.
SpecialRegister geometryRegister(GeometryFamily family, int axis);
// The bare vector forms %tid, %ntid, %ctaid, %nctaid.
bool isGeometryVector(SpecialRegister r);

// %clock, %clock_hi, %clock64, %globaltimer and its halves: values that change while a thread runs.
bool isTimer(SpecialRegister r);
// Whether two threads of one block may read different values: the thread's indices, lane and warp, lane masks,
// timers and performance counters. The block's and grid's indices and sizes, the SM, sizes and the environment
// are the same for every thread of a block.
bool variesWithinBlock(SpecialRegister r);
// %dynamic_smem_size and %total_smem_size: sizes a launch's dynamic shared memory changes.
bool readsLaunchSharedMemorySize(SpecialRegister r);

}  // namespace kfuse::ptx
