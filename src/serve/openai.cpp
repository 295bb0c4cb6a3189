#include "serve/openai.h"

#include <nlohmann/json.hpp>

namespace strata::serve {
namespace {

using nlohmann::json;

Status bad(const std::string& what) {
  return error(ErrorCode::kInvalidArgument, what);
}

// Reads an optional number field into `out`, checking its range.
Status number(const json& j, const char* key, double lo, double hi, float& out) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_number()) return bad("'" + std::string(key) + "' must be a number");
  const double v = j[key].get<double>();
  if (!(v >= lo && v <= hi)) {
    return bad("'" + std::string(key) + "' must be in [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]");
  }
  out = static_cast<float>(v);
  return {};
}

Status integer(const json& j, const char* key, int64_t lo, int64_t hi, int64_t& out) {
  if (!j.contains(key) || j[key].is_null()) return {};
  if (!j[key].is_number_integer()) return bad("'" + std::string(key) + "' must be an integer");
  const auto v = j[key].get<int64_t>();
  if (v < lo || v > hi) {
    return bad("'" + std::string(key) + "' must be in [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]");
  }
  out = v;
  return {};
}

}  // namespace

Result<CompletionRequest> parse_completion(const std::string& body, bool chat) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("the request body is not valid JSON");
  if (!j.is_object()) return bad("the request body must be a JSON object");
  CompletionRequest r;
  r.chat = chat;
  if (chat) {
    if (!j.contains("messages")) return bad("missing 'messages'");
    if (!j["messages"].is_array() || j["messages"].empty()) {
      return bad("'messages' must be a non-empty array");
    }
    for (const json& m : j["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
        return bad("each message needs a string 'role'");
      }
      if (!m.contains("content") || !m["content"].is_string()) {
        return bad("each message needs a string 'content'");
      }
      r.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
  } else {
    if (!j.contains("prompt")) return bad("missing 'prompt'");
    if (!j["prompt"].is_string()) return bad("'prompt' must be a string");
    r.prompt = j["prompt"].get<std::string>();
    if (r.prompt.empty()) return bad("'prompt' must not be empty");
  }
  if (j.contains("model") && j["model"].is_string()) r.model = j["model"].get<std::string>();
  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) return bad("'stream' must be a boolean");
    r.stream = j["stream"].get<bool>();
  }
  int64_t max_tokens = -1;
  STRATA_RETURN_IF_ERROR(integer(j, "max_tokens", 1, int64_t{1} << 30, max_tokens));
  r.max_tokens = static_cast<int32_t>(max_tokens);
  // OpenAI's defaults: temperature 1 and top_p 1, no other filter.
  r.sampling.temperature = 1.0f;
  r.sampling.top_p = 1.0f;
  r.sampling.top_k = 0;
  r.sampling.min_p = 0.0f;
  STRATA_RETURN_IF_ERROR(number(j, "temperature", 0.0, 2.0, r.sampling.temperature));
  STRATA_RETURN_IF_ERROR(number(j, "top_p", 0.0, 1.0, r.sampling.top_p));
  STRATA_RETURN_IF_ERROR(number(j, "min_p", 0.0, 1.0, r.sampling.min_p));
  int64_t top_k = r.sampling.top_k;
  STRATA_RETURN_IF_ERROR(integer(j, "top_k", 0, int64_t{1} << 30, top_k));
  r.sampling.top_k = static_cast<int32_t>(top_k);
  int64_t seed = -1;
  STRATA_RETURN_IF_ERROR(integer(j, "seed", -1, INT64_MAX, seed));
  if (seed >= 0) r.sampling.seed = static_cast<uint64_t>(seed);
  float presence = 0.0f, frequency = 0.0f;
  STRATA_RETURN_IF_ERROR(number(j, "presence_penalty", -2.0, 2.0, presence));
  STRATA_RETURN_IF_ERROR(number(j, "frequency_penalty", -2.0, 2.0, frequency));
  r.sampling.presence_penalty = presence;
  r.sampling.frequency_penalty = frequency;
  int64_t n_probs = -1;
  if (chat) {
    if (j.contains("logprobs") && !j["logprobs"].is_null()) {
      if (!j["logprobs"].is_boolean()) return bad("'logprobs' must be a boolean");
      if (j["logprobs"].get<bool>()) n_probs = 0;
    }
    int64_t top = -1;
    STRATA_RETURN_IF_ERROR(integer(j, "top_logprobs", 0, 20, top));
    if (top >= 0) {
      if (n_probs < 0) return bad("'top_logprobs' needs 'logprobs': true");
      n_probs = top;
    }
  } else {
    STRATA_RETURN_IF_ERROR(integer(j, "logprobs", 0, 5, n_probs));
  }
  STRATA_RETURN_IF_ERROR(integer(j, "n_probs", 0, 20, n_probs));
  r.n_probs = static_cast<int32_t>(n_probs);
  if (j.contains("stop") && !j["stop"].is_null()) {
    const json& s = j["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array() && s.size() <= 4) {
      for (const json& x : s) {
        if (!x.is_string()) return bad("'stop' must be a string or an array of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      return bad("'stop' must be a string or an array of at most 4 strings");
    }
    for (const std::string& x : r.stop) {
      if (x.empty()) return bad("'stop' strings must not be empty");
    }
  }
  return r;
}

std::string error_body(const std::string& message, const std::string& type, int code) {
  return json{{"error", {{"message", message}, {"type", type}, {"code", code}}}}.dump();
}

}  // namespace strata::serve
