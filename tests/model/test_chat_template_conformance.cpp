// Every real chat template in ../shared/chat-templates, rendered for several conversations,
// against python3-jinja2 in HF's environment (scripts/render_chat_template.py): byte-identical
// output, or an error on both sides.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/chat/chat_template.h"

namespace strata::model {
namespace {

namespace fs = std::filesystem;

const std::string kTemplates = std::string(STRATA_SHARED_DIR) + "/chat-templates";
const std::string kScript = std::string(STRATA_SOURCE_DIR) + "/scripts/render_chat_template.py";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const char* const kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Get the current weather in a city.", "parameters": {"type": "object",
  "properties": {"location": {"type": "string", "description": "City name"}, "unit":
  {"type": "string", "description": "Unit", "enum": ["celsius", "fahrenheit"]}, "days":
  {"type": "integer", "description": "Days ahead"}},
  "required": ["location"]}}}])";

// The variables of each conversation, as HF passes them (tools None unless given).
std::vector<std::pair<std::string, std::string>> conversations() {
  // firefunction-v2 reads the tool list from `functions`, as a JSON string, and `datetime`.
  const std::string common =
      R"("bos_token": "<s>", "eos_token": "</s>", "date_string": "26 Jul 2024",
         "functions": "[{\"name\": \"get_weather\"}]", "datetime": "2024-07-26")";
  return {
      {"system_user",
       R"({"messages": [{"role": "system", "content": "You are a helpful assistant."},
          {"role": "user", "content": "Hello!"}], "add_generation_prompt": true,
          "tools": null, )" +
           common + "}"},
      {"no_tools_variable",
       R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true,
          "bos_token": "<s>", "eos_token": "</s>"})"},
      {"user_only",
       R"({"messages": [{"role": "user", "content": "What is 2+2?"}],
          "add_generation_prompt": false, "tools": null, )" +
           common + "}"},
      {"multi_turn",
       R"({"messages": [{"role": "user", "content": "Hi there"},
          {"role": "assistant", "content": "Hello! How can I help?"},
          {"role": "user", "content": "Tell me a joke."}], "add_generation_prompt": true,
          "tools": null, )" +
           common + "}"},
      {"multi_turn_system_no_prompt",
       R"({"messages": [{"role": "system", "content": "  Be brief.\n"},
          {"role": "user", "content": "One"}, {"role": "assistant", "content": " Two "},
          {"role": "user", "content": "Three"}, {"role": "assistant", "content": "Four"}],
          "add_generation_prompt": false, "tools": null, )" +
           common + "}"},
      {"special_text",
       R"({"messages": [{"role": "user", "content": "héllo <b>&amp;</b> 'single' \"double\"\n\tindented\\ ✓"}],
          "add_generation_prompt": true, "tools": null, )" +
           common + "}"},
      {"tools",
       R"({"messages": [{"role": "system", "content": "You can call tools."},
          {"role": "user", "content": "Weather in Paris?"},
          {"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function",
            "function": {"name": "get_weather", "arguments": {"location": "Paris", "days": 2}}}]},
          {"role": "tool", "name": "get_weather", "tool_call_id": "call12345", "content": "{\"temp\": 21.5}"},
          {"role": "assistant", "content": "It is 21.5 degrees."},
          {"role": "user", "content": "Thanks"}], "add_generation_prompt": true,
          "tools": )" +
           std::string(kTools) + ", " + common + "}"},
      {"tools_offered",
       R"({"messages": [{"role": "user", "content": "What can you do?"}],
          "add_generation_prompt": true, "tools": )" +
           std::string(kTools) + ", " + common + "}"},
      {"tools_string_arguments",
       R"({"messages": [{"role": "user", "content": "Weather in Paris?"},
          {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\"}"}}]},
          {"role": "tool", "tool_call_id": "call12345", "content": "sunny"}],
          "add_generation_prompt": true, "tools": )" +
           std::string(kTools) + ", " + common + "}"},
  };
}

std::vector<std::string> template_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kTemplates, ec)) {
    if (e.path().extension() == ".jinja") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs the reference script on `jobs`; the JSON list it prints, or "" when python3 or jinja2
// is missing.
std::string run_reference(const std::string& jobs_path) {
  const std::string cmd = "python3 '" + kScript + "' --batch '" + jobs_path + "' 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  return out;
}

// jinja2's renders of every template and conversation, keyed "file/conversation"; nullopt
// when python3 or jinja2 is missing. ctest runs each template in a process of its own, so the
// renders are kept in a file named by a hash of everything they depend on (jobs, templates,
// script, and today's local date, which templates print through strftime_now) and computed
// once.
using References = std::map<std::string, nlohmann::ordered_json>;
const std::optional<References>& references() {
  static const std::optional<References> refs = []() -> std::optional<References> {
    nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
    std::vector<std::string> keys;
    std::string inputs = read_all(kScript);
    for (const std::string& file : template_files()) {
      inputs += read_all(kTemplates + "/" + file);
      for (const auto& [name, vars] : conversations()) {
        jobs.push_back({kTemplates + "/" + file, nlohmann::ordered_json::parse(vars)});
        keys.push_back(file + "/" + name);
      }
    }
    inputs += jobs.dump();
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char today[16];
    inputs += std::string(today, std::strftime(today, sizeof today, "%Y-%m-%d", &local));
    const std::string dir = std::string(STRATA_TEST_TMPDIR);
    const std::string cache =
        dir + "/chat_template_refs_" + std::to_string(std::hash<std::string>{}(inputs)) + ".json";
    std::string out = read_all(cache);
    if (out.empty()) {
      const std::string unique = std::to_string(getpid());
      const std::string jobs_path = dir + "/chat_template_jobs_" + unique + ".json";
      std::ofstream(jobs_path, std::ios::binary) << jobs.dump();
      out = run_reference(jobs_path);
      fs::remove(jobs_path);
      if (out.empty()) return std::nullopt;
      // Written aside and renamed, so that a process running alongside reads all or nothing.
      const std::string tmp = cache + "." + unique;
      std::ofstream(tmp, std::ios::binary) << out;
      std::error_code ec;
      fs::rename(tmp, cache, ec);
    }
    nlohmann::ordered_json results = nlohmann::ordered_json::parse(out, nullptr, false);
    if (!results.is_array() || results.size() != keys.size()) return std::nullopt;
    References by_key;
    for (size_t i = 0; i < keys.size(); ++i) by_key[keys[i]] = results[i];
    return by_key;
  }();
  return refs;
}

class ChatTemplateConformance : public testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateConformance, MatchesPythonJinja2) {
  if (!references()) GTEST_SKIP() << "python3 with jinja2 is needed for the reference renders";
  const std::string path = kTemplates + "/" + GetParam();
  Result<ChatTemplate> tmpl = ChatTemplate::parse(read_all(path));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
  int compared = 0;
  for (const auto& [name, vars] : conversations()) {
    SCOPED_TRACE(name);
    const nlohmann::ordered_json& ref = references()->at(GetParam() + "/" + name);
    Result<std::string> ours = tmpl->render_json(vars);
    if (ref.contains("error")) {
      EXPECT_FALSE(ours.ok()) << "jinja2 failed (" << ref["error"].get<std::string>()
                              << ") but strata rendered:\n"
                              << *ours;
      continue;
    }
    ASSERT_TRUE(ours.ok()) << ours.status().message();
    EXPECT_EQ(*ours, ref["output"].get<std::string>());
    ++compared;
  }
  EXPECT_GT(compared, 0) << "every conversation failed in jinja2";
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 6);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, ChatTemplateConformance,
                         testing::ValuesIn(template_files()), test_name);

}  // namespace
}  // namespace strata::model
