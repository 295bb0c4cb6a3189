// Every architecture in ../shared/models runs from the command line; synth writes Qwen models
// that run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"

namespace {

using strata::testing::Outcome;
using strata::testing::run;
using ::testing::HasSubstr;

std::string shared_model(const std::string& name) {
  return std::string(STRATA_SHARED_DIR) + "/models/" + name;
}

TEST(ArchCli, EveryArchitectureGeneratesText) {
  for (const char* name :
       {"arch-qwen2.gguf", "arch-qwen3.gguf", "arch-phi3.gguf", "arch-gemma2.gguf",
        "arch-gemma3.gguf", "arch-llama-moe.gguf", "arch-llama3-rope.gguf"}) {
    const std::string path = shared_model(name);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
    const Outcome o = run("run -m " + path + " -p 'Once upon a time' -n 8 --temp 0 -t 2");
    EXPECT_EQ(o.exit_code, 0) << name << ": " << o.out;
    // Layer split over two partitions, paged.
    const Outcome split = run("run -m " + path +
                              " -p 'Once upon a time' -n 8 --temp 0 -t 2 --partitions 2 -ngl 2 "
                              "--paged");
    EXPECT_EQ(split.exit_code, 0) << name << ": " << split.out;
  }
}

TEST(ArchCli, SynthQwenModelsRun) {
  for (const char* arch : {"qwen2", "qwen3"}) {
    const std::string out = std::string(STRATA_TEST_TMPDIR) + "/synth-" + arch + ".gguf";
    const Outcome w =
        run("synth --preset tiny --arch " + std::string(arch) + " --type q8_0 -o " + out);
    ASSERT_EQ(w.exit_code, 0) << w.out;
    const Outcome r = run("run -m " + out + " -p 'Hello' -n 4 --temp 0");
    EXPECT_EQ(r.exit_code, 0) << arch << ": " << r.out;
    std::filesystem::remove(out);
  }
  const Outcome bad = run("synth --preset tiny --arch mamba --type f16 -o /tmp/never.gguf");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("--arch mamba is not one of llama, qwen2, qwen3"));
}

}  // namespace
