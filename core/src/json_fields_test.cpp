#include "kfuse/core/json_fields.h"

#include <gtest/gtest.h>

#include <array>

namespace kfuse::core {
namespace {

using nlohmann::json;
using OJson = nlohmann::ordered_json;

// A small document with every kind of field: a shape (a record embedded in its owner), an enum-discriminated
// item, a group, a custom field and a computed one.

enum class Colour { kRed, kGreen, kBlue };
constexpr EnumName<Colour> kColourNames[] = {{Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kBlue, "blue"}};
std::span<const EnumName<Colour>> nameTable(Colour) {
  return kColourNames;
}

struct Size {
  uint32_t width = 1, height = 1;
  friend bool operator==(const Size&, const Size&) = default;
};

struct Item {
  enum class Kind { kPlain, kPainted };
  Kind kind = Kind::kPlain;
  std::optional<Colour> colour;  // painted items only
  std::vector<uint8_t> tag;
  friend bool operator==(const Item&, const Item&) = default;
};
constexpr EnumName<Item::Kind> kItemKindNames[] = {{Item::Kind::kPlain, "plain"}, {Item::Kind::kPainted, "painted"}};
std::span<const EnumName<Item::Kind>> nameTable(Item::Kind) {
  return kItemKindNames;
}

struct Box {
  std::string name;
  int count = 0;
  double fill = 0;
  bool open = false;
  Size size;
  std::optional<Size> lid;
  std::vector<Item> items;
  std::vector<std::vector<int64_t>> grid;
  std::map<std::string, int> labels;
  std::string owner, place;  // in the "where" group
  std::optional<Colour> trim;
  std::vector<int> codes;
};

bool lowercase(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}
constexpr JsonStringFormat kLowercaseName{"^[a-z]+$", 1, lowercase, "expected a lowercase name"};
constexpr const char* kPlaces[] = {"shelf", "floor"};

auto sizeRecord() {
  return jsonRecord<Size>(field("width", &Size::width).required().range(1, 100),
                          field("height", &Size::height).required().range(1, 100))
      .named("size");
}

auto itemRecord() {
  return jsonRecord<Item>(field("kind", &Item::kind).discriminator(),
                          field("colour", &Item::colour).required().onlyFor(Item::Kind::kPainted),
                          field("tag", &Item::tag, JsonHexBytes{}))
      .checkedBy([](JsonFieldReader& r, const std::string& path, const Item& item) {
        if (item.tag.size() > 4) r.fail(JsonReader::join(path, "tag"), "at most 4 bytes");
      });
}

// The number of items, written beside them.
struct ItemCount {
  void write(const Box& b, json& out) const { out = b.items.size(); }
  void read(JsonFieldReader& r, const json& j, const std::string& path, Box& b) const {
    if (!j.is_number_unsigned() || j.get<size_t>() != b.items.size()) r.fail(path, "differs from the items");
  }
  OJson schema(JsonSchemaWriter&, const JsonFieldOptions&) const { return {{"type", "integer"}}; }
};

auto boxRecord() {
  return jsonRecord<Box>(
      field("name", &Box::name).required().format(kLowercaseName).doc("what it is called"),
      field("count", &Box::count).range(-5, 5), field("fill", &Box::fill).numberRange(0, 1),
      field("open", &Box::open).omitDefault(), embed(&Box::size, sizeRecord()),
      field("lid", &Box::lid).of(sizeRecord()), field("items", &Box::items).of(itemRecord()),
      custom<Box>("item_count", ItemCount{}), field("grid", &Box::grid).anyInteger(), field("labels", &Box::labels),
      group<Box>("where", field("owner", &Box::owner), field("place", &Box::place).oneOf(kPlaces)).required(),
      field("trim", &Box::trim).noneAsEmpty(), field("codes", &Box::codes).minItems(1, "expected a code").uniqueItems(),
      computed<Box>(
          "fuller", +[](const Box& b) { return b.fill > 0.5; }));
}

constexpr JsonDocumentInfo kBoxDocument{"box", 2, "https://example.org/box.schema.json", "box", "a box"};

Box fullBox() {
  Box b;
  b.name = "crate";
  b.count = -3;
  b.fill = 0.75;
  b.open = true;
  b.size = {4, 5};
  b.lid = Size{4, 1};
  Item painted;
  painted.kind = Item::Kind::kPainted;
  painted.colour = Colour::kBlue;
  painted.tag = {0xe8, 0x03};
  b.items = {Item{}, painted};
  b.grid = {{1, -2}, {std::numeric_limits<int64_t>::min()}};
  b.labels = {{"x", 1}};
  b.owner = "ann";
  b.place = "shelf";
  b.codes = {3, 1};
  return b;
}

std::string readError(const json& j, JsonReadRules rules = {}) {
  JsonFieldReader r("box.json", rules);
  Box b;
  readJsonDocument(r, j, boxRecord(), b);
  return r.ok() ? "accepted" : r.status().message();
}

TEST(JsonFields, WritesEachKindOfField) {
  const json j = writeJsonDocument(kBoxDocument, boxRecord(), fullBox());
  const json want = json::parse(R"({
    "format": "box", "version": 2, "name": "crate", "count": -3, "fill": 0.75, "open": true, "width": 4,
    "height": 5, "lid": {"width": 4, "height": 1},
    "items": [{"kind": "plain", "tag": ""}, {"kind": "painted", "colour": "blue", "tag": "e803"}],
    "item_count": 2, "grid": [[1, -2], [-9223372036854775808]], "labels": {"x": 1},
    "where": {"owner": "ann", "place": "shelf"}, "trim": "", "codes": [3, 1], "fuller": true})");
  EXPECT_EQ(j, want) << j.dump(1);
}

TEST(JsonFields, LeavesOutDefaultsAndEmptyOptionals) {
  Box b = fullBox();
  b.open = false;
  b.lid.reset();
  b.trim = Colour::kGreen;
  const json j = writeJsonDocument(kBoxDocument, boxRecord(), b);
  EXPECT_FALSE(j.contains("open"));
  EXPECT_FALSE(j.contains("lid"));
  EXPECT_EQ(j["trim"], "green");
}

TEST(JsonFields, ReadsBackWhatItWrites) {
  const json j = writeJsonDocument(kBoxDocument, boxRecord(), fullBox());
  JsonFieldReader r("box.json");
  Box b;
  readJsonDocument(r, j, boxRecord(), b);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(writeJsonDocument(kBoxDocument, boxRecord(), b), j);
  EXPECT_EQ(b.items[1].colour, Colour::kBlue);
  EXPECT_EQ(b.items[1].tag, (std::vector<uint8_t>{0xe8, 0x03}));
  EXPECT_EQ(b.size, (Size{4, 5}));
  EXPECT_FALSE(b.trim.has_value());
}

TEST(JsonFields, NamesTheFileAndPathOfTheFirstProblem) {
  const json good = writeJsonDocument(kBoxDocument, boxRecord(), fullBox());
  auto edit = [&](auto f) {
    json j = good;
    f(j);
    return readError(j);
  };
  EXPECT_EQ(edit([](json& j) { j.erase("name"); }), "box.json: name: missing required field");
  EXPECT_EQ(edit([](json& j) { j["name"] = "Crate"; }), "box.json: name: expected a lowercase name");
  EXPECT_EQ(edit([](json& j) { j["colour"] = "red"; }), "box.json: colour: unknown field");
  EXPECT_EQ(edit([](json& j) { j["count"] = 6; }), "box.json: count: integer out of range (at most 5)");
  EXPECT_EQ(edit([](json& j) { j["count"] = -6; }), "box.json: count: integer out of range (at least -5)");
  EXPECT_EQ(edit([](json& j) { j["fill"] = 1.5; }), "box.json: fill: expected a number in [0, 1]");
  EXPECT_EQ(edit([](json& j) { j["open"] = 1; }), "box.json: open: expected true or false");
  EXPECT_EQ(edit([](json& j) { j.erase("height"); }), "box.json: height: missing required field");
  EXPECT_EQ(edit([](json& j) { j["lid"]["width"] = 0; }), "box.json: lid.width: integer out of range (at least 1)");
  EXPECT_EQ(edit([](json& j) { j["items"][1]["colour"] = "pink"; }),
            "box.json: items[1].colour: expected one of \"red\", \"green\", \"blue\", got \"pink\"");
  EXPECT_EQ(edit([](json& j) { j["items"][1].erase("colour"); }), "box.json: items[1].colour: missing required field");
  EXPECT_EQ(edit([](json& j) { j["items"][0]["colour"] = "red"; }),
            "box.json: items[0].colour: not allowed when kind is \"plain\"");
  EXPECT_EQ(edit([](json& j) { j["items"][1]["tag"] = "E8"; }),
            "box.json: items[1].tag: expected bytes as an even number of lowercase hex digits");
  EXPECT_EQ(edit([](json& j) { j["items"][1]["tag"] = "0102030405"; }), "box.json: items[1].tag: at most 4 bytes");
  EXPECT_EQ(edit([](json& j) { j["item_count"] = 3; }), "box.json: item_count: differs from the items");
  EXPECT_EQ(edit([](json& j) { j["grid"][1] = 7; }), "box.json: grid[1]: expected an array");
  EXPECT_EQ(edit([](json& j) { j["labels"]["y"] = "two"; }), "box.json: labels.y: expected an integer");
  EXPECT_EQ(edit([](json& j) { j["where"]["place"] = "roof"; }),
            "box.json: where.place: expected one of \"shelf\", \"floor\", got \"roof\"");
  EXPECT_EQ(edit([](json& j) { j.erase("where"); }), "box.json: where: missing required field");
  EXPECT_EQ(edit([](json& j) { j["codes"] = json::array(); }), "box.json: codes: expected a code");
  EXPECT_EQ(edit([](json& j) { j["codes"] = {1, 2, 1}; }), "box.json: codes[2]: repeats an earlier item");
  EXPECT_EQ(edit([](json& j) { j["fuller"] = "ignored"; }), "accepted");
  EXPECT_EQ(readError(json::array()), "box.json: (document): expected an object");
}

TEST(JsonFields, LenientRulesIgnoreUnknownFieldsAndNameNoAlternatives) {
  json j = writeJsonDocument(kBoxDocument, boxRecord(), fullBox());
  j["colour"] = "red";
  const JsonReadRules lenient{/*reject_unknown_fields=*/false, /*list_allowed_names=*/false};
  EXPECT_EQ(readError(j, lenient), "accepted");
  j["items"][0]["kind"] = "gilded";
  EXPECT_EQ(readError(j, lenient), "box.json: items[0].kind: unknown value 'gilded'");
}

TEST(JsonFields, SchemaStatesTheSameRules) {
  const OJson s = OJson::parse(jsonDocumentSchema(kBoxDocument, boxRecord()));
  EXPECT_EQ(s["$id"], "https://example.org/box.schema.json");
  EXPECT_EQ(s["required"], OJson({"format", "version", "name", "width", "height", "where"}));
  const OJson& p = s["properties"];
  EXPECT_EQ(p["format"], OJson({{"const", "box"}}));
  EXPECT_EQ(p["name"], OJson::parse(R"({"type": "string", "minLength": 1, "pattern": "^[a-z]+$",
                                         "description": "what it is called"})"));
  EXPECT_EQ(p["count"], OJson::parse(R"({"type": "integer", "minimum": -5, "maximum": 5})"));
  EXPECT_EQ(p["fill"], OJson::parse(R"({"type": "number", "minimum": 0.0, "maximum": 1.0})"));
  EXPECT_EQ(p["width"], OJson::parse(R"({"type": "integer", "minimum": 1, "maximum": 100})"));
  EXPECT_EQ(p["lid"], OJson::parse(R"({"$ref": "#/$defs/size"})"));
  EXPECT_EQ(p["grid"], OJson::parse(R"({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}})"));
  EXPECT_EQ(p["trim"], OJson::parse(R"({"enum": ["", "red", "green", "blue"]})"));
  EXPECT_EQ(p["codes"], OJson::parse(R"({"type": "array", "items": {"type": "integer", "minimum": 0,
                                          "maximum": 2147483647}, "minItems": 1, "uniqueItems": true})"));
  EXPECT_EQ(p["where"]["properties"]["place"], OJson::parse(R"({"type": "string", "enum": ["shelf", "floor"]})"));
  EXPECT_EQ(p["fuller"], OJson::parse(R"({"type": "boolean"})"));
  const OJson& item = p["items"]["items"];
  EXPECT_EQ(item["required"], OJson({"kind"}));
  EXPECT_EQ(item["allOf"], OJson::parse(R"([{"if": {"properties": {"kind": {"const": "painted"}}},
                                              "then": {"required": ["colour"]},
                                              "else": {"properties": {"colour": false}}}])"));
  EXPECT_EQ(s["$defs"]["hex_bytes"]["pattern"], "^([0-9a-f]{2})*$");
}

TEST(JsonDocument, NestingIsCountedOutsideStringsOnly) {
  EXPECT_FALSE(jsonNestsDeeperThan(R"([[["]]]]]]", "[[[[[[", "\\\"[[[["]]])", 3));
  EXPECT_TRUE(jsonNestsDeeperThan("[[[[]]]]", 3));
  EXPECT_FALSE(jsonNestsDeeperThan("[[[]]]", 3));
  EXPECT_TRUE(jsonNestsDeeperThan(R"({"a": {"b": [{}]}})", 3));
  const auto refused = parseJsonDocument(std::string(600, '[') + std::string(600, ']'));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("nested deeper than 512 levels"), std::string::npos);
  const auto parsed = parseJsonDocument(R"({"s": "[[[[", "n": [1, [2]]})", 3);  // object, array, array
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ((*parsed)["n"][1][0], 2);
  EXPECT_FALSE(parseJsonDocument("{\"n\": 1e99999}").ok());  // out of range: refused, not an abort
}

}  // namespace
}  // namespace kfuse::core
