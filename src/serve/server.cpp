#include "serve/server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "engine/batch_loop.h"
#include "engine/chat.h"
#include "model/chat/chat_template.h"
#include "serve/channel.h"
#include "serve/metrics.h"
#include "serve/openai.h"
#include "serve/text_stream.h"

namespace strata::serve {
namespace {

using nlohmann::json;

void send_error(httplib::Response& res, int status, const std::string& message,
                const std::string& type) {
  res.status = status;
  res.set_content(error_body(message, type, status), "application/json");
}

int64_t now_seconds() {
  return static_cast<int64_t>(std::time(nullptr));
}

}  // namespace

struct Server::Impl {
  engine::Session& session;
  ServeOptions opt;
  std::unique_ptr<engine::BatchLoop> loop;
  std::unique_ptr<model::ChatTemplate> chat;
  httplib::Server http;
  Metrics metrics;
  std::thread loop_thread;
  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  std::atomic<int> busy{0};
  std::atomic<int64_t> kv_used{0};
  std::atomic<uint64_t> next_id{1};
  int bound_port = 0;

  explicit Impl(engine::Session& s) : session(s) {}

  void loop_main() {
    for (;;) {
      {
        std::unique_lock lock(mu);
        wake.wait_for(lock, std::chrono::milliseconds(50),
                      [this] { return stopping || loop->queued() > 0 || busy > 0; });
        if (stopping && loop->idle()) return;
      }
      if (loop->idle()) continue;
      const auto t0 = std::chrono::steady_clock::now();
      (void)loop->step();  // a failed step has ended its requests with the error
      const double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      metrics.decode_steps++;
      metrics.decode_seconds = metrics.decode_seconds.load() + dt;
      busy = loop->busy_slots();
      kv_used = session.cache().used();
    }
  }

  bool authorized(const httplib::Request& req) const {
    if (opt.api_key.empty()) return true;
    return req.get_header_value("Authorization") == "Bearer " + opt.api_key;
  }

  Result<std::vector<int32_t>> prompt_tokens(const CompletionRequest& r) const {
    const model::Tokenizer& tok = session.model().tokenizer();
    if (!r.chat) return tok.encode(r.prompt, /*add_special=*/true, /*parse_special=*/true);
    std::vector<model::ChatMessage> msgs;
    for (const Message& m : r.messages) msgs.push_back({m.role, m.content, ""});
    model::ChatRenderOptions ro;
    ro.add_generation_prompt = true;
    ro.bos_token = tok.token_to_piece(tok.bos_id(), true);
    ro.eos_token = tok.token_to_piece(tok.eos_id(), true);
    auto text = chat->render(msgs, ro);
    if (!text.ok()) return text.status();
    // Templates that write the BOS themselves get no second one.
    const bool has_bos = !ro.bos_token.empty() && text->rfind(ro.bos_token, 0) == 0;
    return tok.encode(*text, /*add_special=*/!has_bos, /*parse_special=*/true);
  }

  void complete(const httplib::Request& req, httplib::Response& res, bool chat_api) {
    metrics.requests++;
    auto parsed = parse_completion(req.body, chat_api);
    if (!parsed.ok()) {
      metrics.requests_failed++;
      return send_error(res, 400, parsed.status().message(), "invalid_request_error");
    }
    auto tokens = prompt_tokens(*parsed);
    if (!tokens.ok()) {
      metrics.requests_failed++;
      return send_error(res, 400, tokens.status().message(), "invalid_request_error");
    }
    if (static_cast<int64_t>(tokens->size()) >= loop->slot_context()) {
      metrics.requests_failed++;
      return send_error(res, 400,
                        "the prompt has " + std::to_string(tokens->size()) +
                            " tokens, more than a slot's context of " +
                            std::to_string(loop->slot_context()),
                        "context_length_exceeded");
    }
    if (loop->queued() >= opt.max_queue) {
      metrics.requests_failed++;
      return send_error(res, 503, "every slot is busy and the queue is full; retry later",
                        "server_overloaded");
    }
    auto ch = std::make_shared<Channel>();
    engine::Request r;
    r.prompt = *tokens;
    r.max_tokens =
        parsed->max_tokens > 0 ? parsed->max_tokens : static_cast<int32_t>(loop->slot_context());
    r.sampling = parsed->sampling;
    // on_probs comes just before on_token, on the loop thread: the token's event carries them.
    auto probs = std::make_shared<std::optional<engine::TokenProbs>>();
    r.n_probs = parsed->n_probs;
    if (r.n_probs >= 0) {
      r.on_probs = [probs](const engine::TokenProbs& p) { *probs = p; };
    }
    r.on_token = [ch, probs](int32_t t) {
      Event e;
      e.token = t;
      if (probs->has_value()) {
        e.has_probs = true;
        e.probs = std::move(**probs);
        probs->reset();
      }
      ch->push(std::move(e));
      return !ch->abandoned();
    };
    r.on_done = [ch](engine::FinishReason why, const Status& st) {
      Event e;
      e.done = true;
      e.reason = why;
      e.error = st;
      ch->push(std::move(e));
    };
    if (Status st = loop->submit(std::move(r)); !st.ok()) {
      metrics.requests_failed++;
      return send_error(res, 400, st.message(), "invalid_request_error");
    }
    metrics.prompt_tokens += tokens->size();
    wake.notify_one();

    const std::string id = (chat_api ? "chatcmpl-" : "cmpl-") + std::to_string(next_id++);
    const int64_t created = now_seconds();
    const std::string model_name = parsed->model.empty() ? opt.model_name : parsed->model;
    const size_t n_prompt = tokens->size();
    const model::Tokenizer& tok = session.model().tokenizer();
    auto stream = std::make_shared<TextStream>(parsed->stop);

    // Waits for the request's next event; a stop string found cancels the rest.
    auto next_event = [ch, stream, &tok, this](size_t& n_gen) -> Event {
      for (;;) {
        auto e = ch->pop(std::chrono::milliseconds(100));
        if (!e) continue;
        if (!e->done) {
          ++n_gen;
          metrics.generated_tokens++;
          if (stream->add(tok.token_to_piece(e->token))) ch->abandon();
        }
        return *e;
      }
    };
    // Log-probabilities in the API's two shapes, built token by token.
    auto logprobs = std::make_shared<json>(chat_api ? json{{"content", json::array()}}
                                                    : json{{"tokens", json::array()},
                                                           {"token_logprobs", json::array()},
                                                           {"top_logprobs", json::array()},
                                                           {"text_offset", json::array()}});
    auto offset = std::make_shared<size_t>(0);
    auto add_probs = [chat_api, &tok, logprobs, offset](const Event& e) {
      if (!e.has_probs) return;
      const std::string piece = tok.token_to_piece(e.token);
      auto bytes = [](const std::string& s) {
        json b = json::array();
        for (unsigned char c : s) b.push_back(static_cast<int>(c));
        return b;
      };
      if (chat_api) {
        json top = json::array();
        for (const auto& [alt, lp] : e.probs.top) {
          const std::string p = tok.token_to_piece(alt);
          top.push_back({{"token", p}, {"logprob", lp}, {"bytes", bytes(p)}});
        }
        (*logprobs)["content"].push_back({{"token", piece},
                                          {"logprob", e.probs.logprob},
                                          {"bytes", bytes(piece)},
                                          {"top_logprobs", top}});
        return;
      }
      json top = json::object();
      for (const auto& [alt, lp] : e.probs.top) top[tok.token_to_piece(alt)] = lp;
      (*logprobs)["tokens"].push_back(piece);
      (*logprobs)["token_logprobs"].push_back(e.probs.logprob);
      (*logprobs)["top_logprobs"].push_back(top);
      (*logprobs)["text_offset"].push_back(*offset);
      *offset += piece.size();
    };
    // The log-probabilities gathered since the last call, emptying them (for stream chunks).
    auto take_probs = [logprobs]() {
      json out = *logprobs;
      for (auto& item : logprobs->items()) item.value() = json::array();
      return out;
    };
    const bool want_probs = parsed->n_probs >= 0;
    auto finish_name = [stream](const Event& e) -> const char* {
      if (stream->stopped()) return "stop";
      return e.reason == engine::FinishReason::kLength ? "length" : "stop";
    };
    auto usage = [n_prompt](size_t n_gen) {
      return json{{"prompt_tokens", n_prompt},
                  {"completion_tokens", n_gen},
                  {"total_tokens", n_prompt + n_gen}};
    };
    auto choice = [chat_api](const std::string& text, const char* finish, bool delta) {
      json c = {{"index", 0}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
      if (!chat_api) {
        c["text"] = text;
        c["logprobs"] = nullptr;
      } else if (delta) {
        c["delta"] = text.empty() && finish ? json::object() : json{{"content", text}};
      } else {
        c["message"] = {{"role", "assistant"}, {"content", text}};
      }
      return c;
    };

    if (!parsed->stream) {
      size_t n_gen = 0;
      Event e;
      do {
        e = next_event(n_gen);
        add_probs(e);
      } while (!e.done);
      if (e.reason == engine::FinishReason::kError) {
        metrics.requests_failed++;
        return send_error(res, 500, e.error.message(), "server_error");
      }
      json body = {{"id", id},
                   {"object", chat_api ? "chat.completion" : "text_completion"},
                   {"created", created},
                   {"model", model_name},
                   {"choices", json::array({choice(stream->take(true), finish_name(e), false)})},
                   {"usage", usage(n_gen)}};
      body["choices"][0]["logprobs"] = want_probs ? take_probs() : json(nullptr);
      res.set_content(body.dump(), "application/json");
      return;
    }
    const std::string object = chat_api ? "chat.completion.chunk" : "text_completion";
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [=](size_t, httplib::DataSink& sink) mutable {
          auto send = [&sink](const json& j) {
            const std::string line = "data: " + j.dump() + "\n\n";
            return sink.write(line.data(), line.size());
          };
          size_t n_gen = 0;
          for (;;) {
            Event e = next_event(n_gen);
            add_probs(e);
            std::string text = stream->take(e.done);
            if (!text.empty() || e.done) {
              json chunk = {{"id", id},
                            {"object", object},
                            {"created", created},
                            {"model", model_name},
                            {"choices", json::array({choice(text, nullptr, true)})}};
              if (e.done) {
                chunk["choices"][0] = choice(text, finish_name(e), true);
                chunk["usage"] = usage(n_gen);
              }
              chunk["choices"][0]["logprobs"] = want_probs ? take_probs() : json(nullptr);
              if (!send(chunk)) {
                // The client went away: the loop drops the request at its next token.
                ch->abandon();
                return false;
              }
            }
            if (e.done) {
              const std::string end = "data: [DONE]\n\n";
              sink.write(end.data(), end.size());
              sink.done();
              return true;
            }
          }
        },
        [ch](bool) { ch->abandon(); });
  }
};

Result<std::unique_ptr<Server>> Server::create(engine::Session& session, const ServeOptions& o) {
  auto impl = std::make_unique<Impl>(session);
  impl->opt = o;
  auto loop = engine::BatchLoop::create(session, {.n_slots = o.n_slots});
  if (!loop.ok()) return loop.status();
  impl->loop = std::move(loop).value();
  std::string source = o.chat_template;
  if (source.empty()) {
    auto from_model = engine::model_chat_template(session.model());
    source = from_model.ok() ? *from_model : model::kDefaultChatTemplate;
  }
  auto tmpl = model::ChatTemplate::parse(source);
  if (!tmpl.ok()) return tmpl.status();
  impl->chat = std::make_unique<model::ChatTemplate>(std::move(tmpl).value());

  Impl* p = impl.get();
  httplib::Server& h = impl->http;
  h.set_payload_max_length(o.max_body_bytes);
  h.new_task_queue = [] { return new httplib::ThreadPool(32); };
  h.set_pre_routing_handler([p](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/health" || p->authorized(req))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, "invalid or missing API key", "authentication_error");
    return httplib::Server::HandlerResponse::Handled;
  });
  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, 404, "no route " + req.method + " " + req.path, "not_found_error");
    } else if (res.status == 413) {
      send_error(res, 413, "the request body is too large", "invalid_request_error");
    } else {
      send_error(res, res.status, "request failed", "invalid_request_error");
    }
  });
  h.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  h.Get("/v1/models", [p](const httplib::Request&, httplib::Response& res) {
    json body = {{"object", "list"},
                 {"data", json::array({{{"id", p->opt.model_name},
                                        {"object", "model"},
                                        {"created", now_seconds()},
                                        {"owned_by", "strata"}}})}};
    res.set_content(body.dump(), "application/json");
  });
  h.Get("/metrics", [p](const httplib::Request&, httplib::Response& res) {
    res.set_content(p->metrics.prometheus(p->loop->queued(), p->busy, p->opt.n_slots, p->kv_used,
                                          p->session.n_ctx()),
                    "text/plain; version=0.0.4");
  });
  h.Post("/v1/completions", [p](const httplib::Request& req, httplib::Response& res) {
    p->complete(req, res, false);
  });
  h.Post("/v1/chat/completions",
         [p](const httplib::Request& req, httplib::Response& res) { p->complete(req, res, true); });
  const int port =
      o.port == 0 ? h.bind_to_any_port(o.host) : (h.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) {
    return error(ErrorCode::kIo,
                 "serve: cannot listen on " + o.host + ":" + std::to_string(o.port));
  }
  impl->bound_port = port;
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  stop();
  if (impl_->loop_thread.joinable()) impl_->loop_thread.join();
}

Status Server::run() {
  impl_->loop_thread = std::thread([this] { impl_->loop_main(); });
  const bool ok = impl_->http.listen_after_bind();
  // Listening stopped: requests in flight have been answered; the loop ends once idle.
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_one();
  impl_->loop_thread.join();
  if (!ok && !impl_->stopping) return error(ErrorCode::kIo, "serve: the listening socket failed");
  return {};
}

void Server::stop() {
  impl_->http.stop();
}

int Server::port() const {
  return impl_->bound_port;
}

}  // namespace strata::serve
