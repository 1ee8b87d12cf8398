#include "opcodes.h"

#include <gtest/gtest.h>

#include "kfuse/ptx/ir.h"
#include "kfuse/ptx/printer.h"

namespace kfuse::ptx {
namespace {

TEST(Opcodes, EveryNameMapsBackToItsEnum) {
  for (size_t i = 1; i < size_t(Opcode::kCount); ++i)
    EXPECT_EQ(detail::lookupOpcode(opcodeName(Opcode(i))), Opcode(i)) << opcodeName(Opcode(i));
  for (size_t i = 1; i < size_t(StateSpace::kCount); ++i)
    EXPECT_EQ(detail::lookupSpace(spaceName(StateSpace(i))), StateSpace(i)) << spaceName(StateSpace(i));
  for (size_t i = 1; i < size_t(DataType::kCount); ++i)
    EXPECT_EQ(detail::lookupType(typeName(DataType(i))), DataType(i)) << typeName(DataType(i));
  for (size_t i = 1; i < size_t(Linkage::kCount); ++i)
    EXPECT_EQ(detail::lookupLinkage(linkageName(Linkage(i))), Linkage(i)) << linkageName(Linkage(i));
  for (size_t i = 1; i < size_t(Mod::kCount); ++i)
    EXPECT_EQ(detail::lookupModifier(modName(Mod(i))), Modifier::mod(Mod(i))) << modName(Mod(i));
}

TEST(Opcodes, UnknownSpellingsAreKeptVerbatimAndInOrder) {
  EXPECT_EQ(detail::lookupOpcode("tcgen99"), Opcode::kUnknown);
  Instruction in;
  in.opcode = Opcode::kLd;
  for (const char* m : {".global", ".L2::cache_hint", ".nc", ".v4", ".f32"}) in.addModifier(m);
  EXPECT_EQ(in.fullOpcode(), "ld.global.L2::cache_hint.nc.v4.f32");
  EXPECT_EQ(in.space(), StateSpace::kGlobal);
  EXPECT_EQ(in.type(), DataType::kF32);
  EXPECT_TRUE(in.has(Mod::kNc));
  EXPECT_TRUE(in.has(Mod::kV4));
  EXPECT_EQ(in.spelled->other_modifiers, std::vector<std::string>{".L2::cache_hint"});
}

TEST(Opcodes, TypesAreReadInTheOrderWritten) {
  Instruction in;
  in.opcode = Opcode::kCvt;
  for (const char* m : {".rn", ".f32", ".s32"}) in.addModifier(m);
  EXPECT_EQ(in.typeCount(), 2u);
  EXPECT_EQ(in.typeAt(0), DataType::kF32);
  EXPECT_EQ(in.typeAt(1), DataType::kS32);
  EXPECT_EQ(in.typeAt(2), DataType::kNone);
  EXPECT_EQ(printInstruction(in), "cvt.rn.f32.s32;");
}

TEST(Opcodes, QualifiedSpacesBelongToTheirBaseSpace) {
  Instruction in;
  in.opcode = Opcode::kMbarrier;
  for (const char* m : {".arrive", ".shared::cta", ".b64"}) in.addModifier(m);
  EXPECT_TRUE(in.hasBaseSpace(StateSpace::kShared));
  EXPECT_FALSE(in.has(StateSpace::kShared));
  EXPECT_EQ(baseSpace(StateSpace::kParamFunc), StateSpace::kParam);
  EXPECT_EQ(typeElementBits(DataType::kF16x2), 16u);
  EXPECT_EQ(typeElements(DataType::kF16x2), 2u);
  EXPECT_TRUE(isFloatType(DataType::kBF16));
}

}  // namespace
}  // namespace kfuse::ptx
