// PTX emulator: runs kernels from PTX text (or fatbins holding PTX) on the CPU, with SIMT warps, memory
// spaces, barriers, atomics, shuffles and per-launch counters. See docs/emulator.md for the design.
//
// Ownership and lifetime: a Device owns its Memory and the Programs loaded into it; a Program must not outlive
// the Device it was loaded into (it frees its module globals through it). Kernel handles point into their
// Program and live as long as it does.
// Thread-safety: Memory, Device::load*, Device::launch and the counter queries may be called from several host
// threads at once; allocation and free wait for running launches (a reader/writer lock).
// Errors: every failure is a Status with a message naming the kernel, block, thread, address and PTX line where
// that applies; nothing throws and bad PTX never crashes the process.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/core/trace.h"

namespace kfuse::emulator {

using DevicePtr = uint64_t;

// Instruction classes counted per launch (thread-level: one per active thread per executed instruction).
enum class InstClass : uint8_t {
  kInteger,  // integer and bit arithmetic, logic, shifts, setp/selp on integers
  kFp16,     // f16/bf16 (scalar and x2) arithmetic
  kFp32,     // f32 arithmetic incl. setp/selp on f32 and math approximations
  kFp64,     // f64 arithmetic
  kConvert,  // cvt, cvta
  kMove,     // mov, special registers
  kLoad,     // ld (all spaces)
  kStore,    // st (all spaces)
  kAtomic,   // atom, red
  kControl,  // bra, call, ret, exit
  kSync,     // bar, membar, fence
  kWarp,     // shfl, vote, match, activemask, redux
  kOther,
  kCount,
};
inline constexpr size_t kInstClassCount = static_cast<size_t>(InstClass::kCount);
const char* instClassName(InstClass c);  // "integer", "fp32", ...

// What one launch did. Thread-level counts: an instruction executed by 20 active threads of a warp counts 20.
// FLOPs count fma/mad as 2, other arithmetic as 1, per active thread (x2 for packed f16x2/bf16x2).
struct LaunchCounters {
  uint64_t thread_instructions = 0;
  uint64_t warp_instructions = 0;
  std::array<uint64_t, kInstClassCount> by_class{};
  uint64_t global_load_bytes = 0;
  uint64_t global_store_bytes = 0;
  uint64_t shared_load_bytes = 0;
  uint64_t shared_store_bytes = 0;
  uint64_t local_load_bytes = 0;
  uint64_t local_store_bytes = 0;
  uint64_t global_atomics = 0;  // thread-level atomic operations on global memory (atom + red)
  uint64_t shared_atomics = 0;
  uint64_t flops_f16 = 0;  // f16 and bf16
  uint64_t flops_f32 = 0;
  uint64_t flops_f64 = 0;
  uint64_t blocks = 0;
  uint64_t threads = 0;

  void add(const LaunchCounters& o);
};

// One launch as the counter API reports it.
struct LaunchRecord {
  uint64_t sequence = 0;  // 1, 2, ... per Device
  std::string kernel;
  core::Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  LaunchCounters counters;
  double wall_seconds = 0;  // host time the emulation took
  bool ok = true;
  std::string error;  // message when !ok
};

// Device memory: a private 64-bit address space with guard gaps between allocations, so out-of-bounds and
// use-after-free accesses are caught. Addresses are never reused after free.
class Memory {
 public:
  Memory();
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  Expected<DevicePtr> allocate(uint64_t bytes, std::string tag = {});
  Status free(DevicePtr ptr);
  Status copyToDevice(DevicePtr dst, const void* src, uint64_t bytes);
  Status copyToHost(void* dst, DevicePtr src, uint64_t bytes);
  Status copyDeviceToDevice(DevicePtr dst, DevicePtr src, uint64_t bytes);
  // Writes `count` elements of `element_bytes` (1, 2 or 4) with `value`.
  Status fill(DevicePtr dst, uint32_t value, uint32_t element_bytes, uint64_t count);
  // Base and size of the live allocation containing `ptr`.
  Status rangeOf(DevicePtr ptr, DevicePtr* base, uint64_t* size) const;
  uint64_t bytesInUse() const;

  // Virtual memory management (cuMemCreate, cuMemAddressReserve, cuMemMap). Physical memory is a zeroed buffer
  // shared by its mappings: two mappings of one buffer are two address ranges over the same bytes, as on a GPU, so
  // a program mapping memory twice sees its writes through both. A mapping keeps its buffer alive after the
  // handle that made it is released.
  using Physical = std::shared_ptr<uint8_t>;
  static Expected<Physical> createPhysical(uint64_t bytes);
  // An address range with nothing mapped: accesses fault until a mapping covers them.
  Expected<DevicePtr> reserve(uint64_t bytes);
  // Frees a reservation made by reserve() (exactly that base and size) with nothing mapped in it.
  Status releaseReservation(DevicePtr base, uint64_t bytes);
  // Maps [offset, offset + bytes) of `physical` (of `physical_bytes`) at `va`, which must lie in a reservation and
  // overlap no other mapping.
  Status map(DevicePtr va, uint64_t bytes, Physical physical, uint64_t physical_bytes, uint64_t offset);
  // Removes every mapping inside [va, va + bytes); `va` must start one.
  Status unmap(DevicePtr va, uint64_t bytes);

  // Host memory the device may access at its own address (page-locked, registered or mapped host memory under
  // unified addressing): kernels and copies reach [p, p + bytes) directly, so host memory mapped twice by the
  // program aliases for its kernels too. Refused where the range meets the emulator's address windows or device
  // allocations. Such ranges are not allocations: rangeOf() does not find them.
  Status mapHost(void* p, uint64_t bytes);
  Status unmapHost(void* p);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct ParamInfo {
  uint32_t offset = 0;  // byte offset in the parameter buffer
  uint32_t size = 0;
  uint32_t align = 0;
};

struct KernelInfo {
  std::string name;
  std::vector<ParamInfo> params;
  uint32_t param_bytes = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t local_bytes = 0;               // per thread, entry frame
  uint32_t num_registers = 0;             // declared registers (an upper bound of what ptxas would use)
  uint32_t max_threads_per_block = 1024;  // from .maxntid/.reqntid when present
  uint32_t ptx_line = 0;
};

class Program;
class WorkerPool;
struct DecodedFunction;

// A kernel of a loaded Program.
class Kernel {
 public:
  const KernelInfo& info() const { return info_; }
  const Program& program() const { return *program_; }
  // Not ok when the kernel (or a function it calls) could not be decoded, e.g. because of an unsupported
  // instruction; launching it returns this status (instruction name, kernel, PTX line).
  const Status& loadStatus() const { return load_status_; }

 private:
  friend class Program;
  friend class Device;
  KernelInfo info_;
  Status load_status_;
  const Program* program_ = nullptr;
  const DecodedFunction* fn_ = nullptr;
};

struct GlobalSymbol {
  std::string name;
  DevicePtr address = 0;
  uint64_t size = 0;
};

// A loaded module: decoded functions and the module's global/const variables placed in device memory.
class Program {
 public:
  ~Program();
  const std::vector<std::unique_ptr<Kernel>>& kernels() const { return kernels_; }
  const Kernel* findKernel(std::string_view name) const;
  const GlobalSymbol* findGlobal(std::string_view name) const;
  const std::string& name() const { return name_; }

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  friend class Device;
  Program() = default;
  std::string name_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::vector<GlobalSymbol> globals_;
  std::unique_ptr<Impl> impl_;
  Memory* memory_ = nullptr;
};

// Called after every launch (from the launching thread) with its record; used by the collector.
using LaunchObserver = std::function<void(const LaunchRecord&)>;

class Device {
 public:
  // `worker_threads` 0: the KFUSE_EMU_THREADS environment variable, else the number of host cores.
  explicit Device(unsigned worker_threads = 0);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  Memory& memory() { return memory_; }

  // Parses and decodes PTX text. A kernel with an unsupported instruction does not fail the load: its
  // Kernel::loadStatus() names the instruction, kernel and line, a warning is logged, and launching it fails.
  Expected<std::shared_ptr<Program>> loadPtx(std::string_view ptx, std::string_view name = "<ptx>");
  // PTX text, or a fatbin / host ELF holding PTX: the PTX entry with the highest arch <= 90 is used.
  Expected<std::shared_ptr<Program>> loadImage(std::span<const uint8_t> image, std::string_view name = "<image>");

  // Runs a kernel to completion. `params` is the parameter buffer laid out as KernelInfo::params says.
  Status launch(const Kernel& kernel, const core::LaunchShape& config, std::span<const uint8_t> params,
                LaunchCounters* counters = nullptr);
  // Builds the parameter buffer from CUDA-style `void** args` (one pointer per parameter).
  static std::vector<uint8_t> packParams(const KernelInfo& info, void* const* args);

  // The most warp instructions one launch may run before it fails with an error naming the budget (a kernel that
  // never ends: `kfuse validate` sets one); 0, the default, is no budget. Not thread-safe against running launches.
  void setInstructionBudget(uint64_t max_warp_instructions) { max_warp_instructions_ = max_warp_instructions; }
  uint64_t instructionBudget() const { return max_warp_instructions_; }

  unsigned workerThreads() const { return workers_; }
  // Not thread-safe against launches running at the same time.
  void setWorkerThreads(unsigned n);

  // Counter API (for the collector and tests). Records are kept for the last `historyLimit()` launches.
  std::vector<LaunchRecord> launchHistory() const;
  LaunchRecord lastLaunch() const;
  // Sequence number of the last launch the calling thread made on any Device (0: none). Launches are synchronous,
  // so right after launch() returns this is that launch, whatever other threads launch meanwhile.
  static uint64_t callingThreadLastSequence();
  LaunchCounters totalCounters() const;
  void clearHistory();
  size_t historyLimit() const { return 4096; }
  void setLaunchObserver(LaunchObserver observer);

  // Where device-side printf output goes (default stdout). Not thread-safe against running launches.
  void setPrintfSink(std::function<void(std::string_view)> sink);

 private:
  void record(LaunchRecord r);
  Memory memory_;
  unsigned workers_ = 1;
  uint64_t max_warp_instructions_ = 0;
  std::unique_ptr<WorkerPool> pool_;  // workers_ - 1 host threads, started with the Device
  mutable std::mutex history_mu_;
  std::vector<LaunchRecord> history_;
  LaunchCounters total_;
  uint64_t sequence_ = 0;
  LaunchObserver observer_;
  std::function<void(std::string_view)> printf_sink_;
  std::mutex printf_mu_;
};

}  // namespace kfuse::emulator
