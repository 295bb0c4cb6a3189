// -sm tensor from the command line: same text as the plain run, the debug and memory reports,
// and the one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace strata::testing {
namespace {

using ::testing::HasSubstr;

const std::string kSynth = std::string(STRATA_SHARED_DIR) + "/models/synth256-q8_0.gguf";
const std::string kGreedy = " -p 'Once upon a time' -n 24 --temp 0";

std::string text_of(const std::string& args) {
  return run_script(std::string(STRATA_BIN) + " " + args + " 2>/dev/null").out;
}

TEST(TensorSplitCli, RunGivesThePlainText) {
  if (!have_stories()) GTEST_SKIP();
  const std::string plain = text_of("run -m " + kStories + kGreedy);
  ASSERT_THAT(plain, HasSubstr("Once upon a time"));
  for (const std::string& layout : std::vector<std::string>{
           " --partitions 2 -sm tensor -ngl 99", " --partitions 3 -sm tensor -ngl 99 -ts 2,1,1",
           " --partitions 2 -sm tensor -ngl 2 --no-kv-offload",
           " --partitions 2 -sm tensor --paged",
           // each member pages its own KV heads, home in memory or in a file
           " --partitions 2 -sm tensor -ngl 99 --kv-resident 25%",
           " --partitions 3 -sm tensor -ngl 99 --kv-resident 50% --kv-home " +
               std::string(STRATA_TEST_TMPDIR) + "/kv_home_tensor_cli.bin"}) {
    EXPECT_EQ(text_of("run -m " + kStories + kGreedy + layout), plain) << layout;
  }
}

TEST(TensorSplitCli, DebugPrintsSplitStatesAndAllReduces) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o =
      run_with("STRATA_SCHED_DEBUG=1",
               "run -m " + kStories + " -p hi -n 2 --partitions 2 -sm tensor -ngl 99", "");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("meta: blk.0.attn_q.weight split on dim 1: part:0 [0,32) "
                               "part:1 [32,64)"));
  EXPECT_THAT(o.out, HasSubstr("meta: blk.0.attn_norm.weight mirrored"));
  EXPECT_THAT(o.out, HasSubstr("meta: all-reduce blk.0.attn_out"));
  EXPECT_THAT(o.out, HasSubstr("meta: all-reduce blk.0.ffn_out"));
  EXPECT_THAT(o.out, HasSubstr("split 1 on tensor(part:0,part:1)"));
}

TEST(TensorSplitCli, VerboseReportsEachDevicesShare) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o =
      run("run -m " + kStories + " -p hi -n 2 --partitions 2 -sm tensor -ngl 99 -ts 3,1 -v");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("part:0   shard of tensor(part:0,part:1): weights"));
  EXPECT_THAT(o.out, HasSubstr("part:1   shard of tensor(part:0,part:1): weights"));
}

TEST(TensorSplitCli, OneDeviceRunsAsNoneAndSaysSo) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("run -m " + kStories + kGreedy + " --partitions 1 -sm tensor -ngl 99");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata: -sm tensor on a single device runs as -sm none"));
}

TEST(TensorSplitCli, ProportionsThatLeaveADeviceNoHeadAreAUsageError) {
  if (!std::filesystem::exists(kSynth)) GTEST_SKIP();
  // Two KV heads: 10:1 leaves the second device under half a head.
  const Outcome o = run("run -m " + kSynth +
                        " -p hi -n 2 --partitions 2 -sm tensor -ngl 99 "
                        "-ts 10,1");
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_THAT(o.out, HasSubstr("-ts leaves a device without a part of 'blk.0.attn_q.weight'"));
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

TEST(TensorSplitCli, BenchAndPerplexityRunSplit) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome b =
      run("bench -m " + kStories + " -p 32 -n 8 -r 1 --partitions 2 -sm tensor -ngl 99");
  EXPECT_EQ(b.exit_code, 0) << b.out;
  EXPECT_THAT(b.out, HasSubstr("tg8"));
  const std::string text = std::string(STRATA_SHARED_DIR) + "/README.md";
  const Outcome plain = run("perplexity -m " + kStories + " -f " + text + " -c 64");
  const Outcome split =
      run("perplexity -m " + kStories + " -f " + text + " -c 64 --partitions 2 -sm tensor -ngl 99");
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(split.exit_code, 0) << split.out;
  auto final_ppl = [](const std::string& out) {
    const size_t at = out.rfind("PPL = ");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + 6));
  };
  const double a = final_ppl(plain.out), c = final_ppl(split.out);
  ASSERT_GT(a, 0) << plain.out;
  EXPECT_LT(std::abs(c - a) / a, 1e-3) << a << " vs " << c;
}

}  // namespace
}  // namespace strata::testing
