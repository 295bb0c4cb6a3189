// Which kernel set computes: one build holds the kernels compiled for several instruction sets
// (scalar, avx2, avxvnni, avx512, avx512vnni), and the first call picks the best this CPU runs.
//
// STRATA_KERNELS=<name> in the environment asks for another set, e.g. a lower one to test it
// or to compare speeds. A name this build lacks, or a set the CPU cannot run, is not an error:
// strata prints one warning line on stderr and uses the best set it has.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "cpu/kernels/kernel_set.h"

namespace strata::cpu {

/// The set every CPU kernel call goes to. Picked once, on the first call (thread-safe).
const KernelSet& kernel_set();

/// A set this build holds.
struct KernelSetInfo {
  const KernelSet* set;
  bool runs_here;     ///< this CPU (and its OS) supports the set's instructions
  const char* needs;  ///< the instructions it needs, for messages
};

/// Every set this build holds, best first.
std::vector<KernelSetInfo> kernel_sets();

/// Switches every later kernel call to the named set (for tests and benchmarks; not while a
/// graph runs). kUnsupported, and no switch, when the build lacks it or the CPU cannot run it.
Status use_kernel_set(std::string_view name);

}  // namespace strata::cpu
