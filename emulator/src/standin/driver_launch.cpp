// Launches: cuLaunchKernel and its variants (each runs to completion in the emulator), host functions,
// occupancy, the per-thread-default-stream launch names, and the per-launch counters kfuse's tools read
// (kfuse/emulator/standin.h).
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "driver_graph.h"
#include "driver_state.h"
#include "kfuse/emulator/emulator.h"
#include "kfuse/emulator/standin.h"

using kfuse::emulator::Device;
using kfuse::standin::attribute;
using kfuse::standin::current;
using kfuse::standin::dev;
using kfuse::standin::fromStatus;
using kfuse::standin::notSupported;
using kfuse::standin::sticky;
using kfuse::standin::validFunction;

namespace kfuse::standin {

CUresult packArgs(CUfunction f, void** params, void** extra, std::vector<uint8_t>* buf) {
  const kfuse::emulator::KernelInfo& info = f->kernel->info();
  buf->clear();
  if (params) {
    *buf = Device::packParams(info, params);
  } else if (extra) {
    void* ptr = nullptr;
    size_t size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        ptr = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = *static_cast<size_t*>(extra[i + 1]);
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!ptr && info.param_bytes) return CUDA_ERROR_INVALID_VALUE;
    buf->assign(static_cast<uint8_t*>(ptr), static_cast<uint8_t*>(ptr) + size);
    if (buf->size() < info.param_bytes) return CUDA_ERROR_INVALID_VALUE;
  } else if (info.param_bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult runKernel(CUfunction f, const kfuse::core::LaunchShape& cfg, std::span<const uint8_t> args) {
  KF_REQUIRE_CTX();
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  if (cfg.dynamic_shared_bytes > unsigned(f->max_dynamic_shared) && cfg.dynamic_shared_bytes > 48 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  kfuse::Status s = dev()->launch(*f->kernel, cfg, args);
  CUresult r = fromStatus(s);
  if (r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_ASSERT ||
      r == CUDA_ERROR_LAUNCH_FAILED)
    current()->sticky = r;  // like a GPU, a fault poisons the context
  return r;
}

}  // namespace kfuse::standin

namespace {

// A launch on stream `s`: captured into a graph when `s` is capturing, run to completion otherwise.
CUresult launch(CUstream stream, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shmem, void** params, void** extra) {
  KF_REQUIRE_CTX();
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  kfuse::core::LaunchShape cfg{{gx, gy, gz}, {bx, by, bz}, shmem};
  if (kfuse::standin::capturesActive()) {
    std::unique_ptr<CUgraphNode_st> node;
    if (CUresult r = kfuse::standin::makeKernelNode(f, cfg, params, extra, &node); r != CUDA_SUCCESS) return r;
    bool taken = false;
    CUresult r = kfuse::standin::captureNode(stream, std::move(node), &taken);
    if (taken || r != CUDA_SUCCESS) return r;
  }
  if (CUresult s = sticky(); s != CUDA_SUCCESS) return s;
  std::vector<uint8_t> buf;
  if (CUresult r = kfuse::standin::packArgs(f, params, extra, &buf); r != CUDA_SUCCESS) return r;
  return kfuse::standin::runKernel(f, cfg, buf);
}

}  // namespace

extern "C" {

// ---- launches ------------------------------------------------------------------------------------------------
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void** params,
                                void** extra) {
  return launch(s, f, gx, gy, gz, bx, by, bz, shmem, params, extra);
}
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    switch (config->attrs[i].id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:  // blocks run to completion one after another: no grid sync
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        if (config->attrs[i].value.clusterDim.x * config->attrs[i].value.clusterDim.y *
                config->attrs[i].value.clusterDim.z >
            1)
          return notSupported("cuLaunchKernelEx with thread-block clusters");
        break;
      default: return notSupported("cuLaunchKernelEx launch attribute");
    }
  }
  return launch(config->hStream, f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                config->blockDimY, config->blockDimZ, config->sharedMemBytes, params, extra);
}
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                           CUstream s, void** params) {
  return launch(s, f, gx, gy, gz, bx, by, bz, shmem, params, nullptr);
}
CUresult CUDAAPI cuLaunchHostFunc(CUstream s, CUhostFn fn, void* user) {
  KF_REQUIRE_CTX();
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  if (kfuse::standin::capturesActive()) {
    bool taken = false;
    CUresult r = kfuse::standin::captureNode(s, kfuse::standin::makeHostNode(fn, user), &taken);
    if (taken || r != CUDA_SUCCESS) return r;
  }
  fn(user);
  return CUDA_SUCCESS;
}

// Occupancy: limited by threads (2048 per SM), blocks (32 per SM) and shared memory (228 KiB per SM, 227 KiB per
// block); registers are not counted (the PTX's declared registers overstate what ptxas would allocate).
static int occupancy(CUfunction f, int block, size_t dynamic_shared) {
  const auto& info = f->kernel->info();
  if (block <= 0 || unsigned(block) > info.max_threads_per_block) return 0;
  size_t shared = info.static_shared_bytes + dynamic_shared;
  if (shared > 227 * 1024) return 0;
  int warps = (block + 31) / 32;
  int by_threads = 2048 / (warps * 32);
  int by_shared = shared ? int(228 * 1024 / (shared + 1024)) : 32;  // 1 KiB per block reserved, as on sm_90
  return std::max(0, std::min({32, by_threads, by_shared}));
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction f, int block,
                                                                      size_t dynamic_shared, unsigned int flags) {
  (void)flags;
  if (!blocks) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  *blocks = occupancy(f, block, dynamic_shared);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction f, int block,
                                                             size_t dynamic_shared) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, f, block, dynamic_shared, 0);
}
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid, int* block_size, CUfunction f,
                                                           CUoccupancyB2DSize shared_of_block, size_t dynamic_shared,
                                                           int limit, unsigned int flags) {
  (void)flags;
  if (!min_grid || !block_size) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  int max_block = int(f->kernel->info().max_threads_per_block);
  if (limit > 0) max_block = std::min(max_block, limit);
  int best = 0, best_threads = 0;
  for (int b = 32; b <= max_block; b += 32) {
    size_t shared = shared_of_block ? shared_of_block(b) : dynamic_shared;
    int threads = occupancy(f, b, shared) * b;
    if (threads >= best_threads) best = b, best_threads = threads;
  }
  int sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  *block_size = best;
  *min_grid = best ? sms * (best_threads / best) : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction f,
                                                  CUoccupancyB2DSize shared_of_block, size_t dynamic_shared,
                                                  int limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, f, shared_of_block, dynamic_shared, limit, 0);
}
CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, CUfunction f, int blocks, int block) {
  if (!bytes || blocks <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!validFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  (void)block;
  size_t per_block = 228 * 1024 / size_t(blocks);
  per_block = per_block > 1024 ? per_block - 1024 : 0;
  size_t stat = f->kernel->info().static_shared_bytes;
  *bytes = std::min<size_t>(227 * 1024, per_block) > stat ? std::min<size_t>(227 * 1024, per_block) - stat : 0;
  return CUDA_SUCCESS;
}

// Per-thread-default-stream entry points (programs built with CUDA_API_PER_THREAD_DEFAULT_STREAM): the same
// operations, since everything here is synchronous.
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                     unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void** params,
                                     void** extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  return cuLaunchKernelEx(c, f, params, extra);
}
CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* user) {
  return cuLaunchHostFunc(s, fn, user);
}

// ---- counters for tools (see kfuse/emulator/standin.h) -------------------------------------------------------
int cuKfuseNotAGpu(void) {
  return 1;
}
uint64_t cuKfuseEmuLaunchCount(void) {
  if (!dev()) return 0;
  return dev()->lastLaunch().sequence;
}
uint64_t cuKfuseEmuGraphLaunchCount(void) {
  return kfuse::standin::g_graph_launches.load();
}
uint64_t cuKfuseEmuGraphKernelNodeCount(void) {
  return kfuse::standin::g_graph_kernel_nodes.load();
}
uint64_t cuKfuseEmuThreadLastLaunch(void) {
  return kfuse::emulator::Device::callingThreadLastSequence();
}
int cuKfuseEmuGetLaunch(uint64_t sequence, KfuseEmuLaunchCounters* out) {
  if (!dev() || !out || out->struct_size < sizeof(KfuseEmuLaunchCounters)) return 1;
  kfuse::emulator::LaunchRecord r;
  if (sequence == 0) {
    r = dev()->lastLaunch();
    if (r.sequence == 0) return 1;
  } else {
    bool found = false;
    for (auto& h : dev()->launchHistory())
      if (h.sequence == sequence) r = h, found = true;
    if (!found) return 1;
  }
  std::memset(reinterpret_cast<char*>(out) + 4, 0, sizeof(*out) - 4);
  out->version = 1;
  out->sequence = r.sequence;
  std::snprintf(out->kernel, sizeof out->kernel, "%s", r.kernel.c_str());
  out->grid[0] = r.grid.x, out->grid[1] = r.grid.y, out->grid[2] = r.grid.z;
  out->block[0] = r.block.x, out->block[1] = r.block.y, out->block[2] = r.block.z;
  out->dynamic_shared_bytes = r.dynamic_shared_bytes;
  out->ok = r.ok;
  const auto& c = r.counters;
  out->thread_instructions = c.thread_instructions;
  out->warp_instructions = c.warp_instructions;
  for (size_t i = 0; i < kfuse::emulator::kInstClassCount && i < 16; ++i) out->by_class[i] = c.by_class[i];
  out->global_load_bytes = c.global_load_bytes;
  out->global_store_bytes = c.global_store_bytes;
  out->shared_load_bytes = c.shared_load_bytes;
  out->shared_store_bytes = c.shared_store_bytes;
  out->local_load_bytes = c.local_load_bytes;
  out->local_store_bytes = c.local_store_bytes;
  out->global_atomics = c.global_atomics;
  out->shared_atomics = c.shared_atomics;
  out->flops_f16 = c.flops_f16;
  out->flops_f32 = c.flops_f32;
  out->flops_f64 = c.flops_f64;
  out->wall_seconds = r.wall_seconds;
  return 0;
}

}  // extern "C"
