// `strata bench` run as a user would: the table and the JSON carry positive rates, the probes'
// numbers and both roofline shares; bad flags exit 2 with one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "cli_runner.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

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

// The number after `"key": ` (the first occurrence at or after `from`), or -1.
double json_value(const std::string& json, const std::string& key, size_t from = 0) {
  const size_t at = json.find("\"" + key + "\": ", from);
  if (at == std::string::npos) return -1.0;
  return std::stod(json.substr(at + key.size() + 4));
}

TEST(BenchCli, TablePrintsBothTestsWithPositiveRates) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("bench -m " + kStories + " -p 32 -n 8 -r 2 -t 2");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("| model"));
  EXPECT_THAT(o.out, HasSubstr("t/s"));
  // A row: file, size, params, type, threads, test, "mean ± sd", share.
  const std::regex row(
      R"(\| stories260K\.gguf +\| +[0-9.]+ MiB \| +[0-9.]+ K \| F32 +\| +2 \| +(pp32|tg8) \| +)"
      R"(([0-9.]+) ± [0-9.]+ \| +[0-9.]+% (compute|memory) \|)");
  int rows = 0;
  for (std::sregex_iterator it(o.out.begin(), o.out.end(), row), end; it != end; ++it) {
    EXPECT_GT(std::stod((*it)[2]), 0.0) << it->str();
    EXPECT_EQ((*it)[1] == "pp32", (*it)[3] == "compute") << it->str();
    ++rows;
  }
  EXPECT_EQ(rows, 2) << o.out;
  EXPECT_THAT(o.out, HasSubstr("memory read bandwidth: "));
  EXPECT_THAT(o.out, HasSubstr("compute peak: "));
  EXPECT_THAT(o.out, HasSubstr("GFLOP/s f32 fma"));
}

// --profile: after the table, one profile per test, its lines naming the model's nodes.
TEST(BenchCli, ProfilePrintsEachTestsNodes) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("bench -m " + kStories + " -p 16 -n 4 -r 1 -t 2 --profile");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const size_t pp = o.out.find("profile of pp16");
  const size_t tg = o.out.find("profile of tg4");
  ASSERT_NE(pp, std::string::npos) << o.out;
  ASSERT_NE(tg, std::string::npos) << o.out;
  EXPECT_GT(pp, o.out.find("| model")) << o.out;
  EXPECT_THAT(o.out.substr(tg), HasSubstr("ms/token"));
  // Some layer's matmul, folded across layers: which ones make the printed head depends on
  // the timings, and on a loaded machine preemption can push any of them into "the rest".
  EXPECT_THAT(o.out.substr(tg), testing::ContainsRegex("mul_mat blk\\.\\*\\.[a-z_]+ f(32|16)"));
  EXPECT_THAT(o.out.substr(tg), HasSubstr("total"));
  // With --json the profile goes to stderr: stdout stays one object.
  const std::string args = "bench -m " + kStories + " -p 0 -n 4 -r 1 -t 2 --json --profile";
  const Outcome both = run(args);
  ASSERT_EQ(both.exit_code, 0) << both.out;
  EXPECT_THAT(both.out, HasSubstr("profile of tg4"));
  const Outcome json = run_with("", args, "2>/dev/null");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  EXPECT_THAT(json.out, Not(HasSubstr("profile of")));
  EXPECT_EQ(json.out.find('{'), 0u) << json.out;
}

TEST(BenchCli, JsonHasEveryFieldAndPositiveRates) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("bench -m " + kStories + " -p 32 -n 8 -r 2 -t 2 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  ASSERT_FALSE(o.out.empty());
  EXPECT_EQ(o.out.front(), '{') << o.out;
  EXPECT_EQ(o.out.substr(o.out.size() - 2), "}\n") << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '{'),
            std::count(o.out.begin(), o.out.end(), '}'));
  EXPECT_THAT(o.out, HasSubstr("\"model_file\": \"stories260K.gguf\""));
  EXPECT_THAT(o.out, HasSubstr("\"model_type\": \"F32\""));
  EXPECT_THAT(o.out, HasSubstr("\"compute_kind\": \"f32 fma\""));
  EXPECT_EQ(json_value(o.out, "n_threads"), 2.0);
  EXPECT_EQ(json_value(o.out, "repetitions"), 2.0);
  for (const char* key : {"model_size", "model_n_params", "mem_bandwidth_bytes_per_s",
                          "compute_peak_ops_per_s", "pp_compute_share", "tg_bandwidth_share"}) {
    EXPECT_GT(json_value(o.out, key), 0.0) << key << "\n" << o.out;
  }
  const size_t pp = o.out.find("\"test\": \"pp32\"");
  const size_t tg = o.out.find("\"test\": \"tg8\"");
  ASSERT_NE(pp, std::string::npos) << o.out;
  ASSERT_NE(tg, std::string::npos) << o.out;
  EXPECT_GT(json_value(o.out, "avg_ts", pp), 0.0);
  EXPECT_GT(json_value(o.out, "avg_ts", tg), 0.0);
  EXPECT_GT(json_value(o.out, "compute_share", pp), 0.0);
  EXPECT_GT(json_value(o.out, "bytes_per_token", tg), 0.0);
  EXPECT_GT(json_value(o.out, "bandwidth_share", tg), 0.0);
}

TEST(BenchCli, JsonSaysWhetherTheRunWasPaged) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome plain = run("bench -m " + kStories + " -p 16 -n 4 -r 1 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_THAT(plain.out, HasSubstr("\"paged\": false"));
  const Outcome paged = run("bench -m " + kStories + " -p 16 -n 4 -r 1 --json --paged");
  ASSERT_EQ(paged.exit_code, 0) << paged.out;
  EXPECT_THAT(paged.out, Not(HasSubstr("\"paged\": false")));
  // Once at the top and once in each test row.
  size_t rows = 0;
  for (size_t at = paged.out.find("\"paged\": true"); at != std::string::npos;
       at = paged.out.find("\"paged\": true", at + 1))
    ++rows;
  EXPECT_EQ(rows, 3u) << paged.out;
}

TEST(BenchCli, ParallelSequencesCountEveryGeneratedToken) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("bench -m " + kStories + " -p 0 -n 8 -np 3 -d 40 -r 1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("\"test\": \"tg8 x3 @ d40\""));
  EXPECT_EQ(json_value(o.out, "n_parallel"), 3.0) << o.out;
  EXPECT_GT(json_value(o.out, "avg_ts"), 0.0) << o.out;
  const Outcome bad = run("bench -m " + kStories + " -np 0");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(lines(bad.out), 1u) << bad.out;
}

TEST(BenchCli, KvPagingFiguresArePerPromptAndPerToken) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o =
      run("bench -m " + kStories + " -p 64 -n 8 -r 1 -c 256 --kv-resident 25% --json");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("\"kv_resident\": \"25%\""));
  const size_t pp = o.out.find("\"test\": \"pp64\"");
  const size_t tg = o.out.find("\"test\": \"tg8\"");
  ASSERT_NE(pp, std::string::npos);
  ASSERT_NE(tg, std::string::npos);
  EXPECT_GT(json_value(o.out, "kv_bytes_in", pp), 0.0);
  EXPECT_GT(json_value(o.out, "kv_bytes_in", tg), 0.0);
  EXPECT_GT(json_value(o.out, "kv_bytes_out", tg), 0.0);
  EXPECT_GE(json_value(o.out, "stall_seconds", tg), 0.0);
  const Outcome table = run("bench -m " + kStories + " -p 64 -n 8 -r 1 -c 256 --kv-resident 25%");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_THAT(table.out, HasSubstr("kv paging (25% resident), tg8:"));
}

// Banded prefill reads the streamed weights about once per prompt, token-major once per
// micro-batch; a decode step reads them once.
TEST(BenchCli, WeightStreamingFiguresArePerPromptAndPerToken) {
  if (!have_stories()) GTEST_SKIP();
  const std::string base = "bench -m " + kStories +
                           " -p 64 -n 8 -r 1 -c 256 -ub 16 --partitions 1 -ngl 99 "
                           "--stream-slots 2 --json";
  double pp_bytes[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const Outcome o = run(base + (i == 0 ? "" : " --prefill token"));
    ASSERT_EQ(o.exit_code, 0) << o.out;
    EXPECT_THAT(o.out, HasSubstr(i == 0 ? "prefill banded" : "prefill token-major"));
    const size_t pp = o.out.find("\"test\": \"pp64\"");
    const size_t tg = o.out.find("\"test\": \"tg8\"");
    ASSERT_NE(pp, std::string::npos);
    ASSERT_NE(tg, std::string::npos);
    pp_bytes[i] = json_value(o.out, "weight_bytes_read", pp);
    EXPECT_GT(json_value(o.out, "weight_bytes_read", tg), 0.0);
    EXPECT_GE(json_value(o.out, "stall_seconds", tg), 0.0);
  }
  EXPECT_GT(pp_bytes[0], 0.0);
  // Four micro-batches: token-major reads every layer four times.
  EXPECT_GT(pp_bytes[1], 3.5 * pp_bytes[0]);
}

TEST(BenchCli, ZeroSkipsATest) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("bench -m " + kStories + " -p 0 -n 4 -r 1 -t 1");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("tg4"));
  EXPECT_THAT(o.out, ::testing::Not(HasSubstr("pp0")));
}

// -d starts every test with that many tokens in the cache; the KV read it adds shows in the
// tg bytes per token, and the context grows to hold it.
TEST(BenchCli, DepthStartsTestsFromAFilledCache) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome flat = run("bench -m " + kStories + " -p 0 -n 8 -r 1 -t 1 --json");
  const Outcome deep = run("bench -m " + kStories + " -p 16 -n 8 -d 200 -r 1 -t 1 --json");
  ASSERT_EQ(flat.exit_code, 0) << flat.out;
  ASSERT_EQ(deep.exit_code, 0) << deep.out;
  const size_t pp = deep.out.find("\"test\": \"pp16 @ d200\"");
  const size_t tg = deep.out.find("\"test\": \"tg8 @ d200\"");
  ASSERT_NE(pp, std::string::npos) << deep.out;
  ASSERT_NE(tg, std::string::npos) << deep.out;
  EXPECT_EQ(json_value(deep.out, "n_depth", tg), 200.0);
  EXPECT_GT(json_value(deep.out, "avg_ts", tg), 0.0);
  const size_t tg_flat = flat.out.find("\"test\": \"tg8\"");
  ASSERT_NE(tg_flat, std::string::npos) << flat.out;
  EXPECT_GT(json_value(deep.out, "bytes_per_token", tg),
            json_value(flat.out, "bytes_per_token", tg_flat));
}

TEST(BenchCli, BadFlagsAreUsageErrors) {
  const std::string m = " -m " + kStories;
  for (const std::string& args : std::vector<std::string>{
           "bench", "bench" + m + " -p -1", "bench" + m + " -n x", "bench" + m + " -r 0",
           "bench" + m + " -t -2", "bench" + m + " -ub 0", "bench" + m + " -p 0 -n 0",
           "bench" + m + " -p 64 -c 16", "bench" + m + " -p 8 -d 16 -c 16", "bench" + m + " -d -1",
           "bench" + m + " --bogus"}) {
    const Outcome o = run(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out;
    EXPECT_EQ(lines(o.out), 1u) << args << "\n" << o.out;
  }
}

TEST(BenchCli, MissingModelFailsWithOneLine) {
  const Outcome o = run("bench -m /nonexistent/model.gguf -p 8 -n 8");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, HasSubstr("/nonexistent/model.gguf"));
  EXPECT_EQ(lines(o.out), 1u) << o.out;
}

}  // namespace
