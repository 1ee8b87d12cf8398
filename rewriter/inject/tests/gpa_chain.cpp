// The elementwise chain (scale -> add -> relu -> mul) launched the way cudart reaches the driver: dlopen
// "libcuda.so.1", dlsym only cuGetProcAddress_v2, everything else through cuGetProcAddress, stream-ordered calls
// with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (the _ptsz/_ptds functions) on the per-thread default
// stream, from --threads N threads at once. Checks its result against a C++ reference and prints
// "gpa_chain: PASSED". Used by the injector's end-to-end test: with the chain's plan every pattern is fused.
//   gpa_chain PTX_FILE [--threads N]
#include <cuda.h>
#include <dlfcn.h>

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Gpa = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
Gpa g_gpa = nullptr;

template <class Fn>
Fn get(const char* name, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (g_gpa(name, &p, version, flags, &status) != CUDA_SUCCESS || !p) {
    std::fprintf(stderr, "gpa_chain: the driver has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<Fn>(p);
}

#define CHECK(x)                                                       \
  do {                                                                 \
    if (CUresult r_ = (x); r_ != CUDA_SUCCESS) {                       \
      std::fprintf(stderr, "gpa_chain: %s failed: %d\n", #x, int(r_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

constexpr int kN = 1 << 15, kIterations = 3;
constexpr auto kPtsz = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpa_chain PTX_FILE [--threads N]\n");
    return 2;
  }
  int threads = 1;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
  }
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string ptx = ss.str();
  if (ptx.empty()) {
    std::fprintf(stderr, "gpa_chain: cannot read %s\n", argv[1]);
    return 1;
  }
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "gpa_chain: %s\n", dlerror());
    return 1;
  }
  g_gpa = reinterpret_cast<Gpa>(dlsym(h, "cuGetProcAddress_v2"));
  if (!g_gpa) return 1;
  CHECK(get<CUresult (*)(unsigned)>("cuInit", 2000)(0));
  g_gpa = get<Gpa>("cuGetProcAddress", 12000);
  auto deviceGet = get<CUresult (*)(CUdevice*, int)>("cuDeviceGet", 2000);
  auto retain = get<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain", 7000);
  auto setCurrent = get<CUresult (*)(CUcontext)>("cuCtxSetCurrent", 4000);
  auto loadData = get<CUresult (*)(CUmodule*, const void*)>("cuModuleLoadData", 2000);
  auto getFunction = get<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction", 2000);
  auto memAlloc = get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto memFree = get<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020);
  auto htod = get<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD", 3020, kPtsz);
  auto dtoh = get<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH", 3020, kPtsz);
  auto launch = get<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 CUstream, void**, void**)>("cuLaunchKernel", 4000, kPtsz);
  auto sync = get<CUresult (*)(CUstream)>("cuStreamSynchronize", 2000, kPtsz);

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CHECK(deviceGet(&dev, 0));
  CHECK(retain(&ctx, dev));
  CHECK(setCurrent(ctx));
  CHECK(loadData(&module, ptx.c_str()));
  CUfunction f[4];
  const char* names[4] = {"scale", "add", "relu", "mul"};
  for (int i = 0; i < 4; ++i) CHECK(getFunction(&f[i], module, names[i]));

  std::vector<size_t> bad(static_cast<size_t>(threads), 0);
  // Frees wait until every thread has checked its result: a free orders against all streams (kfuse then issues
  // every stream's deferred launches), and the test wants each thread's patterns left whole.
  std::barrier done(threads);
  auto work = [&](int t) {
    CHECK(setCurrent(ctx));
    std::vector<float> x(kN), bias(kN), gate(kN), want(kN), got(kN);
    const float alpha = 1.75f + 0.25f * static_cast<float>(t);
    for (int i = 0; i < kN; ++i) {
      x[i] = float((i * 37 + t) % 200 - 100) / 16.0f;
      bias[i] = float(i % 13) - 6.0f;
      gate[i] = float(i % 5) * 0.25f;
      float v = alpha * x[i] + bias[i];
      want[i] = (v > 0.f ? v : 0.f) * gate[i];
    }
    CUdeviceptr dx, db, dg, t1, t2, t3, out;
    for (CUdeviceptr* p : {&dx, &db, &dg, &t1, &t2, &t3, &out}) CHECK(memAlloc(p, kN * sizeof(float)));
    CHECK(htod(dx, x.data(), kN * sizeof(float)));
    CHECK(htod(db, bias.data(), kN * sizeof(float)));
    CHECK(htod(dg, gate.data(), kN * sizeof(float)));
    int n = kN;
    float a = alpha;
    for (int it = 0; it < kIterations; ++it) {
      void* a1[] = {&dx, &t1, &a, &n};
      void* a2[] = {&t1, &db, &t2, &n};
      void* a3[] = {&t2, &t3, &n};
      void* a4[] = {&t3, &dg, &out, &n};
      void** args[] = {a1, a2, a3, a4};
      for (int k = 0; k < 4; ++k) CHECK(launch(f[k], kN / 256, 1, 1, 256, 1, 1, 0, nullptr, args[k], nullptr));
    }
    CHECK(sync(nullptr));
    CHECK(dtoh(got.data(), out, kN * sizeof(float)));
    for (int i = 0; i < kN; ++i) bad[static_cast<size_t>(t)] += got[i] != want[i];
    done.arrive_and_wait();
    for (CUdeviceptr p : {dx, db, dg, t1, t2, t3, out}) CHECK(memFree(p));
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  size_t mismatches = 0;
  for (size_t b : bad) mismatches += b;
  if (mismatches) {
    std::printf("gpa_chain: FAILED (%zu mismatches)\n", mismatches);
    return 1;
  }
  std::printf("gpa_chain: PASSED (%d thread(s) x %d x 4 launches on per-thread default streams)\n", threads,
              kIterations);
  return 0;
}
