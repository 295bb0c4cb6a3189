#include "model/synth/random.h"

#include <cmath>

namespace strata::model {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// splitmix64's output function: a bijective mix of all 64 bits, so consecutive counters give
// independent-looking outputs. Counter-based (no state carried between values) is what makes
// any slice of a stream computable on its own.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t synth_stream_key(uint64_t seed, std::string_view tensor_name) {
  // Keyed by name rather than position, so a tensor's values do not move when the shape adds
  // or drops other tensors (more layers, another output type).
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const char c : tensor_name) {
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  }
  return mix64(mix64(seed + kGolden) ^ h);
}

void synth_normal(uint64_t key, uint64_t first, float stddev, std::span<float> out) {
  // Irwin-Hall: the sum of four uniform 16-bit lanes of one 64-bit hash, centred and scaled
  // to unit variance. It is within a few percent of a normal's shape (bounded at +-3.46
  // sigma, which quantizers only welcome) for one hash per value instead of Box-Muller's
  // log, sqrt and cos: an 8B model's worth of values takes seconds, not minutes.
  constexpr double kLaneMax = 65535.0;
  const float scale =
      stddev *
      static_cast<float>(1.0 / std::sqrt(4.0 * ((kLaneMax + 1) * (kLaneMax + 1) - 1) / 12.0));
  const float centre = static_cast<float>(2.0 * kLaneMax);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint64_t b = mix64(key + (first + i + 1) * kGolden);
    const uint32_t sum = static_cast<uint32_t>((b & 0xffff) + ((b >> 16) & 0xffff) +
                                               ((b >> 32) & 0xffff) + (b >> 48));
    out[i] = (static_cast<float>(sum) - centre) * scale;
  }
}

}  // namespace strata::model
