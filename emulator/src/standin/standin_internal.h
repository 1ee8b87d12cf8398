// Private interface between the stand-in's driver entry points (driver_*.cpp) and its implementation of the
// runtime's private export tables (export_tables.cpp). Not exported from libcuda.so.1.
#pragma once

#include <cuda.h>

#include <string>

namespace kfuse::standin {

// Writes "kfuse stand-in libcuda: <what>" to stderr the first time `what` is seen in this process.
void logOnce(const std::string& what);

// True when KFUSE_STANDIN_TRACE is set (and not "0"): driver lookups and export-table calls go to stderr.
bool tracing();

// The export table for `id`, or nullptr with the error to return (cuGetExportTable's body).
CUresult exportTable(const void** table, const CUuuid* id);

// Context-local storage kept for the runtime (export table c693336e): runs and drops the values stored for
// `ctx`, as the driver does when a context is destroyed or a primary context is reset. Thread-safe.
void destroyContextLocalStorage(CUcontext ctx);

}  // namespace kfuse::standin
