#include <gtest/gtest.h>

#include "kfuse/rewriter/pass.h"
#include "test_kernels.h"

namespace kfuse::rewriter {
namespace {

TEST(Pipeline, ParsesPassesWithOptions) {
  auto p = parsePipeline("fuse-vertical{kernels=a+b,name=f,forward=false},cleanup,keep-only{kernels=f}");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].name, "fuse-vertical");
  EXPECT_EQ((*p)[0].options.list("kernels"), std::vector<std::string>({"a", "b"}));
  EXPECT_EQ((*p)[0].options.get("name"), "f");
  EXPECT_FALSE(*(*p)[0].options.flag("forward", true));
  EXPECT_EQ((*p)[1].name, "cleanup");
  EXPECT_TRUE((*p)[1].options.values().empty());
}

TEST(Pipeline, ErrorsNameTheColumnAndWhatWasExpected) {
  auto missing_brace = parsePipeline("cleanup{kernels=a");
  ASSERT_FALSE(missing_brace.ok());
  EXPECT_NE(missing_brace.status().message().find("expected '}'"), std::string::npos);
  auto trailing = parsePipeline("cleanup,");
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.status().message().find("column 9"), std::string::npos) << trailing.status().message();
  EXPECT_FALSE(parsePipeline("").ok());
  EXPECT_FALSE(parsePipeline("cleanup{kernels=a,kernels=b}").ok());
}

TEST(Pipeline, UnknownPassesAndOptionsAreErrorsNotIgnored) {
  auto unknown = PassManager::fromPipeline("fuse-diagonal");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("fuse-vertical"), std::string::npos);  // lists what exists
  auto typo = PassManager::fromPipeline("cleanup{kernel=a}");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("no option 'kernel'"), std::string::npos) << typo.status().message();
  EXPECT_FALSE(PassManager::fromPipeline("fuse-vertical{kernels=a}").ok());
  EXPECT_FALSE(PassManager::fromPipeline("fuse-vertical{kernels=a+b,equal=0.1}").ok());
  EXPECT_FALSE(PassManager::fromPipeline("fuse-horizontal{kernels=a+b,shapes=4/256}").ok());
  EXPECT_FALSE(PassManager::fromPipeline("fuse-horizontal{kernels=a+b,shapes=4/256+0/1}").ok());
}

TEST(PassManager, RunsVerticalFusionCleanupAndKeepOnlyOnNvccPtx) {
  ptx::Module m = testing::parsed(testing::examplePtx("elementwise_chain"));
  auto pm = PassManager::fromPipeline(
      "fuse-vertical{kernels=scale+add,name=fused,equal=0.1=1.0+0.3=1.3,disjoint=true},"
      "cleanup{kernels=fused,params=true},keep-only{kernels=fused}");
  ASSERT_TRUE(pm.ok()) << pm.status().message();
  Status s = pm->run(m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.functions.size(), 1u);
  EXPECT_EQ(m.functions[0].name, "fused");
  const auto& log = pm->log().lines;
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("fused_param_1 <- 0.1=1.0"), std::string::npos) << log[0];
  testing::expectCompiles(ptx::printModule(m), {"sm_90"});
}

TEST(PassManager, AFailingPassIsNamed) {
  ptx::Module m = testing::parsed(testing::examplePtx("elementwise_chain"));
  auto pm = PassManager::fromPipeline("fuse-vertical{kernels=scale+missing}");
  ASSERT_TRUE(pm.ok());
  Status s = pm->run(m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("pass fuse-vertical: ", 0), 0u) << s.message();
}

TEST(PassRegistry, EveryPassHasADescriptionAndOptionsHelp) {
  for (const PassInfo& p : passRegistry()) {
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_FALSE(p.options_help.empty()) << p.name;
    EXPECT_EQ(findPass(p.name), &p);
  }
}

}  // namespace
}  // namespace kfuse::rewriter
