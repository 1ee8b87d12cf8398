// IEEE binary16 and bfloat16 conversions (bit manipulation, no compiler extensions).
#include <bit>
#include <cmath>
#include <cstdint>

#include "interp.h"

namespace kfuse::emulator {

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: value = man * 2^-24
      float f = std::ldexp(static_cast<float>(man), -24);
      return sign ? -f : f;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  return std::bit_cast<float>(bits);
}

// rnd: 0 nearest-even, 1 toward zero, 2 down, 3 up.
uint16_t floatToHalf(float f, int rnd) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00 | ((ax >> 13) & 0x3ff));  // NaN (quiet)
  if (ax == 0x7f800000u) return uint16_t(sign | 0x7c00);
  bool neg = sign != 0;
  // Work with the exact value as an integer multiple of 2^-24 scaled to keep rounding bits.
  int exp = int(ax >> 23) - 127;
  uint32_t man = (ax & 0x7fffff) | (ax >= 0x00800000u ? 0x800000u : 0);
  if (ax < 0x00800000u) exp = -126;
  // value = man * 2^(exp-23). Target: half with 10 fraction bits; min exponent -14 (subnormals 2^-24).
  int target_exp = exp < -14 ? -14 : exp;
  int shift = (target_exp - 10) - (exp - 23);  // bits to drop from man
  uint32_t q = 0;
  bool gt_half = false, eq_half = false, inexact = false;
  if (shift >= 32) {
    inexact = man != 0;
  } else if (shift <= 0) {
    q = man << (-shift);
  } else {
    q = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    gt_half = rem > half;
    eq_half = rem == half;
    inexact = rem != 0;
  }
  bool up = false;
  switch (rnd) {
    case 0: up = gt_half || (eq_half && (q & 1)); break;
    case 1: up = false; break;
    case 2: up = neg && inexact; break;
    default: up = !neg && inexact; break;
  }
  q += up;
  // q is the significand at scale 2^(target_exp-10); normalise.
  uint32_t e = uint32_t(target_exp + 15);
  if (q >= 0x800) {  // carried into a new binade
    q >>= 1;
    e += 1;
  }
  if (q < 0x400) {  // subnormal (or zero)
    return uint16_t(sign | q);
  }
  if (e >= 31) {
    bool to_inf = rnd == 0 || (rnd == 2 && neg) || (rnd == 3 && !neg);
    return uint16_t(sign | (to_inf ? 0x7c00 : 0x7bff));
  }
  return uint16_t(sign | (e << 10) | (q & 0x3ff));
}

float bf16ToFloat(uint16_t h) {
  return std::bit_cast<float>(uint32_t(h) << 16);
}

uint16_t floatToBf16(float f, int rnd) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);
  bool neg = x >> 31;
  uint32_t low = x & 0xffff;
  uint32_t hi = x >> 16;
  switch (rnd) {
    case 0: return uint16_t((x + 0x7fff + (hi & 1)) >> 16);
    case 1: return uint16_t(hi);
    case 2: return uint16_t(hi + (neg && low ? 1 : 0));
    default: return uint16_t(hi + (!neg && low ? 1 : 0));
  }
}

}  // namespace kfuse::emulator
