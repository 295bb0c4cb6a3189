// libFuzzer target: arbitrary bytes as text to encode (with and without special-token
// parsing) and as token ids to decode, over the vocabularies of ../shared's SentencePiece
// models. Encoding never fails; decoding takes any id (out of range gives "").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/file.h"
#include "model/model.h"  // the tokenizer, wherever its header lives

namespace {

std::vector<std::unique_ptr<strata::model::Tokenizer>>& tokenizers() {
  static std::vector<std::unique_ptr<strata::model::Tokenizer>> all;
  return all;
}

void add_vocab(const std::string& path) {
  auto file = strata::gguf::File::open(path);
  if (!file.ok()) return;
  auto tok = strata::model::Tokenizer::from_gguf(*file);
  if (tok.ok()) tokenizers().push_back(std::make_unique<strata::model::Tokenizer>(std::move(*tok)));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string shared = STRATA_SHARED_DIR;
  add_vocab(shared + "/models/stories260K.gguf");
  add_vocab(shared + "/vocab/ggml-vocab-llama-spm.gguf");
  if (tokenizers().empty()) {
    std::fprintf(stderr, "fuzz_tokenizer: no vocabulary found under %s\n", shared.c_str());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the vocabulary and the options; the rest is the text.
  const uint8_t pick = data[0];
  const strata::model::Tokenizer& tok = *tokenizers()[pick % tokenizers().size()];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::vector<int32_t> ids = tok.encode(text, (pick & 2) != 0, (pick & 4) != 0);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.n_vocab()) std::abort();  // encode gives only valid ids
  }
  (void)tok.decode(ids, (pick & 8) != 0, (pick & 16) != 0);
  // The same bytes as ids, in and out of range.
  std::vector<int32_t> raw(text.size() / 4);
  if (!raw.empty()) std::memcpy(raw.data(), text.data(), raw.size() * 4);
  (void)tok.decode(raw, (pick & 8) != 0, (pick & 16) != 0);
  for (int32_t id : raw) (void)tok.is_eog(id);
  return 0;
}
