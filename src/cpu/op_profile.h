// Where a run's time goes, node kind by node kind: what `strata bench --profile` prints.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "core/tensor.h"

namespace strata::cpu {

/// Wall time of the CPU graphs' nodes, summed per kind: op, node name with its layer number
/// replaced by '*', and the type of its first source (a mul_mat's weights). Graphs on several
/// devices (partitions) may add at once.
class OpProfile {
 public:
  /// One node's time: from the barrier before it to the barrier after it, on the first thread.
  void add(const core::Tensor& node, double seconds);
  /// A table, the most costly kind first: share, milliseconds and calls per unit (`units`:
  /// tokens, say), kind. Kinds under 0.1% of the total are summed in one line.
  std::string report(double units, const std::string& unit_name) const;

 private:
  struct Entry {
    double seconds = 0;
    int64_t calls = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

/// The profile compute_graph adds to, or nullptr (the default: nothing is timed).
OpProfile* active_op_profile();

/// Makes `profile` the active one for its lifetime, then none again.
class OpProfileScope {
 public:
  explicit OpProfileScope(OpProfile* profile);
  ~OpProfileScope();
  OpProfileScope(const OpProfileScope&) = delete;
  OpProfileScope& operator=(const OpProfileScope&) = delete;
};

}  // namespace strata::cpu
