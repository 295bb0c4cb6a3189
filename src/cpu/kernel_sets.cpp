#include "cpu/kernel_sets.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include "cpu/kernels/dispatch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

// Each set's table, from the objects CMake built for it (STRATA_KERNELS_<SET> says which).
#if defined(STRATA_KERNELS_NATIVE)
namespace strata::cpu::native {
extern const KernelSet kKernelSet;
}
#endif
#if defined(STRATA_KERNELS_AVX512VNNI)
namespace strata::cpu::avx512vnni {
extern const KernelSet kKernelSet;
}
#endif
#if defined(STRATA_KERNELS_AVX512)
namespace strata::cpu::avx512 {
extern const KernelSet kKernelSet;
}
#endif
#if defined(STRATA_KERNELS_AVXVNNI)
namespace strata::cpu::avxvnni {
extern const KernelSet kKernelSet;
}
#endif
#if defined(STRATA_KERNELS_AVX2)
namespace strata::cpu::avx2 {
extern const KernelSet kKernelSet;
}
#endif
#if defined(STRATA_KERNELS_SCALAR)
namespace strata::cpu::scalar {
extern const KernelSet kKernelSet;
}
#endif

namespace strata::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// Whether the OS saves the register state in `mask` (XCR0) on a context switch: a CPU with
// AVX-512 under an OS that does not save zmm registers must not run the AVX-512 kernels.
bool os_saves(unsigned mask) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_OSXSAVE) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & mask) == mask;
}
constexpr unsigned kYmmState = 0x6;   // SSE and AVX state
constexpr unsigned kZmmState = 0xe6;  // plus opmask and both halves of the zmm registers

// The -march levels the sets are compiled for (src/cpu/CMakeLists.txt): x86-64-v3 is AVX2,
// FMA, F16C, BMI1/2, LZCNT and MOVBE; x86-64-v4 adds AVX-512 F, BW, CD, DQ and VL.
[[maybe_unused]] bool runs_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3") && os_saves(kYmmState);
}
[[maybe_unused]] bool runs_avxvnni() {
  return runs_avx2() && __builtin_cpu_supports("avxvnni");
}
[[maybe_unused]] bool runs_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4") && os_saves(kZmmState);
}
[[maybe_unused]] bool runs_avx512vnni() {
  return runs_avx512() && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi");
}
#endif
[[maybe_unused]] bool runs_always() {
  return true;
}

struct Candidate {
  const KernelSet* set;
  bool (*runs)();
  const char* needs;
};

// Best first: the first one the CPU runs is the default.
const Candidate kCandidates[] = {
#if defined(STRATA_KERNELS_NATIVE)
    {&native::kKernelSet, runs_always, "the build machine's instructions (-march=native)"},
#endif
#if defined(STRATA_KERNELS_AVX512VNNI)
    {&avx512vnni::kKernelSet, runs_avx512vnni, "AVX-512 F/BW/CD/DQ/VL, VNNI, BF16 and VBMI"},
#endif
#if defined(STRATA_KERNELS_AVX512)
    {&avx512::kKernelSet, runs_avx512, "AVX-512 F/BW/CD/DQ/VL (x86-64-v4)"},
#endif
#if defined(STRATA_KERNELS_AVXVNNI)
    {&avxvnni::kKernelSet, runs_avxvnni, "AVX2, FMA, F16C (x86-64-v3) and AVX-VNNI"},
#endif
#if defined(STRATA_KERNELS_AVX2)
    {&avx2::kKernelSet, runs_avx2, "AVX2, FMA and F16C (x86-64-v3)"},
#endif
#if defined(STRATA_KERNELS_SCALAR)
    {&scalar::kKernelSet, runs_always, "any x86-64"},
#endif
};

const KernelSet* best() {
  for (const Candidate& c : kCandidates) {
    if (c.runs()) return c.set;
  }
  return kCandidates[std::size(kCandidates) - 1].set;
}

const Candidate* find(std::string_view name) {
  for (const Candidate& c : kCandidates) {
    if (name == c.set->name) return &c;
  }
  return nullptr;
}

std::string names() {
  std::string s;
  for (const Candidate& c : kCandidates) s += (s.empty() ? "" : ", ") + std::string(c.set->name);
  return s;
}

const KernelSet* from_environment() {
  const char* want = std::getenv("STRATA_KERNELS");
  const KernelSet* fallback = best();
  if (want == nullptr || *want == '\0') return fallback;
  const Candidate* c = find(want);
  if (c == nullptr) {
    std::fprintf(stderr,
                 "strata: STRATA_KERNELS=%s: no such kernel set in this build (%s); using %s\n",
                 want, names().c_str(), fallback->name);
    return fallback;
  }
  if (!c->runs()) {
    std::fprintf(stderr, "strata: STRATA_KERNELS=%s: this CPU lacks %s; using %s\n", want, c->needs,
                 fallback->name);
    return fallback;
  }
  return c->set;
}

std::atomic<const KernelSet*>& active() {
  static std::atomic<const KernelSet*> set{from_environment()};
  return set;
}

}  // namespace

const KernelSet& kernel_set() {
  return *active().load(std::memory_order_acquire);
}

std::vector<KernelSetInfo> kernel_sets() {
  std::vector<KernelSetInfo> out;
  for (const Candidate& c : kCandidates) out.push_back({c.set, c.runs(), c.needs});
  return out;
}

Status use_kernel_set(std::string_view name) {
  const Candidate* c = find(name);
  if (c == nullptr) {
    return error(ErrorCode::kUnsupported,
                 "kernel set " + std::string(name) + ": not in this build (" + names() + ")");
  }
  if (!c->runs()) {
    return error(ErrorCode::kUnsupported,
                 "kernel set " + std::string(name) + ": this CPU lacks " + c->needs);
  }
  active().store(c->set, std::memory_order_release);
  return {};
}

Status check_node(const core::Tensor& node) {
  return kernel_set().check_node(node);
}

size_t work_size(const core::Tensor& node, int n_threads) {
  return kernel_set().work_size(node, n_threads);
}

Status compute_node(const core::Tensor& node, const KernelArgs& args) {
  return kernel_set().compute_node(node, args);
}

bool shares_converted_input(const core::Tensor& first, const core::Tensor& next) {
  return kernel_set().shares_converted_input(first, next);
}

}  // namespace strata::cpu
