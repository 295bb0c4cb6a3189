// The devices a process can use: the host CPU and the partitions it was asked to make.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/device.h"
#include "core/status.h"

namespace strata::devices {

/// Creates `n` CPU partitions of `budget_bytes` each (0: no budget) from the cores this process
/// may use (see plan_partitions), named part:0 .. part:n-1. The registry owns them for the
/// rest of the process, so the pointers never dangle. They become the partitions that
/// parse_device_list and list_devices know; asking again for the same n and budget returns
/// the same devices, asking for another layout makes a new set (the old one stays alive).
Result<std::vector<backend::Device*>> make_partitions(int n, size_t budget_bytes);

struct DeviceInfo;

/// Adds devices made by a layer above (an MPI rank's, "mpi:R"), known to parse_device_list
/// and list_devices from then on, after the host's and the partitions. The caller keeps them
/// alive for the rest of the process.
void add_devices(std::vector<std::pair<backend::Device*, DeviceInfo>> devices);

/// Resolves a comma-separated list of device names ("part:0,part:1", "cpu") against the host
/// the current partitions and the added devices. kInvalidArgument for an empty list, an
/// unknown name (listing the known ones) or a name given twice; an "mpi:" name in a process
/// that has no MPI devices says it needs mpirun.
Result<std::vector<backend::Device*>> parse_device_list(std::string_view list);

/// One device as `strata devices` shows it.
struct DeviceInfo {
  std::string name;
  backend::DeviceKind kind = backend::DeviceKind::kCpu;
  backend::DeviceMemory memory;
  size_t budget = 0;       ///< 0: no budget of its own
  std::vector<int> cores;  ///< logical CPUs it computes on
  int numa_node = -1;      ///< -1: not bound to a node
  backend::DeviceCaps caps;
  std::string where;  ///< for another process's device: "rank 1 on host-a"; else empty
};

/// The host, the current partitions, then the added devices.
std::vector<DeviceInfo> list_devices();

}  // namespace strata::devices
