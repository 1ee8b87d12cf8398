// Traces built in memory for tests and benchmarks. Deterministic: the same call gives the same trace.
#pragma once

#include <cstddef>

#include "kfuse/core/trace.h"

namespace kfuse::testing {

// A small trace with at least two records of every kind, every optional field set somewhere and unset
// somewhere else (kNoTime, kNoId, empty blobs), and 64-bit values that use the top bit.
core::Trace makeEveryKindTrace();

// A launch as the collector would record it: `pointer_args` pointers into allocation 1.., 32 bytes of args.
core::Launch makeLaunch(core::Id id, int pointer_args = 2);

}  // namespace kfuse::testing
