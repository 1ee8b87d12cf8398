#include "kfuse/core/trace_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "trace_builders.h"

namespace kfuse::core {
namespace {

using nlohmann::json;

TEST(TraceJson, RoundTripsEveryRecordKind) {
  const Trace original = testing::makeEveryKindTrace();
  const json j = traceToJson(original);
  auto back = traceFromJson(j, "mem.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, original);
  // And through text, as files carry it.
  auto again = traceFromJson(json::parse(j.dump()), "mem.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, original);
}

TEST(TraceJson, LaunchClusterIsAnArrayAndDefaultsToNoClusters) {
  json j = traceToJson(testing::makeEveryKindTrace());
  EXPECT_EQ(j["launches"][1]["cluster"], json::array({2, 1, 1}));
  EXPECT_EQ(j["launches"][0]["cluster"], json::array({1, 1, 1}));
  // A document written before launches had clusters reads as launched without them.
  j["launches"][1].erase("cluster");
  auto back = traceFromJson(j, "mem.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->launches[1].cluster, (Dim3{1, 1, 1}));
}

TEST(TraceJson, UnknownTimesAreNull) {
  const json j = traceToJson(testing::makeEveryKindTrace());
  EXPECT_TRUE(j["launches"][1]["gpu_start_ns"].is_null());
  EXPECT_EQ(j["launches"][0]["grid"], json::array({257, 1, 1}));
  EXPECT_EQ(j["functions"][0]["params"][0]["access"], "read");
}

TEST(TraceJson, RejectsOtherDocuments) {
  auto r = traceFromJson(json{{"traceEvents", json::array()}}, "kineto.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("kineto.json: not a kfuse trace JSON"), std::string::npos);
}

TEST(TraceJson, RejectsNewerVersion) {
  json j = traceToJson(testing::makeEveryKindTrace());
  j["version"] = kTraceJsonVersion + 1;
  auto r = traceFromJson(j, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupportedVersion);
}

TEST(TraceJson, NamesThePathOfAWrongField) {
  json j = traceToJson(testing::makeEveryKindTrace());
  j["launches"][2]["grid"] = json::array({1, 2});
  auto r = traceFromJson(j, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "t.json: launches[2].grid: expected an array of 3 unsigned integers");

  j = traceToJson(testing::makeEveryKindTrace());
  j["functions"][1]["params"][0]["access"] = "sometimes";
  r = traceFromJson(j, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "t.json: functions[1].params[0].access: unknown value \"sometimes\"");

  j = traceToJson(testing::makeEveryKindTrace());
  j["launches"][0].erase("id");
  r = traceFromJson(j, "t.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "t.json: launches[0]: missing required field \"id\"");
}

TEST(TraceJson, RejectsOutOfRangeAndWrongTypes) {
  json j = traceToJson(testing::makeEveryKindTrace());
  j["devices"][0]["sm_count"] = 1ull << 40;
  EXPECT_NE(traceFromJson(j, "t.json").status().message().find("devices[0].sm_count: integer out of range"),
            std::string::npos);
  j = traceToJson(testing::makeEveryKindTrace());
  j["allocations"][0]["size"] = -5;
  EXPECT_NE(traceFromJson(j, "t.json").status().message().find("non-negative"), std::string::npos);
  j = traceToJson(testing::makeEveryKindTrace());
  j["launches"][0]["arg_bytes"] = "not base64!";
  EXPECT_FALSE(traceFromJson(j, "t.json").ok());
  j = traceToJson(testing::makeEveryKindTrace());
  j["memcpys"] = json::object();
  EXPECT_EQ(traceFromJson(j, "t.json").status().message(), "t.json: memcpys: expected an array");
}

TEST(TraceJson, FileErrorsNameTheFile) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string bad = (dir / ("kfuse_bad_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(bad) << "{\"format\": \"kfuse-trace-json\", \"version\": 1, ";
  auto r = readTraceJsonFile(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kBadFormat);
  EXPECT_NE(r.status().message().find(bad + ": invalid JSON"), std::string::npos) << r.status().message();
  std::filesystem::remove(bad);
  EXPECT_EQ(readTraceJsonFile(bad).status().code(), ErrorCode::kNotFound);
}

TEST(Base64, EncodesAndDecodesAllPaddings) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    std::vector<uint8_t> bytes(s.begin(), s.end());
    auto back = base64Decode(base64Encode(bytes));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, bytes) << s;
  }
  EXPECT_EQ(base64Encode({'f', 'o', 'o', 'b'}), "Zm9vYg==");
  EXPECT_FALSE(base64Decode("abc").ok());
  EXPECT_FALSE(base64Decode("ab!=").ok());
}

}  // namespace
}  // namespace kfuse::core
