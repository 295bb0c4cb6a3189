// Tokenizer throughput (bytes of text per second) for the SPM and BPE vocabularies in
// ../shared/vocab, on about 1 MiB of text: the shared design notes and llama.cpp's tokenizer test
// inputs (prose, code, many scripts, emoji), repeated. STRATA_BENCH_TEXT=FILE measures on that
// file instead. Run: build/bench/strata_tokenizer_bench [--benchmark_filter=gpt-2].
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "model/tokenizer/tokenizer.h"

namespace {

const std::string kShared = STRATA_SHARED_DIR;

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string& bench_text() {
  static const std::string text = [] {
    if (const char* path = std::getenv("STRATA_BENCH_TEXT")) return read_all(path);
    std::string seed;
    for (const char* name : {"DESIGN.md", "README.md", "STYLE.md"})
      seed += read_all(kShared + "/" + name);
    for (const auto& entry : std::filesystem::directory_iterator(kShared + "/vocab")) {
      if (entry.path().extension() == ".inp") seed += read_all(entry.path());
    }
    std::string out;
    if (seed.empty()) return out;
    while (out.size() < (size_t{1} << 20)) out += seed;
    return out;
  }();
  return text;
}

void encode(benchmark::State& state, const std::string& vocab) {
  const std::string path = kShared + "/vocab/ggml-vocab-" + vocab + ".gguf";
  auto file = strata::gguf::File::open(path);
  if (!file.ok()) {
    state.SkipWithError(file.status().message().c_str());
    return;
  }
  auto tokenizer = strata::model::Tokenizer::from_gguf(*file);
  if (!tokenizer.ok()) {
    state.SkipWithError(tokenizer.status().message().c_str());
    return;
  }
  const std::string& text = bench_text();
  size_t tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = tokenizer->encode(text, true);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["text_bytes"] = static_cast<double>(text.size());
  state.counters["tokens"] = static_cast<double>(tokens);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* vocab : {"llama-spm", "gpt-2", "deepseek-llm"}) {
    benchmark::RegisterBenchmark(("encode/" + std::string(vocab)).c_str(), encode,
                                 std::string(vocab))
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
