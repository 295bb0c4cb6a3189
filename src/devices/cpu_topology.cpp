#include "devices/cpu_topology.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>

#include "devices/host_device.h"

#if defined(STRATA_HAVE_NUMA)
#include <numa.h>
#endif

namespace strata::devices {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < (n > 0 ? n : 1); ++c) cpus.push_back(c);
  }
  return cpus;
}

bool numa_available() {
#if defined(STRATA_HAVE_NUMA)
  static const bool available = ::numa_available() >= 0;
  return available;
#else
  return false;
#endif
}

int numa_node_of_cpu(int cpu) {
#if defined(STRATA_HAVE_NUMA)
  if (numa_available()) {
    const int node = ::numa_node_of_cpu(cpu);
    return node >= 0 ? node : 0;
  }
#endif
  (void)cpu;
  return 0;
}

backend::DeviceMemory numa_node_memory(int node) {
#if defined(STRATA_HAVE_NUMA)
  if (numa_available() && node >= 0) {
    long long free_bytes = 0;
    const long long total = numa_node_size64(node, &free_bytes);
    if (total > 0) {
      return {static_cast<size_t>(free_bytes > 0 ? free_bytes : 0), static_cast<size_t>(total)};
    }
  }
#endif
  (void)node;
  return host_device().memory();
}

bool pin_current_thread(std::span<const int> cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return false;
    CPU_SET(c, &set);
  }
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

void* allocate_pages(size_t size, int node) {
#if defined(STRATA_HAVE_NUMA)
  if (node >= 0 && numa_available()) return numa_alloc_onnode(size, node);
#endif
  (void)node;
  return std::aligned_alloc(4096, size);
}

void free_pages(void* p, size_t size, int node) {
  if (p == nullptr) return;
#if defined(STRATA_HAVE_NUMA)
  if (node >= 0 && numa_available()) {
    numa_free(p, size);
    return;
  }
#endif
  (void)size;
  (void)node;
  std::free(p);
}

}  // namespace strata::devices
