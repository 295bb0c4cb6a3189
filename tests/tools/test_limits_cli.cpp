// Requests the machine cannot serve fail at once with one line and exit code 1: sizes are
// checked before anything large is allocated or written, and refused threads are errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"

namespace {

using strata::testing::have_stories;
using strata::testing::kStories;
using strata::testing::Outcome;
using strata::testing::run;
using strata::testing::run_with;
using ::testing::HasSubstr;

size_t lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(LimitsCli, HugeContextFailsBeforeAllocating) {
  if (!have_stories()) GTEST_SKIP();
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = run("run -m " + kStories + " -p hi -n 4 -c 10000000");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("a context of 10000000 tokens needs"));
  EXPECT_THAT(o.out, HasSubstr("(lower -c)"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_LT(seconds_since(t0), 10.0);
}

TEST(LimitsCli, PerplexityChecksTheTextBeforeTheSession) {
  if (!have_stories()) GTEST_SKIP();
  const std::string text = std::string(STRATA_TEST_TMPDIR) + "/limits_cli_text.txt";
  std::ofstream(text) << "Once upon a time, there was a little girl named Lily.\n";
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = run("perplexity -m " + kStories + " -f " + text + " -c 2000000");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("the text is too short"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_LT(seconds_since(t0), 10.0);
}

TEST(LimitsCli, SynthRefusesAFileLargerThanTheDisk) {
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/limits_cli_huge.gguf";
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o =
      run("synth --preset tiny --type f16 --n-embd 1048576 --n-head 8 "
          "--n-head-kv 8 --n-vocab 16777216 -o " +
          path);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("free"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
  EXPECT_LT(seconds_since(t0), 5.0);  // before building the 16M-token vocabulary
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(LimitsCli, InterruptedSynthLeavesNoFile) {
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/limits_cli_interrupted.gguf";
  std::filesystem::remove(path);
  // Big enough to take well over the second before the interrupt.
  const Outcome o = strata::testing::run_script(
      std::string(STRATA_BIN) + " synth --preset tiny --type q4_k_m --n-embd 4096 --n-ff 16384 " +
      "--n-layer 32 -t 1 -o " + path + " 2>&1 & pid=$!; sleep 1; kill -INT $pid; wait $pid");
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(LimitsCli, SynthWritesTheFileWhole) {
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/limits_cli_tiny.gguf";
  std::filesystem::remove(path);
  const Outcome o = run("synth --preset tiny --type f16 -o " + path);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

// 64 threads' stacks do not fit 200 MB of address space: an error, not std::terminate.
TEST(LimitsCli, RefusedThreadsAreAnError) {
  if (!have_stories()) GTEST_SKIP();
  for (const std::string& cmd :
       {"run -m " + kStories + " -p hi -n 4 -t 64",
        "run -m " + kStories + " -p hi -n 4 -t 64 --partitions 2 -ngl 9"}) {
    const Outcome o = run_with("ulimit -v 200000;", cmd, "");
    EXPECT_EQ(o.exit_code, 1) << cmd << "\n" << o.out;
    EXPECT_THAT(o.out, HasSubstr("thread")) << cmd;
    EXPECT_THAT(o.out, ::testing::Not(HasSubstr("terminate"))) << cmd;
  }
}

}  // namespace
