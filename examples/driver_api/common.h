// Shared helpers for the driver-API examples: error checking, context + module set-up, checksums.
// These programs use only the CUDA driver API, so they run unchanged on a GPU and on kfuse's CPU stand-in
// libcuda.so.1 (put its directory on LD_LIBRARY_PATH).
#pragma once

#include <cuda.h>

#include "../common/check.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CU_CHECK(call)                                                                                              \
  do {                                                                                                              \
    CUresult r_ = (call);                                                                                           \
    if (r_ != CUDA_SUCCESS) {                                                                                       \
      const char* n_ = nullptr;                                                                                     \
      const char* s_ = nullptr;                                                                                     \
      cuGetErrorName(r_, &n_);                                                                                      \
      cuGetErrorString(r_, &s_);                                                                                    \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, n_ ? n_ : "?", s_ ? s_ : "?"); \
      std::exit(1);                                                                                                 \
    }                                                                                                               \
  } while (0)

namespace example {

// Creates a context on device 0 and loads `<ptx_dir>/<name>.ptx` (argv[1] overrides the directory).
struct Session {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;

  Session(int argc, char** argv, const char* name) {
    std::string dir = argc > 1 ? argv[1] : KFUSE_EXAMPLE_PTX_DIR;
    std::string path = dir + "/" + name + ".ptx";
    std::ifstream f(path);
    if (!f) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      std::exit(1);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string ptx = ss.str();
    CU_CHECK(cuInit(0));
    CU_CHECK(cuDeviceGet(&device, 0));
    char dev_name[256];
    CU_CHECK(cuDeviceGetName(dev_name, sizeof dev_name, device));
    int major = 0, minor = 0;
    CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    CU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
    std::printf("device: %s (sm_%d%d)\n", dev_name, major, minor);
    CU_CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CU_CHECK(cuCtxSetCurrent(context));
    // KFUSE_EXAMPLE_MODULE_FROM_FILE=1: load the module by its path (cuModuleLoad), as many applications do.
    const char* from_file = std::getenv("KFUSE_EXAMPLE_MODULE_FROM_FILE");
    if (from_file && std::string(from_file) == "1") {
      CU_CHECK(cuModuleLoad(&module, path.c_str()));
    } else {
      CU_CHECK(cuModuleLoadData(&module, ptx.c_str()));
    }
  }
  ~Session() {
    cuModuleUnload(module);
    cuDevicePrimaryCtxRelease(device);
  }
  CUfunction function(const char* name) const {
    CUfunction f = nullptr;
    CU_CHECK(cuModuleGetFunction(&f, module, name));
    return f;
  }
};

template <class T>
CUdeviceptr upload(const std::vector<T>& v) {
  CUdeviceptr p = 0;
  CU_CHECK(cuMemAlloc(&p, v.size() * sizeof(T)));
  CU_CHECK(cuMemcpyHtoD(p, v.data(), v.size() * sizeof(T)));
  return p;
}
template <class T>
std::vector<T> download(CUdeviceptr p, size_t n) {
  std::vector<T> v(n);
  CU_CHECK(cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
  return v;
}

}  // namespace example
