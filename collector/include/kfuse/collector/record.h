// recordProgram: what `kfuse record` does. Runs a program with the collector library injected (LD_PRELOAD, plus
// CUDA_INJECTION64_PATH for the CUPTI backend), waits for it, and reports the traces it left.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kfuse/core/status.h"
#include "kfuse/core/trace_store.h"

namespace kfuse::collector {

struct RecordOptions {
  std::string output = "trace.sqlite";  // "%p" = the recorded process's pid (one trace per process)
  std::string backend;                  // "hook", "cupti", or "" = cupti with a real GPU driver, else hook
  bool metrics = false;                 // CUPTI backend: DRAM bytes and FLOPs per launch (range profiler)
  bool gpu_time = false;                // hook backend: GPU start/end from CUDA events (KFUSE_GPU_TIME)
  bool overwrite = false;               // replace existing trace files
  std::vector<std::string> command;     // program and its arguments
  std::string collector_library;        // "" = findCollectorLibrary()
  // Told, before the program starts, of anything about the recording the user should know (an option that
  // cannot take effect here and what happens instead).
  std::function<void(const std::string&)> on_note;
};

struct RecordedTrace {
  std::string path;
  core::TraceCounts counts;
  int64_t dropped_events = 0;
  std::string backend_used;  // "hook" when the CUPTI backend stepped aside in the recorded process, else empty
  std::string error;         // the trace could not be read
};

struct RecordResult {
  int exit_code = 0;  // the program's exit status, 128 + signal number if a signal ended it
  int64_t pid = 0;
  std::string backend;
  std::vector<RecordedTrace> traces;
  // What went wrong with the recording, one message each, from the collector inside the program (a write that
  // failed: full disk, file size limit) and from checking its output afterwards (the file or its directory gone).
  // Empty when the recording is complete.
  std::vector<std::string> failures;
};

// The injection library: $KFUSE_COLLECTOR_LIB, <dir of this executable>/../lib/libkfuse_collector.so, or the
// build tree's copy.
Expected<std::string> findCollectorLibrary();

// "cupti" if a real driver with at least one device is loadable here, else "hook" (no driver, the emulator's
// stand-in, or a test fake).
std::string detectBackend();

// Runs the program; errors are about setting up the recording (bad options, no library, unwritable output).
// The program's own failure is its exit code in the result.
Expected<RecordResult> recordProgram(const RecordOptions& options);

// One line: "1234 launches of 5 kernels, 10 allocations, 3 memcpys, 0 memsets, 4 syncs, 0 dropped events".
std::string summarizeRecordedTrace(const RecordedTrace& trace);

}  // namespace kfuse::collector
