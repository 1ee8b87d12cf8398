#include "kfuse/ptx/fatbin.h"

#include <gtest/gtest.h>
#include <lz4.h>
#include <zstd.h>

#include <cstring>

namespace kfuse::ptx {
namespace {

constexpr const char* kPtx = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";

template <typename T>
void put(std::vector<uint8_t>& b, size_t off, T v) {
  if (b.size() < off + sizeof(T)) b.resize(off + sizeof(T));
  std::memcpy(b.data() + off, &v, sizeof(T));
}

// One entry: 64/80-byte header + payload padded to 8 bytes.
std::vector<uint8_t> makeEntry(uint16_t kind, uint32_t arch, const std::string& payload, Compression c) {
  std::string stored = payload;
  uint64_t flags = 0x11;
  if (c == Compression::kZstd) {
    stored.resize(ZSTD_compressBound(payload.size()));
    stored.resize(ZSTD_compress(stored.data(), stored.size(), payload.data(), payload.size(), 3));
    flags |= 0x8000;
  } else if (c == Compression::kLz4) {
    stored.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(payload.size()))));
    stored.resize(static_cast<size_t>(LZ4_compress_default(
        payload.data(), stored.data(), static_cast<int>(payload.size()), static_cast<int>(stored.size()))));
    flags |= 0x2000;
  }
  const uint32_t hsize = kind == 1 ? 80 : 64;
  const uint64_t padded = (stored.size() + 7) & ~uint64_t{7};
  std::vector<uint8_t> e(hsize, 0);
  put<uint16_t>(e, 0, kind);
  put<uint16_t>(e, 2, 0x0101);
  put<uint32_t>(e, 4, hsize);
  put<uint64_t>(e, 8, padded);
  put<uint32_t>(e, 16, c == Compression::kNone ? 0u : static_cast<uint32_t>(stored.size()));
  put<uint32_t>(e, 24, kind == 1 ? 0x90000u : 0x10008u);
  put<uint32_t>(e, 28, arch);
  put<uint64_t>(e, 40, flags);
  put<uint64_t>(e, 56, c == Compression::kNone ? 0 : payload.size());
  e.insert(e.end(), stored.begin(), stored.end());
  e.resize(hsize + padded, 0);
  return e;
}

std::vector<uint8_t> makeFatbin(const std::vector<std::vector<uint8_t>>& entries) {
  std::vector<uint8_t> f(16, 0);
  uint64_t total = 0;
  for (const auto& e : entries) total += e.size();
  put<uint32_t>(f, 0, 0xBA55ED50u);
  put<uint16_t>(f, 4, 1);
  put<uint16_t>(f, 6, 16);
  put<uint64_t>(f, 8, total);
  for (const auto& e : entries) f.insert(f.end(), e.begin(), e.end());
  return f;
}

TEST(Fatbin, ListsAndExtractsEveryCompression) {
  for (Compression c : {Compression::kNone, Compression::kZstd, Compression::kLz4}) {
    std::string padded_ptx = std::string(kPtx) + std::string(3, '\0');
    auto fb = makeFatbin({makeEntry(1, 90, padded_ptx, c)});
    auto list = listEntries(fb);
    ASSERT_TRUE(list.ok()) << list.status().message();
    ASSERT_EQ(list->size(), 1u);
    const FatbinEntry& e = (*list)[0];
    EXPECT_EQ(e.kind, EntryKind::kPtx);
    EXPECT_EQ(e.arch, 90u);
    EXPECT_EQ(e.ptx_major, 9u);
    EXPECT_EQ(e.compression, c) << compressionName(c);
    EXPECT_EQ(e.kernels, std::vector<std::string>{"k"});
    auto text = extractEntry(fb, e);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_EQ(*text, kPtx);  // NUL padding removed
  }
}

TEST(Fatbin, SeveralFatbinsBackToBack) {
  auto a = makeFatbin({makeEntry(2, 80, std::string(24, 'x'), Compression::kNone)});
  auto b = makeFatbin({makeEntry(1, 80, kPtx, Compression::kZstd), makeEntry(1, 90, kPtx, Compression::kLz4)});
  std::vector<uint8_t> both = a;
  both.resize((both.size() + 7) & ~size_t{7}, 0);
  both.insert(both.end(), b.begin(), b.end());
  auto list = listEntries(both);
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].fatbin_index, 0u);
  EXPECT_EQ((*list)[1].fatbin_index, 1u);
  EXPECT_EQ((*list)[2].entry_index, 1u);
  EXPECT_EQ((*list)[2].arch, 90u);
  EXPECT_EQ(entryFileName((*list)[2], "app"), "app.1.1.sm_90.ptx");
}

TEST(Fatbin, TruncatedInputsGiveClearErrors) {
  auto fb = makeFatbin({makeEntry(1, 90, kPtx, Compression::kZstd)});
  for (size_t n = 1; n < fb.size(); ++n) {
    std::vector<uint8_t> cut(fb.begin(), fb.begin() + static_cast<long>(n));
    auto list = listEntries(cut);
    if (n < 4) continue;  // too short to be recognized as a fatbin at all
    ASSERT_FALSE(list.ok()) << n;
    EXPECT_EQ(list.status().code(), ErrorCode::kBadFormat);
  }
  std::vector<uint8_t> cut(fb.begin(), fb.begin() + 40);
  auto list = listEntries(cut);
  EXPECT_NE(list.status().message().find("truncated"), std::string::npos) << list.status().message();
}

TEST(Fatbin, CorruptPayloadsAndMagicAreReported) {
  auto fb = makeFatbin({makeEntry(1, 90, std::string(kPtx) + kPtx + kPtx, Compression::kZstd)});
  auto bad = fb;
  for (size_t i = 16 + 80 + 8; i < 16 + 80 + 24; ++i) bad[i] ^= 0x5a;
  auto list = listEntries(bad);
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("zstd payload"), std::string::npos) << list.status().message();

  auto lz = makeFatbin({makeEntry(1, 90, std::string(kPtx) + kPtx + kPtx, Compression::kLz4)});
  lz[16 + 80] = 0xff;  // first LZ4 token: huge literal run
  lz[16 + 81] = 0xff;
  auto l2 = listEntries(lz);
  ASSERT_FALSE(l2.ok());
  EXPECT_NE(l2.status().message().find("LZ4 payload"), std::string::npos) << l2.status().message();

  auto magic = fb;
  magic[0] ^= 1;
  auto l3 = listEntries(magic);
  ASSERT_FALSE(l3.ok());
  EXPECT_NE(l3.status().message().find("not an ELF file, a fatbin"), std::string::npos);

  auto huge = fb;
  put<uint64_t>(huge, 16 + 56, uint64_t{1} << 40);
  auto l4 = listEntries(huge);
  ASSERT_FALSE(l4.ok());
  EXPECT_NE(l4.status().message().find("uncompressed size"), std::string::npos) << l4.status().message();
}

TEST(Fatbin, ElfWithoutDeviceCodeIsNotFound) {
  std::vector<uint8_t> elf(64, 0);
  elf[0] = 0x7f;
  elf[1] = 'E';
  elf[2] = 'L';
  elf[3] = 'F';
  elf[4] = 2;
  elf[5] = 1;
  auto list = listEntries(elf);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), ErrorCode::kNotFound);
  elf[4] = 1;
  EXPECT_EQ(listEntries(elf).status().code(), ErrorCode::kUnsupported);
}

TEST(Fatbin, CompactsPtxLikeFatbinary) {
  EXPECT_EQ(fatbinaryCompactPtx("//\n// hi\n.version 9.0\n\t.reg .b32 \t%r<3>; // c\n  \n\t.loc\t1 5 0\n"),
            "\n\n.version 9.0\n.reg .b32 %r<3>; \n\n.loc\t1 5 0\n");
}

}  // namespace
}  // namespace kfuse::ptx
