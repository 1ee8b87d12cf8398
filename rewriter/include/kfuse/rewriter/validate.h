// Differential validation of a plan: the original launch sequence and the fused launch run on identical inputs,
// and every buffer any kernel writes must be bit-identical afterwards.
//
// Inputs, per argument set of the plan: random data, edge values of each buffer's element type (NaN, ±0, ±inf,
// denormals, INT_MIN/MAX), for the recorded argument values and for the ragged-size variants the plan carries.
// The emulator backend runs in-process on kfuse's PTX emulator; the gpu backend loads the real driver
// (libcuda.so.1) and needs a GPU. Thread-safe on distinct plans.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/rewriter/plan.h"

namespace kfuse::hooks {
struct DriverTable;
}

namespace kfuse::rewriter {

enum class Backend { kEmulator, kGpu };
const char* backendName(Backend b);  // "emu", "gpu"

// The most warp instructions one emulated launch of a validation may run (about a minute on one core): a fused
// kernel that never ends fails validation with the budget named instead of running forever.
inline constexpr uint64_t kDefaultValidationInstructions = uint64_t{1} << 30;

// Timed runs per side and argument set when validation times the fused kernel (after one warm-up): as many as
// `kfuse run --validate` makes.
inline constexpr int kValidationTimeRuns = 5;

struct ValidationOptions {
  uint64_t seed = 1;
  int trials = 0;  // data trials per argument set; 0 = every built-in trial kind (random, edge values, ...)
  Backend backend = Backend::kEmulator;
  uint64_t max_warp_instructions = kDefaultValidationInstructions;  // per emulated launch; 0: no budget
  std::function<void(const std::string&)> progress;                 // one line per run, may be empty
  int time_runs = kValidationTimeRuns;                              // timed runs per side on a GPU; 0: no timing
  // The gpu backend's driver: nullptr loads libcuda.so.1 and opens a context of its own; a table (a fake driver in
  // tests) is used as it is, in the calling thread's current context, and must outlive the validation.
  const hooks::DriverTable* driver = nullptr;
};

struct Mismatch {
  size_t argument_set = 0;
  std::string trial;  // "random (seed 7)", "edge values"
  int buffer = 0;
  std::string buffer_name;  // "buffer 2 (argument 1 of _Z3addPfS_S_i)"
  uint64_t element = 0;     // index of the first differing element of element_type
  std::string element_type;
  std::string original, fused;  // both values, printed (bits in hex when they are NaNs)
  std::string sentence() const;
};

// How a mismatch prints one element of PTX type `ptx_type` ("f32", "bf16", "s32", ...; "" = a byte) from its
// little-endian bits: integers in decimal, floats with enough digits to round-trip, NaNs as "nan (0x7fc01234)".
std::string formatElement(const std::string& ptx_type, uint64_t bits);

struct ValidationResult {
  bool passed = false;
  int runs = 0;
  std::vector<std::string> trials;  // what ran, one line each
  std::optional<Mismatch> mismatch;
  std::string failure;  // a launch that failed on one side (out-of-bounds, deadlock), or why nothing could run
  double seconds = 0;
  std::vector<std::string> files;  // the files it read, as sha256sum prints them (PlanValidation::files)
  // The fused kernel timed against the originals, once every run compared equal: figures on a GPU, else why not.
  PlanTiming timing;
};

// Runs the plan's originals and fused kernel from `plan_dir`. An error Status is for a plan that cannot be run at
// all (missing file, PTX that does not parse, a kernel the PTX lacks, arguments of the wrong size); a wrong result
// is `passed == false` with the reason: the first mismatch, or a fused launch that failed (fault, deadlock,
// unsupported instruction) in `failure`. A run whose *original* launches fail is skipped (its line in `trials`
// says why): such inputs are outside what the kernels accept (random indices, say), and the fused kernel is not
// held to them; when every run is skipped, validation fails. Runs stop at the first mismatch or failure.
// Trials per argument set: random (options.seed), edge values, zeros, small values; `trials` > 4 adds random
// trials with seeds seed+4, seed+5, ...
// When every run compared equal, the fused kernel is timed against the originals issued back to back on each
// argument set (random data; one warm-up, options.time_runs runs of each side, the median; PlanTiming). A backend
// that cannot time says why in `timing.not_timed` (the emulator, the stand-in driver); on a GPU a fused kernel that
// is not faster fails validation, with both times in `failure`.
Expected<ValidationResult> validatePlan(const Plan& plan, const std::string& plan_dir,
                                        const ValidationOptions& options);

// Why validation could not time fused kernels on a GPU here, or "" when it can: the CUDA driver loads, has a device,
// and is not kfuse's CPU stand-in. Opens (and closes) a context on device 0 to find out.
std::string whyNoGpuTiming();

// Records `result` in the plan's validation block: the backend's verdict ("passed"/"failed"), the seed, the runs,
// the first mismatch as a sentence (or the failure), the timing (an emulator validation leaves a GPU's figures in
// place) and `validated_at` (ISO 8601 UTC, now). Whoever stores
// validation elsewhere (the trace database) takes the same ValidationResult.
void recordValidation(PlanValidation& validation, const ValidationOptions& options, const ValidationResult& result);

// Appends the plan's validation result for `backend` to the kfuse_validation table of the SQLite trace at
// `trace_path` (created on first use). Returns false, writing nothing, when the trace is not a SQLite file (a JSON
// or imported trace); an error when the file cannot be written.
Expected<bool> recordValidationInTrace(const std::string& trace_path, const Plan& plan, const std::string& plan_dir,
                                       Backend backend);

}  // namespace kfuse::rewriter
