// Output that cannot be written is a failure: every command checks its writes to stdout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_runner.h"

namespace {

using strata::testing::have_stories;
using strata::testing::kStories;
using strata::testing::Outcome;
using strata::testing::run_with;
using ::testing::HasSubstr;

const std::string kFull = "cannot write to standard output: No space left on device";

// Stdout to /dev/full (every write fails with ENOSPC), stderr collected.
Outcome to_full(const std::string& args) {
  return run_with("", args, ">/dev/full");
}

TEST(OutputCli, RunToAFullDiskFails) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = to_full("run -m " + kStories + " -p 'Once upon a time' -n 8 --temp 0 -t 1");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata run: " + kFull));
}

TEST(OutputCli, RunToAClosedStdoutFails) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run_with("", "run -m " + kStories + " -p hi -n 4 -t 1", ">&-");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata run: cannot write to standard output: Bad file descriptor"));
}

TEST(OutputCli, InspectToAFullDiskFails) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = to_full("inspect " + kStories);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata inspect: " + kFull));
}

TEST(OutputCli, DevicesToAFullDiskFails) {
  const Outcome o = to_full("devices");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata devices: " + kFull));
}

TEST(OutputCli, BenchToAFullDiskFails) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = to_full("bench -m " + kStories + " -p 8 -n 2 -r 1 -t 1");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata bench: " + kFull));
}

TEST(OutputCli, SynthToAFullDiskFails) {
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/output_cli_synth.gguf";
  const Outcome o = to_full("synth --preset tiny --type f16 -o " + path);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata synth: " + kFull));
}

TEST(OutputCli, PerplexityToAFullDiskFails) {
  if (!have_stories()) GTEST_SKIP();
  const std::string text = std::string(STRATA_TEST_TMPDIR) + "/output_cli_text.txt";
  {
    std::ofstream out(text);
    for (int i = 0; i < 20; ++i) out << "Once upon a time, there was a little girl named Lily.\n";
  }
  const Outcome o = to_full("perplexity -m " + kStories + " -f " + text + " -c 32 -t 1");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata perplexity: " + kFull));
}

TEST(OutputCli, HelpToAFullDiskFails) {
  EXPECT_EQ(to_full("--help").exit_code, 1);
  EXPECT_EQ(to_full("run --help").exit_code, 1);
}

}  // namespace
