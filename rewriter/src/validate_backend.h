// Where validation runs its kernels: the in-process PTX emulator, or the CUDA driver (the real libcuda.so.1 on a
// GPU, or kfuse's CPU stand-in with the same name). The validator (validate.cpp) does all the trial and compare
// logic over this interface, so both backends run exactly the same checks.
//
// A backend owns everything it allocates or loads and releases it when destroyed. Not thread-safe: one
// validation uses one backend from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/rewriter/fusion.h"

namespace kfuse::hooks {
struct DriverTable;
}

namespace kfuse::rewriter {

struct BackendKernel {
  int id = -1;
  // Byte size of each declared parameter, when the backend can tell (the emulator always can; the driver from
  // CUDA 12.4 on). Empty when unknown.
  std::vector<uint32_t> param_sizes;
  // Why the backend will refuse every launch of it (the emulator's decoder: an instruction it cannot run, more
  // registers than it has slots), "" when it may run.
  std::string cannot_run;
};

class ValidationBackend {
 public:
  virtual ~ValidationBackend() = default;

  // Loads a module from PTX text. Errors carry the loader's message; the caller names the file.
  virtual Expected<int> loadModule(std::string_view ptx) = 0;
  // The .entry `name` of a loaded module; kNotFound when there is none.
  virtual Expected<BackendKernel> findKernel(int module, const std::string& name) = 0;

  virtual Expected<uint64_t> allocate(uint64_t bytes) = 0;
  virtual Status release(uint64_t ptr) = 0;
  virtual Status copyIn(uint64_t dst, const void* src, uint64_t bytes) = 0;
  virtual Status copyOut(void* dst, uint64_t src, uint64_t bytes) = 0;

  // Runs `kernel` to completion. `params` holds each parameter's bytes, in declaration order. A non-ok Status is a
  // launch that failed (a fault, a deadlock, an instruction the backend cannot run), with the backend's message.
  virtual Status launch(int kernel, const core::LaunchShape& shape,
                        const std::vector<std::vector<uint8_t>>& params) = 0;

  // How long `launches` take on the device, issued back to back: one untimed warm-up, then `runs` timed runs, each
  // preceded by `restore` (untimed: the inputs put back), and the median in nanoseconds. kUnsupported, with a
  // sentence starting "not timed: ", from a backend whose times say nothing about a GPU (the emulator, kfuse's
  // stand-in driver) or that cannot time; another error when a timed run fails.
  struct Launch {
    int kernel = -1;
    core::LaunchShape shape;
    std::vector<std::vector<uint8_t>> params;
  };
  virtual Expected<uint64_t> medianNs(const std::vector<Launch>& launches, const std::function<Status()>& restore,
                                      int runs) = 0;
  // Why medianNs cannot time here ("not timed: ..."), or "" when it can: asked before any timing run is set up.
  virtual std::string whyNotTimed() const = 0;

  // Bytes of canary the validator puts after each buffer and checks after every run. The emulator needs none: its
  // allocations sit between unmapped gaps, so a stray access faults. A GPU faults only past its allocation
  // granularity (hundreds of bytes or more), so a kernel writing a little past its buffer would go unseen there.
  virtual uint64_t guardBytes() const { return 0; }

  // True when a failed launch leaves the backend unusable (a CUDA context after a fault): the validator then
  // opens a fresh backend before the next run.
  virtual bool failedLaunchIsSticky() const = 0;
};

// The PTX emulator, with one worker thread per host core (KFUSE_EMU_THREADS overrides).
// `max_warp_instructions`: emulator::Device::setInstructionBudget for every launch (0: none).
std::unique_ptr<ValidationBackend> makeEmulatorBackend(uint64_t max_warp_instructions = 0);

// The CUDA driver API from libcuda.so.1, loaded with dlopen when first needed (kfuse never links it), on device
// 0 in a context of its own. kUnsupported when there is no driver or no device.
Expected<std::unique_ptr<ValidationBackend>> makeDriverBackend();
// The driver behind `table` (a fake one in tests), in the calling thread's current context: it creates no
// context. `table` must outlive the backend.
Expected<std::unique_ptr<ValidationBackend>> makeDriverBackend(const hooks::DriverTable& table);

}  // namespace kfuse::rewriter
