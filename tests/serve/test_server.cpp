// strata serve in-process, driven over HTTP by cpp-httplib's client: completions and chat
// completions (whole and streamed) give the text generation gives alone, also under
// concurrency; every bad request gets its OpenAI-style error; cancelled streams free slots.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "decode_all.h"
#include "devices/host_device.h"
#include "engine/generate.h"
#include "engine/open.h"
#include "engine/session.h"
#include "golden.h"
#include "model/model.h"
#include "serve/server.h"

namespace strata::serve {
namespace {

using nlohmann::json;

struct Running {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<engine::Session> session;
  std::unique_ptr<Server> server;
  std::thread thread;

  ~Running() {
    if (server) server->stop();
    if (thread.joinable()) thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server->port());
    c.set_read_timeout(60, 0);
    return c;
  }
};

// Serves stories260K laid out as `layout` says (the host alone by default).
std::unique_ptr<Running> start(ServeOptions o = {}, int64_t n_ctx = 1024,
                               const engine::OpenParams& layout = {}) {
  auto r = std::make_unique<Running>();
  auto opened = engine::open(testing::model_path("stories260K.gguf"), layout,
                             {.n_ctx = n_ctx, .n_batch = 256, .n_ubatch = 64, .n_threads = 2});
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  if (!opened.ok()) return nullptr;
  r->model = std::move(opened->model);
  r->session = std::move(opened->session);
  o.port = 0;
  o.model_name = "stories260K";
  auto srv = Server::create(*r->session, o);
  EXPECT_TRUE(srv.ok()) << srv.status().message();
  if (!srv.ok()) return nullptr;
  r->server = std::move(srv).value();
  r->thread = std::thread([p = r.get()] { EXPECT_TRUE(p->server->run().ok()); });
  return r;
}

// What generation alone gives for `prompt` greedily.
std::string solo_text(const std::string& prompt, int n) {
  auto m = model::Model::load(testing::model_path("stories260K.gguf"),
                              devices::host_device().buffer_type());
  auto s = engine::Session::create(**m, devices::host_device(), {.n_ctx = 256});
  std::string text;
  engine::GenerateParams gp;
  gp.prompt = prompt;
  gp.n_predict = n;
  gp.sampling.temperature = 0.0f;
  auto st = engine::generate(**s, gp, [&text](std::string_view piece) {
    text += piece;
    return Status{};
  });
  EXPECT_TRUE(st.ok());
  return text;
}

json post(int port, const std::string& path, const json& body, int* status) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  if (!res) {
    *status = -1;
    return {};
  }
  *status = res->status;
  return json::parse(res->body, nullptr, false);
}

const char* const kPrompts[] = {"Once upon a time", "Lily and Tom went to the park.",
                                "The sun was hot", "Tim had a red ball."};

TEST(Server, CompletionEqualsGenerationAlone) {
  auto r = start();
  ASSERT_TRUE(r);
  int status = 0;
  const json out =
      post(r->server->port(), "/v1/completions",
           {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}}, &status);
  ASSERT_EQ(status, 200) << out.dump();
  EXPECT_EQ(out["object"], "text_completion");
  EXPECT_EQ(out["choices"][0]["text"], solo_text("Once upon a time", 24));
  EXPECT_EQ(out["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(out["usage"]["completion_tokens"], 24);
  EXPECT_EQ(out["usage"]["prompt_tokens"], 5);
}

TEST(Server, ConcurrentGreedyRequestsEachGetTheirSoloText) {
  auto r = start();
  ASSERT_TRUE(r);
  std::vector<std::string> got(4);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      int status = 0;
      const json out =
          post(r->server->port(), "/v1/completions",
               {{"prompt", kPrompts[i]}, {"max_tokens", 32}, {"temperature", 0}}, &status);
      if (status == 200) got[i] = out["choices"][0]["text"].get<std::string>();
    });
  }
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], solo_text(kPrompts[i], 32)) << i;
}

// Continuous batching over a tensor split (a meta device across two partitions): each request
// still gets the text generation alone on the host gives.
TEST(Server, TensorSplitServesEachRequestItsSoloText) {
  engine::OpenParams layout;
  layout.partitions = 2;
  layout.n_gpu_layers = 99;
  layout.split_mode = engine::SplitMode::kTensor;
  auto r = start({}, 1024, layout);
  ASSERT_TRUE(r);
  std::vector<std::string> got(3);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < got.size(); ++i) {
    clients.emplace_back([&, i] {
      int status = 0;
      const json out =
          post(r->server->port(), "/v1/completions",
               {{"prompt", kPrompts[i]}, {"max_tokens", 24}, {"temperature", 0}}, &status);
      if (status == 200) got[i] = out["choices"][0]["text"].get<std::string>();
    });
  }
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], solo_text(kPrompts[i], 24)) << i;
}

TEST(Server, StreamedChunksAddUpToTheWholeAnswer) {
  auto r = start();
  ASSERT_TRUE(r);
  const json req = {{"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
                    {"max_tokens", 20},
                    {"temperature", 0}};
  int status = 0;
  const json whole = post(r->server->port(), "/v1/chat/completions", req, &status);
  ASSERT_EQ(status, 200);
  json sreq = req;
  sreq["stream"] = true;
  httplib::Client c = r->client();
  auto res = c.Post("/v1/chat/completions", sreq.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  std::string text, finish;
  size_t pos = 0;
  bool done = false;
  while ((pos = res->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = res->body.find("\n\n", pos);
    const std::string data = res->body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      done = true;
      break;
    }
    const json chunk = json::parse(data);
    const json& ch = chunk["choices"][0];
    if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, "length");
}

TEST(Server, StopStringsEndTheTextBeforeThem) {
  auto r = start();
  ASSERT_TRUE(r);
  const std::string full = solo_text("Once upon a time", 24);
  const size_t cut = full.find("girl");
  ASSERT_NE(cut, std::string::npos) << full;
  int status = 0;
  const json out = post(
      r->server->port(), "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}, {"stop", {"girl"}}},
      &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(out["choices"][0]["text"], full.substr(0, cut));
  EXPECT_EQ(out["choices"][0]["finish_reason"], "stop");
}

TEST(Server, LogProbabilitiesComeWithEveryToken) {
  auto r = start();
  ASSERT_TRUE(r);
  int status = 0;
  const json out =
      post(r->server->port(), "/v1/completions",
           {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2}},
           &status);
  ASSERT_EQ(status, 200) << out.dump();
  const json& lp = out["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u) << lp.dump();
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    const float chosen = lp["token_logprobs"][i].get<float>();
    EXPECT_LE(chosen, 0.0f);
    ASSERT_EQ(lp["top_logprobs"][i].size(), 2u);
    // Greedy: the chosen token is the most likely one.
    float best = -1e30f;
    for (const auto& item : lp["top_logprobs"][i].items())
      best = std::max(best, item.value().get<float>());
    EXPECT_FLOAT_EQ(chosen, best);
    EXPECT_EQ(lp["text_offset"][i].get<size_t>(), joined.size());
    joined += lp["tokens"][i].get<std::string>();
  }
  EXPECT_EQ(joined, out["choices"][0]["text"]);

  const json chat = post(r->server->port(), "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                          {"max_tokens", 4},
                          {"logprobs", true},
                          {"top_logprobs", 3}},
                         &status);
  ASSERT_EQ(status, 200) << chat.dump();
  const json& content = chat["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 4u);
  EXPECT_EQ(content[0]["top_logprobs"].size(), 3u);
  EXPECT_TRUE(content[0]["bytes"].is_array());
  post(r->server->port(), "/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"top_logprobs", 3}}, &status);
  EXPECT_EQ(status, 400);
}

TEST(Server, BadRequestsGetOpenAiErrors) {
  ServeOptions o;
  o.max_body_bytes = 4096;
  auto r = start(o, 256);
  ASSERT_TRUE(r);
  httplib::Client c = r->client();
  auto expect = [&](const std::string& path, const std::string& body, int code) {
    auto res = c.Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(res) << body;
    EXPECT_EQ(res->status, code) << body << " -> " << res->body;
    const json j = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << res->body;
    EXPECT_TRUE(j["error"]["message"].is_string()) << res->body;
  };
  expect("/v1/completions", "{not json", 400);
  expect("/v1/completions", "[1, 2]", 400);
  expect("/v1/completions", R"({"max_tokens": 4})", 400);
  expect("/v1/completions", R"({"prompt": 7})", 400);
  expect("/v1/completions", R"({"prompt": "hi", "max_tokens": "many"})", 400);
  expect("/v1/completions", R"({"prompt": "hi", "temperature": 9})", 400);
  expect("/v1/chat/completions", R"({"messages": []})", 400);
  expect("/v1/chat/completions", R"({"messages": [{"role": "user"}]})", 400);
  // A prompt longer than a slot's context (256 / 4 slots = 64 cells).
  std::string longp;
  for (int i = 0; i < 100; ++i) longp += "the dog ran ";
  expect("/v1/completions", json{{"prompt", longp}}.dump(), 400);
  expect("/v1/completions", std::string(5000, ' '), 413);
  auto missing = c.Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  // Still serving after all that.
  int status = 0;
  post(r->server->port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 200);
}

TEST(Server, ApiKeyIsRequiredWhenSet) {
  ServeOptions o;
  o.api_key = "sekret";
  auto r = start(o);
  ASSERT_TRUE(r);
  httplib::Client c = r->client();
  const std::string body = R"({"prompt": "Once", "max_tokens": 2})";
  auto none = c.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto wrong =
      c.Post("/v1/completions", {{"Authorization", "Bearer nope"}}, body, "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto right =
      c.Post("/v1/completions", {{"Authorization", "Bearer sekret"}}, body, "application/json");
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(Server, AFullQueueIsServiceUnavailable) {
  ServeOptions o;
  o.max_queue = 0;
  auto r = start(o);
  ASSERT_TRUE(r);
  int status = 0;
  post(r->server->port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 503);
}

// A client that drops a stream frees its slot; 64 requests from 8 clients all complete.
TEST(Server, CancelledStreamsFreeSlotsAndLoadCompletes) {
  auto r = start();
  ASSERT_TRUE(r);
  {
    httplib::Client c = r->client();
    int chunks = 0;
    json req = {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"stream", true}};
    httplib::Request hr;
    hr.method = "POST";
    hr.path = "/v1/completions";
    hr.body = req.dump();
    hr.set_header("Content-Type", "application/json");
    hr.content_receiver = [&chunks](const char*, size_t, uint64_t, uint64_t) {
      return ++chunks < 3;  // hang up after a few chunks
    };
    (void)c.send(hr);
  }
  httplib::Client c = r->client();
  // The gauge is refreshed after each decode step, which answers its finished requests first:
  // a client can read its answer before the step that freed the slot has updated the gauge.
  const auto slots_freed = [&c] {
    for (int i = 0; i < 100; ++i) {
      auto m = c.Get("/metrics");
      if (m && m->body.find("strata_slots_busy 0") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  EXPECT_TRUE(slots_freed());

  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        int status = 0;
        const json out =
            post(r->server->port(), "/v1/completions",
                 {{"prompt", kPrompts[(t + i) % 4]}, {"max_tokens", 8}, {"seed", i}}, &status);
        if (status == 200 && out["choices"][0]["text"].is_string() &&
            out["usage"]["completion_tokens"].get<int>() <= 8) {
          ++ok;
        }
      }
    });
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(ok.load(), 64);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("strata_requests_total"), std::string::npos);
  EXPECT_TRUE(slots_freed());
}

}  // namespace
}  // namespace strata::serve
