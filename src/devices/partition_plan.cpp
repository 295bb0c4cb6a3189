#include "devices/partition_plan.h"

#include <algorithm>
#include <set>
#include <utility>

#include "devices/cpu_topology.h"

namespace strata::devices {

Result<std::vector<PartitionSpec>> plan_partitions(int n, size_t budget) {
  std::vector<std::pair<int, int>> by_node;  // (node, cpu)
  for (int cpu : allowed_cpus()) by_node.emplace_back(numa_node_of_cpu(cpu), cpu);
  const int n_cores = static_cast<int>(by_node.size());
  if (n < 1) {
    return error(ErrorCode::kInvalidArgument,
                 "partition count " + std::to_string(n) + " must be at least 1");
  }
  if (n > 4 * n_cores) {
    return error(ErrorCode::kInvalidArgument,
                 "cannot make " + std::to_string(n) + " partitions: this process may use " +
                     std::to_string(n_cores) + " cores (at most 4 partitions a core)");
  }
  std::stable_sort(by_node.begin(), by_node.end());
  std::set<int> nodes;
  for (const auto& [node, cpu] : by_node) nodes.insert(node);
  const bool multi_node = nodes.size() > 1;

  std::vector<PartitionSpec> specs(static_cast<size_t>(n));
  if (n > n_cores) {
    // More partitions than cores: each gets one core, shared round-robin. Slower than a real
    // split, but every multi-device path still runs with real concurrency (small machines, CI).
    for (int i = 0; i < n; ++i) {
      PartitionSpec& s = specs[static_cast<size_t>(i)];
      s.index = i;
      s.budget = budget;
      s.cores.push_back(by_node[static_cast<size_t>(i % n_cores)].second);
    }
    return specs;
  }
  size_t next = 0;
  for (int i = 0; i < n; ++i) {
    PartitionSpec& s = specs[static_cast<size_t>(i)];
    s.index = i;
    s.budget = budget;
    const int count = n_cores / n + (i < n_cores % n ? 1 : 0);
    std::set<int> spanned;
    for (int k = 0; k < count; ++k, ++next) {
      s.cores.push_back(by_node[next].second);
      spanned.insert(by_node[next].first);
    }
    if (multi_node && spanned.size() == 1) s.numa_node = *spanned.begin();
  }
  return specs;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace strata::devices
