#include "kquant_reference.h"

#include <cmath>

#include "core/float16.h"

namespace strata::cpu::test {
namespace {

using core::BlockQ4_K;
using core::BlockQ5_K;
using core::BlockQ6_K;
using core::BlockQ8_K;
using core::kQK_K;

// ggml's get_scale_min_k4: scale and min of sub-block j from the 12 packed bytes.
void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The mins part of q4_K / q5_K: _mm_hadd_epi16 of the 16 bsums gives the 8 sub-block sums,
// _mm_madd_epi16 with the 8 mins gives 4 int32 lanes.
void mins_lanes(const uint8_t* packed, const BlockQ8_K& y, int32_t (&prod)[4]) {
  int32_t q8s[8];
  for (int s = 0; s < 8; ++s) q8s[s] = y.bsums[2 * s] + y.bsums[2 * s + 1];
  int mins[8];
  for (int j = 0; j < 8; ++j) {
    int sc = 0;
    scale_min_k4(j, packed, sc, mins[j]);
  }
  for (int i = 0; i < 4; ++i) prod[i] = mins[2 * i] * q8s[2 * i] + mins[2 * i + 1] * q8s[2 * i + 1];
}

// The scale part of q4_K / q5_K: per 64 elements (j), the low nibbles of 32 bytes with
// scale 2j and the high nibbles with scale 2j + 1; _mm256_maddubs_epi16 then
// _mm256_madd_epi16 put elements 4m..4m+3 of each 32 into int32 lane m.
template <class Block, class High>
void scale_lanes(const Block& x, const BlockQ8_K& y, High high, int32_t (&sumi)[8]) {
  for (int m = 0; m < 8; ++m) sumi[m] = 0;
  for (int j = 0; j < 4; ++j) {
    int sc_l = 0, sc_h = 0, unused = 0;
    scale_min_k4(2 * j, x.scales, sc_l, unused);
    scale_min_k4(2 * j + 1, x.scales, sc_h, unused);
    for (int l = 0; l < 32; ++l) {
      const int lo = (x.qs[32 * j + l] & 0x0f) | high(2 * j, l);
      const int hi = (x.qs[32 * j + l] >> 4) | high(2 * j + 1, l);
      sumi[l / 4] += sc_l * lo * y.qs[64 * j + l] + sc_h * hi * y.qs[64 * j + 32 + l];
    }
  }
}

}  // namespace

float ggml_hsum_float_8(const float (&v)[8]) {
  float res[4];
  for (int i = 0; i < 4; ++i) res[i] = v[4 + i] + v[i];  // extractf128(x, 1) + cast(x)
  const float r0 = res[0] + res[2];                      // + movehl
  const float r1 = res[1] + res[3];
  return r0 + r1;  // add_ss with movehdup
}

float ggml_dot_q4_k(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n) {
  float acc[8] = {}, acc_m[4] = {};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = y[i].d * core::half_to_float(x[i].d);
    const float dmin = -y[i].d * core::half_to_float(x[i].dmin);
    int32_t prod[4];
    mins_lanes(x[i].scales, y[i], prod);
    for (int l = 0; l < 4; ++l) acc_m[l] = std::fma(dmin, static_cast<float>(prod[l]), acc_m[l]);
    int32_t sumi[8];
    scale_lanes(
        x[i], y[i], [](int, int) { return 0; }, sumi);
    for (int m = 0; m < 8; ++m) acc[m] = std::fma(d, static_cast<float>(sumi[m]), acc[m]);
  }
  const float m0 = acc_m[0] + acc_m[2];  // acc_m + movehl(acc_m)
  const float m1 = acc_m[1] + acc_m[3];
  return ggml_hsum_float_8(acc) + (m0 + m1);  // add_ss with movehdup
}

float lanes_dot_q4_k(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int32_t sum = 0, mins = 0;
    for (int j = 0; j < 8; ++j) {
      int sc = 0, m = 0;
      scale_min_k4(j, x[i].scales, sc, m);
      int32_t dot = 0, act = 0;
      for (int e = 0; e < 32; ++e) {
        const uint8_t byte = x[i].qs[32 * (j / 2) + e];
        const int q = j % 2 == 0 ? byte & 0x0f : byte >> 4;
        dot += q * y[i].qs[32 * j + e];
        act += y[i].qs[32 * j + e];
      }
      sum += sc * dot;
      mins += m * act;
    }
    const float d = core::half_to_float(x[i].d) * y[i].d;
    const float dmin = core::half_to_float(x[i].dmin) * y[i].d;
    acc = std::fma(static_cast<float>(sum), d, acc);
    acc = std::fma(-static_cast<float>(mins), dmin, acc);
  }
  return acc;
}

float ggml_dot_q5_k(const BlockQ5_K* x, const BlockQ8_K* y, int64_t n) {
  float acc[8] = {};
  float summs = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = y[i].d * core::half_to_float(x[i].d);
    const float dmin = -y[i].d * core::half_to_float(x[i].dmin);
    int32_t prod[4];
    mins_lanes(x[i].scales, y[i], prod);
    // _mm_hadd_epi32 twice, then summs += dmin * that, contracted to one fma.
    const int32_t hsum = (prod[0] + prod[1]) + (prod[2] + prod[3]);
    summs = std::fma(dmin, static_cast<float>(hsum), summs);
    const BlockQ5_K& b = x[i];
    int32_t sumi[8];
    scale_lanes(
        b, y[i], [&b](int sub, int l) { return ((b.qh[l] >> sub) & 1) << 4; }, sumi);
    for (int m = 0; m < 8; ++m) acc[m] = std::fma(d, static_cast<float>(sumi[m]), acc[m]);
  }
  return ggml_hsum_float_8(acc) + summs;
}

float ggml_dot_q6_k(const BlockQ6_K* x, const BlockQ8_K* y, int64_t n) {
  float acc[8] = {};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = y[i].d * core::half_to_float(x[i].d);
    int32_t sumi[8] = {};
    // Two halves of 128; in each, four groups of 32 (q4_0..q4_3), group k with the scales
    // is + k's two sub-blocks of 16; maddubs(q, y) - maddubs(32, y), then madd with the scale.
    for (int j = 0; j < 2; ++j) {
      const uint8_t* q4 = x[i].ql + 64 * j;
      const uint8_t* qh = x[i].qh + 32 * j;
      const int8_t* q8 = y[i].qs + 128 * j;
      for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < 32; ++l) {
          const int low = k % 2 == 0 ? q4[l] : q4[32 + l];
          const int q = ((k < 2 ? low : low >> 4) & 0x0f) | (((qh[l] >> (2 * k)) & 3) << 4);
          const int scale = x[i].scales[8 * j + 2 * k + l / 16];
          sumi[l / 4] += scale * ((q - 32) * q8[32 * k + l]);
        }
      }
    }
    for (int m = 0; m < 8; ++m) acc[m] = std::fma(d, static_cast<float>(sumi[m]), acc[m]);
  }
  return ggml_hsum_float_8(acc);
}

}  // namespace strata::cpu::test
