// Tests of the stand-in libcuda.so.1, loaded with dlopen the way cudart does (everything through
// cuGetProcAddress_v2), so the test neither links a driver nor depends on LD_LIBRARY_PATH.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kfuse/emulator/standin.h"
#include "standin_test_fixture.h"

namespace {

TEST_F(StandinTest, ExportsOnlyDriverSymbols) {
  EXPECT_NE(dlsym(handle_, "cuMemAlloc_v2"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuCtxCreate_v4"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuGetProcAddress"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuLaunchKernelEx"), nullptr);
  EXPECT_EQ(dlsym(handle_,
                  "_ZN5kfuse8emulator6Device6launchERKNS0_6KernelERKNS_"
                  "4core11LaunchShapeESt4spanIKhLm18446744073709551615EEPNS0_14LaunchCountersE"),
            nullptr);
}

TEST_F(StandinTest, ReportsAComputeCapability90DeviceThatIsNotAGpu) {
  char name[256];
  ASSERT_EQ(get<decltype(&cuDeviceGetName)>("cuDeviceGetName")(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_NE(std::string(name).find("not a GPU"), std::string::npos);
  int major = 0, minor = 1, version = 0;
  auto attr = get<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute");
  ASSERT_EQ(attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
  ASSERT_EQ(attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0), CUDA_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(minor, 0);
  ASSERT_EQ(get<decltype(&cuDriverGetVersion)>("cuDriverGetVersion")(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  const char* s = nullptr;
  ASSERT_EQ(get<decltype(&cuGetErrorName)>("cuGetErrorName")(CUDA_ERROR_ILLEGAL_ADDRESS, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST_F(StandinTest, GetProcAddressVersionsAndUnsupportedStubs) {
  void* legacy = nullptr;
  void* v2 = nullptr;
  ASSERT_EQ(get_proc_("cuGetProcAddress", &legacy, 11030, 0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(get_proc_("cuGetProcAddress", &v2, 12000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_NE(legacy, v2);
  EXPECT_EQ(v2, dlsym(handle_, "cuGetProcAddress_v2"));
  void* ptsz = get<void*>("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  EXPECT_NE(ptsz, nullptr);
  // Something the emulator does not implement: a stub that returns CUDA_ERROR_NOT_SUPPORTED.
  using ArrayCreate = CUresult (*)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*);
  auto array = get<ArrayCreate>("cuArrayCreate");
  ASSERT_NE(array, nullptr);
  CUarray a;
  CUDA_ARRAY_DESCRIPTOR desc{16, 16, CU_AD_FORMAT_FLOAT, 1};
  EXPECT_EQ(array(&a, &desc), CUDA_ERROR_NOT_SUPPORTED);
  // Programs that link an unsupported entry point directly still load; the call fails the same way.
  auto direct = reinterpret_cast<ArrayCreate>(dlsym(handle_, "cuArrayCreate_v2"));
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(direct(&a, &desc), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_NE(dlsym(handle_, "cuEventElapsedTime"), nullptr);
  EXPECT_NE(dlsym(handle_, "cuTexObjectCreate"), nullptr);
}

TEST_F(StandinTest, ExplicitContextsStackPerThread) {
  CUcontext primary = nullptr, created = nullptr, cur = nullptr, popped = nullptr;
  auto get_current = get<decltype(&cuCtxGetCurrent)>("cuCtxGetCurrent");
  ASSERT_EQ(get_current(&primary), CUDA_SUCCESS);
  ASSERT_NE(primary, nullptr);
  ASSERT_EQ(get<decltype(&cuCtxCreate)>("cuCtxCreate")(&created, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(get_current(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, created);
  ASSERT_EQ(get<decltype(&cuCtxPopCurrent)>("cuCtxPopCurrent")(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, created);
  ASSERT_EQ(get_current(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, primary);
  ASSERT_EQ(get<decltype(&cuCtxDestroy)>("cuCtxDestroy")(created), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuCtxDestroy)>("cuCtxDestroy")(created), CUDA_ERROR_INVALID_CONTEXT);
  CUdeviceptr p;
  EXPECT_EQ(get<decltype(&cuMemAlloc)>("cuMemAlloc")(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(StandinTest, RunsKernelsFromPtxAndFatbinsAndReportsFaults) {
  std::string ptx = readFile(KFUSE_EMU_TEST_PTX);
  ASSERT_FALSE(ptx.empty());
  CUmodule mod;
  ASSERT_EQ(get<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&mod, ptx.c_str()), CUDA_SUCCESS);
  CUfunction vadd;
  ASSERT_EQ(get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction")(&vadd, mod, "vadd"), CUDA_SUCCESS);
  const char* fname = nullptr;
  ASSERT_EQ(get<decltype(&cuFuncGetName)>("cuFuncGetName")(&fname, vadd), CUDA_SUCCESS);
  EXPECT_STREQ(fname, "vadd");
  size_t off = 0, size = 0;
  ASSERT_EQ(get<decltype(&cuFuncGetParamInfo)>("cuFuncGetParamInfo")(vadd, 3, &off, &size), CUDA_SUCCESS);
  EXPECT_EQ(off, 24u);
  EXPECT_EQ(size, 4u);

  auto alloc = get<decltype(&cuMemAlloc)>("cuMemAlloc");
  auto htod = get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD");
  auto dtoh = get<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH");
  const int n = 300;
  std::vector<float> a(n, 1.5f), b(n), c(n);
  for (int i = 0; i < n; ++i) b[i] = float(i);
  CUdeviceptr da, db, dc;
  ASSERT_EQ(alloc(&da, n * 4), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&db, n * 4), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&dc, n * 4), CUDA_SUCCESS);
  ASSERT_EQ(htod(da, a.data(), n * 4), CUDA_SUCCESS);
  ASSERT_EQ(htod(db, b.data(), n * 4), CUDA_SUCCESS);
  int nn = n;
  void* args[] = {&da, &db, &dc, &nn};
  CUlaunchConfig cfg{};
  cfg.gridDimX = 3, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 128, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  CUevent e0, e1;
  auto ev_create = get<decltype(&cuEventCreate)>("cuEventCreate");
  auto ev_record = get<decltype(&cuEventRecord)>("cuEventRecord");
  ASSERT_EQ(ev_create(&e0, 0), CUDA_SUCCESS);
  ASSERT_EQ(ev_create(&e1, 0), CUDA_SUCCESS);
  ASSERT_EQ(ev_record(e0, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuLaunchKernelEx)>("cuLaunchKernelEx")(&cfg, vadd, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(ev_record(e1, nullptr), CUDA_SUCCESS);
  float ms = -1;
  ASSERT_EQ(get<decltype(&cuEventElapsedTime)>("cuEventElapsedTime")(&ms, e0, e1), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  ASSERT_EQ(dtoh(c.data(), dc, n * 4), CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], 1.5f + float(i));

  // The counter API reports the launch.
  auto count = reinterpret_cast<uint64_t (*)()>(dlsym(handle_, "cuKfuseEmuLaunchCount"));
  auto launch_info =
      reinterpret_cast<int (*)(uint64_t, KfuseEmuLaunchCounters*)>(dlsym(handle_, "cuKfuseEmuGetLaunch"));
  ASSERT_NE(count, nullptr);
  ASSERT_NE(launch_info, nullptr);
  EXPECT_GE(count(), 1u);
  KfuseEmuLaunchCounters lc{};
  lc.struct_size = sizeof lc;
  ASSERT_EQ(launch_info(0, &lc), 0);
  EXPECT_STREQ(lc.kernel, "vadd");
  EXPECT_EQ(lc.global_store_bytes, uint64_t(4 * n));
  EXPECT_EQ(lc.flops_f32, uint64_t(n));
  // The calling thread's last launch is that one; a thread that launched nothing has none.
  auto thread_last = reinterpret_cast<uint64_t (*)()>(dlsym(handle_, "cuKfuseEmuThreadLastLaunch"));
  ASSERT_NE(thread_last, nullptr);
  EXPECT_EQ(thread_last(), lc.sequence);
  uint64_t other_thread_last = 99;
  std::thread([&] { other_thread_last = thread_last(); }).join();
  EXPECT_EQ(other_thread_last, 0u);

  // A fatbin holding compute_90 PTX, through the library API (what cudart 12+/13 uses).
  std::string fatbin = readFile(KFUSE_EMU_TEST_FATBIN);
  ASSERT_FALSE(fatbin.empty());
  CUlibrary lib;
  ASSERT_EQ(get<decltype(&cuLibraryLoadData)>("cuLibraryLoadData")(&lib, fatbin.data(), nullptr, nullptr, 0, nullptr,
                                                                   nullptr, 0),
            CUDA_SUCCESS);
  CUkernel k;
  ASSERT_EQ(get<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel")(&k, lib, "vadd"), CUDA_SUCCESS);
  CUfunction kf;
  ASSERT_EQ(get<decltype(&cuKernelGetFunction)>("cuKernelGetFunction")(&kf, k), CUDA_SUCCESS);
  auto launchk = get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  ASSERT_EQ(launchk(kf, 3, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);

  // An out-of-bounds store fails the launch with CUDA_ERROR_ILLEGAL_ADDRESS and poisons the context.
  CUfunction oob;
  ASSERT_EQ(get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction")(&oob, mod, "oob"), CUDA_SUCCESS);
  void* oargs[] = {&dc, &nn};
  EXPECT_EQ(launchk(oob, 1, 1, 1, 32, 1, 1, 0, nullptr, oargs, nullptr), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize")(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(get<decltype(&cuDevicePrimaryCtxReset)>("cuDevicePrimaryCtxReset")(0), CUDA_SUCCESS);
  EXPECT_EQ(get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize")(), CUDA_SUCCESS);
}

}  // namespace

namespace {
CUuuid uuid(std::initializer_list<int> bytes) {
  CUuuid u{};
  int i = 0;
  for (int b : bytes) u.bytes[i++] = char(b);
  return u;
}
}  // namespace

TEST_F(StandinTest, ExportTablesHaveTheirSizeHeadersAndUnknownTablesAreNotFound) {
  auto get_table = get<decltype(&cuGetExportTable)>("cuGetExportTable");
  const void* table = nullptr;
  CUuuid cudart =
      uuid({0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9});
  ASSERT_EQ(get_table(&table, &cudart), CUDA_SUCCESS);
  auto slots = static_cast<void* const*>(table);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(slots[0]), 13 * sizeof(void*));
  // Slot 2: the primary context of a device.
  auto primary = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(slots[2]);
  CUcontext ctx = nullptr, retained = nullptr;
  ASSERT_EQ(primary(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&retained, 0), CUDA_SUCCESS);
  EXPECT_EQ(ctx, retained);
  // A slot whose meaning is unknown fails instead of doing something silently.
  EXPECT_EQ(reinterpret_cast<CUresult (*)()>(slots[3])(), CUDA_ERROR_NOT_SUPPORTED);
  // Tables the stand-in does not know, and the one it declines, are "not found" (table set to null).
  CUuuid unknown = uuid({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  table = &unknown;
  EXPECT_EQ(get_table(&table, &unknown), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(table, nullptr);
  CUuuid declined =
      uuid({0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9});
  EXPECT_EQ(get_table(&table, &declined), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(get_table(nullptr, &cudart), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(StandinTest, ContextLocalStorageKeepsValuesPerContextAndRunsDestructorsOnReset) {
  auto get_table = get<decltype(&cuGetExportTable)>("cuGetExportTable");
  const void* table = nullptr;
  CUuuid id = uuid({0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93});
  ASSERT_EQ(get_table(&table, &id), CUDA_SUCCESS);
  auto slots = static_cast<void* const*>(table);
  using Dtor = void (*)(CUcontext, void*, void*);
  auto put = reinterpret_cast<CUresult (*)(CUcontext, void*, void*, Dtor)>(slots[0]);
  auto remove = reinterpret_cast<CUresult (*)(CUcontext, void*)>(slots[1]);
  auto lookup = reinterpret_cast<CUresult (*)(void**, CUcontext, void*)>(slots[2]);
  static int destroyed = 0;
  static void* destroyed_value = nullptr;
  int key1 = 0, key2 = 0, value = 0;
  void* out = &value;
  EXPECT_NE(lookup(&out, nullptr, &key1), CUDA_SUCCESS);  // nothing stored yet
  EXPECT_EQ(out, nullptr);
  ASSERT_EQ(put(nullptr, &key1, &value, [](CUcontext, void*, void* v) { ++destroyed, destroyed_value = v; }),
            CUDA_SUCCESS);
  ASSERT_EQ(lookup(&out, nullptr, &key1), CUDA_SUCCESS);  // null context = the current one
  EXPECT_EQ(out, &value);
  ASSERT_EQ(put(nullptr, &key2, &value, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(remove(nullptr, &key2), CUDA_SUCCESS);
  EXPECT_NE(lookup(&out, nullptr, &key2), CUDA_SUCCESS);
  ASSERT_EQ(get<decltype(&cuDevicePrimaryCtxReset)>("cuDevicePrimaryCtxReset")(0), CUDA_SUCCESS);
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(destroyed_value, &value);
  EXPECT_NE(lookup(&out, nullptr, &key1), CUDA_SUCCESS);
}

TEST_F(StandinTest, IntegrityCheckAnswersTheDocumentedConstantsAndAnHmacOtherwise) {
  auto get_table = get<decltype(&cuGetExportTable)>("cuGetExportTable");
  const void* table = nullptr;
  CUuuid id = uuid({0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2});
  ASSERT_EQ(get_table(&table, &id), CUDA_SUCCESS);
  auto slots = static_cast<void* const*>(table);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(slots[0]), 3 * sizeof(void*));
  auto check = reinterpret_cast<CUresult (*)(uint32_t, uint64_t, uint64_t*)>(slots[1]);
  uint64_t r[2] = {};
  ASSERT_EQ(check(13000, 1700000000, r), CUDA_SUCCESS);
  EXPECT_EQ(r[0], 0x3341181c03cb675cull);
  EXPECT_EQ(r[1], 0x8ed383aa1f4cd1e8ull);
  ASSERT_EQ(check(13001, 1700000000, r), CUDA_SUCCESS);
  EXPECT_EQ(r[0], 0x1841181c03cb675cull);
  // Other versions hash the process, the time and the devices: deterministic within a process and thread,
  // different for another time.
  uint64_t a[2] = {}, b[2] = {}, c[2] = {};
  ASSERT_EQ(check(13002, 1700000000, a), CUDA_SUCCESS);
  ASSERT_EQ(check(13002, 1700000000, b), CUDA_SUCCESS);
  ASSERT_EQ(check(13002, 1700000001, c), CUDA_SUCCESS);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[0], c[0]);
  EXPECT_EQ(check(13002, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(StandinTest, VirtualMemoryMappedTwiceShowsTheSameBytesAtBothAddresses) {
  auto granularity_of = get<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  auto create = get<decltype(&cuMemCreate)>("cuMemCreate");
  auto release = get<decltype(&cuMemRelease)>("cuMemRelease");
  auto reserve = get<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  auto free_range = get<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  auto map = get<decltype(&cuMemMap)>("cuMemMap");
  auto unmap = get<decltype(&cuMemUnmap)>("cuMemUnmap");
  auto set_access = get<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  auto retain = get<decltype(&cuMemRetainAllocationHandle)>("cuMemRetainAllocationHandle");
  auto htod = get<decltype(&cuMemcpyHtoD)>("cuMemcpyHtoD");
  auto dtoh = get<decltype(&cuMemcpyDtoH)>("cuMemcpyDtoH");
  auto range = get<decltype(&cuMemGetAddressRange)>("cuMemGetAddressRange");

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t g = 0;
  ASSERT_EQ(granularity_of(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  ASSERT_EQ(g, size_t{2} << 20);
  CUmemGenericAllocationHandle h = 0, other = 0;
  EXPECT_EQ(create(&h, g + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);  // not a multiple of the granularity
  EXPECT_EQ(create(&h, g, &prop, 1), CUDA_ERROR_INVALID_VALUE);         // flags must be 0
  ASSERT_EQ(create(&h, g, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(create(&other, g, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  ASSERT_EQ(reserve(&va, 3 * g, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % g, 0u);
  CUdeviceptr probe = 0;
  EXPECT_EQ(range(&probe, nullptr, va), CUDA_ERROR_NOT_FOUND);  // reserved, nothing mapped
  ASSERT_EQ(map(va, g, 0, h, 0), CUDA_SUCCESS);
  ASSERT_EQ(map(va + g, g, 0, h, 0), CUDA_SUCCESS);  // the same bytes again
  ASSERT_EQ(map(va + 2 * g, g, 0, other, 0), CUDA_SUCCESS);
  EXPECT_EQ(map(va, g, 0, other, 0), CUDA_ERROR_INVALID_VALUE);          // already mapped there
  EXPECT_EQ(map(va + 3 * g, g, 0, other, 0), CUDA_ERROR_INVALID_VALUE);  // outside the reservation
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(set_access(va, 3 * g, &access, 1), CUDA_SUCCESS);

  const uint32_t word = 0xfeedf00d;
  ASSERT_EQ(htod(va + 4, &word, 4), CUDA_SUCCESS);
  uint32_t through_second = 0, through_other = 1;
  ASSERT_EQ(dtoh(&through_second, va + g + 4, 4), CUDA_SUCCESS);
  ASSERT_EQ(dtoh(&through_other, va + 2 * g + 4, 4), CUDA_SUCCESS);
  EXPECT_EQ(through_second, word);
  EXPECT_EQ(through_other, 0u);
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_EQ(range(&base, &size, va + g + 4), CUDA_SUCCESS);
  EXPECT_EQ(base, va + g);
  EXPECT_EQ(size, g);
  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(retain(&retained, reinterpret_cast<void*>(va + g + 8)), CUDA_SUCCESS);
  EXPECT_EQ(retained, h);
  EXPECT_EQ(release(retained), CUDA_SUCCESS);

  // Released handles: the mappings keep the bytes until they are unmapped.
  ASSERT_EQ(release(h), CUDA_SUCCESS);
  EXPECT_EQ(release(h), CUDA_ERROR_INVALID_VALUE);
  uint32_t still = 0;
  ASSERT_EQ(dtoh(&still, va + 4, 4), CUDA_SUCCESS);
  EXPECT_EQ(still, word);
  EXPECT_EQ(free_range(va, 3 * g), CUDA_ERROR_INVALID_VALUE);  // still mapped
  ASSERT_EQ(unmap(va, 2 * g), CUDA_SUCCESS);                   // both mappings of h
  EXPECT_EQ(dtoh(&still, va + 4, 4), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(unmap(va + 2 * g, g), CUDA_SUCCESS);
  EXPECT_EQ(unmap(va + 2 * g, g), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(release(other), CUDA_SUCCESS);
  EXPECT_EQ(free_range(va, 3 * g), CUDA_SUCCESS);
}

TEST_F(StandinTest, KernelsReachRegisteredHostMemoryThroughEveryMappingOfIt) {
  // One memfd mapped at two addresses, both registered: a kernel writing through the first and one reading through
  // the second see the same bytes, as on a GPU with unified addressing.
  CUmodule mod;
  ASSERT_EQ(get<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&mod, readFile(KFUSE_EMU_TEST_PTX).c_str()),
            CUDA_SUCCESS);
  CUfunction vadd;
  ASSERT_EQ(get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction")(&vadd, mod, "vadd"), CUDA_SUCCESS);
  auto reg = get<decltype(&cuMemHostRegister)>("cuMemHostRegister");
  auto unreg = get<decltype(&cuMemHostUnregister)>("cuMemHostUnregister");
  auto device_pointer = get<decltype(&cuMemHostGetDevicePointer)>("cuMemHostGetDevicePointer");
  auto launch = get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  auto sync = get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize");
  auto range = get<decltype(&cuMemGetAddressRange)>("cuMemGetAddressRange");
  const size_t bytes = 4096;
  const int fd = memfd_create("standin-test", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, bytes), 0);
  auto* first = static_cast<float*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  auto* second = static_cast<float*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(first, MAP_FAILED);
  ASSERT_NE(second, MAP_FAILED);
  ASSERT_EQ(reg(first, bytes, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
  ASSERT_EQ(reg(second, bytes, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
  EXPECT_EQ(reg(first, bytes, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CUdeviceptr d1 = 0, d2 = 0;
  ASSERT_EQ(device_pointer(&d1, first, 0), CUDA_SUCCESS);
  ASSERT_EQ(device_pointer(&d2, second, 0), CUDA_SUCCESS);
  EXPECT_EQ(range(nullptr, nullptr, d1), CUDA_ERROR_NOT_FOUND);  // host memory is not a device allocation
  for (int i = 0; i < 256; ++i) first[i] = float(i);
  const int n = 256;
  CUdeviceptr out = d1 + 256 * 4, a = d1, b = d2;  // out[i] = first[i] + second[i], out in the first mapping
  int nn = n;
  void* args[] = {&a, &b, &out, &nn};
  ASSERT_EQ(launch(vadd, 2, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(second[256 + 3], 6.f);  // written through the first mapping, read through the second
  EXPECT_EQ(second[256 + 255], 510.f);
  ASSERT_EQ(unreg(first), CUDA_SUCCESS);
  EXPECT_EQ(unreg(first), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  ASSERT_EQ(unreg(second), CUDA_SUCCESS);
  munmap(first, bytes);
  munmap(second, bytes);
  close(fd);
}
