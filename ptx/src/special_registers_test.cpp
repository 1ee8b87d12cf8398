#include "kfuse/ptx/special_registers.h"

#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/parser.h"

namespace kfuse::ptx {
namespace {

TEST(SpecialRegisters, EverySpellingReadsBackAsItsRegister) {
  for (int i = 0; i <= static_cast<int>(SpecialRegister::kCurrentGraphExec); ++i) {
    const auto r = static_cast<SpecialRegister>(i);
    const int number = r == SpecialRegister::kEnvReg ? 31 : r == SpecialRegister::kPerfMonitor64 ? 7 : 0;
    const std::string name = specialRegisterName(r, number);
    int read_number = -1;
    auto back = specialRegister(name, &read_number);
    ASSERT_TRUE(back.has_value()) << name;
    EXPECT_EQ(*back, r) << name;
    EXPECT_EQ(read_number, number) << name;
    EXPECT_TRUE(isSpecialRegister(name)) << name;
  }
}

TEST(SpecialRegisters, NumberedFamilies) {
  int n = -1;
  EXPECT_EQ(specialRegister("%envreg3", &n), SpecialRegister::kEnvReg);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(specialRegister("%pm7", &n), SpecialRegister::kPerfMonitor);
  EXPECT_EQ(n, 7);
  EXPECT_EQ(specialRegister("%pm0_64", &n), SpecialRegister::kPerfMonitor64);
  EXPECT_EQ(n, 0);
  // Outside the ranges PTX defines, or spelled with a leading zero: ordinary registers.
  EXPECT_FALSE(specialRegister("%envreg32"));
  EXPECT_FALSE(specialRegister("%envreg03"));
  EXPECT_FALSE(specialRegister("%pm8"));
  EXPECT_FALSE(specialRegister("%pm"));
}

TEST(SpecialRegisters, OrdinaryRegistersAreNotSpecial) {
  // Exact names, not prefixes: a hand-written kernel may call its registers anything.
  for (const char* name : {"%r1", "%rd4", "%f3", "%p1", "%fd2", "%rs0", "%tidx", "%tid.w", "%clockwork", "%pmx",
                           "%ctaid_x", "%smid2", "%lanemask", "tid.x", "%"}) {
    EXPECT_FALSE(specialRegister(name).has_value()) << name;
    EXPECT_FALSE(isSpecialRegister(name)) << name;
  }
  EXPECT_TRUE(isSpecialRegister("%WARP_SZ"));  // a predefined constant, read like a register
}

TEST(SpecialRegisters, GeometryComponents) {
  auto c = geometryComponent(SpecialRegister::kCtaidY);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->family, GeometryFamily::kCtaid);
  EXPECT_EQ(c->axis, 1);
  for (int f = 0; f < 4; ++f) {
    for (int axis = 0; axis < 3; ++axis) {
      const SpecialRegister r = geometryRegister(static_cast<GeometryFamily>(f), axis);
      auto back = geometryComponent(r);
      ASSERT_TRUE(back.has_value());
      EXPECT_EQ(static_cast<int>(back->family), f);
      EXPECT_EQ(back->axis, axis);
    }
  }
  EXPECT_EQ(specialRegisterName(geometryRegister(GeometryFamily::kNctaid, 2)), "%nctaid.z");
  EXPECT_FALSE(geometryComponent(SpecialRegister::kTid).has_value());
  EXPECT_TRUE(isGeometryVector(SpecialRegister::kTid));
  EXPECT_FALSE(geometryComponent(SpecialRegister::kClusterIdX).has_value());
  EXPECT_FALSE(geometryComponent(SpecialRegister::kLaneId).has_value());
}

TEST(SpecialRegisters, Classes) {
  EXPECT_TRUE(isTimer(SpecialRegister::kClock64));
  EXPECT_TRUE(isTimer(SpecialRegister::kGlobalTimerHi));
  EXPECT_FALSE(isTimer(SpecialRegister::kLaneId));
  EXPECT_TRUE(readsLaunchSharedMemorySize(SpecialRegister::kDynamicSmemSize));
  EXPECT_TRUE(readsLaunchSharedMemorySize(SpecialRegister::kTotalSmemSize));
  EXPECT_FALSE(readsLaunchSharedMemorySize(SpecialRegister::kAggrSmemSize));
  // Per thread: the indices, lane, warp, lane masks (which a prefix match on "%laneid" used to miss) and timers.
  for (SpecialRegister r : {SpecialRegister::kTidY, SpecialRegister::kTid, SpecialRegister::kLaneId,
                            SpecialRegister::kWarpId, SpecialRegister::kLaneMaskLt, SpecialRegister::kClock64}) {
    EXPECT_TRUE(variesWithinBlock(r)) << specialRegisterName(r);
  }
  for (SpecialRegister r : {SpecialRegister::kCtaidX, SpecialRegister::kNtidZ, SpecialRegister::kNctaid,
                            SpecialRegister::kSmId, SpecialRegister::kDynamicSmemSize, SpecialRegister::kEnvReg}) {
    EXPECT_FALSE(variesWithinBlock(r)) << specialRegisterName(r);
  }
}

// Every undeclared '%' name real nvcc output reads is a special register the enum knows: the verifier relies on
// it, and so do the analyses.
TEST(SpecialRegisters, CoverNvccOutput) {
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(KFUSE_PTX_TESTDATA)) {
    if (entry.path().extension() != ".ptx") continue;
    auto m = parseFile(entry.path().string());
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_TRUE(verify(*m).ok()) << entry.path() << ": " << verify(*m).message();
    for (const Function& f : m->functions) {
      for (const Statement& s : f.body) {
        if (s.kind != StatementKind::kInstruction) continue;
        for (const Operand& o : s.inst.operands) {
          if (o.kind == OperandKind::kRegister && specialRegister(o.name)) seen.insert(o.name);
        }
      }
    }
  }
  EXPECT_TRUE(seen.count("%tid.x")) << "the test PTX reads %tid.x";
  EXPECT_TRUE(seen.count("%ctaid.x"));
}

}  // namespace
}  // namespace kfuse::ptx
