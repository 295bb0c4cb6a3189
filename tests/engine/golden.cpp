#include "golden.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace strata::testing {

double rms_diff(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s / static_cast<double>(a.size()));
}

std::string model_path(const std::string& file) {
  return std::string(STRATA_SHARED_DIR) + "/models/" + file;
}

std::optional<Golden> load_golden(const std::string& name, const std::string& prompt) {
  const std::string dir = std::string(STRATA_SHARED_DIR) + "/golden/logits/";
  std::ifstream js(dir + name + "." + prompt + ".json");
  if (!js) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(js);
  Golden g;
  g.model_path = model_path(j.at("model").get<std::string>());
  g.prompt = j.at("prompt").get<std::string>();
  g.prompt_tokens = j.at("prompt_tokens").get<std::vector<int32_t>>();
  g.n_vocab = j.at("n_vocab").get<int64_t>();
  g.greedy_tokens = j.at("greedy_tokens").get<std::vector<int32_t>>();
  const std::string logits_path = dir + j.at("logits_file").get<std::string>();
  const auto bytes = std::filesystem::file_size(logits_path);
  g.logits.resize(bytes / sizeof(float));
  std::ifstream lf(logits_path, std::ios::binary);
  lf.read(reinterpret_cast<char*>(g.logits.data()), static_cast<std::streamsize>(bytes));
  if (!lf || g.logits.size() != g.prompt_tokens.size() * static_cast<size_t>(g.n_vocab))
    return std::nullopt;
  return g;
}

}  // namespace strata::testing
