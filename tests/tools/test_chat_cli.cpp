// `strata run --chat` run as a user would: user turns piped on stdin, one reply per turn on
// stdout, template problems as one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "gguf/file.h"
#include "gguf/value.h"
#include "gguf/writer.h"

namespace {

using strata::testing::have_stories;
using strata::testing::kStories;
using strata::testing::Outcome;
using strata::testing::run;
using strata::testing::run_script;
using ::testing::HasSubstr;

const std::string kGemma =
    std::string(STRATA_SHARED_DIR) + "/chat-templates/google-gemma-2-2b-it.jinja";

std::string write_template(const std::string& name, const std::string& text) {
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Pipes `input` into `strata ARGS`; stdout only, or stdout and stderr with `with_stderr`.
Outcome chat(const std::string& input, const std::string& args, bool with_stderr = false) {
  return run_script("printf '" + input + "' | " + std::string(STRATA_BIN) + " " + args +
                    (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

size_t count_lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

bool one_line(const std::string& s) {
  return count_lines(s) == 1 && s.back() == '\n';
}

TEST(ChatCli, AnswersEveryLineUntilEof) {
  if (!have_stories()) GTEST_SKIP() << kStories << " not found";
  const std::string args =
      "run -m " + kStories + " --chat --chat-template " + kGemma + " -n 6 --temp 0 -c 512";
  const Outcome o = chat("Hello\\nHow are you?\\n\\nTell me a story\\n", args);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  // Three turns (the empty line is skipped), each reply ended by a newline of its own.
  EXPECT_GE(count_lines(o.out), 3u) << o.out;
  // Greedy sampling: the same conversation gives the same replies.
  EXPECT_EQ(chat("Hello\\nHow are you?\\n\\nTell me a story\\n", args).out, o.out);
}

// stories260K with a `tokenizer.chat_template` of its own.
std::string stories_with_template(const std::string& tmpl) {
  auto file = strata::gguf::File::open(kStories);
  EXPECT_TRUE(file.ok()) << file.status().message();
  strata::gguf::Writer w;
  for (const auto& kv : file->metadata()) EXPECT_TRUE(w.add_metadata(kv.key, kv.value).ok());
  EXPECT_TRUE(w.add_metadata("tokenizer.chat_template", strata::gguf::make_string(tmpl)).ok());
  for (const auto& t : file->tensors()) {
    EXPECT_TRUE(w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims)).ok());
  }
  const std::string path = std::string(STRATA_TEST_TMPDIR) + "/stories_chat_template.gguf";
  EXPECT_TRUE(w.begin(path).ok());
  for (const auto& t : file->tensors()) {
    EXPECT_TRUE(w.write_tensor_data(file->tensor_data(t), t.size).ok());
  }
  EXPECT_TRUE(w.finish().ok());
  return path;
}

TEST(ChatCli, UsesTheModelsOwnTemplate) {
  if (!have_stories()) GTEST_SKIP() << kStories << " not found";
  // A template that refuses every conversation shows that it is the one in use.
  const std::string model =
      stories_with_template("{{ raise_exception('the model template ran') }}");
  const Outcome o = chat("Hi\\n", "run -m " + model + " --chat", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("the model template ran"));
  // --chat-template takes precedence over it.
  const Outcome over =
      chat("Hi\\n", "run -m " + model + " --chat --chat-template " + kGemma + " -n 2 --temp 0");
  EXPECT_EQ(over.exit_code, 0) << over.out;
}

TEST(ChatCli, EmptyInputEndsAtOnce) {
  if (!have_stories()) GTEST_SKIP() << kStories << " not found";
  const Outcome o = run_script(std::string(STRATA_BIN) + " run -m " + kStories +
                               " --chat --chat-template " + kGemma + " </dev/null 2>/dev/null");
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out, "");
}

TEST(ChatCli, ModelWithoutTemplateFallsBackToChatML) {
  if (!have_stories()) GTEST_SKIP() << kStories << " not found";
  const Outcome o = chat("Hi\\n", "run -m " + kStories + " --chat -n 2 --temp 0 -c 256", true);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("warning: the model has no chat template; using ChatML"));
}

TEST(ChatCli, TemplateSyntaxErrorIsOneLine) {
  if (!have_stories()) GTEST_SKIP() << kStories << " not found";
  const std::string bad =
      write_template("bad_chat.jinja", "{% for m in messages %}\n{{ m.content }");
  const Outcome o = chat("Hi\\n", "run -m " + kStories + " --chat --chat-template " + bad, true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_TRUE(one_line(o.out)) << o.out;
  EXPECT_THAT(o.out, HasSubstr("chat template: syntax error at line 2"));
}

TEST(ChatCli, MissingTemplateFileIsOneLine) {
  const Outcome o = run("run -m " + kStories + " --chat --chat-template /nonexistent/t.jinja");
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_TRUE(one_line(o.out)) << o.out;
  EXPECT_THAT(o.out, HasSubstr("cannot read chat template /nonexistent/t.jinja"));
}

TEST(ChatCli, TemplateNeedsChat) {
  const Outcome o = run("run -m " + kStories + " --chat-template " + kGemma + " -p hi");
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--chat-template needs --chat"));
}

TEST(ChatCli, TemplateRefusalIsOneLine) {
  if (!have_stories()) GTEST_SKIP() << kStories << " not found";
  // Gemma's template refuses a system message, which -p supplies in chat mode.
  const Outcome o =
      chat("Hi\\n", "run -m " + kStories + " --chat --chat-template " + kGemma + " -p 'Be brief.'",
           true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_TRUE(one_line(o.out)) << o.out;
  EXPECT_THAT(o.out, HasSubstr("System role not supported"));
}

TEST(ChatCli, ConversationLongerThanContextIsOneLine) {
  if (!have_stories()) GTEST_SKIP() << kStories << " not found";
  const Outcome o =
      chat("Hi\\n", "run -m " + kStories + " --chat --chat-template " + kGemma + " -c 8", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("raise -c"));
}

}  // namespace
