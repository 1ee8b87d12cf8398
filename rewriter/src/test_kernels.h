// Test helpers of the rewriter's unit tests: reading nvcc PTX built for the tests, and running kernels on the
// emulator with host buffers, so a fused kernel's results can be compared with the originals' bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kfuse/emulator/emulator.h"
#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"
#include "kfuse/ptx/ptxas.h"

namespace kfuse::rewriter::testing {

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline std::string examplePtx(const std::string& name) {
  return readText(std::string(KFUSE_EXAMPLE_PTX_DIR) + "/" + name + ".ptx");
}
inline std::string testPtx(const std::string& name) {
  return readText(std::string(KFUSE_REWRITER_TEST_PTX_DIR) + "/" + name + ".ptx");
}
inline ptx::Module parsed(const std::string& text) {
  auto m = ptx::parseModule(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : ptx::Module{};
}

// One kernel argument: a buffer (by index into the runner's buffers) or a scalar's bytes.
struct Arg {
  int buffer = -1;
  std::vector<uint8_t> scalar;
  static Arg buf(int b) { return {b, {}}; }
  template <typename T>
  static Arg value(T v) {
    Arg a;
    a.scalar.resize(sizeof(T));
    std::memcpy(a.scalar.data(), &v, sizeof(T));
    return a;
  }
};

// Device buffers with host copies; launches kernels of PTX modules on one emulator device.
class Runner {
 public:
  explicit Runner(const std::vector<std::vector<uint8_t>>& buffers) {
    for (const auto& b : buffers) {
      auto p = device_.memory().allocate(b.size());
      EXPECT_TRUE(p.ok());
      ptrs_.push_back(*p);
      EXPECT_TRUE(device_.memory().copyToDevice(*p, b.data(), b.size()).ok());
      sizes_.push_back(b.size());
    }
  }
  Status launch(const std::string& ptx_text, const std::string& kernel, emulator::Dim3 grid, emulator::Dim3 block,
                const std::vector<Arg>& args, uint32_t dynamic_shared = 0) {
    auto program = device_.loadPtx(ptx_text);
    if (!program.ok()) return program.status();
    programs_.push_back(*program);
    const emulator::Kernel* k = (*program)->findKernel(kernel);
    if (!k) return notFound("kernel " + kernel);
    std::vector<std::vector<uint8_t>> storage;
    std::vector<void*> pointers;
    storage.reserve(args.size());
    for (const Arg& a : args) {
      if (a.buffer >= 0) {
        storage.emplace_back(sizeof(uint64_t));
        std::memcpy(storage.back().data(), &ptrs_[static_cast<size_t>(a.buffer)], sizeof(uint64_t));
      } else {
        storage.push_back(a.scalar);
      }
      pointers.push_back(storage.back().data());
    }
    auto params = emulator::Device::packParams(k->info(), pointers.data());
    return device_.launch(*k, {grid, block, dynamic_shared}, params);
  }
  std::vector<uint8_t> download(int b) {
    std::vector<uint8_t> out(sizes_[static_cast<size_t>(b)]);
    EXPECT_TRUE(device_.memory().copyToHost(out.data(), ptrs_[static_cast<size_t>(b)], out.size()).ok());
    return out;
  }
  size_t buffers() const { return ptrs_.size(); }

 private:
  emulator::Device device_{2};
  std::vector<emulator::DevicePtr> ptrs_;
  std::vector<uint64_t> sizes_;
  std::vector<std::shared_ptr<emulator::Program>> programs_;
};

inline std::vector<uint8_t> randomFloats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<uint8_t> out(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    const float v = dist(rng);
    std::memcpy(out.data() + i * sizeof(float), &v, sizeof(float));
  }
  return out;
}

// ptxas accepts `text` for each architecture.
inline void expectCompiles(const std::string& text,
                           std::initializer_list<const char*> archs = {"sm_80", "sm_90", "sm_100"}) {
  for (const char* arch : archs) {
    // ptxas compiles for an architecture no older than the PTX's .target: retarget, as the rewriter does.
    auto m = ptx::parseModule(text);
    ASSERT_TRUE(m.ok()) << m.status().message();
    auto r = ptx::runPtxas(ptx::printForArch(*m, arch), arch);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->exit_code, 0) << arch << ":\n" << r->log << "\n" << text;
  }
}

}  // namespace kfuse::rewriter::testing
