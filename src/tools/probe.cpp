#include "tools/probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <immintrin.h>

namespace strata::tools {
namespace {

using Clock = std::chrono::steady_clock;

// Results land here so the compiler cannot drop the loops that produce them; the operands come
// from here so it cannot fold the arithmetic.
std::atomic<uint64_t> g_sink{0};
std::atomic<int> g_operand{3};

void sink(uint64_t v) {
  g_sink.fetch_add(v, std::memory_order_relaxed);
}

// Runs fn(i) for i < threads, thread 0 on the caller, all released at once after the others
// have started; returns the seconds from the release until the last one finished.
double timed_parallel(int threads, const std::function<void(int)>& fn) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> team;
  team.reserve(static_cast<size_t>(threads - 1));
  try {
    for (int i = 1; i < threads; ++i) {
      team.emplace_back([&, i] {
        ready.fetch_add(1, std::memory_order_acq_rel);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        fn(i);
      });
    }
  } catch (...) {
    // Joinable threads must not be destroyed: release and join those started, then report.
    go.store(true, std::memory_order_release);
    for (std::thread& t : team) t.join();
    throw;
  }
  while (ready.load(std::memory_order_acquire) < threads - 1) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  fn(0);
  for (std::thread& t : team) t.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- memory read bandwidth ----

constexpr size_t kStripe = 256;  // bytes one iteration of read_stripes consumes
constexpr size_t kHugePage = size_t{2} << 20;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using RawBuffer = std::unique_ptr<uint8_t, FreeDeleter>;

// The probes are compiled for several instruction sets in one binary (target attributes) and
// the widest this CPU has runs, as with the kernel sets (cpu/kernel_sets.h).
#define STRATA_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define STRATA_TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))
#define STRATA_TARGET_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define STRATA_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
#define STRATA_TARGET_AVX_VNNI __attribute__((target("avx2,fma,avxvnni")))

bool cpu_has(const char* what) {
  __builtin_cpu_init();
  if (std::strcmp(what, "avx2") == 0) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  if (std::strcmp(what, "avx512") == 0) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }
  if (std::strcmp(what, "avx512vnni") == 0) {
    return cpu_has("avx512") && __builtin_cpu_supports("avx512vnni");
  }
  if (std::strcmp(what, "avx512bf16") == 0) {
    return cpu_has("avx512") && __builtin_cpu_supports("avx512bf16");
  }
  if (std::strcmp(what, "avxvnni") == 0) {
    return cpu_has("avx2") && __builtin_cpu_supports("avxvnni");
  }
  return false;
}

// Each read_stripes_* sums [p, p + n) as 64-bit words; n is a multiple of kStripe, p 64-byte
// aligned. Four independent accumulators keep the adds off the critical path, so loads are the
// limit.
STRATA_TARGET_AVX512 uint64_t read_stripes_avx512(const uint8_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += kStripe) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  const __m512i s = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, s);
  uint64_t sum = 0;
  for (uint64_t v : lanes) sum += v;
  return sum;
}

STRATA_TARGET_AVX2 uint64_t read_stripes_avx2(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += kStripe) {
    for (size_t j = 0; j < kStripe; j += 128) {
      const auto* q = reinterpret_cast<const __m256i*>(p + i + j);
      a0 = _mm256_add_epi64(a0, _mm256_load_si256(q));
      a1 = _mm256_add_epi64(a1, _mm256_load_si256(q + 1));
      a2 = _mm256_add_epi64(a2, _mm256_load_si256(q + 2));
      a3 = _mm256_add_epi64(a3, _mm256_load_si256(q + 3));
    }
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

uint64_t read_stripes_scalar(const uint8_t* p, size_t n) {
  uint64_t s[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * static_cast<size_t>(k), sizeof w);
      s[k] += w;
    }
  }
  return s[0] + s[1] + s[2] + s[3];
}

uint64_t read_stripes(const uint8_t* p, size_t n) {
  static const auto fn = cpu_has("avx512") ? read_stripes_avx512
                         : cpu_has("avx2") ? read_stripes_avx2
                                           : read_stripes_scalar;
  return fn(p, n);
}

// Largest buffer we could get, halving from 1 GiB down to 256 MiB.
RawBuffer allocate_probe_buffer(size_t& bytes) {
  for (bytes = size_t{1} << 30; bytes >= (size_t{256} << 20); bytes /= 2) {
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHugePage, bytes));
    if (p != nullptr) {
      // Huge pages make the first touch cheaper and keep TLB misses out of the measurement.
      madvise(p, bytes, MADV_HUGEPAGE);
      return RawBuffer(p);
    }
  }
  return nullptr;
}

// ---- compute peak ----

// Independent accumulator chains per thread: enough to cover latency × issue width of every
// current x86 core (e.g. 4-5 cycle VNNI/FMA latency on two ports).
constexpr int kChains = 12;

struct Kernel {
  int64_t madds_per_iteration;
  const char* isa;
  void (*run)(int64_t iterations);
};

STRATA_TARGET_AVX512_VNNI void int8_chains_avx512_vnni(int64_t iterations) {
  const int v = g_operand.load(std::memory_order_relaxed);
  const __m512i a = _mm512_set1_epi8(static_cast<char>(v));
  const __m512i b = _mm512_set1_epi8(static_cast<char>(v + 1));
  __m512i acc[kChains];
  for (__m512i& x : acc) x = _mm512_setzero_si512();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (__m512i& x : acc) x = _mm512_dpbusd_epi32(x, a, b);
  }
  __m512i s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_epi32(s, acc[c]);
  // Stored rather than reduced: GCC 12's _mm512_reduce_* trip -Wuninitialized (bug 105593).
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, s);
  sink(static_cast<uint64_t>(lanes[0]));
}

STRATA_TARGET_AVX_VNNI void int8_chains_avx_vnni(int64_t iterations) {
  const int v = g_operand.load(std::memory_order_relaxed);
  const __m256i a = _mm256_set1_epi8(static_cast<char>(v));
  const __m256i b = _mm256_set1_epi8(static_cast<char>(v + 1));
  __m256i acc[kChains];
  for (__m256i& x : acc) x = _mm256_setzero_si256();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (__m256i& x : acc) x = _mm256_dpbusd_avx_epi32(x, a, b);
  }
  __m256i s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_epi32(s, acc[c]);
  sink(static_cast<uint64_t>(_mm256_extract_epi32(s, 0)));
}

// What an AVX2 int8 dot kernel does per 32 bytes: u8×s8 pair sums, widened, accumulated.
STRATA_TARGET_AVX2 void int8_chains_avx2(int64_t iterations) {
  const int v = g_operand.load(std::memory_order_relaxed);
  const __m256i a = _mm256_set1_epi8(static_cast<char>(v));
  const __m256i b = _mm256_set1_epi8(static_cast<char>(v + 1));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[kChains];
  for (__m256i& x : acc) x = _mm256_setzero_si256();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (__m256i& x : acc) {
      x = _mm256_add_epi32(x, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
    }
  }
  __m256i s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_epi32(s, acc[c]);
  sink(static_cast<uint64_t>(_mm256_extract_epi32(s, 0)));
}

void int8_chains_scalar(int64_t iterations) {
  const int v = g_operand.load(std::memory_order_relaxed);
  int32_t acc[kChains][4] = {};
  const auto a = static_cast<int8_t>(v);
  const auto b = static_cast<int8_t>(v + 1);
  for (int64_t i = 0; i < iterations; ++i) {
    for (auto& x : acc) {
      for (int32_t& lane : x) lane += a * b;
    }
  }
  sink(static_cast<uint64_t>(acc[0][0]));
}

// acc = acc × 0.5 + v converges to 2v: no overflow, no subnormals, no slow paths.
STRATA_TARGET_AVX512 void f32_chains_avx512(int64_t iterations) {
  const auto v = static_cast<float>(g_operand.load(std::memory_order_relaxed));
  const __m512 a = _mm512_set1_ps(0.5f), b = _mm512_set1_ps(v);
  __m512 acc[kChains];
  for (__m512& x : acc) x = _mm512_setzero_ps();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (__m512& x : acc) x = _mm512_fmadd_ps(x, a, b);
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  sink(static_cast<uint64_t>(lanes[0]));
}

// vdpbf16ps: 32 bf16 products a step, added in pairs into 16 f32 lanes.
STRATA_TARGET_AVX512_BF16 void bf16_chains_avx512(int64_t iterations) {
  const auto v = static_cast<float>(g_operand.load(std::memory_order_relaxed));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(v), _mm512_set1_ps(-v));
  __m512 acc[kChains];
  for (__m512& x : acc) x = _mm512_setzero_ps();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (__m512& x : acc) x = _mm512_dpbf16_ps(x, a, b);
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  sink(static_cast<uint64_t>(lanes[0]));
}

STRATA_TARGET_AVX2 void f32_chains_avx2(int64_t iterations) {
  const auto v = static_cast<float>(g_operand.load(std::memory_order_relaxed));
  const __m256 a = _mm256_set1_ps(0.5f), b = _mm256_set1_ps(v);
  __m256 acc[kChains];
  for (__m256& x : acc) x = _mm256_setzero_ps();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (__m256& x : acc) x = _mm256_fmadd_ps(x, a, b);
  }
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  sink(static_cast<uint64_t>(_mm256_cvtss_f32(s)));
}

void f32_chains_scalar(int64_t iterations) {
  const auto v = static_cast<float>(g_operand.load(std::memory_order_relaxed));
  float acc[kChains][4] = {};
  for (int64_t i = 0; i < iterations; ++i) {
    for (auto& x : acc) {
      for (float& lane : x) lane = lane * 0.5f + v;
    }
  }
  sink(static_cast<uint64_t>(acc[0][0]));
}

/// Whether the kernel set named `set` runs `feature`'s instructions on this CPU: a set forced
/// below the CPU's best (STRATA_KERNELS) is held to its own peak, not to the CPU's.
bool set_uses(std::string_view set, std::string_view feature) {
  if (!cpu_has(std::string(feature).c_str())) return false;
  if (set == "avx512vnni" || set == "native") return true;
  if (set == "avx512") return feature == "avx2" || feature == "avx512";
  if (set == "avxvnni") return feature == "avx2" || feature == "avxvnni";
  if (set == "avx2") return feature == "avx2";
  return false;
}

Kernel int8_kernel(std::string_view set) {
  if (set_uses(set, "avx512vnni")) return {kChains * 64, "avx512-vnni", int8_chains_avx512_vnni};
  if (set_uses(set, "avxvnni")) return {kChains * 32, "avx-vnni", int8_chains_avx_vnni};
  if (set_uses(set, "avx2")) return {kChains * 32, "avx2", int8_chains_avx2};
  return {kChains * 4, "scalar", int8_chains_scalar};
}

Kernel f32_kernel(std::string_view set) {
  if (set_uses(set, "avx512")) return {kChains * 16, "avx512", f32_chains_avx512};
  if (set_uses(set, "avx2")) return {kChains * 8, "avx2-fma", f32_chains_avx2};
  return {kChains * 4, "scalar", f32_chains_scalar};
}

}  // namespace

Result<BandwidthProbe> probe_read_bandwidth(int threads) {
  threads = std::max(threads, 1);
  BandwidthProbe probe;
  probe.threads = threads;
  RawBuffer buffer = allocate_probe_buffer(probe.buffer_bytes);
  if (!buffer) {
    return error(ErrorCode::kOutOfMemory,
                 "bandwidth probe: cannot allocate a 256 MiB buffer to stream");
  }
  const size_t bytes = probe.buffer_bytes;
  // Page-aligned slices; the last thread takes the rest. Each thread first touches the slice it
  // later reads, so on a NUMA machine its pages are local to it.
  const size_t slice = bytes / static_cast<size_t>(threads) / 4096 * 4096;
  const auto bounds = [&](int i) {
    const size_t begin = static_cast<size_t>(i) * slice;
    return std::pair{begin, i == threads - 1 ? bytes : begin + slice};
  };
  uint8_t* base = buffer.get();
  timed_parallel(threads, [&](int i) {
    const auto [begin, end] = bounds(i);
    std::memset(base + begin, i + 1, end - begin);
  });
  constexpr int kRuns = 3;
  double best = 0.0;
  for (int r = 0; r < kRuns; ++r) {
    const double s = timed_parallel(threads, [&](int i) {
      const auto [begin, end] = bounds(i);
      sink(read_stripes(base + begin, end - begin));
    });
    best = std::max(best, static_cast<double>(bytes) / s);
  }
  probe.bytes_per_second = best;
  probe.runs = kRuns;
  return probe;
}

ComputeProbe probe_compute_peak(ComputeKind kind, int threads, std::string_view kernel_set) {
  threads = std::max(threads, 1);
  const Kernel k = kind == ComputeKind::kInt8Dot ? int8_kernel(kernel_set)
                   : kind == ComputeKind::kBF16Dot && set_uses(kernel_set, "avx512bf16")
                       ? Kernel{kChains * 32, "avx512-bf16", bf16_chains_avx512}
                       : f32_kernel(kernel_set);
  // Calibrate on one thread so that each timed run lasts about 50 ms.
  int64_t iterations = int64_t{1} << 14;
  for (;;) {
    const auto t0 = Clock::now();
    k.run(iterations);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= 0.005) {
      iterations =
          std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iterations) * 0.05 / s));
      break;
    }
    iterations *= 4;
  }
  constexpr int kRuns = 3;
  double best = 0.0;
  for (int r = 0; r < kRuns; ++r) {
    const double s = timed_parallel(threads, [&](int) { k.run(iterations); });
    const double ops = 2.0 * static_cast<double>(k.madds_per_iteration) *
                       static_cast<double>(iterations) * threads;
    best = std::max(best, ops / s);
  }
  return {kind, best, k.isa, threads};
}

std::string compute_kind_name(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::kInt8Dot:
      return "int8 dot";
    case ComputeKind::kF32Fma:
      return "f32 fma";
    case ComputeKind::kBF16Dot:
      return "bf16 dot";
  }
  return "";
}

}  // namespace strata::tools
