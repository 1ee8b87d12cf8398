#include "kfuse/rewriter/plan.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "temp_dir.h"
#include "test_plans.h"

namespace kfuse::rewriter {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kHash(64, 'a');

// Every field set, so a round trip shows that none is lost.
Plan fullPlan() {
  Plan p = testing::scaleAddPlan(kHash);
  Predicate value;
  value.kind = Predicate::Kind::kArgValue;
  value.a = {0, 3};
  value.value = {0xe8, 0x03, 0, 0};
  p.predicates.push_back(value);
  Predicate proven;
  proven.kind = Predicate::Kind::kProvenValues;
  proven.proof_args = {{{0, 3}, false, false}, {{1, 2}, true, false}, {{1, 2}, false, true}};
  proven.tuples = {{1000, 0, 0}, {32768, -4, 0}};
  p.predicates.push_back(proven);
  p.fused.parts = {{0, 0, 128, 0, 256, -1}, {1, 0, 128, 0, 256, 3}};
  p.resources = {{"scale", "sm_90", 8, 0, 0, 0, 0, 0, 256, 1.0, OccupancyLimiter::kWarps},
                 {"kfuse_scale_add", "sm_90", 12, 1, 4, 8, 16, 0, 256, 0.75, OccupancyLimiter::kRegisters}};
  p.aggressive = true;
  p.dropped_buffers = {{0, 1}};
  p.prediction = {"H100 SXM5", 3, 5200.5, 3100.25, 2100.25, 300, 630075, "memory bound"};
  p.validation = {true,
                  {"sm_80", "sm_90"},
                  ValidationVerdict::kPassed,
                  ValidationVerdict::kNotRun,
                  7,
                  8,
                  "",
                  "2026-11-25T14:00:00Z",
                  {std::string(64, 'a') + "  fused.ptx"},
                  PlanTiming{14000, 9000, 5, 1, ""}};
  return p;
}

Expected<Plan> parse(const json& j) {
  return planFromJson(j, "plan/plan.json");
}

TEST(PlanJson, RoundTripsEveryField) {
  json j = planToJson(fullPlan());
  auto back = parse(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(planToJson(*back), j);
  EXPECT_EQ(back->predicates[4].value, (std::vector<uint8_t>{0xe8, 0x03, 0, 0}));
  EXPECT_EQ(back->predicates[5].tuples[1], (std::vector<int64_t>{32768, -4, 0}));
  EXPECT_TRUE(back->predicates[5].proof_args[1].pointer_offset);
  EXPECT_TRUE(back->predicates[5].proof_args[2].allocation);
  EXPECT_FALSE(back->predicates[5].proof_args[2].pointer_offset);
  EXPECT_EQ(back->argument_sets[1].fused_shape->grid[0], 4u);
  EXPECT_EQ(back->fused.parts[1].barrier_id, 3);
  EXPECT_EQ(back->validation.validated_at, "2026-11-25T14:00:00Z");
  ASSERT_TRUE(back->validation.timing);
  EXPECT_EQ(back->validation.timing->originals_ns, 14000u);
  EXPECT_EQ(back->validation.timing->fused_ns, 9000u);
  EXPECT_TRUE(back->validation.timing->timed());
}

TEST(PlanJson, NamesFileAndFieldOfABadModuleHash) {
  json j = planToJson(fullPlan());
  j["pattern"]["kernels"][1]["module_hash"] = "abc";
  auto p = parse(j);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "plan/plan.json: pattern.kernels[1].module_hash: expected 64 hex digits");
}

TEST(PlanJson, RefusesAProofArgumentThatIsBothOffsetAndAllocation) {
  json j = planToJson(fullPlan());
  j["pattern"]["predicates"][5]["proof_args"][2]["pointer_offset"] = true;
  auto p = parse(j);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "plan/plan.json: pattern.predicates[5].proof_args[2]: pointer_offset and allocation exclude each other");
}

TEST(PlanJson, RefusesOtherVersionsAndSaysWhatToDo) {
  json j = planToJson(fullPlan());
  j["version"] = 1;
  auto p = parse(j);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(p.status().message(),
            "plan/plan.json: plan version 1 is not supported by this kfuse (reads versions 3 to 4); re-run kfuse "
            "rewrite");
}

TEST(PlanJson, NamesMissingAndUnknownFields) {
  json j = planToJson(fullPlan());
  j["fused_kernel"].erase("name");
  EXPECT_EQ(parse(j).status().message(), "plan/plan.json: fused_kernel.name: missing required field");
  j = planToJson(fullPlan());
  j["argument_sets"][0]["args"][1][2]["colour"] = "red";
  EXPECT_EQ(parse(j).status().message(), "plan/plan.json: argument_sets[0].args[1][2].colour: unknown field");
}

TEST(PlanJson, ChecksReferencesIntoThePattern) {
  json j = planToJson(fullPlan());
  j["fused_kernel"]["params"][1]["sources"][1]["kernel"] = 5;
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: fused_kernel.params[1].sources[1].kernel: no kernel 5 in the pattern (it has 2)");
  j = planToJson(fullPlan());
  j["argument_sets"][0]["args"][0][0]["buffer"] = 9;
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: argument_sets[0].args[0][0].buffer: no buffer 9 (the set has 4)");
}

TEST(PlanJson, RefusesLaunchShapesNoGpuAccepts) {
  // A hostile plan's grid 2^31 x 65535 x 65535 (a sweep found it accepted).
  json j = planToJson(fullPlan());
  j["pattern"]["kernels"][1]["grid"] = {2147483648u, 65535, 65535};
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: pattern.kernels[1]: grid 2147483648x65535x65535 is beyond what a GPU launches (x < 2^31, "
            "y and z <= 65535)");
  j = planToJson(fullPlan());
  j["fused_kernel"]["block"] = {1024, 2, 1};
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: fused_kernel: block 1024x2x1 is beyond what a GPU launches (at most 1024 threads; x, y "
            "<= 1024, z <= 64)");
  j = planToJson(fullPlan());
  j["argument_sets"][0]["shapes"][0]["block"] = {1, 1, 65};
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: argument_sets[0].shapes[0]: block 1x1x65 is beyond what a GPU launches (at most 1024 "
            "threads; x, y <= 1024, z <= 64)");
}

TEST(PlanJson, ProvenValuesTuplesMatchTheirArguments) {
  json j = planToJson(fullPlan());
  json& proven = j["pattern"]["predicates"][5];
  ASSERT_EQ(proven["kind"], "proven_values");
  proven["tuples"][1] = json::array({1, 2});
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: pattern.predicates[5].tuples[1]: expected an array of 3 integers");
}

TEST(PlanJson, RejectsOutOfRangeNumbers) {
  json j = planToJson(fullPlan());
  j["pattern"]["kernels"][0]["grid"][0] = 1ull << 40;
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: pattern.kernels[0].grid[0]: integer out of range (at most 4294967295)");
  j = planToJson(fullPlan());
  j["validation"]["runs"] = -3;
  EXPECT_EQ(parse(j).status().message(), "plan/plan.json: validation.runs: integer out of range (at least 0)");
}

TEST(PlanJson, NamesTheFusionKindAndOnlyHorizontalFusionsALayout) {
  Plan p = fullPlan();
  json j = planToJson(p);
  EXPECT_EQ(j["fusion"], "thread-local");
  EXPECT_FALSE(j.contains("layout"));
  EXPECT_FALSE(j.contains("kind"));
  p.fusion = core::FusionKind::kHorizontal;
  p.layout = HorizontalLayout::kThreadPartitioned;
  j = planToJson(p);
  EXPECT_EQ(j["fusion"], "horizontal");
  EXPECT_EQ(j["layout"], "thread-partitioned");
  auto back = parse(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->fusion, core::FusionKind::kHorizontal);
  EXPECT_EQ(back->layout, HorizontalLayout::kThreadPartitioned);
  j.erase("layout");
  EXPECT_EQ(parse(j).status().message(), "plan/plan.json: layout: missing required field");
  j = planToJson(fullPlan());
  j["layout"] = "block-partitioned";
  EXPECT_EQ(parse(j).status().message(), "plan/plan.json: layout: not allowed when fusion is \"thread-local\"");
  j["fusion"] = "sideways";
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: fusion: expected one of \"thread-local\", \"epilogue\", \"horizontal\", "
            "\"block-level\", \"prologue\", got \"sideways\"");
}

// Version 3 named the fusion with "kind" (vertical, horizontal) and, for vertical fusions, "layout".
TEST(PlanJson, ReadsVersion3Plans) {
  auto v3 = [](const char* kind, const char* layout) {
    json j = planToJson(fullPlan());
    j["version"] = 3;
    j.erase("fusion");
    j["kind"] = kind;
    if (layout) j["layout"] = layout;
    return parse(j);
  };
  const struct {
    const char* kind;
    const char* layout;
    core::FusionKind fusion;
  } cases[] = {{"vertical", nullptr, core::FusionKind::kThreadLocal},
               {"vertical", "epilogue", core::FusionKind::kEpilogue},
               {"vertical", "block-level", core::FusionKind::kBlockLevel},
               {"vertical", "prologue", core::FusionKind::kPrologue},
               {"horizontal", "block-partitioned", core::FusionKind::kHorizontal}};
  for (const auto& c : cases) {
    auto p = v3(c.kind, c.layout);
    ASSERT_TRUE(p.ok()) << c.kind << " " << (c.layout ? c.layout : "") << ": " << p.status().message();
    EXPECT_EQ(p->fusion, c.fusion);
    EXPECT_EQ(p->version, 3);
    EXPECT_EQ(p->layout.has_value(), c.fusion == core::FusionKind::kHorizontal);
    EXPECT_EQ(planToJson(*p)["version"], kPlanVersion);
  }
  EXPECT_EQ(v3("vertical", "thread-partitioned").status().message(),
            "plan/plan.json: layout: expected one of \"epilogue\", \"block-level\", \"prologue\", got "
            "\"thread-partitioned\"");
  EXPECT_EQ(v3("diagonal", nullptr).status().message(),
            "plan/plan.json: kind: expected one of \"vertical\", \"horizontal\", got \"diagonal\"");
  EXPECT_EQ(v3("horizontal", nullptr).status().message(), "plan/plan.json: layout: missing required field");
}

TEST(PlanJson, ReadsEveryAccessModeTheRewriterWrites) {
  Plan p = fullPlan();
  p.kernels[0].params[0].access = core::AccessMode::kReadWrite;
  p.kernels[0].params[1].access = core::AccessMode::kNone;
  json j = planToJson(p);
  EXPECT_EQ(j["pattern"]["kernels"][0]["params"][0]["access"], "read_write");
  EXPECT_EQ(j["pattern"]["kernels"][0]["params"][2]["access"], "");
  auto back = parse(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->kernels[0].params[0].access, core::AccessMode::kReadWrite);
  EXPECT_EQ(back->kernels[0].params[1].access, core::AccessMode::kNone);
  EXPECT_FALSE(back->kernels[0].params[2].access.has_value());
  j["pattern"]["kernels"][0]["params"][0]["access"] = "sometimes";
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: pattern.kernels[0].params[0].access: expected one of \"unknown\", \"none\", \"read\", "
            "\"write\", \"read_write\", got \"sometimes\"");
}

TEST(PlanJson, RefusesAPredicateFieldItsKindDoesNotHave) {
  json j = planToJson(fullPlan());
  ASSERT_EQ(j["pattern"]["predicates"][0]["kind"], "arg_equal");
  j["pattern"]["predicates"][0]["value"] = "00";
  EXPECT_EQ(parse(j).status().message(),
            "plan/plan.json: pattern.predicates[0].value: not allowed when kind is \"arg_equal\"");
}

// Replaces every value of the document, one at a time, with values of every other type and extreme numbers:
// the reader must answer with a Status each time, never throw or crash.
void mutateEverywhere(const json& doc, json& node, int& checked) {
  const json kHostile[] = {nullptr,
                           "x",
                           1e308,
                           -1,
                           json(18446744073709551615ull),
                           json::array(),
                           json::object(),
                           true,
                           -9223372036854775807ll - 1,
                           0.5};
  for (const json& h : kHostile) {
    json saved = node;
    node = h;
    auto p = parse(doc);
    if (p.ok()) (void)planToJson(*p);
    node = saved;
    ++checked;
  }
  if (node.is_object()) {
    for (auto& [key, value] : node.items()) mutateEverywhere(doc, value, checked);
  } else if (node.is_array()) {
    for (auto& value : node) mutateEverywhere(doc, value, checked);
  }
}

TEST(PlanJson, HostileInputGivesAStatusNeverAnException) {
  json doc = planToJson(fullPlan());
  int checked = 0;
  mutateEverywhere(doc, doc, checked);
  EXPECT_GT(checked, 1000);
  EXPECT_FALSE(parse(json::array()).ok());
  EXPECT_FALSE(parse(json("plan")).ok());
  EXPECT_EQ(parse(nullptr).status().message(), "plan/plan.json: (document): expected an object");
}

TEST(PlanFiles, WriteIsAtomicAndReadsBack) {
  fs::path dir = kfuse::testing::processTempDir("kfuse_plan_test_") / "write";
  Plan plan = fullPlan();
  ASSERT_TRUE(writePlan(dir.string(), plan).ok());
  plan.validation.emulator = ValidationVerdict::kFailed;
  ASSERT_TRUE(writePlan(dir.string(), plan).ok());  // over an existing plan
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "plan.json") << "temporary file left behind";
  }
  EXPECT_EQ(files, 1);
  auto back = readPlan(dir.string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->validation.emulator, ValidationVerdict::kFailed);
  EXPECT_EQ(planToJson(*back), planToJson(plan));
}

TEST(PlanFiles, ReadNamesTheFileThatIsMissingOrBroken) {
  fs::path dir = kfuse::testing::processTempDir("kfuse_plan_test_") / "broken";
  auto missing = readPlan((dir / "absent").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent"), std::string::npos);
  testing::writeFile(dir / "plan.json", "{\"format\": \"kfuse-plan\", ");
  auto broken = readPlan(dir.string());
  ASSERT_FALSE(broken.ok());
  // The file, then where the parser stopped.
  EXPECT_EQ(broken.status().message().rfind((dir / "plan.json").string() + ": invalid JSON: ", 0), 0u)
      << broken.status().message();
  EXPECT_NE(broken.status().message().find("line 1, column 26"), std::string::npos);
}

TEST(PlanReadme, ShowsThePlanForPeople) {
  std::string r = planReadme(fullPlan());
  for (const char* want :
       {"# kfuse plan: `kfuse_scale_add`", "## Pattern", "## Predicates", "## Fused kernel", "### Parameter mapping",
        "### Launch mapping", "## Resources", "## Prediction", "## Validation",
        "argument 1 of `scale` equals argument 0 of `add`",
        "| `kfuse_scale_add_y` | argument 1 of `scale` = argument 0 of `add` |", "75%", "emulator: passed",
        "Aggressive",
        "(argument 3 of `scale`, the byte offset of argument 2 of `add`, the allocation of argument "
        "2 of `add`) is one of the values the legality proof covers: (1000, 0, 0), (32768, -4, 0)"}) {
    EXPECT_NE(r.find(want), std::string::npos) << want << "\n" << r;
  }
}

// tests/schemas/examples/plan.scale_add.json is what planToJson writes for fullPlan(); check_schemas.py
// validates it against schemas/plan.schema.json (ctest -L schema), so the schema describes the writer.
// Regenerate with KFUSE_UPDATE_GOLDEN=1.
TEST(PlanSchema, ExampleIsWhatThePlanWriterWrites) {
  fs::path example = fs::path(KFUSE_SOURCE_DIR) / "tests/schemas/examples/plan.scale_add.json";
  std::string want = planToJson(fullPlan()).dump(1) + "\n";
  if (std::getenv("KFUSE_UPDATE_GOLDEN")) testing::writeFile(example, want);
  EXPECT_EQ(testing::readFile(example), want) << "regenerate with KFUSE_UPDATE_GOLDEN=1 and review the diff";
}

}  // namespace
}  // namespace kfuse::rewriter
