// Warp scheduling (SIMT with per-lane PCs, minimum-PC reconvergence), barriers, calls, device printf, and the
// launch driver that runs blocks on host threads.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "ctx.h"
#include "worker_pool.h"

namespace kfuse::emulator {

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

enum LaneState : uint8_t { kAbsent = 0, kReady = 1, kAtBarrier = 2, kExited = 3, kReturned = 4 };

// One warp executing one function frame. The lanes in `active` are at `pc`; other ready lanes wait at their
// own lane_pc, all of which are > pc (the group with the smallest PC always runs first, which reconverges
// structured control flow at its immediate post-dominator without a reconvergence stack).
struct Group {
  const DecodedFunction* fn = nullptr;
  uint64_t* r = nullptr;
  uint32_t* p = nullptr;
  uint8_t* fparam = nullptr;
  uint32_t local_base = 0;
  uint32_t lane_pc[32] = {};
  uint8_t state[32] = {};
  uint8_t bar_id[32] = {};
  uint32_t bar_pc[32] = {};  // pc of the bar instruction a waiting lane executed (for bar.red results)
  uint32_t pc = 0, active = 0, wait_min = UINT32_MAX;

  // Picks the next group of lanes. False when no lane is ready.
  bool pick() {
    uint32_t minpc = UINT32_MAX;
    for (int l = 0; l < 32; ++l)
      if (state[l] == kReady && lane_pc[l] < minpc) minpc = lane_pc[l];
    if (minpc == UINT32_MAX) {
      active = 0;
      wait_min = UINT32_MAX;
      return false;
    }
    uint32_t act = 0, wmin = UINT32_MAX;
    for (int l = 0; l < 32; ++l) {
      if (state[l] != kReady) continue;
      if (lane_pc[l] == minpc)
        act |= 1u << l;
      else
        wmin = std::min(wmin, lane_pc[l]);
    }
    pc = minpc;
    active = act;
    wait_min = wmin;
    return true;
  }
  void writeBack() {
    for (uint32_t m = active; m; m &= m - 1) lane_pc[__builtin_ctz(m)] = pc;
  }
  bool anyWaiting() const {
    for (int l = 0; l < 32; ++l)
      if (state[l] == kAtBarrier) return true;
    return false;
  }
};

struct Barrier {
  uint32_t arrived = 0;
  uint32_t expected = 0;  // 0: all non-exited threads of the block
  uint32_t red_true = 0;  // bar.red: threads whose predicate was true
};

struct BlockState {
  std::vector<Group> warps;
  std::vector<uint64_t> regs;
  std::vector<uint32_t> preds;
  std::vector<uint8_t> fparams;
  std::vector<uint8_t> shared;
  std::vector<uint8_t> local;
  Barrier bars[16];
  uint32_t exited_threads = 0;
  uint32_t threads = 0;
};

enum class Stop { kDone, kBarrier, kYield, kError };

// A warp yields to the other warps of its block after this many instructions, so spin-waits on shared memory
// written by another warp make progress.
constexpr uint64_t kWarpSlice = 1 << 16;

// The value of special register `what` for thread `t` (lane `lane`) of the block. Registers without a meaning here
// (the driver's environment, performance counters, reserved shared memory, a cluster of one's ranks) read as 0.
uint64_t specialValue(ptx::SpecialRegister what, const Ctx& c, const LaunchShared& L, uint32_t t, int lane,
                      uint32_t nwarps) {
  using R = ptx::SpecialRegister;
  const core::Dim3& b = L.cfg.block;
  const core::Dim3& g = L.cfg.grid;
  switch (what) {
    case R::kTidX: return t % b.x;
    case R::kTidY: return (t / b.x) % b.y;
    case R::kTidZ: return t / (b.x * b.y);
    case R::kNtidX: return b.x;
    case R::kNtidY: return b.y;
    case R::kNtidZ: return b.z;
    case R::kCtaidX: return c.ctaid.x;
    case R::kCtaidY: return c.ctaid.y;
    case R::kCtaidZ: return c.ctaid.z;
    case R::kNctaidX: return g.x;
    case R::kNctaidY: return g.y;
    case R::kNctaidZ: return g.z;
    case R::kLaneId: return uint32_t(lane);
    case R::kWarpId: return t / 32;
    case R::kNWarpId: return nwarps;
    case R::kSmId: return 0;
    case R::kNSmId: return 132;
    case R::kGridId: return 1;
    case R::kLaneMaskEq: return 1u << lane;
    case R::kLaneMaskLt: return (1u << lane) - 1;
    case R::kLaneMaskLe: return lane == 31 ? 0xffffffffu : (1u << (lane + 1)) - 1;
    case R::kLaneMaskGt: return lane == 31 ? 0u : ~((1u << (lane + 1)) - 1);
    case R::kLaneMaskGe: return ~((1u << lane) - 1);
    case R::kDynamicSmemSize: return L.cfg.dynamic_shared_bytes;
    case R::kTotalSmemSize: return L.shared_bytes;
    default: return 0;
  }
}

// Fills a frame's constant and special-register slots.
void initFrame(const DecodedFunction& fn, uint64_t* regs, uint32_t local_base, const Ctx& c, uint32_t warp,
               uint32_t nwarps) {
  for (size_t i = 0; i < fn.const_slots.size(); ++i) {
    uint64_t v = fn.const_values[i];
    uint64_t* s = regs + size_t(fn.const_slots[i]) * 32;
    for (int l = 0; l < 32; ++l) s[l] = v;
  }
  for (uint16_t slot : fn.local_addr_slots) {
    uint64_t* s = regs + size_t(slot) * 32;
    for (int l = 0; l < 32; ++l) s[l] += local_base;
  }
  for (const SpecialInit& sp : fn.specials) {
    uint64_t* s = regs + size_t(sp.slot) * 32;
    for (int l = 0; l < 32; ++l) s[l] = specialValue(sp.what, c, *c.L, warp * 32 + uint32_t(l), l, nwarps);
  }
}

std::string threadName(const Ctx& c, int lane) {
  uint32_t t = c.warp_index * 32 + uint32_t(lane);
  const core::Dim3& b = c.L->cfg.block;
  char buf[128];
  std::snprintf(buf, sizeof buf, "block (%u,%u,%u), thread (%u,%u,%u)", c.ctaid.x, c.ctaid.y, c.ctaid.z, t % b.x,
                (t / b.x) % b.y, t / (b.x * b.y));
  return buf;
}

}  // namespace

bool Ctx::fail(int lane, const std::string& what) {
  if (!error.empty()) return false;
  const DInst& d = fn->code[pc];
  error = what + " in kernel '" + L->entry->name + "'";
  if (fn != L->entry) error += " (in function '" + fn->name + "')";
  error += ", " + threadName(*this, lane) + ", PTX line " + std::to_string(d.line) + " (" + fn->text[pc] + ")";
  return false;
}

bool Ctx::memFail(int lane, const char* space, bool store, uint64_t addr, uint32_t size, const std::string& why) {
  return fail(lane, std::string("out-of-bounds ") + space + (store ? " store" : " load") + " of " +
                        std::to_string(size) + " bytes at " + hex(addr) + " (" + why + ")");
}

uint8_t* Ctx::memFault(int lane, const char* space, bool store, uint64_t addr, uint32_t size, const char* why,
                       int64_t bytes) {
  if (bytes < 0)
    memFail(lane, space, store, addr, size, why);
  else
    memFail(lane, space, store, addr, size, why + std::to_string(bytes) + " bytes");
  return nullptr;
}

uint8_t* Ctx::globalSlow(uint64_t addr, uint32_t size, int lane, bool store) {
  const Region* reg = L->mem->find(addr, size);
  if (!reg) {
    memFail(lane, "global", store, addr, size, L->mem->describe(addr, size));
    return nullptr;
  }
  if ((addr & (size - 1)) != 0 && size <= 16) {
    memFail(lane, "global", store, addr, size, "misaligned address");
    return nullptr;
  }
  cache = reg;
  return reg->host + (addr - reg->base);
}

uint8_t* Ctx::genericSlow(uint64_t addr, uint32_t size, int lane, bool store) {
  if (addr >= kSharedWindow && addr < kSharedWindow + kWindowSize)
    return resolve<Space::kShared>(*this, addr - kSharedWindow, size, lane, store);
  if (addr >= kLocalWindow && addr < kLocalWindow + kWindowSize)
    return resolve<Space::kLocal>(*this, addr - kLocalWindow, size, lane, store);
  if (addr >= kParamWindow && addr < kParamWindow + kWindowSize)
    return resolve<Space::kKernelParam>(*this, addr, size, lane, store);
  return globalSlow(addr, size, lane, store);
}

namespace {

Stop execute(Ctx& c, Group& g, BlockState& blk, uint32_t* exited_out);

// Releases barrier `id` when enough threads have arrived. True if released.
bool tryRelease(BlockState& blk, uint32_t id) {
  Barrier& b = blk.bars[id];
  uint32_t expected = b.expected ? b.expected : blk.threads - blk.exited_threads;
  if (b.arrived == 0 || b.arrived < expected) return false;
  for (auto& w : blk.warps)
    for (int l = 0; l < 32; ++l)
      if (w.state[l] == kAtBarrier && w.bar_id[l] == id) {
        w.state[l] = kReady;
        const DInst& d = w.fn->code[w.bar_pc[l]];
        switch (d.aux8) {  // bar.red results
          case 1: w.r[size_t(d.d0) * 32 + l] = b.red_true; break;
          case 2:
          case 3: {
            bool v = d.aux8 == 2 ? b.red_true == b.arrived : b.red_true != 0;
            w.p[d.d0] = v ? (w.p[d.d0] | (1u << l)) : (w.p[d.d0] & ~(1u << l));
            break;
          }
          default: break;
        }
      }
  b.arrived = 0;
  b.expected = 0;
  b.red_true = 0;
  return true;
}

std::string readDeviceString(Ctx& c, uint64_t addr, int lane) {
  std::string s;
  for (int i = 0; i < 4096; ++i) {
    const uint8_t* h = resolve<Space::kGeneric>(c, addr + uint64_t(i), 1, lane, false);
    if (!h || *h == 0) break;
    s += char(*h);
  }
  return s;
}

bool doPrintf(Ctx& c, Group& g, const CallSite& cs, uint32_t m) {
  if (cs.args.size() < 2) return c.fail(__builtin_ctz(m), "vprintf called with too few arguments");
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    int l = __builtin_ctz(mm);
    auto argval = [&](const CallArg& a) -> uint64_t {
      if (a.is_reg) return g.r[size_t(a.slot) * 32 + l];
      uint64_t v = 0;
      std::memcpy(&v, g.fparam + size_t(l) * g.fn->param_area + a.offset, std::min<uint32_t>(a.size, 8));
      return v;
    };
    uint64_t fmt_addr = argval(cs.args[0]);
    uint64_t args_addr = argval(cs.args[1]);
    std::string fmt = readDeviceString(c, fmt_addr, l);
    if (!c.error.empty()) return false;
    std::string text = formatDevicePrintf(
        fmt,
        [&](uint64_t off, void* dst, size_t n) {
          const uint8_t* h = resolve<Space::kGeneric>(c, args_addr + off, uint32_t(n), l, false);
          if (!h) return false;
          std::memcpy(dst, h, n);
          return true;
        },
        [&](uint64_t p) { return readDeviceString(c, p, l); });
    if (!c.error.empty()) return false;
    {
      std::lock_guard lock(*c.L->printf_mu);
      (*c.L->printf_sink)(text);
    }
    if (!cs.rets.empty() && !cs.rets[0].is_reg) {
      int32_t n = int32_t(text.size());
      std::memcpy(g.fparam + size_t(l) * g.fn->param_area + cs.rets[0].offset, &n, 4);
    }
  }
  return true;
}

bool callFunction(Ctx& c, Group& caller, BlockState& blk, const CallSite& cs, int callee_index, uint32_t m,
                  uint32_t* exited);

bool doCall(Ctx& c, Group& caller, BlockState& blk, const DInst& d, uint32_t m, uint32_t* exited) {
  const CallSite& cs = caller.fn->calls[size_t(d.target)];
  if (cs.builtin == 1) return doPrintf(c, caller, cs, m);
  if (cs.builtin == 2) {
    int l = __builtin_ctz(m);
    auto argval = [&](size_t i) -> uint64_t {
      if (i >= cs.args.size()) return 0;
      const CallArg& a = cs.args[i];
      if (a.is_reg) return caller.r[size_t(a.slot) * 32 + l];
      uint64_t v = 0;
      std::memcpy(&v, caller.fparam + size_t(l) * caller.fn->param_area + a.offset, std::min<uint32_t>(a.size, 8));
      return v;
    };
    std::string msg = readDeviceString(c, argval(0), l);
    std::string file = readDeviceString(c, argval(1), l);
    return c.fail(
        l, "device assertion '" + msg + "' failed (" + file + ":" + std::to_string(argval(2) & 0xffffffff) + ")");
  }
  if (cs.indirect) {
    // Lanes may call different functions: call each distinct target with its lanes, lowest lane first.
    uint32_t rest = m;
    *exited = 0;
    while (rest) {
      int l0 = __builtin_ctz(rest);
      uint64_t target = caller.r[size_t(cs.target_slot) * 32 + l0];
      uint32_t group = 0;
      for (uint32_t mm = rest; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        if (caller.r[size_t(cs.target_slot) * 32 + l] == target) group |= 1u << l;
      }
      rest &= ~group;
      uint64_t index = (target - kFunctionWindow) / 16;
      if (target < kFunctionWindow || (target - kFunctionWindow) % 16 != 0 || index >= c.L->prog->functions.size() ||
          c.L->prog->functions[index]->is_entry)
        return c.fail(l0, "indirect call to " + hex(target) + ", which is not the address of a function");
      uint32_t ex = 0;
      if (!callFunction(c, caller, blk, cs, int(index), group, &ex)) return false;
      *exited |= ex;
    }
    return true;
  }
  return callFunction(c, caller, blk, cs, cs.callee, m, exited);
}

bool callFunction(Ctx& c, Group& caller, BlockState& blk, const CallSite& cs, int callee_index, uint32_t m,
                  uint32_t* exited) {
  if (c.depth >= 64) return c.fail(__builtin_ctz(m), "call depth limit (64) exceeded");
  const DecodedFunction* callee = c.L->prog->functions[size_t(callee_index)].get();
  if (!callee->status.ok()) return c.fail(__builtin_ctz(m), callee->status.message());
  uint32_t local_base = caller.local_base + caller.fn->local_bytes;
  if (local_base + callee->local_bytes > c.L->local_stride)
    return c.fail(__builtin_ctz(m), "local memory stack overflow calling '" + callee->name + "'");
  std::vector<uint64_t> regs(size_t(callee->num_slots) * 32, 0);
  std::vector<uint32_t> preds(callee->num_preds, 0);
  std::vector<uint8_t> fparam(size_t(std::max<uint32_t>(callee->param_area, 8)) * 32, 0);
  initFrame(*callee, regs.data(), local_base, c, c.warp_index, uint32_t(blk.warps.size()));
  for (size_t i = 0; i < cs.args.size() && i < callee->formal_offsets.size(); ++i) {
    const CallArg& a = cs.args[i];
    uint32_t n = std::min(a.size, callee->formal_sizes[i]);
    for (uint32_t mm = m; mm; mm &= mm - 1) {
      int l = __builtin_ctz(mm);
      uint8_t* dst = fparam.data() + size_t(l) * callee->param_area + callee->formal_offsets[i];
      if (a.is_reg)
        std::memcpy(dst, &caller.r[size_t(a.slot) * 32 + l], std::min<uint32_t>(n, 8));
      else
        std::memcpy(dst, caller.fparam + size_t(l) * caller.fn->param_area + a.offset, n);
    }
  }
  Group g;
  g.fn = callee;
  g.r = regs.data();
  g.p = preds.data();
  g.fparam = fparam.data();
  g.local_base = local_base;
  for (int l = 0; l < 32; ++l) g.state[l] = ((m >> l) & 1) ? kReady : kAbsent;
  g.pick();
  // Save the caller's frame view in the context.
  uint64_t* sr = c.r;
  uint32_t* sp = c.p;
  uint8_t* sfp = c.fparam;
  uint32_t sstride = c.fparam_stride;
  const DecodedFunction* sfn = c.fn;
  uint32_t spc = c.pc;
  ++c.depth;
  uint32_t callee_exited = 0;
  Stop s = execute(c, g, blk, &callee_exited);
  --c.depth;
  c.r = sr;
  c.p = sp;
  c.fparam = sfp;
  c.fparam_stride = sstride;
  c.fn = sfn;
  c.pc = spc;
  if (s == Stop::kError) return false;
  if (s == Stop::kBarrier) return c.fail(__builtin_ctz(m), "bar.sync inside a called function is not supported");
  *exited = callee_exited;
  uint32_t returned = m & ~callee_exited;
  for (size_t i = 0; i < cs.rets.size() && i < callee->return_offsets.size(); ++i) {
    const CallArg& a = cs.rets[i];
    uint32_t n = std::min(a.size, callee->return_sizes[i]);
    for (uint32_t mm = returned; mm; mm &= mm - 1) {
      int l = __builtin_ctz(mm);
      const uint8_t* src = fparam.data() + size_t(l) * callee->param_area + callee->return_offsets[i];
      if (a.is_reg) {
        uint64_t v = 0;
        std::memcpy(&v, src, std::min<uint32_t>(n, 8));
        caller.r[size_t(a.slot) * 32 + l] = v;
      } else {
        std::memcpy(caller.fparam + size_t(l) * caller.fn->param_area + a.offset, src, n);
      }
    }
  }
  return true;
}

Stop execute(Ctx& c, Group& g, BlockState& blk, uint32_t* exited_out) {
  const DecodedFunction* fn = g.fn;
  const DInst* code = fn->code.data();
  c.r = g.r;
  c.p = g.p;
  c.fparam = g.fparam;
  c.fparam_stride = fn->param_area;
  c.fn = fn;
  bool nested = c.depth > 0;
  uint32_t pc = g.pc, active = g.active, wait_min = g.wait_min;
  uint64_t by_class[kInstClassCount] = {};
  uint64_t flops[4] = {};
  uint64_t ti = 0;
  uint64_t wi = 0;
  auto flush = [&]() {
    for (size_t i = 0; i < kInstClassCount; ++i) c.cnt.by_class[i] += by_class[i];
    c.cnt.flops_f16 += flops[1];
    c.cnt.flops_f32 += flops[2];
    c.cnt.flops_f64 += flops[3];
    c.cnt.thread_instructions += ti;
    c.cnt.warp_instructions += wi;
    g.pc = pc;
    g.active = active;
    g.wait_min = wait_min;
  };
  auto repick = [&]() -> bool {
    g.pc = pc;
    g.active = active;
    g.writeBack();
    bool any = g.pick();
    pc = g.pc;
    active = g.active;
    wait_min = g.wait_min;
    return any;
  };
  auto noneReady = [&]() -> Stop {
    flush();
    return g.anyWaiting() ? Stop::kBarrier : Stop::kDone;
  };
  auto removeLanes = [&](uint32_t lanes_mask, uint8_t st) {
    for (uint32_t mm = lanes_mask; mm; mm &= mm - 1) {
      int l = __builtin_ctz(mm);
      g.state[l] = st;
      g.lane_pc[l] = pc;
    }
    active &= ~lanes_mask;
  };
  for (;;) {
    const DInst& d = code[pc];
    uint32_t m = active;
    if (d.guard) {
      uint32_t gm = c.p[d.guard - 1];
      m &= d.guard_neg ? ~gm : gm;
    }
    uint32_t n = uint32_t(__builtin_popcount(m));
    ++wi;
    ti += n;
    by_class[d.cls] += n;
    flops[d.fprec] += uint64_t(n) * d.flops;
    if (d.kind == Kind::kNormal) {
      c.pc = pc;
      if (m && !d.fn(c, d, m)) {
        flush();
        return Stop::kError;
      }
      ++pc;
      if (pc >= wait_min) repick();
      if (wi >= kWarpSlice && !nested) {
        flush();
        return Stop::kYield;
      }
      continue;
    }
    c.pc = pc;
    switch (d.kind) {
      case Kind::kBranch: {
        if (m == active) {
          pc = uint32_t(d.target);
        } else if (m == 0) {
          ++pc;
        } else {
          for (uint32_t mm = active; mm; mm &= mm - 1) {
            int l = __builtin_ctz(mm);
            g.lane_pc[l] = ((m >> l) & 1) ? uint32_t(d.target) : pc + 1;
          }
          g.pick();
          pc = g.pc;
          active = g.active;
          wait_min = g.wait_min;
          break;
        }
        if (pc >= wait_min) repick();
        // A loop of branches only (`L: bra L`) yields too: other warps, and the instruction budget, get their turn.
        if (wi >= kWarpSlice && !nested) {
          flush();
          return Stop::kYield;
        }
        break;
      }
      case Kind::kExit:
      case Kind::kRet: {
        if (m == 0) {
          ++pc;
          if (pc >= wait_min) repick();
          break;
        }
        bool exit_thread = d.kind == Kind::kExit || !nested;
        removeLanes(m, exit_thread ? kExited : kReturned);
        if (exit_thread) {
          if (nested)
            *exited_out |= m;
          else {
            c.warp_exited |= m;
            blk.exited_threads += n;
          }
        }
        if (active) {
          ++pc;
          if (pc >= wait_min) repick();
          break;
        }
        if (!exit_thread || nested) {
          if (!g.pick()) return noneReady();
          pc = g.pc;
          active = g.active;
          wait_min = g.wait_min;
          break;
        }
        // Exits can complete a barrier the other warps wait at.
        for (uint32_t id = 0; id < 16; ++id) tryRelease(blk, id);
        if (!g.pick()) return noneReady();
        pc = g.pc;
        active = g.active;
        wait_min = g.wait_min;
        break;
      }
      case Kind::kBarSync:
      case Kind::kBarArrive: {
        if (m == 0) {
          ++pc;
          if (pc >= wait_min) repick();
          break;
        }
        if (nested) {
          c.fail(__builtin_ctz(m), "bar.sync inside a called function is not supported");
          flush();
          return Stop::kError;
        }
        int lane0 = __builtin_ctz(m);
        uint64_t id = d.a == 0xffff ? uint64_t(d.imm) : c.r[size_t(d.a) * 32 + lane0];
        if (id >= 16) {
          c.fail(lane0, "barrier id " + std::to_string(id) + " out of range (0..15)");
          flush();
          return Stop::kError;
        }
        Barrier& b = blk.bars[id];
        if (d.b != 0xffff) b.expected = uint32_t(c.r[size_t(d.b) * 32 + lane0]);
        b.arrived += n;
        if (d.aux8) {
          uint32_t pv = c.p[d.c];
          if (d.flags & kNegC) pv = ~pv;
          b.red_true += uint32_t(__builtin_popcount(pv & m));
        }
        if (d.kind == Kind::kBarArrive) {
          tryRelease(blk, uint32_t(id));
          ++pc;
          if (pc >= wait_min) repick();
          break;
        }
        for (uint32_t mm = m; mm; mm &= mm - 1) {
          int l = __builtin_ctz(mm);
          g.state[l] = kAtBarrier;
          g.bar_id[l] = uint8_t(id);
          g.bar_pc[l] = pc;
          g.lane_pc[l] = pc + 1;
        }
        active &= ~m;
        if (active) {
          ++pc;
          if (pc >= wait_min) repick();
        }
        tryRelease(blk, uint32_t(id));
        if (!active) {
          if (!g.pick()) return noneReady();
          pc = g.pc;
          active = g.active;
          wait_min = g.wait_min;
        }
        break;
      }
      case Kind::kCall: {
        if (m == 0) {
          ++pc;
          if (pc >= wait_min) repick();
          break;
        }
        flush();
        wi = ti = 0;
        std::fill(std::begin(by_class), std::end(by_class), 0);
        std::fill(std::begin(flops), std::end(flops), 0);
        uint32_t ex = 0;
        if (!doCall(c, g, blk, d, m, &ex)) return Stop::kError;
        c.r = g.r;
        c.p = g.p;
        c.fparam = g.fparam;
        c.fparam_stride = fn->param_area;
        c.fn = fn;
        if (ex) {
          removeLanes(ex, kExited);
          if (nested)
            *exited_out |= ex;
          else {
            c.warp_exited |= ex;
            blk.exited_threads += uint32_t(__builtin_popcount(ex));
          }
          if (!active) {
            if (!g.pick()) return noneReady();
            pc = g.pc;
            active = g.active;
            wait_min = g.wait_min;
            break;
          }
        }
        ++pc;
        if (pc >= wait_min) repick();
        break;
      }
      case Kind::kTrap: {
        if (m == 0) {
          ++pc;
          if (pc >= wait_min) repick();
          break;
        }
        c.fail(__builtin_ctz(m), "trap instruction executed");
        flush();
        return Stop::kError;
      }
      default: {
        c.fail(__builtin_ctz(m | 1), "internal error: bad instruction kind");
        flush();
        return Stop::kError;
      }
    }
  }
}

// Runs one block to completion. False on error (ctx.error set).
bool runBlock(Ctx& c, BlockState& blk, uint64_t linear) {
  const LaunchShared& L = *c.L;
  const DecodedFunction& fn = *L.entry;
  const core::Dim3& g = L.cfg.grid;
  c.ctaid = {uint32_t(linear % g.x), uint32_t((linear / g.x) % g.y), uint32_t(linear / (uint64_t(g.x) * g.y))};
  c.block_linear = linear;
  uint32_t threads = uint32_t(L.cfg.block.count());
  uint32_t nwarps = (threads + 31) / 32;
  blk.threads = threads;
  blk.exited_threads = 0;
  for (auto& b : blk.bars) b = Barrier{};
  size_t regs_per_warp = size_t(fn.num_slots) * 32;
  blk.regs.assign(regs_per_warp * nwarps, 0);
  blk.preds.assign(size_t(fn.num_preds) * nwarps, 0);
  blk.fparams.assign(size_t(std::max<uint32_t>(fn.param_area, 8)) * 32 * nwarps, 0);
  std::fill(blk.shared.begin(), blk.shared.end(), 0);
  blk.warps.assign(nwarps, Group{});
  for (uint32_t w = 0; w < nwarps; ++w) {
    Group& gr = blk.warps[w];
    gr.fn = &fn;
    gr.r = blk.regs.data() + regs_per_warp * w;
    gr.p = blk.preds.data() + size_t(fn.num_preds) * w;
    gr.fparam = blk.fparams.data() + size_t(std::max<uint32_t>(fn.param_area, 8)) * 32 * w;
    c.warp_index = w;
    initFrame(fn, gr.r, 0, c, w, nwarps);
    for (int l = 0; l < 32; ++l) gr.state[l] = (w * 32 + uint32_t(l) < threads) ? kReady : kAbsent;
    gr.pick();
  }
  for (;;) {
    bool progress = false, all_done = true;
    for (uint32_t w = 0; w < nwarps; ++w) {
      Group& gr = blk.warps[w];
      if (gr.active == 0 && !gr.pick()) {
        if (gr.anyWaiting()) all_done = false;
        continue;
      }
      all_done = false;
      progress = true;
      c.warp_index = w;
      c.warp_exited = 0;
      c.depth = 0;
      uint32_t ex = 0;
      const uint64_t before = c.cnt.warp_instructions;
      if (execute(c, gr, blk, &ex) == Stop::kError) return false;
      if (L.max_warp_instructions != 0) {
        const uint64_t used =
            L.warp_instructions->fetch_add(c.cnt.warp_instructions - before) + (c.cnt.warp_instructions - before);
        if (used > L.max_warp_instructions) {
          c.error = "kernel '" + fn.name + "' ran more than " + std::to_string(L.max_warp_instructions) +
                    " warp instructions, the emulator's budget for one launch: it may never end (kfuse validate "
                    "--max-instructions raises the budget)";
          return false;
        }
        if (L.stop->load(std::memory_order_relaxed)) return true;  // another block failed: the launch is over
      }
    }
    if (all_done) return true;
    if (!progress) {
      bool released = false;
      for (uint32_t id = 0; id < 16; ++id) released |= tryRelease(blk, id);
      if (!released) {
        for (uint32_t id = 0; id < 16; ++id) {
          if (blk.bars[id].arrived == 0) continue;
          uint32_t expected = blk.bars[id].expected ? blk.bars[id].expected : threads - blk.exited_threads;
          char buf[256];
          std::snprintf(buf, sizeof buf,
                        "barrier deadlock in kernel '%s', block (%u,%u,%u): %u of %u threads arrived at barrier %u",
                        fn.name.c_str(), c.ctaid.x, c.ctaid.y, c.ctaid.z, blk.bars[id].arrived, expected, id);
          c.error = buf;
          return false;
        }
        c.error = "barrier deadlock in kernel '" + fn.name + "'";
        return false;
      }
    }
  }
}

}  // namespace

Status runLaunch(const LaunchRequest& req, LaunchCounters* counters) {
  const DecodedFunction& fn = *req.fn;
  const core::LaunchShape& cfg = req.config;
  uint64_t threads = cfg.block.count();
  if (cfg.block.x == 0 || cfg.block.y == 0 || cfg.block.z == 0 || threads > 1024 || cfg.block.z > 64)
    return invalidArgument("invalid block dimensions for kernel '" + fn.name + "'");
  if (threads > fn.info.max_threads_per_block)
    return invalidArgument("block of " + std::to_string(threads) + " threads exceeds .maxntid of kernel '" + fn.name +
                           "'");
  if (cfg.grid.x == 0 || cfg.grid.y == 0 || cfg.grid.z == 0 || cfg.grid.y > 65535 || cfg.grid.z > 65535)
    return invalidArgument("invalid grid dimensions for kernel '" + fn.name + "'");
  if (req.params.size() < fn.info.param_bytes)
    return invalidArgument("kernel '" + fn.name + "' needs " + std::to_string(fn.info.param_bytes) +
                           " bytes of parameters, got " + std::to_string(req.params.size()));
  uint64_t shared_bytes = uint64_t(req.program->static_shared) + cfg.dynamic_shared_bytes;
  if (shared_bytes > 227 * 1024)
    return invalidArgument("kernel '" + fn.name + "' needs " + std::to_string(shared_bytes) +
                           " bytes of shared memory (limit 232448)");
  uint32_t dyn_base = (req.program->static_shared + 15) / 16 * 16;
  shared_bytes = std::max<uint64_t>(shared_bytes, dyn_base + cfg.dynamic_shared_bytes);

  std::atomic<bool> stop{false};
  std::mutex printf_mu;
  std::function<void(std::string_view)> sink = req.printf_sink;
  if (!sink)
    sink = [](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    };

  std::shared_lock mem_lock(req.memory->impl().mu);
  LaunchShared L;
  L.mem = &req.memory->impl();
  L.params = req.params;
  L.cfg = cfg;
  L.shared_bytes = uint32_t(shared_bytes);
  L.local_stride = (fn.local_bytes + (req.program->has_calls ? 16384u : 0u) + 15) / 16 * 16;
  if (L.local_stride == 0) L.local_stride = 16;
  L.entry = &fn;
  L.prog = req.program;
  L.printf_sink = &sink;
  L.printf_mu = &printf_mu;
  L.stop = &stop;
  std::atomic<uint64_t> warp_instructions{0};
  L.warp_instructions = &warp_instructions;
  L.max_warp_instructions = req.max_warp_instructions;

  if (uint64_t(L.local_stride) * ((threads + 31) / 32 * 32) > (uint64_t{1} << 30))
    return unsupported("kernel '" + fn.name + "' needs " + std::to_string(L.local_stride) +
                       " bytes of local memory per thread; a block of " + std::to_string(threads) +
                       " threads exceeds the emulator's 1 GiB limit");
  uint64_t nblocks = cfg.grid.count();
  unsigned nworkers = unsigned(std::min<uint64_t>(std::max(1u, req.workers), nblocks));
  std::atomic<uint64_t> next{0};
  std::mutex err_mu;
  uint64_t err_block = UINT64_MAX;
  std::string err_msg;
  std::vector<LaunchCounters> per_worker(nworkers);

  std::function<void(unsigned)> worker = [&](unsigned wi) {
    Ctx c;
    c.L = &L;
    BlockState blk;
    blk.shared.assign(L.shared_bytes, 0);
    blk.local.assign(size_t(L.local_stride) * ((threads + 31) / 32 * 32), 0);
    c.shared = blk.shared.data();
    c.shared_size = L.shared_bytes;
    c.local = blk.local.data();
    c.block_threads = uint32_t(threads);
    for (;;) {
      if (stop.load(std::memory_order_relaxed)) break;
      uint64_t b = next.fetch_add(1);
      if (b >= nblocks) break;
      if (!runBlock(c, blk, b)) {
        std::lock_guard lock(err_mu);
        if (b < err_block) {
          err_block = b;
          err_msg = c.error;
        }
        stop = true;
        break;
      }
      c.cnt.blocks += 1;
    }
    per_worker[wi] = c.cnt;
  };
  // Small launches run on the calling thread: handing them out costs more than it saves.
  if (nblocks * threads < 4096) nworkers = 1;
  if (nworkers == 1) {
    worker(0);
  } else if (req.pool && req.pool->run(nworkers, worker)) {
    // ran on the pool
  } else {
    std::vector<std::thread> pool;
    pool.reserve(nworkers);
    for (unsigned i = 0; i < nworkers; ++i) pool.emplace_back(worker, i);
    for (auto& t : pool) t.join();
  }
  LaunchCounters total;
  for (auto& w : per_worker) total.add(w);
  total.threads = total.blocks * threads;
  if (counters) *counters = total;
  if (!err_msg.empty()) return Status(ErrorCode::kInvalidArgument, err_msg);
  return {};
}

}  // namespace kfuse::emulator
