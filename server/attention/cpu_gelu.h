// GELU in its erf form, x·Φ(x), for the register tiles' epilogue
// (cpu_gemm.cc): Φ as a quartic in each of 32 intervals of [−6, 6), read
// from five 32-entry tables with two-register permutes, so that the
// feed-forward's activation is applied as its product is stored instead of
// in a pass of its own. Max error against x·Φ(x) in double: 4.5e-7 at
// |x| ≈ 4 (about 1 ulp of the result; float32's own rounding of GELU is
// 2.4e-7 there). Below −6 the result is 0 (x·Φ(x) is under 6e-9 in
// magnitude there); above 6, x·(1 − 1e-9).
//
// Implementation detail of server/attention: not for other modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_GELU_H_
#define FAVOR_SERVER_ATTENTION_CPU_GELU_H_

#include <algorithm>
#include <cmath>

#include "server/common/multiversion.h"

#ifdef FAVOR_X86_TARGETS
#include <immintrin.h>
#endif

namespace favor::attention::cpu {

inline constexpr int kGeluIntervals = 32;
inline constexpr float kGeluLimit = 6.0f;
// Intervals per unit of x (32 / 12) and the index of x = 0 (16).
inline constexpr float kGeluScale = kGeluIntervals / (2 * kGeluLimit);
inline constexpr float kGeluOffset = kGeluIntervals / 2;
// y = x·kGeluScale + kGeluOffset is clamped to [0, kGeluLastY], the float
// below 32, so that its floor indexes the tables whatever x is (at x = −6
// the fused product and sum is a hair below 0).
inline constexpr float kGeluLastY = 31.999998f;

// kGeluPhi[j][i]: coefficient of u^(4−j) of Φ on interval i, where
// x = −6 + (i + u)·0.375, u in [0, 1). A least-squares quartic of
// Φ(x) = (1 + erf(x/√2))/2 in double over 400 Chebyshev nodes of each
// interval (near minimax), rounded to float; cpu_gelu_test holds the
// result to x·Φ(x).
inline constexpr float kGeluPhi[5][kGeluIntervals] = {
    {2.84006929e-09f,  1.87600708e-08f,  1.05812951e-07f,  5.07826769e-07f,
     2.06393065e-06f,  7.05588263e-06f,  2.00867853e-05f,  4.68493563e-05f,
     8.69149371e-05f,  0.000120168137f,  9.99973854e-05f,  -2.16006556e-05f,
     -0.000232653576f, -0.00041878366f,  -0.000420303579f, -0.000178001443f,
     0.000178001443f,  0.000420303579f,  0.00041878366f,   0.000232653576f,
     2.16006556e-05f,  -9.99973854e-05f, -0.000120168137f, -8.69149371e-05f,
     -4.68493563e-05f, -2.00867853e-05f, -7.05588263e-06f, -2.06393065e-06f,
     -5.07826769e-07f, -1.05812916e-07f, -1.87600566e-08f, -2.84006529e-09f},
    {-3.96901886e-11f, 2.622629e-09f,   3.41251862e-08f, 2.76119238e-07f,
     1.68853182e-06f,  8.25140705e-06f, 3.29312752e-05f, 0.000108226574f,
     0.000292994111f,  0.000648954185f, 0.0011559081f,   0.00159209606f,
     0.00152196502f,   0.00055657106f,  -0.00119768293f, -0.00294707436f,
     -0.00365908025f,  -0.00287889712f, -0.00111856358f, 0.000591350661f,
     0.00150569342f,   0.00155589764f,  0.00112962676f,  0.000640653889f,
     0.000295623991f,  0.000113278409f, 3.64749394e-05f, 9.944255e-06f,
     2.30742626e-06f,  4.57376927e-07f, 7.76628966e-08f, 1.13205907e-08f},
    {3.30269323e-09f,  2.58116941e-08f,  1.76200146e-07f,  1.0491666e-06f,
     5.43995066e-06f,  2.45122519e-05f,  9.57610318e-05f,  0.000323455606f,
     0.000941496284f,  0.00235169497f,   0.00501250988f,   0.00904229656f,
     0.0136246588f,    0.0167388804f,    0.0158963855f,    0.00985531695f,
     5.39146422e-05f,  -0.00978151523f,  -0.0158958919f,   -0.0167946313f,
     -0.0136889806f,   -0.00908021908f,  -0.00501956651f,  -0.00234196824f,
     -0.000929231464f, -0.000315075566f, -9.16017671e-05f, -2.28891295e-05f,
     -4.92448498e-06f, -9.13453391e-07f, -1.46240012e-07f, -2.02240518e-08f},
    {2.18138552e-09f, 1.95533367e-08f, 1.51718183e-07f, 1.01992919e-06f,
     5.94452968e-06f, 3.00547254e-05f, 0.000131867171f, 0.000502260984f,
     0.00166111183f,  0.00477119442f,  0.0119035244f,   0.0257981867f,
     0.0485735238f,   0.0794562548f,   0.112924382f,    0.13943927f,
     0.149596676f,    0.139442891f,    0.112928599f,    0.0794581175f,
     0.0485726632f,   0.0257962588f,   0.011902119f,    0.00477074645f,
     0.00166124932f,  0.000502530194f, 0.000132056986f, 3.01457494e-05f,
     5.97792723e-06f, 1.02974582e-06f, 1.54084901e-07f, 2.00279828e-08f},
    {9.88594095e-10f, 9.28769062e-09f, 7.61133165e-08f, 5.4431996e-07f,
     3.39868188e-06f, 1.85397494e-05f, 8.84245092e-05f, 0.000369091751f,
     0.0013499147f,   0.00433245534f,  0.0122244488f,   0.0303962938f,
     0.0668071136f,   0.130294472f,    0.226627395f,    0.353830367f,
     0.500000119f,    0.646169841f,    0.773372591f,    0.869705379f,
     0.93319273f,     0.969603598f,    0.987775505f,    0.995667577f,
     0.998650134f,    0.999630928f,    0.999911606f,    0.999981463f,
     0.999996603f,    0.999999464f,    0.99999994f,     1.0f}};

// The same arithmetic one float at a time: for tests and for the kernels
// without a vector version.
inline float GeluScalar(float x) {
  if (std::isnan(x)) return x;
  if (x < -kGeluLimit) return 0.0f;
  const float y = std::min(std::max(std::fma(x, kGeluScale, kGeluOffset), 0.0f),
                           kGeluLastY);
  const float f = std::floor(y);
  const float u = y - f;
  const int i = static_cast<int>(f);
  float p = kGeluPhi[0][i];
  for (int j = 1; j < 5; ++j) p = std::fma(p, u, kGeluPhi[j][i]);
  return x * p;
}

#ifdef FAVOR_X86_TARGETS
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// own -Wmaybe-uninitialized then reports (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// GeluScalar on 16 lanes: 15 instructions, five of them permutes.
__attribute__((target("avx512f"), always_inline)) inline __m512 Gelu16(
    __m512 x) {
  const __mmask16 live =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(-kGeluLimit), _CMP_NLT_UQ);
  // max(y, 0) returns 0 for a NaN y: its lanes give NaN from x · p.
  const __m512 y =
      _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kGeluScale),
                                                  _mm512_set1_ps(kGeluOffset)),
                                  _mm512_setzero_ps()),
                    _mm512_set1_ps(kGeluLastY));
  const __m512 f =
      _mm512_roundscale_ps(y, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 u = _mm512_sub_ps(y, f);
  const __m512i i = _mm512_cvttps_epi32(f);
  const auto coefficient = [i](int j)
      __attribute__((target("avx512f"), always_inline)) {
    return _mm512_permutex2var_ps(_mm512_loadu_ps(kGeluPhi[j]), i,
                                  _mm512_loadu_ps(kGeluPhi[j] + 16));
  };
  __m512 p = coefficient(0);
#pragma GCC unroll 4
  for (int j = 1; j < 5; ++j) p = _mm512_fmadd_ps(p, u, coefficient(j));
  return _mm512_maskz_mul_ps(live, x, p);
}
#pragma GCC diagnostic pop
#endif

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_GELU_H_
