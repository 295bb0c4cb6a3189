#include "devices/registry.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>

#include "devices/cpu_topology.h"
#include "devices/host_device.h"
#include "devices/partition_device.h"

namespace strata::devices {
namespace {

struct PartitionSet {
  int n = 0;
  size_t budget = 0;
  std::vector<std::unique_ptr<PartitionDevice>> devices;
};

// Sets are never destroyed before exit: backends and buffers may still point at them.
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<PartitionSet>> sets;
  PartitionSet* current = nullptr;
  std::vector<std::pair<backend::Device*, DeviceInfo>> added;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

std::vector<backend::Device*> pointers(const PartitionSet& set) {
  std::vector<backend::Device*> out;
  for (const auto& d : set.devices) out.push_back(d.get());
  return out;
}

// The host and the current partitions, under the registry's lock.
std::vector<backend::Device*> known_devices(const Registry& r) {
  std::vector<backend::Device*> out{&host_device()};
  if (r.current != nullptr) {
    for (const auto& d : r.current->devices) out.push_back(d.get());
  }
  for (const auto& [d, info] : r.added) out.push_back(d);
  return out;
}

const DeviceInfo* added_info(const Registry& r, const backend::Device* d) {
  for (const auto& [dev, info] : r.added) {
    if (dev == d) return &info;
  }
  return nullptr;
}

}  // namespace

Result<std::vector<backend::Device*>> make_partitions(int n, size_t budget_bytes) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& set : r.sets) {
    if (set->n == n && set->budget == budget_bytes) {
      r.current = set.get();
      return pointers(*set);
    }
  }
  auto specs = plan_partitions(n, budget_bytes);
  if (!specs.ok()) return specs.status();
  auto set = std::make_unique<PartitionSet>();
  set->n = n;
  set->budget = budget_bytes;
  for (PartitionSpec& s : *specs)
    set->devices.push_back(std::make_unique<PartitionDevice>(std::move(s)));
  r.current = set.get();
  r.sets.push_back(std::move(set));
  return pointers(*r.current);
}

void add_devices(std::vector<std::pair<backend::Device*, DeviceInfo>> devices) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& d : devices) r.added.push_back(std::move(d));
}

Result<std::vector<backend::Device*>> parse_device_list(std::string_view list) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const std::vector<backend::Device*> known = known_devices(r);
  std::vector<backend::Device*> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view name = list.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) {
      return error(ErrorCode::kInvalidArgument,
                   "bad device list '" + std::string(list) + "': empty device name");
    }
    backend::Device* found = nullptr;
    std::string names;
    for (backend::Device* d : known) {
      if (d->name() == name) found = d;
      names += (names.empty() ? "" : ", ") + std::string(d->name());
    }
    if (found == nullptr && name.rfind("mpi:", 0) == 0 && names.find("mpi:") == std::string::npos) {
      return error(ErrorCode::kInvalidArgument,
                   "device '" + std::string(name) +
                       "' is an MPI rank's: start strata under mpirun (mpirun -np N strata ...)");
    }
    if (found == nullptr) {
      return error(ErrorCode::kInvalidArgument,
                   "unknown device '" + std::string(name) + "' (available: " + names + ")");
    }
    for (backend::Device* d : out) {
      if (d == found) {
        return error(ErrorCode::kInvalidArgument,
                     "device '" + std::string(name) + "' is listed twice");
      }
    }
    out.push_back(found);
  }
  return out;
}

std::vector<DeviceInfo> list_devices() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<DeviceInfo> out;
  for (backend::Device* d : known_devices(r)) {
    if (const DeviceInfo* added = added_info(r, d)) {
      out.push_back(*added);
      out.back().memory = d->memory();
      continue;
    }
    DeviceInfo info;
    info.name = std::string(d->name());
    info.kind = d->kind();
    info.memory = d->memory();
    info.caps = d->caps();
    if (auto* p = dynamic_cast<PartitionDevice*>(d)) {
      info.budget = p->spec().budget;
      info.cores = p->spec().cores;
      info.numa_node = p->spec().numa_node;
    } else {
      info.cores = allowed_cpus();
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace strata::devices
