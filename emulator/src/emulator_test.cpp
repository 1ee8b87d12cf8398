// Emulator tests on nvcc-generated PTX (testdata/test_kernels.cu compiled at build time), with exact expected
// values from C++ references.
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>

#include "kfuse/emulator/emulator.h"

namespace kfuse::emulator {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class EmulatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    device_ = new Device(4);
    auto p = device_->loadPtx(readFile(KFUSE_EMU_TEST_PTX), "test_kernels.ptx");
    if (!p.ok()) {
      load_error_ = p.status().message();
      return;
    }
    program_ = new std::shared_ptr<Program>(*p);
  }
  static void TearDownTestSuite() {
    delete program_;
    program_ = nullptr;
    delete device_;
    device_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(program_) << load_error_; }

  template <class T>
  DevicePtr upload(const std::vector<T>& v) {
    auto p = device_->memory().allocate(v.size() * sizeof(T));
    EXPECT_TRUE(p.ok());
    EXPECT_TRUE(device_->memory().copyToDevice(*p, v.data(), v.size() * sizeof(T)).ok());
    ptrs_.push_back(*p);
    return *p;
  }
  template <class T>
  DevicePtr zeros(size_t n) {
    return upload(std::vector<T>(n, T{}));
  }
  template <class T>
  std::vector<T> download(DevicePtr p, size_t n) {
    std::vector<T> v(n);
    EXPECT_TRUE(device_->memory().copyToHost(v.data(), p, n * sizeof(T)).ok());
    return v;
  }
  template <class... Args>
  Status launch(const char* name, core::Dim3 grid, core::Dim3 block, uint32_t dyn, Args... args) {
    const Kernel* k = (*program_)->findKernel(name);
    if (!k) return notFound(name);
    std::vector<void*> ptrs;
    std::tuple<Args...> vals(args...);
    std::apply([&](auto&... a) { (ptrs.push_back(static_cast<void*>(&a)), ...); }, vals);
    auto buf = Device::packParams(k->info(), ptrs.data());
    return device_->launch(*k, core::LaunchShape{grid, block, dyn}, buf, &counters_);
  }
  void TearDown() override {
    for (auto p : ptrs_) (void)device_->memory().free(p);
  }

  static Device* device_;
  static std::shared_ptr<Program>* program_;
  static std::string load_error_;
  std::vector<DevicePtr> ptrs_;
  LaunchCounters counters_;
};
Device* EmulatorTest::device_ = nullptr;
std::shared_ptr<Program>* EmulatorTest::program_ = nullptr;
std::string EmulatorTest::load_error_;

TEST_F(EmulatorTest, VectorAddMatchesReferenceAndCountsTraffic) {
  const int n = 1000;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = 0.5f * i, b[i] = 1.0f / (i + 1);
  DevicePtr da = upload(a), db = upload(b), dc = zeros<float>(n);
  ASSERT_TRUE(launch("vadd", {8}, {128}, 0, da, db, dc, n).ok());
  auto c = download<float>(dc, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  EXPECT_EQ(counters_.global_load_bytes, uint64_t(8 * n));
  EXPECT_EQ(counters_.global_store_bytes, uint64_t(4 * n));
  EXPECT_EQ(counters_.flops_f32, uint64_t(n));
  EXPECT_EQ(counters_.blocks, 8u);
  EXPECT_EQ(counters_.threads, 1024u);
  EXPECT_GT(counters_.thread_instructions, uint64_t(10 * n));
  EXPECT_EQ(counters_.by_class[size_t(InstClass::kLoad)], uint64_t(2 * n + 4 * 1024));  // 4 ld.param each
  EXPECT_EQ(device_->lastLaunch().kernel, "vadd");
}

TEST_F(EmulatorTest, DynamicSharedReductionSumsEachBlock) {
  const int n = 1000, bs = 256, nb = 4;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = float(i % 97);
  DevicePtr di = upload(in), dout = zeros<float>(nb);
  ASSERT_TRUE(launch("reduce_dyn", {nb}, {bs}, bs * 4, di, dout, n).ok());
  auto out = download<float>(dout, nb);
  for (int b = 0; b < nb; ++b) {
    float want = 0;
    for (int i = b * bs; i < std::min(n, (b + 1) * bs); ++i) want += in[i];
    EXPECT_EQ(out[b], want) << b;
  }
  EXPECT_GT(counters_.shared_load_bytes, 0u);
  EXPECT_GT(counters_.by_class[size_t(InstClass::kSync)], 0u);
}

TEST_F(EmulatorTest, MissingDynamicSharedMemoryIsOutOfBounds) {
  DevicePtr di = zeros<float>(256), dout = zeros<float>(1);
  Status s = launch("reduce_dyn", {1}, {256}, 0, di, dout, 256);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("out-of-bounds shared store"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(shared memory of this block is "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(" bytes) in kernel 'reduce_dyn'"), std::string::npos) << s.message();
}

TEST_F(EmulatorTest, HistogramIsExactAndIndependentOfWorkerCount) {
  const int n = 5000;
  std::vector<unsigned> in(n);
  for (int i = 0; i < n; ++i) in[i] = unsigned(i * 7919u + 13u);
  std::vector<unsigned> want(16, 0);
  for (auto v : in) want[v % 16]++;
  DevicePtr di = upload(in);
  for (unsigned workers : {1u, 2u, 7u}) {
    device_->setWorkerThreads(workers);
    DevicePtr dh = zeros<unsigned>(16);
    ASSERT_TRUE(launch("hist", {64}, {96}, 0, di, dh, n).ok());  // enough work to be spread over the workers
    EXPECT_EQ(download<unsigned>(dh, 16), want) << workers << " workers";
    EXPECT_EQ(counters_.shared_atomics, uint64_t(n));
    EXPECT_EQ(counters_.global_atomics, uint64_t(64 * 16));
  }
  device_->setWorkerThreads(4);
}

TEST_F(EmulatorTest, AtomicOperationsGiveExactResults) {
  DevicePtr v = upload(std::vector<int>{0, 0, 0, 0});
  DevicePtr u = upload(std::vector<unsigned>{0xffffffffu, 0, 0, 0, 50});
  DevicePtr f = upload(std::vector<float>{0.f});
  DevicePtr w = upload(std::vector<unsigned long long>{0});
  ASSERT_TRUE(launch("atomics_mix", {1}, {64}, 0, v, u, f, w).ok());
  EXPECT_EQ(download<int>(v, 4), (std::vector<int>{63, -63, 1000, 7}));
  EXPECT_EQ(download<unsigned>(u, 5), (std::vector<unsigned>{0u, 0xffffffffu, 0u, 4u, 87u}));
  EXPECT_EQ(download<float>(f, 1)[0], 32.0f);
  EXPECT_EQ(download<unsigned long long>(w, 1)[0], 64ull << 33);
}

TEST_F(EmulatorTest, WarpShuffleVoteMatchAndActivemask) {
  DevicePtr o = zeros<unsigned>(320);
  ASSERT_TRUE(launch("warp_ops", {1}, {32}, 0, o).ok());
  auto out = download<unsigned>(o, 320);
  auto v = [](unsigned lane) { return lane * 3 + 1; };
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (l % 3 == 0) ballot |= 1u << l;
  for (unsigned l = 0; l < 32; ++l) {
    EXPECT_EQ(out[l], l + 3 < 32 ? v(l + 3) : v(l)) << l;
    EXPECT_EQ(out[32 + l], l >= 5 ? v(l - 5) : v(l)) << l;
    EXPECT_EQ(out[64 + l], v(l ^ 6)) << l;
    EXPECT_EQ(out[96 + l], v(7)) << l;
    EXPECT_EQ(out[128 + l], v((l & ~7u) + ((l + 1) % 8))) << l;
    EXPECT_EQ(out[160 + l], ballot) << l;
    EXPECT_EQ(out[192 + l], 3u) << l;
    EXPECT_EQ(out[224 + l], 0xfu << (l / 4 * 4)) << l;
    EXPECT_EQ(out[256 + l], (l & 1) ? 0xaaaaaaaau : 0u) << l;
    EXPECT_EQ(out[288 + l], 496u) << l;
  }
}

int divergenceRef(int x, int t) {
  int acc = 0;
  if (x % 2 == 0) {
    for (int i = 0; i < x; ++i) acc += i;
    if (x > 10) acc = -acc;
  } else {
    int i = x;
    while (i > 1) {
      i = (i % 2) ? 3 * i + 1 : i / 2;
      ++acc;
    }
  }
  return acc + (t ^ 1);
}

TEST_F(EmulatorTest, DivergentBranchesAndLoopsReconverge) {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[i] = (i * 7 + 3) % 29;
  DevicePtr di = upload(in), dout = zeros<int>(64);
  ASSERT_TRUE(launch("divergence", {1}, {64}, 0, di, dout).ok());
  auto out = download<int>(dout, 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], divergenceRef(in[t], t)) << t;
}

TEST_F(EmulatorTest, BarriersOrderSharedMemoryAcrossWarps) {
  const int bs = 256, nb = 3;
  DevicePtr o = zeros<int>(bs * nb);
  ASSERT_TRUE(launch("barrier_multiwarp", {nb}, {bs}, 0, o).ok());
  auto out = download<int>(o, bs * nb);
  for (int b = 0; b < nb; ++b)
    for (int t = 0; t < bs; ++t) {
      int src = bs - 1 - t;
      int want = ((src + 37) % bs) * 2 + 1 + b;
      ASSERT_EQ(out[b * bs + t], want) << b << "," << t;
    }
}

// The host compiler's _Float16 is the reference (clang before 15, the fuzzing build's compiler, lacks it on x86-64:
// these run in the regular build).
#if !defined(__clang__) || __clang_major__ >= 15
uint16_t hbits(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

TEST_F(EmulatorTest, HalfAndBfloat16Arithmetic) {
  std::vector<uint16_t> a(32), b(32);
  for (int i = 0; i < 32; ++i) {
    a[i] = hbits(_Float16(i * 0.25f));
    b[i] = hbits(_Float16(1.0f + i * 0.125f));
  }
  DevicePtr da = upload(a), db = upload(b), dout = zeros<uint16_t>(128), df = zeros<float>(64),
            dbo = zeros<uint16_t>(32);
  ASSERT_TRUE(launch("half_ops", {1}, {32}, 0, da, db, dout, df, dbo).ok());
  auto o = download<uint16_t>(dout, 128);
  auto f = download<float>(df, 64);
  auto bo = download<uint16_t>(dbo, 32);
  for (int i = 0; i < 32; ++i) {
    float x = i * 0.25f, y = 1.0f + i * 0.125f;
    EXPECT_EQ(o[4 * i + 0], hbits(_Float16(x + y))) << i;
    EXPECT_EQ(o[4 * i + 1], hbits(_Float16(x * y))) << i;
    EXPECT_EQ(o[4 * i + 2], hbits(_Float16(x * y + x))) << i;
    EXPECT_EQ(o[4 * i + 3], hbits(_Float16(x / 3.0f))) << i;
    EXPECT_EQ(f[i], x * 2.0f + y) << i;
    uint32_t bf = 0;
    float bsum = x + 1.0f;
    std::memcpy(&bf, &bsum, 4);
    EXPECT_EQ(bo[i], uint16_t(bf >> 16)) << i;
    EXPECT_EQ(f[32 + i], x * x + y * y) << i;
  }
  EXPECT_GT(counters_.flops_f16, 0u);
}
#endif  // _Float16

TEST_F(EmulatorTest, IntegerOperations) {
  std::vector<int> a(32), b(32);
  for (int i = 0; i < 32; ++i) {
    a[i] = int(0x9e3779b9u * unsigned(i + 1));
    b[i] = (i % 5 == 0) ? -(i + 3) : (i * 977 + 5);
  }
  DevicePtr da = upload(a), db = upload(b), dout = zeros<long long>(32 * 16);
  ASSERT_TRUE(launch("int_ops", {1}, {32}, 0, da, db, dout).ok());
  auto o = download<long long>(dout, 32 * 16);
  for (int i = 0; i < 32; ++i) {
    int x = a[i], y = b[i];
    unsigned ux = unsigned(x);
    const long long* r = &o[16 * i];
    EXPECT_EQ(r[0], x / y) << i;
    EXPECT_EQ(r[1], x % y) << i;
    EXPECT_EQ(r[2], int((long long)x * y >> 32)) << i;
    EXPECT_EQ(r[3], (long long)(unsigned)((unsigned long long)ux * unsigned(y) >> 32)) << i;
    EXPECT_EQ(r[4], __builtin_popcount(ux)) << i;
    EXPECT_EQ(r[5], x == 0 ? 32 : __builtin_clz(ux)) << i;
    unsigned rev = 0;
    for (int k = 0; k < 32; ++k) rev |= ((ux >> k) & 1u) << (31 - k);
    EXPECT_EQ(r[6], (long long)rev) << i;
    EXPECT_EQ(r[7], (ux >> 3) & 0x1f) << i;
    EXPECT_EQ(r[8], x >> (i % 31)) << i;
    EXPECT_EQ(r[9], ux >> (i % 31)) << i;
    EXPECT_EQ(r[10], (long long)x * (long long)y) << i;
    EXPECT_EQ(r[11], int(unsigned(std::min(x, y)) + unsigned(std::max(x, y)) * 3u)) << i;  // wraps like the GPU
    uint64_t pair = (uint64_t(unsigned(y)) << 32) | ux;
    unsigned perm = 0, sel = 0x5140;
    for (int k = 0; k < 4; ++k) perm |= unsigned((pair >> (8 * ((sel >> (4 * k)) & 7))) & 0xff) << (8 * k);
    EXPECT_EQ(r[12], (long long)perm) << i;
    EXPECT_EQ(r[13], (long long)((ux & 0xf0f0f0f0u) | ((~ux & 0x0f0f0f0fu) ^ unsigned(y)))) << i;
    EXPECT_EQ(r[14], (long long)(unsigned(std::abs((long long)x - y)) + 5u)) << i;
    EXPECT_EQ(r[15], (long long)(~0ull / (unsigned long long)(unsigned(y) | 1u))) << i;
  }
}

float roundDir(long double exact, int mode) {  // 1 toward zero, 2 down, 3 up
  float f = float(exact);
  if (mode == 1 && std::fabs((long double)f) > std::fabs(exact)) f = std::nextafter(f, 0.0f);
  if (mode == 2 && (long double)f > exact) f = std::nextafter(f, -INFINITY);
  if (mode == 3 && (long double)f < exact) f = std::nextafter(f, INFINITY);
  return f;
}

TEST_F(EmulatorTest, ConversionsAndDirectedRounding) {
  std::vector<float> in = {0.5f,   1.5f,   2.5f,    -0.5f,  -1.5f, -2.7f, 3.3f,  1e10f,
                           -1e10f, 255.9f, -129.4f, 0.999f, 7.0f,  -7.0f, 1e-3f, 100.25f};
  int n = int(in.size());
  DevicePtr di = upload(in), dout = zeros<int>(8 * n), dof = zeros<float>(4 * n);
  ASSERT_TRUE(launch("cvt_ops", {1}, {unsigned(n)}, 0, di, dout, dof).ok());
  auto o = download<int>(dout, 8 * n);
  auto of = download<float>(dof, 4 * n);
  auto sat = [](double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; };
  for (int i = 0; i < n; ++i) {
    float x = in[i];
    EXPECT_EQ(o[8 * i + 0], int(sat(std::nearbyint(x), -2147483648.0, 2147483647.0))) << i;
    EXPECT_EQ(o[8 * i + 1], int(sat(std::trunc(x), -2147483648.0, 2147483647.0))) << i;
    EXPECT_EQ(o[8 * i + 2], int(sat(std::floor(x), -2147483648.0, 2147483647.0))) << i;
    EXPECT_EQ(o[8 * i + 3], int(sat(std::ceil(x), -2147483648.0, 2147483647.0))) << i;
    EXPECT_EQ(unsigned(o[8 * i + 4]), unsigned(sat(std::nearbyint(x), 0.0, 4294967295.0))) << i;
    EXPECT_EQ(o[8 * i + 6], int(std::clamp(x, 0.0f, 1.0f)) * 100) << i;
    EXPECT_EQ(o[8 * i + 7], int((long long)sat(std::trunc(x), -9.2e18, 9.2e18))) << i;
    EXPECT_EQ(of[4 * i + 0], roundDir((long double)x + (long double)1e-8f, 1)) << i;
    EXPECT_EQ(of[4 * i + 1], roundDir((long double)x * (long double)1.1f, 2)) << i;
    EXPECT_EQ(of[4 * i + 2], roundDir((long double)x * (long double)1.1f + (long double)0.3f, 3)) << i;
    EXPECT_EQ(of[4 * i + 3], float(double(x) / 3.0)) << i;
  }
}

TEST_F(EmulatorTest, MathApproximationsAreClose) {
  std::vector<float> in(32);
  for (int i = 0; i < 32; ++i) in[i] = -4.0f + i * 0.27f;
  DevicePtr di = upload(in), dout = zeros<float>(8 * 32);
  ASSERT_TRUE(launch("math_ops", {1}, {32}, 0, di, dout).ok());
  auto o = download<float>(dout, 8 * 32);
  auto near = [](float got, double want, double rel) {
    return std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want));
  };
  for (int i = 0; i < 32; ++i) {
    double x = in[i];
    EXPECT_TRUE(near(o[8 * i + 0], std::exp(x), 2e-6)) << i;
    EXPECT_TRUE(near(o[8 * i + 1], std::sin(x), 2e-6)) << i;
    EXPECT_TRUE(near(o[8 * i + 2], std::cos(x), 2e-6)) << i;
    EXPECT_TRUE(near(o[8 * i + 3], 1.0 / std::sqrt(std::fabs(x) + 1.0), 2e-7)) << i;
    EXPECT_TRUE(near(o[8 * i + 4], x / 3.0, 2e-7)) << i;
    EXPECT_TRUE(near(o[8 * i + 5], std::tanh(x), 2e-6)) << i;
    EXPECT_EQ(o[8 * i + 6], std::sqrt(std::fabs(in[i]))) << i;
    EXPECT_TRUE(near(o[8 * i + 7], std::log2(std::fabs(x) + 1.0), 2e-6)) << i;
  }
}

TEST_F(EmulatorTest, DoublePrecision) {
  std::vector<double> in(32);
  for (int i = 0; i < 32; ++i) in[i] = std::sin(i + 0.5) * 100.0;
  DevicePtr di = upload(in), dout = zeros<double>(4 * 32);
  ASSERT_TRUE(launch("dbl_ops", {1}, {32}, 0, di, dout).ok());
  auto o = download<double>(dout, 4 * 32);
  for (int i = 0; i < 32; ++i) {
    double x = in[i];
    EXPECT_EQ(o[4 * i + 0], std::fma(x, 1.5, 0.25)) << i;
    EXPECT_EQ(o[4 * i + 1], x / 7.0) << i;
    EXPECT_EQ(o[4 * i + 2], std::sqrt(std::fabs(x))) << i;
    EXPECT_EQ(o[4 * i + 3], std::fma(x, x, -1.0)) << i;
  }
  EXPECT_EQ(counters_.flops_f64, uint64_t(32 * 2 + 32 * 2));  // two fma per thread
}

TEST_F(EmulatorTest, CallsIncludingRecursion) {
  DevicePtr o = zeros<int>(64), of = zeros<float>(64);
  ASSERT_TRUE(launch("calls", {1}, {64}, 0, o, of).ok());
  auto out = download<int>(o, 64);
  auto outf = download<float>(of, 64);
  int fact[8] = {1, 1, 2, 6, 24, 120, 720, 5040};
  for (int t = 0; t < 64; ++t) {
    EXPECT_EQ(out[t], fact[t % 8]) << t;
    EXPECT_EQ(outf[t], std::fma(1.0f, 3.0f, float(t) * 2.0f) - 2.0f) << t;
  }
}

TEST_F(EmulatorTest, PrintfReachesTheSink) {
  std::string captured;
  device_->setPrintfSink([&](std::string_view s) { captured += s; });
  ASSERT_TRUE(launch("prints", {1}, {32}, 0, 7).ok());
  device_->setPrintfSink(nullptr);
  EXPECT_EQ(captured, "tag=7 thread=0 half=0.50 str=ok\ntag=7 thread=1 half=0.50 str=ok\n");
}

TEST_F(EmulatorTest, OutOfBoundsStoreIsReportedWithKernelBlockThreadAndLine) {
  DevicePtr p = zeros<float>(64);
  Status s = launch("oob", {2}, {32}, 0, p, 64);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find("out-of-bounds global store of 4 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("kernel 'oob'"), std::string::npos) << m;
  EXPECT_NE(m.find("block (0,0,0), thread (0,0,0)"), std::string::npos) << m;
  EXPECT_NE(m.find("PTX line"), std::string::npos) << m;
  EXPECT_NE(m.find("(st.global."), std::string::npos) << m;
  EXPECT_NE(m.find("past the end of allocation"), std::string::npos) << m;
  EXPECT_FALSE(device_->lastLaunch().ok);
}

// A module may declare a huge .global array (hostile or careless PTX): its zero pages are mapped as they are
// touched, so loading it costs address space, not 16 GiB of memory; its last byte is still there.
TEST_F(EmulatorTest, HugeAllocationsCostOnlyThePagesTouched) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator and shadow memory change what an allocation costs";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's allocator and shadow memory change what an allocation costs";
#endif
#endif
  auto rss_kib = [] {
    struct rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
  };
  const long before = rss_kib();
  const uint64_t n = uint64_t{16} << 30;
  auto p = device_->memory().allocate(n);
  if (!p.ok()) GTEST_SKIP() << "no 16 GiB of address space here: " << p.status().message();
  const uint8_t one = 1;
  ASSERT_TRUE(device_->memory().copyToDevice(*p + n - 1, &one, 1).ok());
  uint8_t back[2] = {9, 9};
  ASSERT_TRUE(device_->memory().copyToHost(back, *p + n - 2, 2).ok());
  EXPECT_EQ(back[0], 0);
  EXPECT_EQ(back[1], 1);
  EXPECT_LT(rss_kib() - before, 256 * 1024) << "the allocation was zeroed eagerly";
  ASSERT_TRUE(device_->memory().free(*p).ok());
}

TEST_F(EmulatorTest, UseAfterFreeIsReported) {
  auto p = device_->memory().allocate(256);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(device_->memory().free(*p).ok());
  Status s = launch("oob", {1}, {32}, 0, *p, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("freed allocation"), std::string::npos) << s.message();
}

TEST_F(EmulatorTest, WildAndNullPointersAreReportedNotDereferenced) {
  Status wild = launch("oob", {1}, {32}, 0, DevicePtr{0xfffffffffffffff0ull}, 0);
  ASSERT_FALSE(wild.ok());
  EXPECT_NE(wild.message().find("out-of-bounds global store"), std::string::npos) << wild.message();
  Status null = launch("oob", {1}, {32}, 0, DevicePtr{0}, 0);
  ASSERT_FALSE(null.ok());
  EXPECT_NE(null.message().find("null pointer"), std::string::npos) << null.message();
}

TEST_F(EmulatorTest, LocalArraysAndGrid3d) {
  std::vector<int> in(32);
  for (int i = 0; i < 32; ++i) in[i] = i * 13 + 1;
  DevicePtr di = upload(in), dout = zeros<int>(32);
  ASSERT_TRUE(launch("local_array", {1}, {32}, 0, di, dout).ok());
  auto out = download<int>(dout, 32);
  for (int t = 0; t < 32; ++t) {
    int a[16];
    for (int i = 0; i < 16; ++i) a[i] = in[(t + i) % 32] * i;
    int k = in[t] & 15;
    EXPECT_EQ(out[t], a[k] + a[(k + 5) & 15]) << t;
  }
  DevicePtr g = zeros<int>(4 * 4 * 3 * 2 * 2 * 2);
  ASSERT_TRUE(launch("grid3d", {2, 2, 2}, {4, 4, 3}, 0, g).ok());
  auto go = download<int>(g, 4 * 4 * 3 * 8);
  int w = 8, h = 8;
  for (int z = 0; z < 6; ++z)
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) ASSERT_EQ(go[(z * h + y) * w + x], x + 100 * y + 10000 * z);
}

TEST_F(EmulatorTest, ConstantAndGlobalVariables) {
  DevicePtr o = zeros<float>(64);
  const GlobalSymbol* counter = (*program_)->findGlobal("gCounter");
  ASSERT_NE(counter, nullptr);
  int zero = 0;
  ASSERT_TRUE(device_->memory().copyToDevice(counter->address, &zero, 4).ok());
  ASSERT_TRUE(launch("const_global", {2}, {64}, 0, o).ok());
  auto out = download<float>(o, 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], float(i % 4 + 1) * float(i));
  int c = 0;
  ASSERT_TRUE(device_->memory().copyToHost(&c, counter->address, 4).ok());
  EXPECT_EQ(c, 128);
}

TEST_F(EmulatorTest, CpAsyncCopiesIntoSharedMemory) {
  std::vector<float> in(64);
  for (int i = 0; i < 64; ++i) in[i] = float(i) + 0.5f;
  DevicePtr di = upload(in), dout = zeros<float>(64);
  ASSERT_TRUE(launch("cp_async", {1}, {64}, 0, di, dout).ok());
  auto out = download<float>(dout, 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], in[63 - i] * 2.f) << i;
}

TEST_F(EmulatorTest, NamedBarrierArriveAndSync) {
  DevicePtr dout = zeros<int>(32);
  ASSERT_TRUE(launch("named_barrier", {2}, {64}, 0, dout).ok());
  auto out = download<int>(dout, 32);
  for (int l = 0; l < 32; ++l) EXPECT_EQ(out[l], (31 - l) * 5 + 1) << l;
}

TEST_F(EmulatorTest, TrapAssertAndRecursionLimitAreErrors) {
  DevicePtr o = zeros<int>(4);
  Status trap = launch("faults", {1}, {32}, 0, 0, o);
  ASSERT_FALSE(trap.ok());
  EXPECT_NE(trap.message().find("trap instruction executed in kernel 'faults', block (0,0,0), thread (3,0,0)"),
            std::string::npos)
      << trap.message();
  Status as = launch("faults", {1}, {32}, 0, 1, o);
  ASSERT_FALSE(as.ok());
  EXPECT_NE(as.message().find("device assertion"), std::string::npos) << as.message();
  Status deep = launch("faults", {1}, {32}, 0, 2, o);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.message().find("call depth limit"), std::string::npos) << deep.message();
}

TEST_F(EmulatorTest, StructParameterByValue) {
  struct StructParams {
    float scale;
    int n;
    double bias;
    DevicePtr out;
  };
  DevicePtr dout = zeros<float>(32);
  StructParams sp{2.5f, 20, 0.25, dout};
  ASSERT_TRUE(launch("struct_param", {1}, {32}, 0, sp).ok());
  auto out = download<float>(dout, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], i < 20 ? 2.5f * float(i) + 0.25f : 0.f) << i;
}

TEST_F(EmulatorTest, BarrierReductionsCountAndOr) {
  DevicePtr dout = zeros<int>(96);
  ASSERT_TRUE(launch("sync_count", {1}, {96}, 0, dout).ok());
  auto out = download<int>(dout, 96);
  for (int t = 0; t < 96; ++t) EXPECT_EQ(out[t], 32 * 100 + 10 + 1) << t;
}

TEST_F(EmulatorTest, SpinWaitOnAnotherWarpMakesProgress) {
  DevicePtr dout = zeros<int>(3);
  ASSERT_TRUE(launch("spin_wait", {1}, {64}, 0, dout).ok());
  EXPECT_EQ(download<int>(dout, 3), (std::vector<int>{42, 1, 42}));
}

// The host compiler's _Float16 is the reference (clang before 15, the fuzzing build's compiler, lacks it on x86-64:
// these run in the regular build).
#if !defined(__clang__) || __clang_major__ >= 15
TEST_F(EmulatorTest, PackedHalf2AndBfloat162Conversions) {
  std::vector<float> in(64);
  for (int i = 0; i < 64; ++i) in[i] = float(i) * 0.3f - 7.0f;
  DevicePtr di = upload(in), dout = zeros<float>(128);
  ASSERT_TRUE(launch("half2_pack", {1}, {32}, 0, di, dout).ok());
  auto out = download<float>(dout, 128);
  for (int i = 0; i < 32; ++i) {
    float lo = float(_Float16(in[2 * i])), hi = float(_Float16(in[2 * i + 1]));
    EXPECT_EQ(out[4 * i + 0], float(_Float16(lo + lo))) << i;
    EXPECT_EQ(out[4 * i + 1], float(_Float16(hi + hi))) << i;
    auto bf = [](float f) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
      std::memcpy(&f, &u, 4);
      return f;
    };
    EXPECT_EQ(out[4 * i + 2], bf(in[2 * i])) << i;
    EXPECT_EQ(out[4 * i + 3], bf(in[2 * i + 1])) << i;
  }
}
#endif  // _Float16

TEST_F(EmulatorTest, IndirectCallsThroughAFunctionTable) {
  std::vector<float> in(32);
  for (int i = 0; i < 32; ++i) in[i] = float(i) - 3.5f;
  DevicePtr di = upload(in), dout = zeros<float>(32);
  ASSERT_TRUE(launch("indirect_calls", {1}, {32}, 0, di, dout).ok());
  auto out = download<float>(dout, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], (i & 1) ? in[i] * in[i] : 2.0f * in[i]) << i;
}

TEST_F(EmulatorTest, TiledMatmulWithBarriersInALoop) {
  const int n = 64;
  std::vector<float> a(n * n), b(n * n);
  for (int i = 0; i < n * n; ++i) a[i] = float(i % 7) - 3.0f, b[i] = float((i * 5) % 11) - 5.0f;
  DevicePtr da = upload(a), db = upload(b), dc = zeros<float>(n * n);
  ASSERT_TRUE(launch("matmul_tiled", {4, 4}, {16, 16}, 0, da, db, dc, n).ok());
  auto c = download<float>(dc, n * n);
  for (int r = 0; r < n; ++r)
    for (int col = 0; col < n; ++col) {
      float want = 0;
      for (int k = 0; k < n; ++k) want += a[r * n + k] * b[k * n + col];
      ASSERT_EQ(c[r * n + col], want) << r << "," << col;  // small integers: exact in any order
    }
}

TEST_F(EmulatorTest, SoftmaxRowsWithShufflesAndSharedMemory) {
  const int rows = 6, cols = 128;
  std::vector<float> x(rows * cols);
  for (int i = 0; i < rows * cols; ++i) x[i] = std::sin(float(i) * 0.37f) * 4.0f;
  DevicePtr dx = upload(x), dy = zeros<float>(rows * cols);
  ASSERT_TRUE(launch("softmax_rows", {rows}, {cols}, 0, dx, dy, cols).ok());
  auto y = download<float>(dy, rows * cols);
  for (int r = 0; r < rows; ++r) {
    double m = -1e30, s = 0;
    for (int c2 = 0; c2 < cols; ++c2) m = std::max(m, double(x[r * cols + c2]));
    for (int c2 = 0; c2 < cols; ++c2) s += std::exp(double(x[r * cols + c2]) - m);
    for (int c2 = 0; c2 < cols; ++c2) {
      double want = std::exp(double(x[r * cols + c2]) - m) / s;
      EXPECT_NEAR(y[r * cols + c2], want, 1e-6 * want + 1e-9) << r << "," << c2;
    }
  }
}

TEST_F(EmulatorTest, CounterApiRecordsEveryLaunch) {
  std::vector<std::string> seen;
  device_->setLaunchObserver([&](const LaunchRecord& r) { seen.push_back(r.kernel); });
  uint64_t before = device_->lastLaunch().sequence;
  LaunchCounters total_before = device_->totalCounters();
  DevicePtr o = zeros<int>(32);
  ASSERT_TRUE(launch("grid3d", {1}, {32}, 0, o).ok());
  ASSERT_FALSE(launch("oob", {1}, {32}, 0, o, 1 << 20).ok());
  device_->setLaunchObserver(nullptr);
  EXPECT_EQ(seen, (std::vector<std::string>{"grid3d", "oob"}));
  auto history = device_->launchHistory();
  ASSERT_GE(history.size(), 2u);
  const LaunchRecord& a = history[history.size() - 2];
  const LaunchRecord& b = history.back();
  EXPECT_EQ(a.sequence, before + 1);
  EXPECT_EQ(b.sequence, before + 2);
  EXPECT_TRUE(a.ok);
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.error.find("out-of-bounds"), std::string::npos);
  EXPECT_EQ(a.counters.global_store_bytes, 32u * 4u);
  EXPECT_EQ(a.grid.x, 1u);
  EXPECT_EQ(a.block.x, 32u);
  EXPECT_GT(device_->totalCounters().thread_instructions, total_before.thread_instructions);
}

TEST(EmulatorLoad, UnsupportedInstructionIsReportedByNameKernelAndLine) {
  const char* ptx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<4>;
  mov.u32 %r1, 1;
  wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1, %r2}, [%r3];
  ret;
}
)";
  Device dev(1);
  auto p = dev.loadPtx(ptx, "bad.ptx");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const Kernel* k = (*p)->findKernel("k");
  ASSERT_NE(k, nullptr);
  ASSERT_FALSE(k->loadStatus().ok());
  std::vector<uint8_t> params(8, 0);
  Status s = dev.launch(*k, core::LaunchShape{{1}, {32}, 0}, params);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  const std::string& m = s.message();
  EXPECT_NE(m.find("wmma.load"), std::string::npos) << m;
  EXPECT_NE(m.find("kernel 'k'"), std::string::npos) << m;
  EXPECT_NE(m.find("line 8"), std::string::npos) << m;
}

TEST(EmulatorLoad, BarrierDeadlockIsReported) {
  const char* ptx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry k()
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 32;
  @%p1 bra DONE;
  bar.sync 0;
DONE:
  bar.sync 1;
  ret;
}
)";
  Device dev(1);
  auto p = dev.loadPtx(ptx, "deadlock.ptx");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const Kernel* k = (*p)->findKernel("k");
  ASSERT_NE(k, nullptr);
  Status s = dev.launch(*k, core::LaunchShape{{1}, {64}, 0}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("barrier deadlock"), std::string::npos) << s.message();
}

// An endless kernel fails at the instruction budget, naming it, on one worker and on several; without a budget
// (the default) nothing changes; a kernel within the budget runs as before.
TEST(EmulatorLoad, AnEndlessKernelStopsAtTheInstructionBudget) {
  const char* ptx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry forever()
{
FOREVER:
  bra.uni FOREVER;
}
.visible .entry spin(.param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
LOOP:
  add.s32 %r2, %r2, 1;
  setp.lt.s32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  ret;
}
)";
  for (unsigned workers : {1u, 2u}) {
    SCOPED_TRACE(workers);
    Device dev(workers);
    dev.setInstructionBudget(uint64_t{1} << 20);
    auto p = dev.loadPtx(ptx, "budget.ptx");
    ASSERT_TRUE(p.ok()) << p.status().message();
    const Kernel* forever = (*p)->findKernel("forever");
    ASSERT_NE(forever, nullptr);
    Status s = dev.launch(*forever, core::LaunchShape{{64}, {128}, 0}, {});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("ran more than 1048576 warp instructions"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--max-instructions"), std::string::npos) << s.message();
    // 1000 iterations x 3 instructions x 4 warps: far below the budget.
    const Kernel* spin = (*p)->findKernel("spin");
    ASSERT_NE(spin, nullptr);
    const int32_t n = 1000;
    const std::vector<uint8_t> params(reinterpret_cast<const uint8_t*>(&n), reinterpret_cast<const uint8_t*>(&n) + 4);
    LaunchCounters c;
    EXPECT_TRUE(dev.launch(*spin, core::LaunchShape{{1}, {128}, 0}, params, &c).ok());
    EXPECT_GT(c.warp_instructions, 12000u);
  }
}

TEST_F(EmulatorTest, ClusterRegistersDescribeClustersOfOneBlock) {
  DevicePtr d = zeros<unsigned>(12);
  ASSERT_TRUE(launch("cluster_ids", {3}, {32}, 0, d).ok());
  auto v = download<unsigned>(d, 12);
  for (unsigned b = 0; b < 3; ++b) {
    EXPECT_EQ(v[b * 4 + 0], b);   // %clusterid.x = %ctaid.x
    EXPECT_EQ(v[b * 4 + 1], 3u);  // %nclusterid.x = %nctaid.x
    EXPECT_EQ(v[b * 4 + 2], 1u);  // %cluster_nctaid.x
    EXPECT_EQ(v[b * 4 + 3], 0u);  // %cluster_ctarank
  }
}

TEST_F(EmulatorTest, PredefinedWarpSizeIdentifierIs32) {
  DevicePtr d = zeros<int>(64);
  ASSERT_TRUE(launch("warp_size", {1}, {64}, 0, d).ok());
  auto v = download<int>(d, 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(v[i], 32000 + i % 32) << i;
}

}  // namespace
}  // namespace kfuse::emulator
