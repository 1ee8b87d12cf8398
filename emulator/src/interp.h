// Private: the decoded form of PTX functions and the interpreter state shared by decode.cpp and exec.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kfuse/emulator/emulator.h"
#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/special_registers.h"
#include "memory_impl.h"

namespace kfuse::emulator {

struct Ctx;
struct DInst;
// Executes one instruction for the lanes in `mask`; false = the launch stops (Ctx::error holds why).
using Handler = bool (*)(Ctx& c, const DInst& d, uint32_t mask);

enum class Kind : uint8_t { kNormal, kBranch, kExit, kRet, kBarSync, kBarArrive, kCall, kTrap };

// Memory spaces as the handlers see them.
enum class Space : uint8_t { kGlobal, kShared, kLocal, kGeneric, kKernelParam, kFrameParam, kConst };

// Flags
inline constexpr uint16_t kFtz = 1, kSat = 2, kNegC = 4, kNegA = 8, kNegB = 16, kHasC = 32, kApprox = 64;

// Decoded instruction. Every value operand is a register slot: immediates, symbol addresses and special
// registers are materialised into constant slots of the frame when it is created, so handlers never look at
// operand kinds. Predicates are separate: one 32-bit lane mask per predicate register.
struct DInst {
  Handler fn = nullptr;
  Kind kind = Kind::kNormal;
  uint8_t cls = 0;     // InstClass
  uint8_t flops = 0;   // per thread
  uint8_t fprec = 0;   // 0 none, 1 f16, 2 f32, 3 f64
  uint8_t rnd = 0;     // 0 rn, 1 rz, 2 rm, 3 rp (also rni/rzi/rmi/rpi)
  uint8_t cmp = 0;     // setp comparison
  uint8_t boolop = 0;  // setp combine: 0 none, 1 and, 2 or, 3 xor
  uint8_t space = 0;   // Space
  uint8_t vec = 1;     // vector width for ld/st
  uint8_t size = 0;    // access size in bytes
  uint8_t aux8 = 0;    // op-specific (shfl mode, vote mode, atomic op...)
  uint16_t flags = 0;
  uint16_t guard = 0;  // predicate index + 1; 0 = unguarded
  bool guard_neg = false;
  uint16_t d0 = 0, d1 = 0;              // destination slots (or predicate indices)
  uint16_t a = 0, b = 0, c = 0, e = 0;  // source slots (or predicate indices for predicate operands)
  uint16_t v[4] = {0, 0, 0, 0};         // vector ld/st registers
  int64_t imm = 0;                      // address offset; lut; barrier id...
  int32_t target = -1;                  // branch target pc; callee index
  uint32_t line = 0;                    // PTX source line
};

struct SpecialInit {
  uint16_t slot;
  ptx::SpecialRegister what;  // the register whose value the slot holds (exec.cpp: specialValue)
};

struct CallArg {
  bool is_reg = false;  // register/constant argument (copied per lane) vs .param symbol
  uint16_t slot = 0;    // when is_reg
  uint32_t offset = 0;  // caller param-area offset when !is_reg
  uint32_t size = 0;
};

struct CallSite {
  int callee = -1;        // index into Program::Impl::functions; -1 for a builtin or indirect call
  bool indirect = false;  // target address in register slot `target_slot`
  uint16_t target_slot = 0;
  int builtin = 0;  // 1 vprintf, 2 __assertfail
  std::vector<CallArg> args;
  std::vector<CallArg> rets;
};

struct DecodedFunction {
  std::string name;
  bool is_entry = false;
  std::vector<DInst> code;
  std::vector<std::string> text;  // full opcode per pc, for messages
  uint32_t num_slots = 0;         // 64-bit register slots (declared + constants + specials + scratch)
  uint32_t num_preds = 0;
  std::vector<uint64_t> const_values;  // slot -> value, for constant slots (broadcast to all lanes)
  std::vector<uint16_t> const_slots;
  std::vector<uint16_t> local_addr_slots;  // constant slots holding a frame-relative local address
  std::vector<SpecialInit> specials;
  uint32_t param_area = 0;               // per-lane bytes of .param storage (formal, return and call-site params)
  std::vector<uint32_t> formal_offsets;  // .func: per-lane offsets of formal params
  std::vector<uint32_t> formal_sizes;
  std::vector<uint32_t> return_offsets;
  std::vector<uint32_t> return_sizes;
  uint32_t local_bytes = 0;  // per-thread local frame
  bool uses_barrier = false;
  std::vector<CallSite> calls;
  KernelInfo info;  // entries
  Status status;    // decode failure (e.g. an unsupported instruction); reported at launch
};

struct Program::Impl {
  std::vector<std::unique_ptr<DecodedFunction>> functions;
  uint32_t static_shared = 0;  // module-wide static shared layout size
  bool has_calls = false;
  bool uses_dynamic_shared = false;
};

// Decodes a parsed module; allocates module globals in `memory` (returned in `globals`).
Status decodeModule(const ptx::Module& module, Memory& memory, Program::Impl* out, std::vector<GlobalSymbol>* globals,
                    const std::string& program_name);

// Runs the launch. Defined in exec.cpp.
struct LaunchRequest {
  const DecodedFunction* fn = nullptr;
  const Program::Impl* program = nullptr;
  core::LaunchShape config;
  std::span<const uint8_t> params;
  Memory* memory = nullptr;
  unsigned workers = 1;
  class WorkerPool* pool = nullptr;  // optional; threads are started per launch without one
  std::function<void(std::string_view)> printf_sink;
  uint64_t max_warp_instructions = 0;  // the launch fails past this many (Device::setInstructionBudget); 0: none
};
Status runLaunch(const LaunchRequest& req, LaunchCounters* counters);

// Floating-point helpers shared by decode and exec (fp16.cpp).
uint16_t floatToHalf(float f, int rnd = 0);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f, int rnd = 0);
float bf16ToFloat(uint16_t h);

// Directed rounding (rounding.cpp, compiled with -frounding-math). op: 0 add 1 sub 2 mul 3 fma 4 div 5 sqrt
// 6 cvt-from-f64 (f32 result) 7 cvt-from-s64 8 cvt-from-u64 9 rcp. prec: 2 f32, 3 f64.
void directedRound(int rnd, int op, int prec, const uint64_t* A, const uint64_t* B, const uint64_t* C, uint64_t* D,
                   uint32_t mask, bool ftz);

// Formats device printf output (printf.cpp). `read_arg` copies bytes from the argument buffer at an offset;
// `read_string` reads a NUL-terminated string at a device address (for %s).
std::string formatDevicePrintf(const std::string& fmt, const std::function<bool(uint64_t, void*, size_t)>& read_arg,
                               const std::function<std::string(uint64_t)>& read_string);

}  // namespace kfuse::emulator
