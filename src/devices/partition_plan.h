// How the host's cores (and NUMA nodes) are divided into partition devices.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace strata::devices {

/// One partition: which cores it computes on, which memory it uses, how much of it.
struct PartitionSpec {
  int index = 0;           ///< N in its name "part:N"
  std::vector<int> cores;  ///< logical CPUs, at least one; its worker team has one thread each
  int numa_node = -1;      ///< node its memory comes from; -1: not bound (one-node machine)
  size_t budget = 0;       ///< bytes it may allocate; 0: no budget beyond the host's memory
  std::string name;        ///< its device name; empty: "part:N"
};

/// Splits the cores this process may use into `n` partitions of `budget` bytes each. Cores
/// are ordered by NUMA node and divided evenly (sizes differ by at most one), so on a machine
/// with n nodes of equal size each partition is one node; a partition whose cores all lie on
/// one node of a multi-node machine is bound to it. With more partitions than cores, each gets
/// one core, shared round-robin (up to 4 a core). kInvalidArgument when n < 1 or beyond that.
Result<std::vector<PartitionSpec>> plan_partitions(int n, size_t budget);

/// "0-3,8" for messages and listings.
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace strata::devices
