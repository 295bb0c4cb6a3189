// libFuzzer target: arbitrary bytes as the body of an OpenAI request to strata serve (the first
// byte picks completions or chat completions) through the request parser; a request it accepts
// then has the rest of the bytes streamed through its stop strings as token pieces of varying
// length, as the server streams generated text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/openai.h"
#include "serve/text_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = (data[0] & 1) != 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto request = strata::serve::parse_completion(body, chat);
  if (!request.ok()) return 0;
  strata::serve::TextStream stream(request->stop);
  size_t step = 1;
  for (size_t i = 0; i < body.size(); i += step, step = step % 7 + 1) {
    if (stream.add(body.substr(i, step))) break;
    (void)stream.take(false);
  }
  (void)stream.take(true);
  return 0;
}
