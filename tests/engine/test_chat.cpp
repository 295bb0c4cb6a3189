// engine::Chat: a conversation evaluated turn by turn on one session (the KV cache kept)
// answers as a fresh session given the whole conversation at once.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "devices/host_device.h"
#include "engine/chat.h"
#include "engine/session.h"
#include "model/model.h"

namespace strata::engine {
namespace {

const std::string kModel = std::string(STRATA_SHARED_DIR) + "/models/stories260K.gguf";
const std::string kTemplate =
    std::string(STRATA_SHARED_DIR) + "/chat-templates/google-gemma-2-2b-it.jinja";

model::ChatTemplate load_template() {
  std::ifstream in(kTemplate, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto t = model::ChatTemplate::parse(text);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

Status ignore(std::string_view) {
  return {};
}

TEST(Chat, TurnByTurnMatchesWholeConversation) {
  if (!std::filesystem::exists(kModel) || !std::filesystem::exists(kTemplate)) {
    GTEST_SKIP() << "stories260K or the Gemma template not found";
  }
  auto m = model::Model::load(kModel, devices::host_device().buffer_type());
  ASSERT_TRUE(m.ok()) << m.status().message();
  SamplerParams greedy;
  greedy.temperature = 0.0f;
  model::ChatRenderOptions opts;
  opts.bos_token = "<s>";

  auto s1 = Session::create(**m, devices::host_device(), {.n_ctx = 256});
  ASSERT_TRUE(s1.ok()) << s1.status().message();
  Chat chat(**s1, load_template(), opts, greedy);
  auto first = chat.respond("Hello", 6, ignore);
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = chat.respond("Tell me more", 6, ignore);
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_EQ(chat.messages().size(), 4u);
  EXPECT_EQ(chat.messages()[3].role, "assistant");
  EXPECT_GT(second->n_generated, 0);

  auto s2 = Session::create(**m, devices::host_device(), {.n_ctx = 256});
  ASSERT_TRUE(s2.ok()) << s2.status().message();
  Chat fresh(**s2, load_template(), opts, greedy);
  fresh.add_message(chat.messages()[0]);
  fresh.add_message(chat.messages()[1]);
  auto again = fresh.respond("Tell me more", 6, ignore);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->tokens, second->tokens);
  // The second turn evaluated only what followed the first reply.
  EXPECT_LT(second->n_prompt, again->n_prompt);
  EXPECT_EQ(fresh.messages()[3].content, chat.messages()[3].content);
}

TEST(Chat, TemplateErrorLeavesConversationUnchanged) {
  if (!std::filesystem::exists(kModel) || !std::filesystem::exists(kTemplate)) {
    GTEST_SKIP() << "stories260K or the Gemma template not found";
  }
  auto m = model::Model::load(kModel, devices::host_device().buffer_type());
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto s = Session::create(**m, devices::host_device(), {.n_ctx = 128});
  ASSERT_TRUE(s.ok()) << s.status().message();
  Chat chat(**s, load_template(), {}, SamplerParams{});
  chat.add_message({"system", "Gemma refuses system messages", ""});
  auto r = chat.respond("Hi", 4, ignore);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("System role not supported"), std::string::npos);
  EXPECT_EQ(chat.messages().size(), 1u);
}

}  // namespace
}  // namespace strata::engine
