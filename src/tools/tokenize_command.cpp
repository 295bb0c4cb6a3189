// `strata tokenize`: a prompt's token ids under a model's vocabulary, as llama-tokenize shows them.
// Only the vocabulary is read, so vocabulary-only GGUF files work as well as full models.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "model/tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace strata::tools {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  std::string file;
  bool ids = false;
  bool no_bos = false;
  bool no_parse_special = false;
  bool help = false;
};

void add_flags(FlagSet& f, TokenizeOptions& o) {
  f.add_string({"-m", "--model"}, &o.model, "GGUF model or vocabulary-only file");
  f.add_string({"-p", "--prompt"}, &o.prompt, "text to tokenize");
  f.add_string({"-f", "--file"}, &o.file, "tokenize this file's text instead of -p");
  f.add_bool({"--ids"}, &o.ids, "print only the ids, as a JSON list");
  f.add_bool({"--no-bos"}, &o.no_bos, "add no BOS (or EOS) even where the vocabulary asks for it");
  f.add_bool({"--no-parse-special"}, &o.no_parse_special,
             "read control token texts such as <|endoftext|> as plain text");
  f.add_bool({"-h", "--help"}, &o.help, "show this help");
}

}  // namespace

int tokenize_command(const std::vector<std::string>& args) {
  TokenizeOptions o;
  FlagSet flags;
  add_flags(flags, o);
  if (Status st = flags.parse(args); !st.ok()) return report_error("tokenize", st);
  if (o.help) {
    std::printf("usage: strata tokenize -m MODEL.gguf (-p TEXT | -f FILE) [--ids] [--no-bos]\n%s",
                flags.usage().c_str());
    return 0;
  }
  if (o.model.empty()) {
    return report_error("tokenize", error(ErrorCode::kInvalidArgument,
                                          "no model given: pass a GGUF file with -m FILE.gguf"));
  }
  if (!o.file.empty()) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) {
      return report_error("tokenize",
                          error(ErrorCode::kNotFound, "cannot open text file " + o.file));
    }
    o.prompt.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  Result<gguf::File> file = gguf::File::open(o.model);
  if (!file.ok()) return report_error("tokenize", file.status());
  Result<model::Tokenizer> tokenizer = model::Tokenizer::from_gguf(*file);
  if (!tokenizer.ok()) return report_error("tokenize", tokenizer.status());

  const std::vector<int32_t> ids = tokenizer->encode(o.prompt, !o.no_bos, !o.no_parse_special);
  if (o.ids) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) line += ", ";
      line += std::to_string(ids[i]);
    }
    std::printf("%s]\n", line.c_str());
    return 0;
  }
  for (const int32_t id : ids) {
    const std::string piece = tokenizer->token_to_piece(id, /*render_special=*/true);
    std::printf("%d '%s'\n", id, piece.c_str());
  }
  return 0;
}

}  // namespace strata::tools
