// NVTX capture: libkfuse_collector.so as the application's NVTX injection library.
//
// NVTX (header-only, nvtx3) looks for a tool the first time the application calls any nvtx* function: the library
// named by NVTX_INJECTION64_PATH (which `kfuse record` sets, unless the user already did; nvtx3's other discovery
// paths, a pre-injected symbol or a static one, are disabled or need the application's cooperation). It calls the
// library's InitializeInjectionNvtx2 with its export table, and the tool fills the function slots it wants. We take the
// range functions of the CORE and CORE2 (domain) modules and record each range when it ends, as a trace
// nvtx_range (name, domain, thread, start and end on the collector's clock and thread ids, so the analyzer can put
// every launch inside the ranges around its launch call). Marks, categories, thread names and payloads are not
// recorded; the slots we leave empty stay no-ops.
//
// A range that ends before the collector started recording (before the application first touched the driver)
// is not recorded; one that started before and ends after is. Ranges still open at exit are not recorded.
// Push/pop pairs are per thread and per domain, as NVTX defines them; start/end ranges may end on another thread.
//
// Thread-safety: the callbacks run on application threads, concurrently; attach/detach from any thread. Nothing
// here throws or crashes the application: a range that cannot be recorded (out of memory, a full queue) is dropped.
#pragma once

#include <cstdint>

namespace kfuse::collector {

class TraceSink;

// What NVTX hands an injection library: nvtxGetExportTable (NvtxGetExportTableFunc_t).
using NvtxExportTableFn = const void* (*)(uint32_t export_table_id);

// Fills NVTX's range slots. Returns 1 (NVTX keeps them) or 0 (NVTX makes every call a no-op): 0 when the export
// table lacks what we need.
int initializeNvtxInjection(NvtxExportTableFn get_export_table);

// Where finished ranges go from now on (nullptr: nowhere; ranges are still tracked so that pops match pushes).
void attachNvtxSink(TraceSink* sink);

}  // namespace kfuse::collector
