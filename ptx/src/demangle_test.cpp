#include "kfuse/ptx/demangle.h"

#include <gtest/gtest.h>

namespace kfuse::ptx {
namespace {

TEST(Demangle, ScaleHasPointerToConstFloatThenPointerThenInt) {
  EXPECT_EQ(demangle("_Z5scalePKfPfi"), "scale(float const*, float*, int)");
  auto sig = parseMangledSignature("_Z5scalePKfPfi");
  ASSERT_TRUE(sig.ok()) << sig.status().message();
  EXPECT_EQ(sig->name, "scale");
  ASSERT_EQ(sig->params.size(), 3u);
  EXPECT_TRUE(sig->params[0].is_pointer);
  EXPECT_TRUE(sig->params[0].pointee_const);
  EXPECT_EQ(sig->params[0].pointee, "float");
  EXPECT_EQ(accessHint(sig->params[0]), AccessMode::kRead);
  EXPECT_TRUE(sig->params[1].is_pointer);
  EXPECT_FALSE(sig->params[1].pointee_const);
  EXPECT_EQ(accessHint(sig->params[1]), std::nullopt);
  EXPECT_FALSE(sig->params[2].is_pointer);
  EXPECT_EQ(sig->params[2].text, "int");
}

TEST(Demangle, TemplatesStructsRestrictAndSubstitutions) {
  auto t = parseMangledSignature("_Z7stencilIfLi1EEvPKT_PS0_i");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "stencil<float, 1>");
  ASSERT_EQ(t->params.size(), 3u);
  EXPECT_TRUE(t->params[0].pointee_const);
  EXPECT_EQ(t->params[0].pointee, "float");
  EXPECT_EQ(t->params[1].pointee, "float");

  auto h = parseMangledSignature("_Z9half_axpy6__halfPKS_PS_i");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->params.size(), 4u);
  EXPECT_FALSE(h->params[0].is_pointer);
  EXPECT_EQ(h->params[0].text, "__half");
  EXPECT_TRUE(h->params[1].pointee_const);
  EXPECT_EQ(h->params[1].pointee, "__half");

  auto r = parseMangledSignature("_Z5saxpyfPKfPfi");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->params[0].text, "float");
  // __restrict__ is not part of the mangling of a parameter type; const is
  auto rr = parseMangledSignature("_Z1fPrKiS0_");
  ASSERT_TRUE(rr.ok());
  EXPECT_TRUE(rr->params[0].is_pointer);
  EXPECT_TRUE(rr->params[0].pointee_const);

  auto ns = parseMangledSignature("_ZN2ns6kernelIN3foo3BarIiEEEEvPKS3_PS3_");
  ASSERT_TRUE(ns.ok());
  EXPECT_EQ(ns->name, "ns::kernel<foo::Bar<int> >");
  ASSERT_EQ(ns->params.size(), 2u);
  EXPECT_EQ(ns->params[0].pointee, "foo::Bar<int>");
  EXPECT_TRUE(ns->params[0].pointee_const);
}

TEST(Demangle, NonMangledNamesAreNotFound) {
  EXPECT_EQ(demangle("vecAdd"), "vecAdd");
  // extern "C" names that happen to be valid type encodings stay as they are.
  EXPECT_EQ(demangle("rd"), "rd");
  EXPECT_EQ(demangle("i"), "i");
  EXPECT_EQ(demangle("Pf"), "Pf");
  EXPECT_EQ(parseMangledSignature("vecAdd").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(parseMangledSignature("_Zgarbage").status().code(), ErrorCode::kNotFound);
  auto v = parseMangledSignature("_Z4noopv");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->params.empty());
}

}  // namespace
}  // namespace kfuse::ptx
