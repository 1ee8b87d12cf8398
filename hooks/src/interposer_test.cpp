#include "kfuse/hooks/driver_hooks.h"

#include <gtest/gtest.h>

namespace kfuse::hooks {
namespace {

// Fake driver functions: distinct addresses, recognisable results.
CUresult CUDAAPI fakeLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**) {
  return static_cast<CUresult>(1001);
}
CUresult CUDAAPI fakeLaunchPtsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**) {
  return static_cast<CUresult>(1002);
}
CUresult CUDAAPI fakeOtherLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 CUstream, void**, void**) {
  return static_cast<CUresult>(1003);
}
CUresult CUDAAPI fakeMemAllocV1(CUdeviceptr*, size_t) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeGpaV2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeGpaLegacy(const char*, void**, int, cuuint64_t) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeCtxSyncV2(CUcontext) {
  return static_cast<CUresult>(1004);
}
CUresult CUDAAPI fakeInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long) {
  return static_cast<CUresult>(1005);
}
CUresult CUDAAPI fakeInstantiateLegacy(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t) {
  return CUDA_SUCCESS;
}

using LaunchFn = CUresult(CUDAAPI*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);

void* fn(auto f) {
  return reinterpret_cast<void*>(f);
}

class RecordingClient : public HookClient {
 public:
  using HookClient::HookClient;
  CUresult LaunchKernel(int variant, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, CUstream stream, void** params, void** extra) override {
    last_variant = variant;
    ++calls;
    return HookClient::LaunchKernel(variant, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
  }
  int last_variant = -1;
  int calls = 0;
};

// The interposer is process-wide state; these tests run in one order-independent sequence of expectations.
TEST(InterposerTest, HandsOutWrappersForHookedApisPerVariant) {
  void* w0 = Interposer::resolveProc("cuLaunchKernel", 4000, 0, fn(&fakeLaunch));
  void* w1 = Interposer::resolveProc("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                     fn(&fakeLaunchPtsz));
  EXPECT_EQ(w0, Interposer::wrapper(Api::LaunchKernel, 0));
  EXPECT_EQ(w1, Interposer::wrapper(Api::LaunchKernel, 1));
  EXPECT_NE(w0, w1);
  EXPECT_EQ(Interposer::driver().LaunchKernel[0].load(), &fakeLaunch);
  EXPECT_EQ(Interposer::driver().LaunchKernel[1].load(), &fakeLaunchPtsz);
  // Without a client the wrappers forward to the driver's function of their variant.
  EXPECT_EQ(reinterpret_cast<LaunchFn>(w0)(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), 1001);
  EXPECT_EQ(reinterpret_cast<LaunchFn>(w1)(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), 1002);
}

TEST(InterposerTest, InstalledClientSeesTheVariantAndForwards) {
  (void)Interposer::resolveProc("cuLaunchKernel", 4000, 0, fn(&fakeLaunch));
  (void)Interposer::resolveProc("cuLaunchKernel", 7000, 2, fn(&fakeLaunchPtsz));
  RecordingClient client(Interposer::driver());
  Interposer::install(&client);
  auto w1 = reinterpret_cast<LaunchFn>(Interposer::wrapper(Api::LaunchKernel, 1));
  EXPECT_EQ(w1(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), 1002);
  EXPECT_EQ(client.last_variant, 1);
  EXPECT_EQ(client.calls, 1);
  Interposer::install(nullptr);
}

TEST(InterposerTest, OldAbiVersionsAndUnknownSymbolsPassThrough) {
  // cuMemAlloc below 3020 is the 32-bit v1 function: never hooked.
  EXPECT_EQ(Interposer::resolveProc("cuMemAlloc", 2000, 0, fn(&fakeMemAllocV1)), fn(&fakeMemAllocV1));
  EXPECT_EQ(Interposer::resolveProc("cuDeviceGetCount", 2000, 0, fn(&fakeMemAllocV1)), fn(&fakeMemAllocV1));
  EXPECT_EQ(Interposer::resolveProc("cuLaunchKernel", 4000, 0, nullptr), nullptr);
}

TEST(InterposerTest, VersionRangesSelectTheAbi) {
  // cuCtxSynchronize at 13000 is cuCtxSynchronize_v2(CUcontext): a different wrapper from the 2000 one.
  void* w = Interposer::resolveProc("cuCtxSynchronize", 13000, 0, fn(&fakeCtxSyncV2));
  EXPECT_EQ(w, Interposer::wrapper(Api::CtxSynchronizeV2, 0));
  using Fn = CUresult(CUDAAPI*)(CUcontext);
  EXPECT_EQ(reinterpret_cast<Fn>(w)(nullptr), 1004);
}

TEST(InterposerTest, GraphInstantiateFrom12000IsTheWithFlagsAbiAndOlderOnesPassThrough) {
  // cuda.h: #define cuGraphInstantiate cuGraphInstantiateWithFlags; cudart asks for either name.
  void* flags = Interposer::resolveProc("cuGraphInstantiateWithFlags", 11040, 0, fn(&fakeInstantiateWithFlags));
  void* base = Interposer::resolveProc("cuGraphInstantiate", 12000, 0, fn(&fakeInstantiateWithFlags));
  EXPECT_EQ(flags, Interposer::wrapper(Api::GraphInstantiateWithFlags, 0));
  EXPECT_EQ(base, flags);
  using Fn = CUresult(CUDAAPI*)(CUgraphExec*, CUgraph, unsigned long long);
  EXPECT_EQ(reinterpret_cast<Fn>(base)(nullptr, nullptr, 0), 1005);
  // Before 12000 the name is the 5-argument legacy function: not hooked.
  EXPECT_EQ(Interposer::resolveProc("cuGraphInstantiate", 11000, 0, fn(&fakeInstantiateLegacy)),
            fn(&fakeInstantiateLegacy));
}

TEST(InterposerTest, GetProcAddressLookupsGetTheMatchingWrapper) {
  void* v2 = Interposer::resolveProc("cuGetProcAddress", 12000, 0, fn(&fakeGpaV2));
  void* legacy = Interposer::resolveProc("cuGetProcAddress", 11030, 0, fn(&fakeGpaLegacy));
  EXPECT_EQ(v2, Interposer::getProcAddressV2Wrapper());
  EXPECT_EQ(legacy, Interposer::getProcAddressLegacyWrapper());
  EXPECT_NE(v2, legacy);
  EXPECT_EQ(Interposer::resolveSymbol("cuGetProcAddress_v2", fn(&fakeGpaV2)), v2);
}

TEST(InterposerTest, ExportedNamesMapToTheirVariant) {
  EXPECT_EQ(Interposer::resolveSymbol("cuLaunchKernel_ptsz", fn(&fakeLaunchPtsz)),
            Interposer::wrapper(Api::LaunchKernel, 1));
  EXPECT_EQ(Interposer::resolveSymbol("cuLaunchKernel", fn(&fakeLaunch)), Interposer::wrapper(Api::LaunchKernel, 0));
  EXPECT_EQ(Interposer::resolveSymbol("cuDeviceGet", fn(&fakeLaunch)), fn(&fakeLaunch));
}

TEST(InterposerTest, ASecondDifferentDriverFunctionForASlotPassesThrough) {
  (void)Interposer::resolveProc("cuLaunchKernel", 4000, 0, fn(&fakeLaunch));
  const uint64_t before = Interposer::mismatchedLookups();
  EXPECT_EQ(Interposer::resolveProc("cuLaunchKernel", 4000, 0, fn(&fakeOtherLaunch)), fn(&fakeOtherLaunch));
  EXPECT_EQ(Interposer::mismatchedLookups(), before + 1);
}

TEST(InterposerTest, EveryApiHasDistinctWrappersAndNames) {
  for (int i = 0; i < static_cast<int>(Api::kCount); ++i) {
    const ApiInfo& a = apiInfo(static_cast<Api>(i));
    EXPECT_NE(a.base, nullptr);
    EXPECT_NE(Interposer::wrapper(static_cast<Api>(i), 0), Interposer::wrapper(static_cast<Api>(i), 1));
    EXPECT_EQ(std::string(a.symbol).rfind(a.base, 0), 0u) << a.symbol;
  }
}

}  // namespace
}  // namespace kfuse::hooks
