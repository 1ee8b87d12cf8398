#include "kfuse/core/text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kfuse::core {
namespace {

TEST(TextTest, ValidUtf8IsKeptAsIs) {
  const std::string s = "gemm_\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";  // é, €, an emoji
  EXPECT_TRUE(isValidUtf8(s));
  EXPECT_EQ(sanitizeUtf8(s), s);
}

TEST(TextTest, InvalidBytesBecomeReplacementCharacters) {
  // Latin-1 "café", a lone continuation byte, an overlong '/', a UTF-16 surrogate, a code point above U+10FFFF,
  // and a sequence cut at the end.
  EXPECT_EQ(sanitizeUtf8("caf\xE9"), "caf\xEF\xBF\xBD");
  EXPECT_EQ(sanitizeUtf8("a\x80z"), "a\xEF\xBF\xBDz");
  EXPECT_FALSE(isValidUtf8("\xC0\xAF"));
  EXPECT_FALSE(isValidUtf8("\xED\xA0\x80"));
  EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80"));
  EXPECT_EQ(sanitizeUtf8("ok\xE2\x82"), "ok\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(TextTest, DumpJsonReplacesInvalidUtf8InsteadOfThrowing) {
  nlohmann::json j = {{"command_line", "./app input_\xE9t\xE9.dat"}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  const std::string text = dumpJson(j);
  EXPECT_EQ(nlohmann::json::parse(text)["command_line"], "./app input_\xEF\xBF\xBDt\xEF\xBF\xBD.dat");
}

TEST(TextTest, DescribingADeeplyNestedValueDoesNotRecurse) {
  std::string deep(1'000'000, '[');
  deep.append(1'000'000, ']');
  const nlohmann::json j = nlohmann::json::parse(deep);
  EXPECT_EQ(describeJsonValue(j), "an array of 1");
  EXPECT_EQ(describeJsonValue(nlohmann::json(std::string(100, 'x')), 4), "\"xxxx\" (cut; 100 bytes)");
}

TEST(TextTest, HtmlEscapeCoversAttributesQuotedEitherWay) {
  EXPECT_EQ(htmlEscape("a<b>&\"c'\xFF"), "a&lt;b&gt;&amp;&quot;c&#39;\xEF\xBF\xBD");
}

}  // namespace
}  // namespace kfuse::core
