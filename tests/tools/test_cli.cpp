// Runs the `strata` binary as a user would and checks output, messages and exit codes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "cli_runner.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using strata::testing::have_stories;
using strata::testing::kStories;
using strata::testing::Outcome;
using strata::testing::run;

TEST(Cli, RunGeneratesGreedyTextAndReportsSpeed) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("run -m " + kStories + " -p 'Once upon a time' -n 24 --temp 0 -t 2");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, ::testing::HasSubstr("Once upon a time, there was a little girl named Lily."));
  EXPECT_THAT(o.out, ::testing::HasSubstr("tokens/s"));
}

TEST(Cli, UnknownFlagIsAUsageError) {
  const Outcome o = run("run --bogus 3");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.out, ::testing::HasSubstr("unknown flag '--bogus'"));
}

TEST(Cli, BadFlagValueIsAUsageError) {
  EXPECT_THAT(run("run -m x.gguf -t lots").out,
              ::testing::HasSubstr("invalid value 'lots' for -t"));
  EXPECT_EQ(run("run -m x.gguf -n").exit_code, 2);
  EXPECT_EQ(run("run -m x.gguf --top-p 2").exit_code, 2);
}

TEST(Cli, MissingModelSaysHowToPassOne) {
  const Outcome o = run("run -p hi");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.out, ::testing::HasSubstr("-m FILE.gguf"));
}

TEST(Cli, MissingFileIsAClearError) {
  const Outcome o = run("run -m /nonexistent/model.gguf -p hi");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, ::testing::HasSubstr("/nonexistent/model.gguf"));
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

TEST(Cli, PromptLongerThanContextIsAClearError) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o =
      run("run -m " + kStories + " -c 8 -p 'Once upon a time there was a big dog' -n 4");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, ::testing::HasSubstr("context"));
}

TEST(Cli, CorruptFileIsAClearError) {
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/corrupt.gguf";
  std::ofstream(path, std::ios::binary) << "GGUF\x03\x00\x00\x00garbage";
  const Outcome o = run("run -m " + path + " -p hi");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, ::testing::HasSubstr("gguf"));
}

TEST(Cli, InspectPrintsMetadataAndTensors) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("inspect " + kStories);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, ::testing::HasSubstr("general.architecture"));
  EXPECT_THAT(o.out, ::testing::HasSubstr("token_embd.weight"));
  EXPECT_THAT(o.out, ::testing::HasSubstr("blk.4.ffn_down.weight"));
}

TEST(Cli, DeviceOutOfBudgetNamesTheDeviceAndTheNeed) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("run -m " + kStories + " -p hi --partitions 2 --device-mem 256K -ngl 99");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.out, ::testing::HasSubstr("part:0 needs 532 KiB for 3 layers"));
  EXPECT_THAT(o.out, ::testing::HasSubstr("256 KiB budget"));
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

TEST(Cli, RunAcrossPartitionsGivesTheSameText) {
  if (!have_stories()) GTEST_SKIP();
  const std::string base = "run -m " + kStories + " -p 'Once upon a time' -n 24 --temp 0";
  const Outcome plain = run(base);
  const Outcome split = run(base + " --partitions 2 -ngl 99 -ts 3,1");
  ASSERT_EQ(split.exit_code, 0) << split.out;
  EXPECT_EQ(split.out.substr(0, split.out.find('\n')), plain.out.substr(0, plain.out.find('\n')));
}

TEST(Cli, PagedRunGivesTheSameTextOnEveryLayout) {
  if (!have_stories()) GTEST_SKIP();
  const std::string base = "run -m " + kStories + " -p 'Once upon a time' -n 24 --temp 0";
  const Outcome plain = run(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  for (const char* layout :
       {"", " --partitions 2 -ngl 99 -ts 3,1", " --partitions 3 -ngl 2 -nkvo"}) {
    const Outcome paged = run(base + " --paged" + layout);
    ASSERT_EQ(paged.exit_code, 0) << layout << paged.out;
    EXPECT_EQ(paged.out.substr(0, paged.out.find('\n')), plain.out.substr(0, plain.out.find('\n')))
        << layout;
  }
}

// A KV cache larger than the devices' budget: the one-line out-of-memory error without
// paging; with a quarter of it resident the same run works and writes the same text.
TEST(Cli, KvPagingRunsAContextWhoseCacheDoesNotFitTheDevices) {
  if (!have_stories()) GTEST_SKIP();
  const std::string base =
      "run -m " + kStories + " -p 'Once upon a time' -n 30 --temp 0 -c 4096 -fa -ub 32";
  const std::string devices = " --partitions 2 -ngl 99 --device-mem 1800K";
  const Outcome plain = run(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  const Outcome full = run(base + devices);
  EXPECT_EQ(full.exit_code, 1) << full.out;
  EXPECT_THAT(full.out, ::testing::HasSubstr("kv cache: part:0 needs"));
  EXPECT_EQ(std::count(full.out.begin(), full.out.end(), '\n'), 1) << full.out;
  const std::string home = std::string(STRATA_TEST_TMPDIR) + "/cli_kv_home.bin";
  for (const std::string& paging :
       {std::string(" --kv-resident 25%"), " --kv-resident 25% --kv-home " + home}) {
    const Outcome paged = run(base + devices + paging + " -v");
    ASSERT_EQ(paged.exit_code, 0) << paging << paged.out;
    EXPECT_EQ(paged.out.substr(0, paged.out.find('\n')), plain.out.substr(0, plain.out.find('\n')));
    EXPECT_THAT(paged.out, ::testing::HasSubstr("kv_bytes_in "));
  }
  EXPECT_FALSE(std::filesystem::exists(home));
}

// A model larger than the memory budget: the one-line out-of-memory error without streaming;
// with its weights streamed from the file the same run writes the same text, banded or
// token-major, and -v reports the weight bytes read.
TEST(Cli, StreamedWeightsGiveThePlainText) {
  if (!have_stories()) GTEST_SKIP();
  const std::string base =
      "run -m " + kStories + " -p 'Once upon a time there was' -n 16 --temp 0 -c 128 -ub 4";
  const Outcome plain = run(base);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  const std::string first_line = plain.out.substr(0, plain.out.find('\n'));
  const Outcome full = run(base + " --partitions 1 -ngl 99 --device-mem 900K");
  EXPECT_EQ(full.exit_code, 1) << full.out;
  EXPECT_EQ(std::count(full.out.begin(), full.out.end(), '\n'), 1) << full.out;
  for (const char* streaming :
       {" --mem-budget 900K", " --mem-budget 900K --prefill token",
        " --partitions 1 -ngl 99 --device-mem 900K --stream-weights",
        " --partitions 2 -ngl 99 --stream-slots 2", " --stream-slots 3 --mem-budget 4M",
        " --partitions 2 -ngl 99 -sm tensor --stream-slots 2"}) {
    const Outcome streamed = run(base + streaming + " -v");
    ASSERT_EQ(streamed.exit_code, 0) << streaming << streamed.out;
    // -v may list the devices' memory first.
    EXPECT_THAT(streamed.out, ::testing::HasSubstr(first_line + "\n")) << streaming;
    EXPECT_THAT(streamed.out, ::testing::HasSubstr("weight_bytes_read ")) << streaming;
  }
}

TEST(Cli, StreamingFlagsThatDoNotGoTogetherAreOneLine) {
  if (!have_stories()) GTEST_SKIP();
  const std::string base = "run -m " + kStories + " -p hi -n 2";
  for (const char* bad :
       {" --mem-budget 1M --partitions 2", " --mem-budget 0",
        " --partitions 1 -ngl 99 --stream-slots 2 --no-kv-offload --prefill banded",
        " --prefill sideways", " --stream-slots 1 --mem-budget 1M"}) {
    const Outcome o = run(base + bad);
    EXPECT_NE(o.exit_code, 0) << bad;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << bad << o.out;
  }
}

// A model file cut short: refused at load under --mem-budget, with one line and exit code 1.
TEST(Cli, TruncatedModelUnderAMemoryBudgetIsOneLine) {
  if (!have_stories()) GTEST_SKIP();
  const std::string copy = std::string(STRATA_TEST_TMPDIR) + "/cli_truncated.gguf";
  std::filesystem::copy_file(kStories, copy, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(copy, std::filesystem::file_size(copy) * 3 / 4);
  const Outcome o = run("run -m " + copy + " -p hi -n 2 --mem-budget 900K");
  std::filesystem::remove(copy);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

TEST(Cli, KvHomeThatCannotBeCreatedIsOneLine) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o =
      run("run -m " + kStories + " -p hi -n 2 --kv-resident 50% --kv-home /nonexistent-dir/kv.bin");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, ::testing::HasSubstr("kv home /nonexistent-dir/kv.bin: cannot create"));
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
  const Outcome alone = run("run -m " + kStories + " -p hi -n 2 --kv-home /tmp/kv.bin");
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_THAT(alone.out, ::testing::HasSubstr("--kv-home needs --kv-resident"));
}

// A home on a file system too small for it fails before anything runs (where this test may
// mount a tiny tmpfs; elsewhere it is skipped).
TEST(Cli, KvHomeOnAFullFileSystemIsOneLine) {
  if (!have_stories()) GTEST_SKIP();
  const std::string dir = std::string(STRATA_TEST_TMPDIR) + "/tiny_tmpfs";
  std::filesystem::create_directories(dir);
  if (std::system(("mount -t tmpfs -o size=64k tmpfs " + dir + " 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here";
  const Outcome o = run("run -m " + kStories + " -p hi -n 2 -c 4096 --kv-resident 25% --kv-home " +
                        dir + "/kv.bin");
  (void)std::system(("umount " + dir).c_str());
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, ::testing::HasSubstr("cannot reserve"));
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

TEST(Cli, DevicesListsTheHostAndPartitions) {
  const Outcome o = run("devices --partitions 2 --device-mem 512M");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, ::testing::HasSubstr("part:1"));
  EXPECT_THAT(o.out, ::testing::HasSubstr("512"));
}

TEST(Cli, BenchAcceptsLayoutFlags) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("bench -m " + kStories + " -p 16 -n 4 -r 1 --partitions 2 -ngl 99");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, ::testing::HasSubstr(
                         "layout: cpu: input; part:0: layers 0-2; part:1: layers 3-4, output"));
}

TEST(Cli, AFullContextStopsGenerationWithANote) {
  if (!have_stories()) GTEST_SKIP();
  const Outcome o = run("run -m " + kStories + " -p 'Once upon a time' -n 50 -c 16 --temp 0");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, ::testing::HasSubstr("the context of 16 tokens is full"));
}

TEST(Cli, UnknownCommandIsAUsageError) {
  EXPECT_EQ(run("frobnicate").exit_code, 2);
}

}  // namespace
