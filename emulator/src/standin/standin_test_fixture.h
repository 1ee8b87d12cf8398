// The fixture of the stand-in's tests: libcuda.so.1 loaded with dlopen the way cudart does (everything through
// cuGetProcAddress_v2), so the tests neither link a driver nor depend on LD_LIBRARY_PATH.
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

inline std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class StandinTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(KFUSE_BINARY_DIR "/standin/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) return;
    get_proc_ = reinterpret_cast<decltype(&cuGetProcAddress)>(dlsym(handle_, "cuGetProcAddress_v2"));
  }
  template <class F>
  F get(const char* name, int version = 13000, cuuint64_t flags = 0) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status;
    EXPECT_EQ(get_proc_(name, &fn, version, flags, &status), CUDA_SUCCESS) << name;
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << name;
    return reinterpret_cast<F>(fn);
  }
  void SetUp() override {
    ASSERT_NE(handle_, nullptr) << dlerror();
    ASSERT_NE(get_proc_, nullptr);
    ASSERT_EQ(get<decltype(&cuInit)>("cuInit")(0), CUDA_SUCCESS);
    CUcontext ctx;
    ASSERT_EQ(get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&ctx, 0), CUDA_SUCCESS);
    ASSERT_EQ(get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx), CUDA_SUCCESS);
  }
  static inline void* handle_ = nullptr;
  static inline decltype(&cuGetProcAddress) get_proc_ = nullptr;
};
