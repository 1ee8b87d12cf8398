// Does what a static cudart 13 does to reach the driver: dlopen("libcuda.so.1"), dlsym exactly one symbol,
// cuGetProcAddress_v2, then fetch cuGetProcAddress through itself and everything else through that, including
// the per-thread-default-stream (_ptsz) variants (flags = 2). Used by the collector's end-to-end tests with the
// test fake driver. Exit code: 0 ok, 1 a driver call failed, or the number given with --exit.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

using Gpa = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

static Gpa g_gpa = nullptr;

template <class Fn>
static Fn get(const char* name, int version, cuuint64_t flags = 0) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st{};
  if (g_gpa(name, &p, version, flags, &st) != CUDA_SUCCESS || !p) {
    std::fprintf(stderr, "static_cudart_like: no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<Fn>(p);
}

#define CHECK(x)                                                   \
  do {                                                             \
    if ((x) != CUDA_SUCCESS) {                                     \
      std::fprintf(stderr, "static_cudart_like: %s failed\n", #x); \
      return 1;                                                    \
    }                                                              \
  } while (0)

int main(int argc, char** argv) {
  int exit_code = 0;
  int iterations = 1;
  bool fork_child = false;
  for (int i = 1; i < argc; ++i) fork_child |= std::strcmp(argv[i], "--fork") == 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--exit") == 0) exit_code = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
  }
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "static_cudart_like: %s\n", dlerror());
    return 1;
  }
  auto first = reinterpret_cast<Gpa>(dlsym(h, "cuGetProcAddress_v2"));
  if (!first) return 1;
  g_gpa = first;
  void* probe = nullptr;
  first("", &probe, 0, 0, nullptr);
  auto init = get<CUresult (*)(unsigned)>("cuInit", 2000);
  CHECK(init(0));
  g_gpa = get<Gpa>("cuGetProcAddress", 12000);  // from here on, lookups go through what the driver handed out
  auto loadData = get<CUresult (*)(CUmodule*, const void*)>("cuModuleLoadData", 2000);
  auto getFunction = get<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction", 2000);
  auto memAlloc = get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto memFree = get<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020);
  auto htod = get<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD", 3020);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  auto launch = get<Launch>("cuLaunchKernel", 4000, 0);
  auto launchPtsz = get<Launch>("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  auto streamSyncPtsz =
      get<CUresult (*)(CUstream)>("cuStreamSynchronize", 2000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  auto ctxSync = get<CUresult (*)()>("cuCtxSynchronize", 2000);

  static const char kPtx[] = ".version 9.0\n.target sm_90\n.address_size 64\n// saxpy for the fake driver\n";
  CUmodule mod;
  CHECK(loadData(&mod, kPtx));
  CUfunction saxpy;
  CHECK(getFunction(&saxpy, mod, "_Z5saxpyifPKfPf"));
  CUdeviceptr x, y;
  CHECK(memAlloc(&x, 4096));
  CHECK(memAlloc(&y, 4096));
  static float host[1024];
  CHECK(htod(x, host, sizeof host));
  for (int it = 0; it < iterations; ++it) {
    int n = 1024;
    float a = 2.0f;
    CUdeviceptr y16 = y + 16;
    void* params[] = {&n, &a, &x, &y16};
    CHECK(launch(saxpy, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    a = 3.0f;
    CHECK(launchPtsz(saxpy, 8, 1, 1, 128, 1, 1, 64, nullptr, params, nullptr));
  }
  if (fork_child) {
    // A child that keeps using the driver without exec: the collector must step aside there, not hang or crash.
    const pid_t pid = fork();
    if (pid == 0) {
      int n = 1;
      float a = 1.0f;
      void* params[] = {&n, &a, &x, &y};
      std::exit(launch(saxpy, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "static_cudart_like: forked child failed\n");
      return 1;
    }
  }
  CHECK(streamSyncPtsz(nullptr));
  CHECK(ctxSync());
  CHECK(memFree(x));
  CHECK(memFree(y));
  auto launched = reinterpret_cast<int (*)()>(dlsym(h, "kfuse_test_fake_launches"));
  std::printf("static_cudart_like: driver saw %d launches\n", launched ? launched() : -1);
  return exit_code;
}
