// C interface of the stand-in libcuda.so.1 for tools that run inside a program using it (the collector):
// per-launch emulator counters. Look the functions up with dlsym(RTLD_DEFAULT, "cuKfuseEmu...") — they exist
// only in the stand-in, so their presence also tells a tool that it runs on the emulator.
//
// This header is the one definition of that ABI: the stand-in implements it, the collector includes it (through
// the header-only CMake target kfuse::standin_abi, without linking the emulator), and test doubles of libcuda
// export the marker below.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Mirrors kfuse::emulator::LaunchCounters (thread-level counts). Version 1.
typedef struct KfuseEmuLaunchCounters {
  uint32_t struct_size;  // set by the caller to sizeof(KfuseEmuLaunchCounters)
  uint32_t version;      // filled: 1
  uint64_t sequence;     // launch number (1, 2, ...)
  char kernel[256];      // kernel name, truncated
  uint32_t grid[3], block[3];
  uint32_t dynamic_shared_bytes;
  uint32_t ok;  // 0 when the launch failed
  uint64_t thread_instructions, warp_instructions;
  uint64_t by_class[16];  // indexed by kfuse::emulator::InstClass
  uint64_t global_load_bytes, global_store_bytes, shared_load_bytes, shared_store_bytes;
  uint64_t local_load_bytes, local_store_bytes, global_atomics, shared_atomics;
  uint64_t flops_f16, flops_f32, flops_f64;
  double wall_seconds;
} KfuseEmuLaunchCounters;

// Number of launches recorded so far (the history keeps the last 4096).
typedef uint64_t (*KfuseEmuLaunchCountFn)(void);
// Counters of launch `sequence` (0 = the latest). Returns 0 on success, 1 if that launch is no longer kept.
typedef int (*KfuseEmuGetLaunchFn)(uint64_t sequence, KfuseEmuLaunchCounters* out);

// Sequence number of the calling thread's last launch (0: none). The stand-in's launches are synchronous, so a
// tool calling it right after cuLaunchKernel returns gets exactly that launch, whatever other threads do.
typedef uint64_t (*KfuseEmuThreadLastLaunchFn)(void);

// CUDA graphs: the number of cuGraphLaunch calls that ran a graph, and of kernel nodes those launches ran (child
// graphs included). A graph's kernels are launches too: each also counts in cuKfuseEmuLaunchCount and has its
// counters, so launches per replay = kernel nodes / graph launches when nothing else runs.
typedef uint64_t (*KfuseEmuGraphLaunchCountFn)(void);
typedef uint64_t (*KfuseEmuGraphKernelNodeCountFn)(void);

// Exported by every libcuda.so.1 that kfuse ships or tests with and that is not a GPU driver (the stand-in, test
// doubles): `kfuse record` never chooses the CUPTI backend on one. Returns 1.
#define KFUSE_NOT_A_GPU_SYMBOL "cuKfuseNotAGpu"
typedef int (*KfuseNotAGpuFn)(void);
int cuKfuseNotAGpu(void);

uint64_t cuKfuseEmuLaunchCount(void);
int cuKfuseEmuGetLaunch(uint64_t sequence, KfuseEmuLaunchCounters* out);
uint64_t cuKfuseEmuThreadLastLaunch(void);
uint64_t cuKfuseEmuGraphLaunchCount(void);
uint64_t cuKfuseEmuGraphKernelNodeCount(void);

#ifdef __cplusplus
}
#endif
