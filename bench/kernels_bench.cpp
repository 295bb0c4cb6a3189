// Google Benchmark suite for the hot CPU kernels: matrix-vector (decode) and matrix-matrix
// (prefill) products for every weight type, and the row-wise ops of a Llama block.
// Run: build/bench/strata_kernels_bench [--benchmark_filter=MulMat/q4_0]. Threads: STRATA_THREADS.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/ops.h"
#include "core/quants/interleave.h"
#include "cpu/graph_compute.h"
#include "cpu/weight_forms.h"
#include "memory/graph_allocator.h"
#include "memory/huge_page_buffer.h"

namespace {

using strata::core::Tensor;
using strata::core::Type;

int bench_threads() {
  const char* t = std::getenv("STRATA_THREADS");
  return t != nullptr ? std::max(1, std::atoi(t)) : 1;
}

// One graph with its inputs filled with random values and its memory placed.
struct Fixture {
  strata::core::Context ctx;
  strata::core::Graph graph;
  std::vector<std::unique_ptr<strata::memory::Buffer>> buffers;
  strata::memory::GraphAllocator galloc{strata::memory::host_buffer_type()};
  strata::cpu::ThreadPool pool{bench_threads()};
  std::vector<uint8_t> scratch;

  // A tensor in memory of its own: huge pages where the kernel grants them, as the engine holds
  // its weights.
  Tensor* placed(Type type, strata::core::Shape ne) {
    Tensor* t = ctx.new_tensor(type, ne);
    auto buf = strata::memory::huge_page_buffer_type().allocate(t->nbytes());
    (void)(*buf)->place(*t, 0);
    buffers.push_back(std::move(buf).value());
    return t;
  }

  Tensor* leaf(Type type, strata::core::Shape ne) {
    std::mt19937 rng(static_cast<uint32_t>(buffers.size() + 1));
    Tensor* t = placed(type, ne);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    if (type == Type::kI32) {
      auto* p = static_cast<int32_t*>(t->data);
      for (int64_t i = 0; i < t->nelements(); ++i) p[i] = static_cast<int32_t>(i);
    } else {
      std::vector<float> v(static_cast<size_t>(t->nelements()));
      for (float& x : v) x = nd(rng);
      const Type plain_type = strata::core::plain_rows_type(type);
      if (plain_type != type) {
        // Quantized as the plain type, then regrouped as the host's weight copy is at load.
        std::vector<uint8_t> plain(t->nbytes());
        strata::core::traits(plain_type).from_float(v.data(), plain.data(), t->nelements());
        (void)strata::cpu::convert_weight_rows(plain_type, type, plain.data(), t->data, t->nrows(),
                                               t->ne[0]);
      } else {
        strata::core::traits(type).from_float(v.data(), t->data, t->nelements());
      }
    }
    return t;
  }

  // A leaf holding the same bytes as `src` (a model's layers differ; their speed does not).
  Tensor* copy_of(const Tensor* src) {
    Tensor* t = placed(src->type, src->ne);
    std::memcpy(t->data, src->data, t->nbytes());
    return t;
  }

  bool finish(Tensor* out) {
    Tensor* outs[] = {out};
    graph = strata::core::build_graph(outs);
    return ctx.ok() && galloc.allocate(graph).ok();
  }

  void run(benchmark::State& state) {
    for (auto _ : state) {
      if (!strata::cpu::compute_graph(graph, pool, scratch).ok()) {
        state.SkipWithError("compute failed");
        return;
      }
    }
  }
};

// dst[M, N] = W[K, M] x X[K, N]: bytes of W per iteration tell the achieved bandwidth.
void BM_MulMat(benchmark::State& state, Type type) {
  const int64_t k = state.range(0), m = state.range(1), n = state.range(2);
  Fixture f;
  Tensor* w = f.leaf(type, {k, m, 1, 1});
  Tensor* x = f.leaf(Type::kF32, {k, n, 1, 1});
  if (!f.finish(strata::core::mul_mat(f.ctx, w, x))) {
    state.SkipWithError(f.ctx.status().message().c_str());
    return;
  }
  f.run(state);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(w->nbytes()));
  state.counters["flops"] = benchmark::Counter(
      static_cast<double>(2 * k * m * n) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

// Decode's products as the engine runs them: `layers` FFN up and down projections of a
// 2048-wide model, each layer's weights its own (tinyllama's 22 take 286 MiB as q4_0, past the
// last-level cache), every product waiting for the one before; and the same bytes in two layers
// of four times the width. Against one product from memory (MulMat/.../5632/32000/1) it shows
// what decode loses between products: on 2 Zen 5 threads (q4_0x16, two runs of 6 alternated
// rounds) the chain ran at 0.74-0.89 of the single product's median speed and 0.78-0.82 of its
// best, in a VM where the chain's time moved by up to 42% within a run.
void BM_DecodeChain(benchmark::State& state, Type type) {
  const int64_t layers = state.range(0), embd = 2048, ffn = state.range(1);
  Fixture f;
  Tensor* x = f.leaf(Type::kF32, {embd, 1, 1, 1});
  size_t bytes = 0;
  Tensor *first_up = nullptr, *first_down = nullptr;
  for (int64_t l = 0; l < layers; ++l) {
    Tensor* up = l == 0 ? f.leaf(type, {embd, ffn, 1, 1}) : f.copy_of(first_up);
    Tensor* down = l == 0 ? f.leaf(type, {ffn, embd, 1, 1}) : f.copy_of(first_down);
    if (l == 0) first_up = up, first_down = down;
    Tensor* h = strata::core::mul_mat(f.ctx, up, strata::core::rms_norm(f.ctx, x, 1e-5f));
    x = strata::core::mul_mat(f.ctx, down, h);
    bytes += up->nbytes() + down->nbytes();
  }
  if (!f.finish(x)) {
    state.SkipWithError(f.ctx.status().message().c_str());
    return;
  }
  f.run(state);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void BM_RmsNorm(benchmark::State& state) {
  Fixture f;
  Tensor* x = f.leaf(Type::kF32, {state.range(0), state.range(1), 1, 1});
  if (!f.finish(strata::core::rms_norm(f.ctx, x, 1e-5f))) return;
  f.run(state);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(x->nbytes()));
}

void BM_SoftMax(benchmark::State& state) {
  Fixture f;
  Tensor* x = f.leaf(Type::kF32, {state.range(0), state.range(1), 32, 1});
  if (!f.finish(strata::core::soft_max(f.ctx, x, nullptr, 0.125f))) return;
  f.run(state);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(x->nbytes()));
}

// A cache of rows of n_head_kv heads of hd f16 values each (one row per cell), seen as
// [hd, cells, n_head_kv]: one head's part of every row, as the engine reads K and V.
Tensor* head_view(strata::core::Context& ctx, Tensor* cache, int64_t hd, int64_t n_head_kv) {
  const int64_t cells = cache->ne[1];
  const size_t row = cache->nb[1], head = static_cast<size_t>(hd) * sizeof(uint16_t);
  return strata::core::view(ctx, cache, {hd, cells, n_head_kv, 1},
                            {cache->nb[0], row, head, row * static_cast<size_t>(cells)}, 0);
}

// One decode step's unfused attention for `layers` layers of a grouped-query model (tinyllama:
// 32 query heads over 4 KV heads of 64) at a depth of n_kv cells, the cache in f16 as the engine
// keeps it: scores, softmax, and the product with V read through its transposed view, or all
// three fused (flash_attn, the -fa path). One
// layer's cache stays in the last-level cache between iterations; tinyllama's 22 at 4096 cells
// (88 MiB) come from memory, as in the engine.
void BM_DecodeAttention(benchmark::State& state, bool fused) {
  const int64_t n_kv = state.range(0), layers = state.range(1);
  const int64_t hd = 64, n_head = 32, n_head_kv = 4;
  Fixture f;
  auto& ctx = f.ctx;
  Tensor* q = f.leaf(Type::kF32, {hd, n_head, 1, 1});
  Tensor* qp = strata::core::permute(ctx, q, {0, 2, 1, 3});
  Tensor* sum = nullptr;
  size_t bytes = 0;
  for (int64_t l = 0; l < layers; ++l) {
    Tensor* k_cache = f.leaf(Type::kF16, {hd * n_head_kv, n_kv, 1, 1});
    Tensor* v_cache = f.leaf(Type::kF16, {hd * n_head_kv, n_kv, 1, 1});
    Tensor* keys = head_view(ctx, k_cache, hd, n_head_kv);
    Tensor* values = head_view(ctx, v_cache, hd, n_head_kv);
    Tensor* kqv = nullptr;
    if (fused) {
      kqv = strata::core::flash_attn(ctx, qp, keys, values, nullptr, 0.125f);
    } else {
      Tensor* kq =
          strata::core::soft_max(ctx, strata::core::mul_mat(ctx, keys, qp), nullptr, 0.125f);
      kqv = strata::core::mul_mat(ctx, strata::core::transpose(ctx, values), kq);
    }
    sum = sum == nullptr ? kqv : strata::core::add(ctx, sum, kqv);
    bytes += k_cache->nbytes() + v_cache->nbytes();
  }
  if (!f.finish(sum)) {
    state.SkipWithError(f.ctx.status().message().c_str());
    return;
  }
  f.run(state);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

// One layer's prompt attention scores (tinyllama's 32 query heads over 4 KV heads of 64) for
// n tokens against as many cells of an f16 cache, and with `whole` the softmax and the product
// with V through its transposed view too: the unfused path of a prefill micro-batch.
void BM_PrefillAttention(benchmark::State& state, bool whole, bool masked) {
  const int64_t n = state.range(0);
  const int64_t hd = 64, n_head = 32, n_head_kv = 4;
  Fixture f;
  auto& ctx = f.ctx;
  Tensor* q = f.leaf(Type::kF32, {hd, n_head, n, 1});
  Tensor* qp = strata::core::permute(ctx, q, {0, 2, 1, 3});
  Tensor* k_cache = f.leaf(Type::kF16, {hd * n_head_kv, n, 1, 1});
  Tensor* v_cache = f.leaf(Type::kF16, {hd * n_head_kv, n, 1, 1});
  Tensor* keys = head_view(ctx, k_cache, hd, n_head_kv);
  Tensor* values = head_view(ctx, v_cache, hd, n_head_kv);
  // The causal mask of a prompt at the start of the cache, given to the scores as the engine
  // gives it: the hidden half is neither computed nor, after the softmax, multiplied by V.
  Tensor* mask = nullptr;
  if (masked) {
    mask = f.leaf(Type::kF32, {n, n, 1, 1});
    auto* m = static_cast<float*>(mask->data);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t c = 0; c < n; ++c) m[t * n + c] = c <= t ? 0.0f : -INFINITY;
    }
  }
  Tensor* out = strata::core::mul_mat(ctx, keys, qp, mask);
  if (whole) {
    out = strata::core::soft_max(ctx, out, mask, 0.125f);
    out = strata::core::mul_mat(ctx, strata::core::transpose(ctx, values), out);
  }
  if (!f.finish(out)) {
    state.SkipWithError(f.ctx.status().message().c_str());
    return;
  }
  f.run(state);
  state.counters["flops"] =
      benchmark::Counter(static_cast<double>((whole ? 4 : 2) * hd * n * n * n_head) *
                             static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void register_all() {
  const std::pair<const char*, Type> types[] = {
      {"f32", Type::kF32},         {"f16", Type::kF16},         {"bf16", Type::kBF16},
      {"q8_0", Type::kQ8_0},       {"q4_0", Type::kQ4_0},       {"q4_1", Type::kQ4_1},
      {"q5_0", Type::kQ5_0},       {"q5_1", Type::kQ5_1},       {"q2_k", Type::kQ2_K},
      {"q3_k", Type::kQ3_K},       {"q4_k", Type::kQ4_K},       {"q5_k", Type::kQ5_K},
      {"q6_k", Type::kQ6_K},       {"q4_0x16", Type::kQ4_0x16}, {"q4_kx16", Type::kQ4_Kx16},
      {"q8_0x16", Type::kQ8_0x16},
  };
  for (const auto& [name, type] : types) {
    // Decode shapes of a 2048-wide model (attention, FFN, and the output matrix, which is past
    // the last-level cache), the output matrix for four sequences decoding together, then a
    // prefill micro-batch.
    benchmark::RegisterBenchmark((std::string("MulMat/") + name).c_str(), BM_MulMat, type)
        ->Args({2048, 2048, 1})
        ->Args({2048, 5632, 1})
        ->Args({5632, 2048, 1})
        ->Args({2048, 32000, 1})
        ->Args({5632, 32000, 1})
        ->Args({5632, 32000, 4})
        ->Args({2048, 2048, 64})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  for (const auto& [name, type] :
       {std::pair{"q4_0x16", Type::kQ4_0x16}, std::pair{"q4_kx16", Type::kQ4_Kx16},
        std::pair{"q8_0x16", Type::kQ8_0x16}, std::pair{"q5_k", Type::kQ5_K},
        std::pair{"q6_k", Type::kQ6_K}}) {
    benchmark::RegisterBenchmark((std::string("DecodeChain/") + name).c_str(), BM_DecodeChain, type)
        ->Args({22, 5632})
        ->Args({2, 67584})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  // A whole prefill micro-batch (512 tokens) through the FFN's up and down projections: the
  // compute-bound case, with short and long rows.
  for (const auto& [name, type] :
       {std::pair{"f32", Type::kF32}, std::pair{"f16", Type::kF16}, std::pair{"bf16", Type::kBF16},
        std::pair{"q8_0", Type::kQ8_0}, std::pair{"q8_0x16", Type::kQ8_0x16},
        std::pair{"q4_0", Type::kQ4_0}, std::pair{"q4_0x16", Type::kQ4_0x16},
        std::pair{"q4_k", Type::kQ4_K}, std::pair{"q4_kx16", Type::kQ4_Kx16},
        std::pair{"q5_k", Type::kQ5_K}, std::pair{"q6_k", Type::kQ6_K}}) {
    benchmark::RegisterBenchmark((std::string("MulMatPrefill/") + name).c_str(), BM_MulMat, type)
        ->Args({2048, 5632, 512})
        ->Args({5632, 2048, 512})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (const bool fused : {false, true}) {
    benchmark::RegisterBenchmark(fused ? "DecodeFlashAttention" : "DecodeAttention",
                                 BM_DecodeAttention, fused)
        ->Args({1024, 1})
        ->Args({4096, 1})
        ->Args({4096, 22})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  for (const bool whole : {false, true}) {
    for (const bool masked : {false, true}) {
      const std::string name =
          std::string(whole ? "PrefillAttention" : "PrefillScores") + (masked ? "Causal" : "");
      benchmark::RegisterBenchmark(name.c_str(), BM_PrefillAttention, whole, masked)
          ->Arg(128)
          ->Arg(512)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  benchmark::RegisterBenchmark("RmsNorm", BM_RmsNorm)->Args({2048, 64})->UseRealTime();
  benchmark::RegisterBenchmark("SoftMax", BM_SoftMax)->Args({1024, 16})->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
