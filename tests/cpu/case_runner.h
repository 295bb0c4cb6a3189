// Runs one conformance case: builds its graph, places and fills it, computes it with the
// reference or the CPU kernels, and reads the outputs back.
#pragma once

#include <cstdint>
#include <vector>

#include "conformance_cases.h"

namespace strata::cpu::test {

struct CaseOutputs {
  std::vector<std::vector<float>> values;
  std::vector<std::vector<uint8_t>> bytes;
};

/// The reference when n_threads == 0, else the CPU kernels on a pool of n_threads (pools are
/// kept per size for the whole test run). Leafs are filled from `seed`.
CaseOutputs run_case(const Case& c, int n_threads, uint64_t seed);

}  // namespace strata::cpu::test
