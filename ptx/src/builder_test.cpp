#include "kfuse/ptx/builder.h"

#include <gtest/gtest.h>

#include "kfuse/ptx/parser.h"
#include "kfuse/ptx/printer.h"

namespace kfuse::ptx {
namespace {

// What the builder makes prints as the PTX it stands for, and parses back to the same text.
TEST(Builder, BuildsWhatThePtxSays) {
  Function f;
  f.is_entry = true;
  f.name = "k";
  f.has_body = true;
  f.has_param_list = true;
  VariableDecl p;
  p.space = StateSpace::kParam;
  p.type = DataType::kU64;
  p.name = "k_param_0";
  f.params.push_back(p);
  std::vector<Statement> code, decls;
  Builder b("%kb_", &code, &decls);
  Operand ptr = b.declare("ptr", DataType::kB64);
  Operand tid = b.declare("tid", DataType::kB32);
  Operand skip = b.declare("skip", DataType::kPred);
  EXPECT_EQ(b.declare("tid", DataType::kB32).name, "%kb_tid");  // declared once
  b.emit(Opcode::kLd, {".param", ".u64"}, {ptr, addressOperand(symbolOperand("k_param_0"))});
  b.emit(Opcode::kMov, {".u32"}, {tid, specialOperand(SpecialRegister::kTidX)});
  b.emit(Opcode::kSetp, {".ge", ".u32"}, {skip, tid, integerOperand(128)});
  b.branch("$end", skip.name);
  b.emit(Opcode::kSt, {".global", ".u32"}, {addressOperand(ptr, 8), tid});
  b.label("$end");
  b.emit(Opcode::kBar, {".sync"}, {integerOperand(0)});
  b.branch("$end");
  ASSERT_EQ(decls.size(), 3u);
  f.body = decls;
  f.body.insert(f.body.end(), code.begin(), code.end());
  f.body.push_back(instructionStatement(makeInstruction(Opcode::kRet, {}, {})));
  Module m;
  m.version = "8.0";
  m.target = "sm_80";
  m.functions.push_back(f);
  m.order.push_back({TopLevelKind::kFunction, 0});
  ASSERT_TRUE(verify(m).ok()) << verify(m).message();
  const std::string text = printModule(m);
  for (const char* line :
       {"ld.param.u64\t%kb_ptr, [k_param_0];", "mov.u32\t%kb_tid, %tid.x;", "setp.ge.u32\t%kb_skip, %kb_tid, 128;",
        "@%kb_skip bra\t$end;", "st.global.u32\t[%kb_ptr+8], %kb_tid;", "bar.sync\t0;", "bra.uni\t$end;"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin\n" << text;
  }
  auto back = parseModule(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(printModule(*back), text);
}

}  // namespace
}  // namespace kfuse::ptx
