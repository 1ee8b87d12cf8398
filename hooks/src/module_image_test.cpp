#include "kfuse/hooks/module_image.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kfuse::hooks {
namespace {

using Counts = std::unordered_map<std::string, uint32_t>;

// The kernels of hooks/testdata/param_counts.cu.
const Counts kExpected = {{"no_params", 0}, {"three", 3}, {"_Z8by_value4PairPdc", 3}};

std::vector<uint8_t> image(const char* path) {
  std::vector<uint8_t> bytes = readModuleFile(path, uint64_t{1} << 30);
  EXPECT_FALSE(bytes.empty()) << path;
  return bytes;
}

Counts countsOf(const std::vector<uint8_t>& bytes, core::ImageKind kind) {
  const ImageInfo info = inspectModuleImage(bytes.data());
  EXPECT_EQ(info.kind, kind);
  return kernelParamCounts(info);
}

TEST(KernelParamCountsTest, ReadsEveryEntryOfPtx) {
  EXPECT_EQ(countsOf(image(KFUSE_TEST_PARAM_COUNTS_PTX), core::ImageKind::kPtx), kExpected);
}

TEST(KernelParamCountsTest, ReadsTheParameterRecordsOfACubin) {
  EXPECT_EQ(countsOf(image(KFUSE_TEST_PARAM_COUNTS_CUBIN), core::ImageKind::kCubin), kExpected);
}

TEST(KernelParamCountsTest, ReadsTheUncompressedEntriesOfAFatbin) {
  EXPECT_EQ(countsOf(image(KFUSE_TEST_PARAM_COUNTS_FATBIN), core::ImageKind::kFatbin), kExpected);
}

TEST(KernelParamCountsTest, CommentsStringsAndDeclarationsAreNotEntries) {
  const std::string ptx =
      ".version 8.0\n.target sm_90\n.file 1 \"a .entry b(.param .u32 c)\"\n"
      "// .entry commented(.param .u32 x)\n/* .entry block(.param .u32 x) */\n"
      ".func (.param .b32 r) helper(.param .b32 x)\n{\nret;\n}\n"
      ".visible .entry k( // a comment with .param inside\n.param .u64 p,\n.param .align 8 .b8 s[24]\n)\n{\nret;\n}\n"
      ".entry bare\n{\nret;\n}\n";
  EXPECT_EQ(kernelParamCounts(inspectModuleImage(ptx.c_str())), (Counts{{"k", 2}, {"bare", 0}}));
}

TEST(KernelParamCountsTest, TruncatedOrCorruptImagesGiveNoCountsAndNoCrash) {
  const std::string truncated = ".entry k(.param .u64 p,\n.param";
  EXPECT_TRUE(kernelParamCounts(inspectModuleImage(truncated.c_str())).empty());
  std::vector<uint8_t> cubin = image(KFUSE_TEST_PARAM_COUNTS_CUBIN);
  ImageInfo info = inspectModuleImage(cubin.data());
  // Every prefix of the cubin and of the fatbin: whatever is still whole may be read, nothing past the end.
  for (uint64_t n = 0; n < info.size; n += 7) {
    const std::vector<uint8_t> prefix(cubin.begin(), cubin.begin() + static_cast<long>(n));
    const Counts c = kernelParamCounts(ImageInfo{core::ImageKind::kCubin, prefix.data(), prefix.size()});
    for (const auto& [name, count] : c) EXPECT_EQ(kExpected.at(name), count) << name << " in a prefix of " << n;
  }
  std::vector<uint8_t> fatbin = image(KFUSE_TEST_PARAM_COUNTS_FATBIN);
  info = inspectModuleImage(fatbin.data());
  for (uint64_t n = 0; n < info.size; n += 13) {
    const std::vector<uint8_t> prefix(fatbin.begin(), fatbin.begin() + static_cast<long>(n));
    const Counts c = kernelParamCounts(ImageInfo{core::ImageKind::kFatbin, prefix.data(), prefix.size()});
    for (const auto& [name, count] : c) EXPECT_EQ(kExpected.at(name), count) << name << " in a prefix of " << n;
  }
}

}  // namespace
}  // namespace kfuse::hooks
