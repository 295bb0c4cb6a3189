// Reproducible pseudo-random weights for synthetic models. Every value is a pure function of
// (seed, tensor name, element index), so a file comes out the same whatever the chunking, the
// thread count or the other tensors in it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace strata::model {

/// The key of one tensor's value stream under `seed`.
uint64_t synth_stream_key(uint64_t seed, std::string_view tensor_name);

/// Writes values `first` .. `first + out.size() - 1` of stream `key`: close to normal, with mean
/// 0 and standard deviation `stddev`.
void synth_normal(uint64_t key, uint64_t first, float stddev, std::span<float> out);

}  // namespace strata::model
