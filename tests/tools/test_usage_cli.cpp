// Flag parsing as a user meets it: help on stdout, --version, exit code 2 for every usage
// error, range-checked values, and warnings for requests that work but will disappoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>

#include "cli_runner.h"

namespace {

using strata::testing::have_stories;
using strata::testing::kStories;
using strata::testing::Outcome;
using strata::testing::run;
using strata::testing::run_with;
using ::testing::HasSubstr;
using ::testing::Not;

size_t lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Only what the command writes to stdout.
Outcome stdout_of(const std::string& args) {
  return run_with("", args, "2>/dev/null");
}

TEST(UsageCli, HelpGoesToStdoutForEveryCommand) {
  for (const std::string cmd :
       {"--help", "help", "-h", "run --help", "inspect --help", "synth --help", "devices --help",
        "bench --help", "perplexity --help"}) {
    const Outcome o = stdout_of(cmd);
    EXPECT_EQ(o.exit_code, 0) << cmd;
    EXPECT_THAT(o.out, HasSubstr("usage: strata")) << cmd;
  }
}

TEST(UsageCli, VersionIsPrinted) {
  const Outcome o = stdout_of("--version");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_THAT(o.out, ::testing::MatchesRegex("strata [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}

TEST(UsageCli, NoCommandIsAUsageErrorOnStderr) {
  EXPECT_EQ(stdout_of("").out, "");
  EXPECT_EQ(run("").exit_code, 2);
}

// Each is one line on stderr with exit code 2, before any model is read.
TEST(UsageCli, UsageErrorsExit2WithOneLine) {
  const std::string m = " -m /nonexistent.gguf -p hi";
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"run" + m + " --devices part:2147483647 -ngl 1",
       "partition index 2147483647 is out of range"},
      {"run" + m + " --devices part:99999999999 -ngl 1", "partition index 99999999999"},
      {"run" + m + " --partitions 2 -ngl 9 -ts inf,1", "-ts: bad proportion 'inf'"},
      {"run" + m + " --partitions 2 -ngl 9 -ts 3e38,3e38", "-ts: proportion '3e38' is above 1e6"},
      {"run" + m + " --partitions 2 -ngl 9 -ts 3,1,", "-ts: empty proportion at the end"},
      {"run" + m + " --partitions 2 -ngl 9 -ts 0,0", "are all zero"},
      {"run" + m + " -sm rows", "-sm must be none, layer or tensor, got 'rows'"},
      {"run" + m + " -sm tensor --partitions 2 -ngl 9 -ts 1,1,1",
       "-ts gives 3 proportions for 2 devices"},
      {"run" + m + " -sm tensor --partitions 2 -ngl 9 -ts 1,0",
       "every device needs a positive, finite proportion"},
      {"run" + m + " -sm tensor --partitions 2 -ngl 9 -ts -1,1", "-ts: bad proportion '-1'"},
      {"run" + m + " --device-mem 512M", "--device-mem needs --partitions"},
      {"bench -m /nonexistent.gguf --device-mem 512M", "--device-mem needs --partitions"},
      {"devices --device-mem 512M", "--device-mem needs --partitions"},
      {"run" + m + " --temp -1", "--temp must not be negative"},
      {"run" + m + " -t 1e9", "invalid value '1e9' for -t"},
      {"run" + m + " -c 99999999999999999999", "invalid value"},
      {"run" + m + " --top-p nan", "invalid value 'nan' for --top-p"},
      {"inspect --max-items -1 x.gguf", "--max-items must be in"},
  };
  for (const auto& c : cases) {
    const Outcome o = run(c.args);
    EXPECT_EQ(o.exit_code, 2) << c.args << "\n" << o.out;
    EXPECT_THAT(o.out, HasSubstr(c.message)) << c.args;
    EXPECT_EQ(lines(o.out), 1u) << c.args << "\n" << o.out;
  }
}

TEST(UsageCli, QuantizedCacheOnNarrowHeadsNamesTheCause) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("run -m " + kStories + " -p hi -n 2 -ctk q8_0");
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--cache-type-k q8_0 stores heads in blocks of 32 values, but "
                               "this model's heads have 8"));
}

TEST(UsageCli, PromptLongerThanTheContextIsNotEchoed) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o =
      run("run -m " + kStories + " -c 8 -p 'Once upon a time there was a big dog' -n 4");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, Not(HasSubstr("big dog\n")));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
}

// A FIFO nobody writes to would block an open() for good; the commands refuse it at once.
TEST(UsageCli, FifoAndDirectoryInputsAreRefused) {
  if (!have_stories()) GTEST_SKIP();
  const std::string fifo = std::string(STRATA_TEST_TMPDIR) + "/usage_cli_fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& args :
       {"run -m " + fifo + " -p hi", "inspect " + fifo, "perplexity -m " + kStories + " -f " + fifo,
        "perplexity -m " + kStories + " -f " + std::string(STRATA_TEST_TMPDIR)}) {
    const Outcome o = run_with("timeout 30", args, "");
    EXPECT_EQ(o.exit_code, 1) << args << "\n" << o.out;
    EXPECT_THAT(o.out, HasSubstr("not a regular file")) << args;
  }
  std::filesystem::remove(fifo);
}

TEST(UsageCli, MoreThreadsThanCoresWarns) {
  if (!have_stories()) GTEST_SKIP();
  const unsigned n = std::max(1u, std::thread::hardware_concurrency()) + 1;
  const Outcome o = run("run -m " + kStories + " -p hi -n 1 -t " + std::to_string(n));
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata run: warning: -t " + std::to_string(n) +
                               " is more threads than the"));
}

TEST(UsageCli, ContextAboveTrainingWarns) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("run -m " + kStories + " -p hi -n 1 -t 1 -c 4096");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("strata run: warning: -c 4096 is above the model's training "
                               "context of"));
  const Outcome within = run("run -m " + kStories + " -p hi -n 1 -t 1 -c 64");
  EXPECT_THAT(within.out, Not(HasSubstr("warning")));
}

}  // namespace
