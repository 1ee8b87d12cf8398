// Interface between the two translation units of examples/runtime_api/two_units.
#pragma once

#include <cuda_runtime.h>

// Defined in two_units_kernels.cu: x[i] *= s on `stream`; returns the launch error.
cudaError_t launchScale(float* x, float s, int n, cudaStream_t stream);
