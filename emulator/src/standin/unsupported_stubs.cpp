// Exported stubs for the driver entry points the stand-in does not implement, so a program that links one of
// them directly still loads, and calling it logs the name once and returns CUDA_ERROR_NOT_SUPPORTED.
// This file deliberately does not include cuda.h: the stubs take no declared parameters (the C calling
// convention lets callers pass any), which would conflict with the header's prototypes.
extern "C" int kfuseStandinUnsupported(const char* name);  // driver.cpp; not exported (version script)
extern "C" int cuEventElapsedTime_v2(float* ms, void* start, void* end);

#define KF_UNSUPPORTED(name)               \
  extern "C" int name(void) {              \
    return kfuseStandinUnsupported(#name); \
  }
#include "unsupported_stubs.inc"

// The pre-12.8 ABI name of cuEventElapsedTime has the same signature as _v2.
extern "C" int cuEventElapsedTime(float* ms, void* start, void* end) {
  return cuEventElapsedTime_v2(ms, start, end);
}
