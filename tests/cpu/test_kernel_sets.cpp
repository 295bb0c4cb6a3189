// The kernel-set chooser: every set in the build is named, the active one runs here, and
// STRATA_KERNELS picks the set the rest of this test binary checks (scripts/test-kernel-sets.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "cpu/kernel_sets.h"

namespace strata::cpu {
namespace {

TEST(KernelSets, EachIsNamedOnceAndTheActiveOneRunsHere) {
  const std::vector<KernelSetInfo> sets = kernel_sets();
  ASSERT_FALSE(sets.empty());
  std::set<std::string> names;
  bool active_listed = false;
  for (const KernelSetInfo& k : sets) {
    EXPECT_TRUE(names.insert(k.set->name).second) << k.set->name;
    if (k.set == &kernel_set()) {
      active_listed = true;
      EXPECT_TRUE(k.runs_here) << k.set->name;
    }
  }
  EXPECT_TRUE(active_listed);
  EXPECT_TRUE(sets.back().runs_here) << "the last set is the fallback";
}

TEST(KernelSets, EnvironmentPicksTheSet) {
  const char* want = std::getenv("STRATA_KERNELS");
  if (want == nullptr || *want == '\0') {
    // Without a choice the best set the CPU runs is taken: the first that runs, best first.
    for (const KernelSetInfo& k : kernel_sets()) {
      if (k.runs_here) {
        EXPECT_EQ(k.set, &kernel_set());
        break;
      }
    }
    return;
  }
  for (const KernelSetInfo& k : kernel_sets()) {
    if (want != std::string(k.set->name)) continue;
    if (!k.runs_here) GTEST_SKIP() << "STRATA_KERNELS=" << want << ": this CPU lacks " << k.needs;
    EXPECT_EQ(k.set, &kernel_set());
    return;
  }
  GTEST_SKIP() << "STRATA_KERNELS=" << want << ": no such kernel set in this build";
}

TEST(KernelSets, SwitchingChecksTheName) {
  EXPECT_EQ(use_kernel_set("no-such-set").code(), ErrorCode::kUnsupported);
  const KernelSet& before = kernel_set();
  EXPECT_TRUE(use_kernel_set(before.name).ok());
  EXPECT_EQ(&kernel_set(), &before);
}

}  // namespace
}  // namespace strata::cpu
