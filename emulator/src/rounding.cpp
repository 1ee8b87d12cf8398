// Directed rounding (.rz/.rm/.rp) for f32/f64 arithmetic and conversions. This file is compiled with
// -frounding-math so the compiler keeps every operation between the fesetround calls.
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "interp.h"

namespace kfuse::emulator {

namespace {
template <class T>
T get(uint64_t v) {
  if constexpr (sizeof(T) == 4) {
    uint32_t u = static_cast<uint32_t>(v);
    T f;
    std::memcpy(&f, &u, 4);
    return f;
  } else {
    T f;
    std::memcpy(&f, &v, 8);
    return f;
  }
}
template <class T>
uint64_t put(T f) {
  if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  } else {
    uint64_t u;
    std::memcpy(&u, &f, 8);
    return u;
  }
}
float ftz(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

template <class T>
void apply(int op, const uint64_t* A, const uint64_t* B, const uint64_t* C, uint64_t* D, uint32_t mask, bool z) {
  auto in = [&](const uint64_t* p, int l) {
    T v = get<T>(p[l]);
    if constexpr (sizeof(T) == 4)
      return z ? ftz(v) : v;
    else
      return v;
  };
  for (int l = 0; l < 32; ++l) {
    if (!((mask >> l) & 1)) continue;
    volatile T r;
    switch (op) {
      case 0: r = in(A, l) + in(B, l); break;
      case 1: r = in(A, l) - in(B, l); break;
      case 2: r = in(A, l) * in(B, l); break;
      case 3: r = std::fma(in(A, l), in(B, l), in(C, l)); break;
      case 4: r = in(A, l) / in(B, l); break;
      case 5: r = std::sqrt(in(A, l)); break;
      case 9: r = T(1) / in(A, l); break;
      default: r = 0;
    }
    T v = r;
    if constexpr (sizeof(T) == 4) v = z ? ftz(v) : v;
    D[l] = put<T>(v);
  }
}
}  // namespace

void directedRound(int rnd, int op, int prec, const uint64_t* A, const uint64_t* B, const uint64_t* C, uint64_t* D,
                   uint32_t mask, bool ftz_on) {
  int mode = rnd == 1 ? FE_TOWARDZERO : rnd == 2 ? FE_DOWNWARD : rnd == 3 ? FE_UPWARD : FE_TONEAREST;
  int old = std::fegetround();
  std::fesetround(mode);
  if (op >= 6 && op <= 8) {
    // Conversions to f32 of one value (mask bit 0).
    volatile float r;
    if (op == 6)
      r = static_cast<float>(get<double>(A[0]));
    else if (op == 7)
      r = static_cast<float>(static_cast<int64_t>(A[0]));
    else
      r = static_cast<float>(A[0]);
    float v = r;
    D[0] = put<float>(ftz_on ? ftz(v) : v);
  } else if (prec == 2) {
    apply<float>(op, A, B, C, D, mask, ftz_on);
  } else {
    apply<double>(op, A, B, C, D, mask, false);
  }
  std::fesetround(old);
}

}  // namespace kfuse::emulator
