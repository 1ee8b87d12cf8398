// Reading importer inputs: gzip members, padding, limits, truncation, the pipelined reader.
#include "import/input_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace kfuse::analyzer::detail {
namespace {

namespace fs = std::filesystem;

std::vector<unsigned char> gzip(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<unsigned char> out(deflateBound(&zs, text.size()) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kfuse_input_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  fs::path dir_;
};

std::string sample(size_t n) {
  std::string text(n, 'x');
  for (size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  return text;
}

TEST_F(InputFileTest, InflatesConcatenatedMembersWithPadding) {
  std::vector<unsigned char> bytes = gzip("{\"a\": ");
  const std::vector<unsigned char> second = gzip("[1, 2, 3]}");
  bytes.insert(bytes.end(), second.begin(), second.end());
  bytes.insert(bytes.end(), 16, 0);  // trailing zero padding some tools add
  auto r = loadText(write("two.gz", bytes), 1 << 20, /*padding=*/64);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->view(), "{\"a\": [1, 2, 3]}");
  EXPECT_GE(r->capacity(), r->size() + 64);
}

TEST_F(InputFileTest, LargeTextThroughEverySource) {
  const std::string text = sample(3 << 20);
  const std::string gz = write("big.gz", gzip(text));
  const std::string plain = write("big.txt", std::vector<unsigned char>(text.begin(), text.end()));
  for (const std::string& p : {gz, plain}) {
    auto r = loadText(p, uint64_t{1} << 30, 64);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->size(), text.size());
    EXPECT_EQ(std::memcmp(r->data(), text.data(), text.size()), 0);
  }
  // The pipelined reader hands out the same bytes, in whatever pieces the caller asks for.
  auto src = TextSource::open(gz, uint64_t{1} << 30);
  ASSERT_TRUE(src.ok());
  auto piped = TextSource::pipelined(std::move(*src), /*chunk_bytes=*/100000, /*depth=*/2);
  std::string got;
  std::vector<char> buf(77777);
  while (true) {
    auto n = piped->read(buf.data(), buf.size());
    ASSERT_TRUE(n.ok()) << n.status().message();
    if (*n == 0) break;
    got.append(buf.data(), *n);
  }
  EXPECT_EQ(got, text);
}

TEST_F(InputFileTest, WrongSizeTrailerIsCorruption) {
  std::vector<unsigned char> bytes = gzip(sample(1 << 20));
  bytes[bytes.size() - 3] ^= 0x10;  // ISIZE no longer matches
  auto r = loadText(write("lie.gz", bytes), uint64_t{1} << 30, 64);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("lie.gz: corrupt gzip data"), std::string::npos) << r.status().message();
}

TEST_F(InputFileTest, LimitIsEnforcedWhileInflating) {
  const std::string p = write("bomb.gz", gzip(std::string(1 << 20, 'a')));
  auto r = loadText(p, 1000, 64);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("max_json_bytes"), std::string::npos);
  EXPECT_TRUE(loadText(p, 1 << 20, 64).ok());
  // The pipelined reader passes the error on.
  auto src = TextSource::open(p, 1000);
  ASSERT_TRUE(src.ok());
  auto piped = TextSource::pipelined(std::move(*src), 4096, 2);
  std::vector<char> buf(4096);
  Status last;
  while (true) {
    auto n = piped->read(buf.data(), buf.size());
    if (!n.ok()) {
      last = n.status();
      break;
    }
    if (*n == 0) break;
  }
  EXPECT_NE(last.message().find("max_json_bytes"), std::string::npos) << last.message();
}

// One string or whitespace run over max_run_bytes is refused as it is read; escaped quotes do not end a string, and
// runs end where strings and whitespace do.
TEST_F(InputFileTest, OneLongStringOrWhitespaceRunIsRefusedWhileReading) {
  const std::string ok = "{\"a\": \"" + std::string(900, 'x') + "\\\"" + std::string(90, 'y') +
                         "\",  \"b\":" + std::string(900, ' ') + "1}";
  EXPECT_TRUE(loadText(write("ok.gz", gzip(ok)), 1 << 20, 64, /*max_run_bytes=*/1000).ok());
  const std::string long_string = "{\"a\": \"" + std::string(600, 'x') + "\\\"" + std::string(600, 'y') + "\"}";
  auto r = loadText(write("s.gz", gzip(long_string)), 1 << 20, 64, 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find("s.gz: a JSON string longer than"), std::string::npos) << r.status().message();
  auto w = loadText(write("w.gz", gzip("[1," + std::string(2000, '\n') + "2]")), 1 << 20, 64, 1000);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("run of whitespace"), std::string::npos) << w.status().message();
  EXPECT_TRUE(loadText(write("w2.gz", gzip("[1," + std::string(2000, '\n') + "2]")), 1 << 20, 64).ok())
      << "no limit by default";
}

TEST_F(InputFileTest, TruncatedAndGarbageGzip) {
  const std::vector<unsigned char> garbage = {0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  auto r = loadText(write("g.gz", garbage), 1 << 20, 64);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  auto e = loadText(write("e.gz", {0x1f, 0x8b}), 1 << 20, 64);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("truncated gzip"), std::string::npos) << e.status().message();
  std::vector<unsigned char> half = gzip(sample(1 << 20));
  half.resize(half.size() / 2);
  auto h = loadText(write("half.gz", half), 1 << 30, 64);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("half.gz: truncated gzip stream"), std::string::npos) << h.status().message();
}

TEST_F(InputFileTest, HeadIsInflatedForSniffing) {
  const std::string text = "{\"traceEvents\": []}" + sample(200000);
  auto h = readHead(write("h.json.gz", gzip(text)));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(h->gzip);
  EXPECT_FALSE(h->sqlite);
  EXPECT_EQ(h->head, text.substr(0, kSniffBytes));
  auto missing = readHead((dir_ / "none").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  auto dir = readHead(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kInvalidArgument);
}

TEST(InputFile, Magic) {
  const unsigned char gz[] = {0x1f, 0x8b, 8};
  EXPECT_TRUE(isGzip(gz, 3));
  EXPECT_FALSE(isGzip(gz, 1));
  const char sq[] = "SQLite format 3";
  EXPECT_TRUE(isSqlite(reinterpret_cast<const unsigned char*>(sq), 16));
  EXPECT_FALSE(isSqlite(reinterpret_cast<const unsigned char*>(sq), 15));
}

}  // namespace
}  // namespace kfuse::analyzer::detail
