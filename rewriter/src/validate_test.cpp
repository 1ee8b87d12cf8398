#include "kfuse/rewriter/validate.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "kfuse/hooks/driver_hooks.h"

#include "temp_dir.h"
#include "test_plans.h"

namespace kfuse::rewriter {
namespace {

namespace fs = std::filesystem;
using testing::readFile;
using testing::writeFile;

fs::path planDir(const std::string& name) {
  return kfuse::testing::processTempDir("kfuse_validate_test_") / name;
}

ValidationOptions emu() {
  return ValidationOptions{};
}

TEST(Validate, HandWrittenFusionOfScaleAndAddPassesEveryTrial) {
  fs::path dir = planDir("good");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  std::vector<std::string> lines;
  ValidationOptions o;
  o.seed = 7;
  o.progress = [&](const std::string& line) { lines.push_back(line); };
  auto r = validatePlan(plan, dir.string(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << r->failure;
  EXPECT_FALSE(r->mismatch);
  EXPECT_EQ(r->runs, 8);  // 2 argument sets x 4 built-in trials
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "argument set 0 (launches 0-1 of the trace), random (seed 7): identical");
  EXPECT_EQ(lines[5], "argument set 1 (ragged: n = 1000 with block 256), edge values: identical");
  EXPECT_EQ(r->trials, lines);
}

TEST(Validate, EmulatorSaysWhyItDoesNotTime) {
  fs::path dir = planDir("emu_timing");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  auto r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << r->failure;
  EXPECT_FALSE(r->timing.timed());
  EXPECT_EQ(r->timing.not_timed, "not timed: the emulator runs kernels on the CPU, not a GPU");
  // Recorded so, unless a GPU's figures are there already: those stay.
  PlanValidation v;
  recordValidation(v, emu(), *r);
  ASSERT_TRUE(v.timing);
  EXPECT_EQ(v.timing->not_timed, r->timing.not_timed);
  v.timing = PlanTiming{20000, 12000, 5, 2, ""};
  recordValidation(v, emu(), *r);
  EXPECT_EQ(v.timing->fused_ns, 12000u);
}

TEST(Validate, CorruptedFusionNamesBufferElementAndBothValues) {
  fs::path dir = planDir("corrupt");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused_corrupt.ptx");
  ValidationOptions o;
  o.seed = 3;
  auto r = validatePlan(plan, dir.string(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->passed);
  ASSERT_TRUE(r->mismatch);
  const Mismatch& m = *r->mismatch;
  EXPECT_EQ(m.buffer, 3);
  EXPECT_EQ(m.buffer_name, "buffer 3 (argument 2 of add)");
  EXPECT_EQ(m.element, 0u);
  EXPECT_EQ(m.element_type, "f32");
  EXPECT_EQ(r->runs, 1);  // stops at the first mismatch
  EXPECT_NE(m.original, m.fused);
  EXPECT_EQ(m.sentence(), "buffer 3 (argument 2 of add) differs first at element 0 (f32): original " + m.original +
                              ", fused " + m.fused + " (argument set 0, random (seed 3))");
}

TEST(Validate, DroppedIntermediatesAreNotCompared) {
  fs::path dir = planDir("dropped");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused_corrupt.ptx");
  plan.aggressive = true;
  plan.dropped_buffers = {{1, 2}};  // the corrupted output, as if it were a dead intermediate
  auto r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << (r->mismatch ? r->mismatch->sentence() : r->failure);
}

TEST(Validate, FusedKernelThatFaultsFailsValidationWithTheEmulatorsMessage) {
  fs::path dir = planDir("fault");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  // The fused kernel without its bounds check: the ragged set's last block runs past the end of x.
  std::string ptx = readFile(dir / "fused.ptx");
  size_t guard = ptx.find("@%p1 bra");
  ASSERT_NE(guard, std::string::npos);
  ptx.insert(guard, "// ");
  writeFile(dir / "fused.ptx", ptx);
  auto r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->passed);
  EXPECT_FALSE(r->mismatch);
  EXPECT_NE(r->failure.find("the fused kernel kfuse_scale_add failed"), std::string::npos) << r->failure;
  EXPECT_NE(r->failure.find("out-of-bounds"), std::string::npos) << r->failure;
}

// A kernel the emulator's decoder refuses (more registers than its 65,520 slots, as a huge kernel has) fails the
// validation before any run, so the plan's buffers are never allocated.
TEST(Validate, KernelsTheEmulatorCannotRunFailBeforeAnyRun) {
  auto tooManyRegisters = [](const fs::path& file) {
    std::string ptx = readFile(file);
    const size_t body = ptx.find("{\n", ptx.find(".entry"));
    ASSERT_NE(body, std::string::npos);
    ptx.insert(body + 2, "\t.reg .b32 %big<59000>;\n\t.reg .b32 %more<10000>;\n");
    writeFile(file, ptx);
  };
  fs::path dir = planDir("unrunnable_fused");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  tooManyRegisters(dir / "fused.ptx");
  auto r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->passed);
  EXPECT_EQ(r->runs, 0);
  EXPECT_NE(r->failure.find("the fused kernel kfuse_scale_add cannot run here: "), std::string::npos) << r->failure;
  EXPECT_NE(r->failure.find("too many registers"), std::string::npos) << r->failure;

  dir = planDir("unrunnable_original");
  plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  tooManyRegisters(dir / plan.kernels[0].ptx_file);
  r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->passed);
  EXPECT_EQ(r->runs, 0);
  EXPECT_NE(r->failure.find("no run could compare anything: the original " + plan.kernels[0].mangled_name +
                            " cannot run here: "),
            std::string::npos)
      << r->failure;
}

TEST(Validate, TrialsOptionChoosesHowManyRunsPerArgumentSet) {
  fs::path dir = planDir("trials");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  plan.argument_sets.resize(1);
  ValidationOptions o;
  o.trials = 1;
  auto one = validatePlan(plan, dir.string(), o);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->runs, 1);
  o.trials = 6;
  auto six = validatePlan(plan, dir.string(), o);
  ASSERT_TRUE(six.ok());
  EXPECT_TRUE(six->passed);
  ASSERT_EQ(six->runs, 6);
  EXPECT_NE(six->trials[5].find("random (seed 6)"), std::string::npos) << six->trials[5];
}

TEST(Validate, PlansThatCannotRunAreErrorsNamingTheFile) {
  fs::path dir = planDir("errors");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  fs::remove(dir / "fused.ptx");
  auto missing = validatePlan(plan, dir.string(), emu());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find((dir / "fused.ptx").string()), std::string::npos);

  writeFile(dir / "fused.ptx", "this is not PTX");
  auto garbage = validatePlan(plan, dir.string(), emu());
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find((dir / "fused.ptx").string()), std::string::npos);

  writeFile(dir / "fused.ptx", readFile(fs::path(KFUSE_REWRITER_TESTDATA) / "scale_add_fused.ptx"));
  plan.fused.name = "no_such_kernel";
  auto absent = validatePlan(plan, dir.string(), emu());
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(absent.status().message(), (dir / "fused.ptx").string() + ": no .entry no_such_kernel");

  plan.fused.name = "kfuse_scale_add";
  Plan other_hash = plan;
  other_hash.kernels[1].module_hash = std::string(64, '0');
  auto unmatched = validatePlan(other_hash, dir.string(), emu());
  ASSERT_FALSE(unmatched.ok());
  EXPECT_EQ(unmatched.status().message(), (dir / "plan.json").string() +
                                              ": pattern.kernels[1].module_hash: 0000000000000000... matches no module "
                                              "of the plan (add's PTX is " +
                                              plan.kernels[1].ptx_file + ")");

  Plan huge = plan;
  huge.argument_sets[0].buffer_bytes[2] = uint64_t{1} << 62;
  auto too_big = validatePlan(huge, dir.string(), emu());
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("argument set 0 needs more than 8 GiB"), std::string::npos)
      << too_big.status().message();

  plan.fused.params.pop_back();
  auto short_params = validatePlan(plan, dir.string(), emu());
  ASSERT_FALSE(short_params.ok());
  EXPECT_NE(short_params.status().message().find("takes 6 parameters, the plan maps 5"), std::string::npos)
      << short_params.status().message();
}

TEST(Validate, FourKernelChainPassesWithRaggedSize) {
  fs::path dir = planDir("chain");
  Plan plan = testing::writeChainPlanDir(dir, {testing::chainArguments(1000, "ragged: n = 1000 with block 256")});
  auto r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << (r->mismatch ? r->mismatch->sentence() : r->failure);
  EXPECT_EQ(r->runs, 4);
}

// The vertical pass's own fusion of the chain (its golden file, testdata/vertical/elementwise_chain.fused.ptx:
// the fused function alone, parameters in the same order as the hand-written one) validates too.
TEST(Validate, VerticalPassFusionOfTheChainPasses) {
  fs::path dir = planDir("chain_pass");
  Plan plan = testing::writeChainPlanDir(dir, {testing::chainArguments(1000, "ragged: n = 1000 with block 256"),
                                               testing::chainArguments(4096, "n = 4096")});
  fs::path golden = fs::path(KFUSE_REWRITER_TESTDATA) / "vertical" / "elementwise_chain.fused.ptx";
  if (!fs::exists(golden)) GTEST_SKIP() << golden << " is not there";
  writeFile(dir / "fused.ptx", ".version 9.0\n.target sm_90\n.address_size 64\n\n" + readFile(golden));
  plan.fused.name = "fused_chain";
  auto r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << (r->mismatch ? r->mismatch->sentence() : r->failure);
  EXPECT_EQ(r->runs, 8);
}

// ~1M elements through the four-kernel chain, every built-in trial: what `kfuse validate` costs on a real-sized
// launch sequence.
TEST(Validate, MillionElementChainValidatesQuickly) {
  fs::path dir = planDir("large");
  Plan plan = testing::writeChainPlanDir(dir, {testing::chainArguments(1 << 20, "1M elements")});
  auto r = validatePlan(plan, dir.string(), emu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << (r->mismatch ? r->mismatch->sentence() : r->failure);
  std::printf("validation of the 4-kernel chain over 1M elements, %d runs: %.3f s\n", r->runs, r->seconds);
  EXPECT_LT(r->seconds, 10.0);  // generous: the machine is shared; the measured time is in the README
}

TEST(Validate, PrintsElementsAsNumbersAndNaNsWithTheirBits) {
  EXPECT_EQ(formatElement("f32", 0x3fc00000), "1.5");
  EXPECT_EQ(formatElement("f32", 0x80000000), "-0");
  EXPECT_EQ(formatElement("f32", 0xff800000), "-inf");
  EXPECT_EQ(formatElement("f32", 0x7fc01234), "nan (0x7fc01234)");
  EXPECT_EQ(formatElement("f32", 0x00000001), "1.40129846e-45");
  EXPECT_EQ(formatElement("f64", 0x3ff0000000000000), "1");
  EXPECT_EQ(formatElement("f64", 0x7ff8000000001234), "nan (0x7ff8000000001234)");
  EXPECT_EQ(formatElement("f16", 0x3c00), "1");
  EXPECT_EQ(formatElement("f16", 0x0001), "5.9605e-08");
  EXPECT_EQ(formatElement("f16x2", 0xbc00), "-1");
  EXPECT_EQ(formatElement("bf16", 0x7fc1), "nan (0x7fc1)");
  EXPECT_EQ(formatElement("bf16", 0x3f80), "1");
  EXPECT_EQ(formatElement("s32", 0xffffffff), "-1");
  EXPECT_EQ(formatElement("s32", 0x80000000), "-2147483648");
  EXPECT_EQ(formatElement("u32", 0xffffffff), "4294967295");
  EXPECT_EQ(formatElement("s8", 0x80), "-128");
  EXPECT_EQ(formatElement("", 0xff), "255");
}

// ---- the driver backend ----
// Runs wherever libcuda.so.1 can be loaded: on a GPU, or on kfuse's CPU stand-in (ctest runs these twice, as
// rewriter.DriverBackendOnStandin with LD_LIBRARY_PATH at the stand-in, label emulator, and as
// rewriter.DriverBackendOnGpu, label gpu). KFUSE_REQUIRE_DRIVER=1 turns "no driver" into a failure.
bool driverAvailable() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return h != nullptr;  // kept open: the backend opens it again
}

#define KFUSE_NEED_DRIVER()                                                                     \
  do {                                                                                          \
    if (!driverAvailable()) {                                                                   \
      if (std::getenv("KFUSE_REQUIRE_DRIVER")) FAIL() << "libcuda.so.1 cannot be loaded";       \
      GTEST_SKIP() << "no libcuda.so.1 (set LD_LIBRARY_PATH to the stand-in, or run on a GPU)"; \
    }                                                                                           \
  } while (false)

TEST(DriverBackend, IsTheDriverTheTestAskedFor) {
  KFUSE_NEED_DRIVER();
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  bool standin = dlsym(h, "cuKfuseNotAGpu") != nullptr;
  if (std::getenv("KFUSE_REQUIRE_REAL_GPU")) {
    EXPECT_FALSE(standin) << "loaded kfuse's stand-in, not a GPU driver";
  }
  std::printf("driver: %s\n", standin ? "kfuse CPU stand-in" : "real");
}

TEST(DriverBackend, HandWrittenFusionPasses) {
  KFUSE_NEED_DRIVER();
  fs::path dir = planDir("driver_good");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  ValidationOptions o;
  o.backend = Backend::kGpu;
  auto r = validatePlan(plan, dir.string(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << r->failure;
  EXPECT_EQ(r->runs, 8);
}

TEST(DriverBackend, CorruptedFusionIsCaught) {
  KFUSE_NEED_DRIVER();
  fs::path dir = planDir("driver_corrupt");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused_corrupt.ptx");
  ValidationOptions o;
  o.backend = Backend::kGpu;
  auto r = validatePlan(plan, dir.string(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->mismatch);
  EXPECT_EQ(r->mismatch->buffer_name, "buffer 3 (argument 2 of add)");
}

TEST(DriverBackend, FaultingFusedKernelFailsValidation) {
  KFUSE_NEED_DRIVER();
  fs::path dir = planDir("driver_fault");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  std::string ptx = readFile(dir / "fused.ptx");
  ptx.insert(ptx.find("@%p1 bra"), "// ");
  writeFile(dir / "fused.ptx", ptx);
  plan.argument_sets = {testing::scaleAddArguments(1000, "ragged")};
  ValidationOptions o;
  o.backend = Backend::kGpu;
  auto r = validatePlan(plan, dir.string(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->passed);
  EXPECT_NE(r->failure.find("the fused kernel kfuse_scale_add failed"), std::string::npos) << r->failure;
  // 24 threads past n = 1000 write 96 bytes past the buffer: inside a GPU's allocation granularity, so no fault
  // there (seen on an H100: validation passed); the guard after each buffer catches it on every driver.
  EXPECT_NE(r->failure.find("wrote past the end of"), std::string::npos) << r->failure;
}

// ---- timing, on a fake driver ----
// The driver's function table filled with a fake GPU: "device" memory is host memory, the three kernels of the
// scale/add plan run in C++, and a clock advances by each kernel's cost (microseconds, by name) at every launch;
// an event records the clock. The same seam as the injector's tests (rewriter/inject/src/injector_test.cpp).
struct FakeGpu {
  std::map<std::string, double> cost_us;
  double clock_us = 0;
  std::vector<double> events;
  std::vector<std::string> functions;  // CUfunction = index + 1
  std::vector<std::string> launches;
};
FakeGpu* g_gpu = nullptr;

template <class T>
T param(void** params, int i) {
  T v;
  std::memcpy(&v, params[i], sizeof v);
  return v;
}

CUresult CUDAAPI fakeLaunch(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void** p, void**) {
  const std::string& name = g_gpu->functions.at(reinterpret_cast<size_t>(f) - 1);
  g_gpu->launches.push_back(name);
  g_gpu->clock_us += g_gpu->cost_us[name];
  if (name == "scale") {  // scale(x, y, alpha, n): y = alpha x
    auto x = param<const float*>(p, 0);
    auto y = param<float*>(p, 1);
    for (int i = 0, n = param<int>(p, 3); i < n; ++i) y[i] = param<float>(p, 2) * x[i];
  } else if (name == "add") {  // add(y, b, c, n): c = y + b
    auto y = param<const float*>(p, 0), b = param<const float*>(p, 1);
    auto c = param<float*>(p, 2);
    for (int i = 0, n = param<int>(p, 3); i < n; ++i) c[i] = y[i] + b[i];
  } else {  // kfuse_scale_add(x, y, alpha, n, b, c)
    auto x = param<const float*>(p, 0), b = param<const float*>(p, 4);
    auto y = param<float*>(p, 1), c = param<float*>(p, 5);
    for (int i = 0, n = param<int>(p, 3); i < n; ++i) {
      y[i] = param<float>(p, 2) * x[i];
      c[i] = y[i] + b[i];
    }
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeModuleLoad(CUmodule* m, const void*, unsigned, CUjit_option*, void**) {
  *m = reinterpret_cast<CUmodule>(0x1000);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeModuleUnload(CUmodule) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeGetFunction(CUfunction* f, CUmodule, const char* name) {
  if (std::string(name) != "scale" && std::string(name) != "add" && std::string(name) != "kfuse_scale_add") {
    return CUDA_ERROR_NOT_FOUND;
  }
  g_gpu->functions.push_back(name);
  *f = reinterpret_cast<CUfunction>(g_gpu->functions.size());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeSync() {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeAlloc(CUdeviceptr* p, size_t bytes) {
  *p = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI fakeFree(CUdeviceptr p) {
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeEventCreate(CUevent* e, unsigned) {
  g_gpu->events.push_back(0);
  *e = reinterpret_cast<CUevent>(g_gpu->events.size());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeEventRecord(CUevent e, CUstream) {
  g_gpu->events.at(reinterpret_cast<size_t>(e) - 1) = g_gpu->clock_us;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeEventElapsed(float* ms, CUevent a, CUevent b) {
  *ms = static_cast<float>(
      (g_gpu->events.at(reinterpret_cast<size_t>(b) - 1) - g_gpu->events.at(reinterpret_cast<size_t>(a) - 1)) / 1e3);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI fakeEventDestroy(CUevent) {
  return CUDA_SUCCESS;
}

class FakeDriverTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    g_gpu = &gpu_;
    table_.LaunchKernel[0] = &fakeLaunch;
    table_.ModuleLoadDataEx[0] = &fakeModuleLoad;
    table_.ModuleUnload[0] = &fakeModuleUnload;
    table_.ModuleGetFunction = &fakeGetFunction;
    table_.CtxSynchronizeDirect = &fakeSync;
    table_.MemAllocDirect = &fakeAlloc;
    table_.MemFreeDirect = &fakeFree;
    table_.MemcpyHtoDDirect = &fakeHtoD;
    table_.MemcpyDtoHDirect = &fakeDtoH;
    table_.EventCreate = &fakeEventCreate;
    table_.EventRecordDirect = &fakeEventRecord;
    table_.EventElapsedTime = &fakeEventElapsed;
    table_.EventDestroy = &fakeEventDestroy;
  }
  void TearDown() override { g_gpu = nullptr; }

  ValidationOptions gpu() const {
    ValidationOptions o;
    o.backend = Backend::kGpu;
    o.driver = &table_;
    return o;
  }

  FakeGpu gpu_;
  hooks::DriverTable table_;
};

TEST_F(FakeDriverTiming, FasterFusedKernelPassesWithBothMediansInThePlan) {
  gpu_.cost_us = {{"scale", 5}, {"add", 5}, {"kfuse_scale_add", 6}};
  fs::path dir = planDir("timed_faster");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  auto r = validatePlan(plan, dir.string(), gpu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << r->failure;
  EXPECT_EQ(r->runs, 8);
  ASSERT_TRUE(r->timing.timed()) << r->timing.not_timed;
  EXPECT_EQ(r->timing.originals_ns, 20000u);  // 2 argument sets x (5 + 5) us
  EXPECT_EQ(r->timing.fused_ns, 12000u);      // 2 argument sets x 6 us
  EXPECT_EQ(r->timing.runs, 5);
  EXPECT_EQ(r->timing.argument_sets, 2);
  // Per argument set: one warm-up and 5 timed runs of each side, after the 4 compared runs of each set, and one
  // more compared run that puts the set's data in place for the timing.
  size_t fused_launches = 0;
  for (const std::string& name : gpu_.launches) fused_launches += name == "kfuse_scale_add";
  EXPECT_EQ(fused_launches, 2u * (4 + 1 + 1 + 5));

  recordValidation(plan.validation, gpu(), *r);
  ASSERT_TRUE(writePlan(dir.string(), plan).ok());
  auto back = readPlan(dir.string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->validation.gpu, ValidationVerdict::kPassed);
  ASSERT_TRUE(back->validation.timing);
  EXPECT_EQ(back->validation.timing->originals_ns, 20000u);
  EXPECT_EQ(back->validation.timing->fused_ns, 12000u);
  EXPECT_NE(readFile(dir / "plan.json").find("\"originals_ns\": 20000"), std::string::npos);
}

TEST_F(FakeDriverTiming, SlowerFusedKernelIsRefusedNamingBothMedians) {
  gpu_.cost_us = {{"scale", 5}, {"add", 5}, {"kfuse_scale_add", 12}};
  fs::path dir = planDir("timed_slower");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  auto r = validatePlan(plan, dir.string(), gpu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->passed);
  EXPECT_FALSE(r->mismatch);
  EXPECT_EQ(r->failure,
            "measured no faster on this GPU: the fused kernel took 24.0 us, the 2 original launches 20.0 us "
            "(medians of 5 runs, summed over 2 argument sets)");
  EXPECT_EQ(r->timing.fused_ns, 24000u);
  recordValidation(plan.validation, gpu(), *r);
  EXPECT_EQ(plan.validation.gpu, ValidationVerdict::kFailed);
  EXPECT_EQ(plan.validation.mismatch, r->failure);
}

TEST_F(FakeDriverTiming, StandInDriverIsNotTimed) {
  table_.EmuGetLaunch = [](uint64_t, void*) { return 0; };
  fs::path dir = planDir("timed_standin");
  Plan plan = testing::writeScaleAddPlanDir(dir, "scale_add_fused.ptx");
  auto r = validatePlan(plan, dir.string(), gpu());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->passed) << r->failure;
  EXPECT_EQ(r->timing.not_timed, "not timed: the stand-in driver runs kernels on the CPU, not a GPU");
}

}  // namespace
}  // namespace kfuse::rewriter
