// `strata perplexity` run as a user would: running estimates and the final one on a text file;
// too little text and bad flags are clear one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "cli_runner.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

using strata::testing::have_stories;
using strata::testing::kStories;
using strata::testing::Outcome;
using strata::testing::run;

using ::testing::HasSubstr;

size_t lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// `n` short stories cycling through a few names and things, written to a file in the test
// directory; returns its path.
std::string write_stories(const std::string& name, int n) {
  const std::vector<std::string> names = {"Lily", "Tom", "Sue", "Ben", "Mia"};
  const std::vector<std::string> things = {"ball", "dog", "kite", "cat", "toy", "bird"};
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/perplexity_cli_" + name + ".txt";
  std::ofstream out(path);
  for (int i = 0; i < n; ++i) {
    const std::string& who = names[static_cast<size_t>(i) % names.size()];
    const std::string& what = things[static_cast<size_t>(i * 7 + 3) % things.size()];
    out << "Once upon a time, there was a little girl named " << who << ". She had a big " << what
        << ". One day, " << who << " went to the park with her " << what
        << ". They played all day and had a lot of fun. " << who << " was very happy. The end.\n";
  }
  return path;
}

TEST(PerplexityCli, PrintsRunningAndFinalEstimates) {
  if (!have_stories()) GTEST_SKIP();
  const std::string text = write_stories("long", 40);
  const Outcome o = run("perplexity -m " + kStories + " -f " + text + " -c 128 -t 2");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("[1]"));
  EXPECT_THAT(o.out, HasSubstr("[2]"));
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(o.out, m, std::regex(R"(Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+))")))
      << o.out;
  EXPECT_GT(std::stod(m[1]), 1.0);
  EXPECT_LT(std::stod(m[1]), 512.0);
  EXPECT_GT(std::stod(m[2]), 0.0);
}

// The final estimate is the same through the paged path and across partitions.
TEST(PerplexityCli, PagedAndLaidOutRunsPrintTheSameEstimate) {
  if (!have_stories()) GTEST_SKIP();
  const std::string text = write_stories("paged", 40);
  const std::string base = "perplexity -m " + kStories + " -f " + text + " -c 128 -t 2";
  auto estimate = [](const Outcome& o) {
    const size_t at = o.out.find("Final estimate");
    return at == std::string::npos ? std::string() : o.out.substr(at);
  };
  const Outcome plain = run(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_FALSE(estimate(plain).empty());
  for (const char* extra :
       {" --paged", " --paged --partitions 2 -ngl 99", " --partitions 2 -ngl 3"}) {
    const Outcome o = run(base + extra);
    ASSERT_EQ(o.exit_code, 0) << extra << o.out;
    EXPECT_EQ(estimate(o), estimate(plain)) << extra;
  }
}

TEST(PerplexityCli, TooShortTextSaysHowManyTokensAreNeeded) {
  if (!have_stories()) GTEST_SKIP();
  const std::string text = write_stories("short", 2);
  const Outcome o = run("perplexity -m " + kStories + " -f " + text + " -c 128");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("need at least 256 tokens"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
}

TEST(PerplexityCli, BadUsageIsOneLineAndExit2) {
  const std::string m = " -m " + kStories;
  for (const std::string& args : std::vector<std::string>{
           "perplexity -f x.txt", "perplexity" + m, "perplexity" + m + " -f x.txt -c 2",
           "perplexity" + m + " -f x.txt -b 0", "perplexity" + m + " -f x.txt -t many"}) {
    const Outcome o = run(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out;
    EXPECT_EQ(lines(o.out), 1u) << args << "\n" << o.out;
  }
}

TEST(PerplexityCli, MissingTextFileIsAClearError) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("perplexity -m " + kStories + " -f /nonexistent/text.txt");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, HasSubstr("/nonexistent/text.txt"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
}

}  // namespace
