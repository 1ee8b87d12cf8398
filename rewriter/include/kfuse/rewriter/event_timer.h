// The one way kfuse times kernels on a GPU: device events around the work on one stream, through the driver's
// function table (hooks::DriverTable), so that tests time against a fake driver whose clock they set. `kfuse run
// --validate` (the injector) and `kfuse validate --backend gpu` both time with it.
//
// Stateless; thread-safe as far as the table's functions are.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "kfuse/hooks/driver_hooks.h"

namespace kfuse::rewriter {

// Why the driver behind `table` cannot time kernels ("not timed: ..."), or "" when it can: kfuse's stand-in driver
// runs kernels on the CPU, and a driver without events cannot time at all.
std::string whyNotTimed(const hooks::DriverTable& table);

// The median of `runs` timed runs of `run` (after one untimed warm-up), in nanoseconds: each run is preceded by
// `restore` (the inputs put back) and a synchronize, and timed between two events recorded on `stream`. nullopt,
// with `*why` ("timing failed: ..."), when a call fails. Needs the table's event functions and
// CtxSynchronizeDirect (see whyNotTimed).
std::optional<uint64_t> medianEventNs(const hooks::DriverTable& table, CUstream stream, int runs,
                                      const std::function<CUresult()>& restore, const std::function<CUresult()>& run,
                                      std::string* why);

}  // namespace kfuse::rewriter
