// `strata serve`: an OpenAI-compatible HTTP server over one session. Requests share the
// session through engine::BatchLoop (continuous batching over -np slots); completions and chat
// completions stream with server-sent events or come back whole.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "engine/session.h"

namespace strata::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      ///< 0: any free port (see Server::port)
  std::string api_key;  ///< when set, requests need "Authorization: Bearer KEY"
  int n_slots = 4;
  size_t max_body_bytes = 1 << 20;  ///< larger bodies get 413
  size_t max_queue = 64;            ///< waiting requests beyond it get 503
  std::string model_name;           ///< what /v1/models lists
  std::string chat_template;        ///< overrides the model's; empty: the model's, else ChatML
};

class Server {
 public:
  /// Binds the socket; errors name the address. The session must outlive the server.
  static Result<std::unique_ptr<Server>> create(engine::Session& session, const ServeOptions& o);
  ~Server();

  /// Serves until stop(): requests in flight finish, new ones are refused.
  Status run();
  /// Thread-safe and signal-safe to call from another thread.
  void stop();
  int port() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::serve
