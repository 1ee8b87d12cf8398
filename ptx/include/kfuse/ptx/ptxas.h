// Running NVIDIA's ptxas on PTX text and comparing resource reports: the oracle for the printer's round trip.
//
// ptxas runs in a child process on a temporary file; nothing here needs a GPU. Thread-safe (each call uses its
// own temporary directory).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/ptx/ir.h"

namespace kfuse::ptx {

struct PtxasReport {
  int exit_code = -1;
  std::string log;                     // ptxas stdout+stderr
  std::vector<std::string> resources;  // `ptxas -v` info lines (registers, shared, stack, spills), in order
};

// Locates ptxas: $KFUSE_PTXAS, then PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin.
Expected<std::string> findPtxas();

// Compiles `ptx` with `ptxas -v -arch=<arch>`; `arch` empty = ptxas's default. A non-zero exit code is reported
// in the result, not as an error; errors are for failing to run ptxas at all.
Expected<PtxasReport> runPtxas(std::string_view ptx, const std::string& arch, const std::string& ptxas = "");

// `module` printed with its .target set to `arch` ("sm_80"): ptxas compiles only for architectures at least as new
// as the PTX's .target, so building a module for an older one needs it retargeted.
std::string printForArch(Module module, const std::string& arch);

struct RoundTripResult {
  bool holds = false;  // printed PTX compiled and its resource report equals the original's
  std::string arch;
  std::string printed;  // the printed PTX
  PtxasReport original;
  PtxasReport reprinted;
  std::string difference;  // first differing line (or the reason it does not hold), empty when it holds
};

// parse -> print -> ptxas on both texts -> compare resource reports. `arch` empty = the module's .target.
Expected<RoundTripResult> roundTrip(std::string_view ptx, const std::string& arch = "",
                                    std::string_view filename = "<ptx>");

}  // namespace kfuse::ptx
