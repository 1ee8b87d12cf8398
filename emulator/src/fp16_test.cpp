#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "interp.h"

namespace kfuse::emulator {
namespace {

// The compiler's _Float16 is the reference (clang before 15 lacks it on x86-64: these run in the regular build).
#if !defined(__clang__) || __clang_major__ >= 15
uint16_t bitsOf(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

TEST(Fp16, FloatToHalfRoundsToNearestEvenLikeTheCompiler) {
  // Sweep a wide range of floats (normal, subnormal, overflow) and compare with the compiler's _Float16.
  for (uint32_t i = 0; i < 4000000; ++i) {
    uint32_t bits = i * 1103u + (i >> 3) * 2654435761u;
    float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToHalf(f), bitsOf(static_cast<_Float16>(f))) << "float bits " << std::hex << bits;
  }
}

TEST(Fp16, HalfToFloatIsExactForAllHalves) {
  for (uint32_t h = 0; h < 65536; ++h) {
    _Float16 x;
    uint16_t b = uint16_t(h);
    std::memcpy(&x, &b, 2);
    float want = static_cast<float>(x);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(halfToFloat(b)));
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(halfToFloat(b)), std::bit_cast<uint32_t>(want)) << h;
  }
}
#endif  // _Float16

TEST(Fp16, DirectedHalfRounding) {
  float f = 1.0f + 1.0f / 4096;  // between two halves: 1 and 1+2^-10
  EXPECT_EQ(floatToHalf(f, 0), 0x3c00);
  EXPECT_EQ(floatToHalf(f, 1), 0x3c00);
  EXPECT_EQ(floatToHalf(f, 3), 0x3c01);
  EXPECT_EQ(floatToHalf(-f, 2), 0xbc01);
  EXPECT_EQ(floatToHalf(1e6f, 0), 0x7c00);
  EXPECT_EQ(floatToHalf(1e6f, 1), 0x7bff);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(bf16ToFloat(0x4049), std::bit_cast<float>(0x40490000u));
}

}  // namespace
}  // namespace kfuse::emulator
