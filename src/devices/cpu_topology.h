// What the devices layer needs to know about the host's cores and NUMA nodes.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "backend/device.h"

namespace strata::devices {

/// Logical CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowed_cpus();

/// True when strata was built with libnuma and the kernel supports NUMA.
bool numa_available();

/// The NUMA node of logical CPU `cpu`; 0 without NUMA support.
int numa_node_of_cpu(int cpu);

/// Memory of NUMA node `node`; the whole host's without NUMA support.
backend::DeviceMemory numa_node_memory(int node);

/// Restricts the calling thread to `cpus`. False (and the thread left as it was) when the
/// OS refuses, e.g. a CPU outside the process's cpuset.
bool pin_current_thread(std::span<const int> cpus);

/// `size` bytes (a multiple of the page size), page-aligned, from NUMA node `node` when
/// `node` >= 0 and NUMA is available, else from the ordinary allocator. Null on failure.
void* allocate_pages(size_t size, int node);
/// Frees what allocate_pages(size, node) returned.
void free_pages(void* p, size_t size, int node);

}  // namespace strata::devices
