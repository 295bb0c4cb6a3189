// `strata synth` run as a user would: the file it writes has the shape and types asked for (as
// `strata inspect` shows them) and runs; bad usage exits 2 with one clear line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "cli_runner.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "core/types.h"

namespace {

using strata::testing::have_stories;
using strata::testing::kStories;
using strata::testing::Outcome;
using strata::testing::run;

using ::testing::HasSubstr;

std::string tmp_path(const std::string& name) {
  return std::string(STRATA_TEST_TMPDIR) + "/synth_cli_" + name + ".gguf";
}

// The line of `text` that mentions `key` followed by a space (a tensor or metadata row of
// `strata inspect`), or "" when there is none.
std::string line_of(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" " + key + " ") != std::string::npos) return line;
  }
  return "";
}

size_t lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(SynthCli, WritesTheShapeAndTypeAskedFor) {
  const std::string path = tmp_path("tiny_q8_0");
  const Outcome synth = run("synth --preset tiny --type q8_0 --n-layer 3 --seed 5 -o " + path);
  ASSERT_EQ(synth.exit_code, 0) << synth.out;
  EXPECT_EQ(lines(synth.out), 1u) << synth.out;
  EXPECT_THAT(synth.out, HasSubstr("parameters"));
  EXPECT_THAT(synth.out, HasSubstr(path));

  const Outcome inspect = run("inspect " + path);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.out;
  EXPECT_THAT(line_of(inspect.out, "general.architecture"), HasSubstr("llama"));
  EXPECT_THAT(line_of(inspect.out, "llama.block_count"), HasSubstr("3"));
  EXPECT_THAT(line_of(inspect.out, "llama.embedding_length"), HasSubstr("64"));
  EXPECT_THAT(line_of(inspect.out, "general.file_type"), HasSubstr("7"));
  const std::string down = line_of(inspect.out, "blk.2.ffn_down.weight");
  EXPECT_THAT(down, HasSubstr("q8_0"));
  EXPECT_THAT(down, HasSubstr("[128, 64]"));
  EXPECT_THAT(line_of(inspect.out, "blk.2.attn_k.weight"), HasSubstr("[64, 32]"));
  EXPECT_THAT(line_of(inspect.out, "blk.0.attn_norm.weight"), HasSubstr("f32"));
  EXPECT_THAT(line_of(inspect.out, "token_embd.weight"), HasSubstr("[64, 512]"));
  EXPECT_EQ(line_of(inspect.out, "blk.3.ffn_down.weight"), "");
}

TEST(SynthCli, ShapeFlagsOverrideThePreset) {
  const std::string path = tmp_path("override");
  const Outcome synth =
      run("synth --preset tiny --type f16 --n-embd 128 --n-head 8 --n-head-kv 8 "
          "--n-ff 200 --n-vocab 300 --ctx 64 -o " +
          path);
  ASSERT_EQ(synth.exit_code, 0) << synth.out;
  const Outcome inspect = run("inspect " + path);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.out;
  EXPECT_THAT(line_of(inspect.out, "blk.1.attn_v.weight"), HasSubstr("[128, 128]"));
  EXPECT_THAT(line_of(inspect.out, "blk.1.ffn_up.weight"), HasSubstr("[128, 200]"));
  EXPECT_THAT(line_of(inspect.out, "output.weight"), HasSubstr("[128, 300]"));
  EXPECT_THAT(line_of(inspect.out, "llama.context_length"), HasSubstr("64"));
  EXPECT_THAT(line_of(inspect.out, "llama.rope.dimension_count"), HasSubstr("16"));
}

TEST(SynthCli, SynthesizedModelRuns) {
  const std::string path = tmp_path("runs");
  ASSERT_EQ(run("synth --preset tiny --type q4_0 -o " + path).exit_code, 0);
  const Outcome o = run("run -m " + path + " -p 'hello world' -n 8 --temp 0 -t 2");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("tokens/s"));
}

TEST(SynthCli, BadUsageExitsTwoWithOneLine) {
  const std::string path = tmp_path("bad");
  const std::pair<std::string, std::string> cases[] = {
      {"synth --preset gpt-9 --type q8_0 -o " + path, "unknown preset 'gpt-9'"},
      {"synth --preset tiny --type q9_0 -o " + path, "unknown type 'q9_0'"},
      {"synth --type q8_0 -o " + path, "--preset"},
      {"synth --preset tiny -o " + path, "--type"},
      {"synth --preset tiny --type q8_0", "-o FILE.gguf"},
      {"synth --preset tiny --type q8_0 --n-layer 0 -o " + path, "--n-layer must be positive"},
      {"synth --preset tiny --type q8_0 --n-head 5 -o " + path, "not a multiple"},
      {"synth --preset tiny --type q8_0 --bogus 1 -o " + path, "unknown flag '--bogus'"},
  };
  for (const auto& [args, message] : cases) {
    const Outcome o = run(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.out;
    EXPECT_THAT(o.out, HasSubstr(message)) << args;
    EXPECT_EQ(lines(o.out), 1u) << args << "\n" << o.out;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SynthCli, VocabularyFileSetsTheSizeAndConflictsAreUsageErrors) {
  const std::string vocab = std::string(STRATA_SHARED_DIR) + "/vocab/ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(vocab)) GTEST_SKIP() << vocab << " is missing";
  const std::string path = tmp_path("vocab");
  const Outcome ok = run("synth --preset tiny --type q8_0 --vocab " + vocab + " -o " + path);
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_THAT(line_of(run("inspect " + path).out, "token_embd.weight"), HasSubstr("[64, 32000]"));
  const Outcome bad =
      run("synth --preset tiny --type q8_0 --n-vocab 512 --vocab " + vocab + " -o " + path);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("disagrees"));
}

}  // namespace
