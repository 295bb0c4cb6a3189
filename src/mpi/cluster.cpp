#include "mpi/cluster.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "devices/cpu_topology.h"
#include "devices/partition_device.h"
#include "devices/partition_plan.h"
#include "devices/registry.h"
#include "mpi/channel.h"
#include "mpi/file_identity.h"
#include "mpi/remote_device.h"
#include "mpi/service.h"
#include "mpi/signals.h"
#include "mpi/transport.h"

namespace strata::mpi {
namespace {

struct Layout {
  int n = 0;
  size_t budget = 0;
  std::vector<backend::Device*> devices;
};

struct Cluster {
  std::mutex mutex;
  bool driving = false;
  // Devices live for the process: backends and buffers anywhere may point at them.
  std::unique_ptr<devices::PartitionDevice> own;
  std::vector<std::unique_ptr<devices::PartitionDevice>> own_parts;
  std::vector<std::unique_ptr<RemoteDevice>> remote;  // mpi:R, R = 1..size-1
  std::vector<std::unique_ptr<RemoteDevice>> remote_parts;
  std::vector<int> next_queue;  // per rank
  std::vector<Layout> layouts;
  std::jthread listener;
};

Cluster& cluster() {
  static Cluster c;
  return c;
}

// Rank 0's ear: signals the ranks report and their heartbeats; ranks gone silent fail every
// signal still expected from them.
void listen(std::stop_token stop) {
  auto idle = [&stop] {
    for (int r : find_dead()) fail_signals(r, alive(r));
    return !stop.stop_requested();
  };
  for (;;) {
    AsyncMessage m;
    int from = -1;
    auto got = recv_any(kTagAsync, &m, sizeof m, &from, idle);
    if (!got.ok() || !*got) return;
    heard_from(from);
    if (m.kind == AsyncMessage::kSignalled) signalled(m.token, m.status.to_status());
  }
}

}  // namespace

Result<std::optional<int>> start(int* argc, char*** argv) {
  if (!launched_by_mpirun()) return std::optional<int>();
  STRATA_RETURN_IF_ERROR(init(argc, argv));
  if (rank() != 0) return std::optional<int>(serve());
  Cluster& c = cluster();
  std::lock_guard lock(c.mutex);
  std::vector<std::pair<backend::Device*, devices::DeviceInfo>> listed;
  devices::PartitionSpec own;
  own.cores = devices::allowed_cpus();
  own.name = "mpi:0";
  c.own = std::make_unique<devices::PartitionDevice>(own);
  devices::DeviceInfo info0;
  info0.name = "mpi:0";
  info0.kind = c.own->kind();
  info0.cores = own.cores;
  info0.caps = c.own->caps();
  info0.where = "rank 0 on " + host_name();
  listed.emplace_back(c.own.get(), info0);
  for (int r = 1; r < size(); ++r) {
    Command hello;
    hello.kind = CommandKind::kHello;
    Hello h;
    STRATA_RETURN_IF_ERROR(ask(r, hello, nullptr, 0, &h, sizeof h));
    auto dev = std::make_unique<RemoteDevice>(r, h);
    devices::DeviceInfo info;
    info.name = std::string(dev->name());
    info.kind = dev->kind();
    info.caps = dev->caps();
    info.where =
        "rank " + std::to_string(r) + " on " + std::string(h.host, strnlen(h.host, sizeof h.host));
    // The rank's logical CPU numbers (on its host).
    info.cores.assign(h.cpus, h.cpus + std::min(h.cores, Hello::kMaxCpus));
    listed.emplace_back(dev.get(), std::move(info));
    c.remote.push_back(std::move(dev));
  }
  devices::add_devices(std::move(listed));
  c.next_queue.assign(static_cast<size_t>(size()), 1);
  for (int r = 1; r < size(); ++r) heard_from(r);
  c.listener = std::jthread(listen);
  c.driving = true;
  std::atexit(stop);
  return std::optional<int>();
}

void stop() {
  Cluster& c = cluster();
  std::lock_guard lock(c.mutex);
  if (!c.driving) return;
  c.driving = false;
  Command bye;
  bye.kind = CommandKind::kShutdown;
  // Every partition's queue first: the rank's whole-CPU queue then ends the rank.
  for (const auto& d : c.remote_parts) {
    Command part = bye;
    part.queue = d->queue();
    (void)post(d->rank(), part);
  }
  for (int r = 1; r < size(); ++r) (void)post(r, bye);
  if (c.listener.joinable()) {
    c.listener.request_stop();
    c.listener.join();
  }
  finalize();
}

bool driving() {
  Cluster& c = cluster();
  std::lock_guard lock(c.mutex);
  return c.driving;
}

bool is_own_device(const backend::Device* d) {
  Cluster& c = cluster();
  std::lock_guard lock(c.mutex);
  if (!c.driving || d == nullptr) return false;
  if (d == c.own.get()) return true;
  for (const auto& p : c.own_parts) {
    if (d == p.get()) return true;
  }
  return false;
}

Result<std::vector<backend::Device*>> make_partitions(int n, size_t budget) {
  Cluster& c = cluster();
  std::lock_guard lock(c.mutex);
  if (!c.driving) {
    return error(ErrorCode::kInvalidArgument,
                 "mpi:R/part:K devices need mpirun (mpirun -np N strata ...)");
  }
  for (const Layout& l : c.layouts) {
    if (l.n == n && l.budget == budget) return l.devices;
  }
  auto plan = devices::plan_partitions(n, budget);
  if (!plan.ok()) return plan.status().with_context("mpi:0");
  Layout layout{n, budget, {}};
  std::vector<std::pair<backend::Device*, devices::DeviceInfo>> listed;
  for (devices::PartitionSpec spec : *plan) {
    spec.name = "mpi:0/part:" + std::to_string(spec.index);
    auto dev = std::make_unique<devices::PartitionDevice>(spec);
    devices::DeviceInfo info;
    info.name = spec.name;
    info.kind = dev->kind();
    info.cores = spec.cores;
    info.budget = spec.budget;
    info.numa_node = spec.numa_node;
    info.caps = dev->caps();
    info.where = "rank 0 on " + host_name();
    listed.emplace_back(dev.get(), std::move(info));
    layout.devices.push_back(dev.get());
    c.own_parts.push_back(std::move(dev));
  }
  for (const auto& whole : c.remote) {
    const int r = whole->rank();
    const int first = c.next_queue[static_cast<size_t>(r)];
    Command make;
    make.kind = CommandKind::kMakePartitions;
    make.v[0] = static_cast<uint64_t>(n);
    make.v[1] = budget;
    make.v[2] = static_cast<uint64_t>(first);
    make.reply_tag = next_tag();
    WireStatus w;
    STRATA_RETURN_IF_ERROR(post(r, make));
    STRATA_RETURN_IF_ERROR(recv(r, make.reply_tag, &w, sizeof w));
    STRATA_RETURN_IF_ERROR(w.to_status().with_context(std::string(whole->name())));
    std::vector<PartitionInfo> parts(static_cast<size_t>(n));
    STRATA_RETURN_IF_ERROR(
        recv(r, make.reply_tag, parts.data(), parts.size() * sizeof(PartitionInfo)));
    c.next_queue[static_cast<size_t>(r)] = first + n;
    for (int k = 0; k < n; ++k) {
      const PartitionInfo& p = parts[static_cast<size_t>(k)];
      std::vector<int> cores(p.cpus, p.cpus + std::min(p.cores, Hello::kMaxCpus));
      auto dev = std::make_unique<RemoteDevice>(r, whole->hello(), k, first + k, cores, budget);
      devices::DeviceInfo info;
      info.name = std::string(dev->name());
      info.kind = dev->kind();
      info.caps = dev->caps();
      info.cores = std::move(cores);
      info.budget = budget;
      const Hello& h = whole->hello();
      info.where = "rank " + std::to_string(r) + " on " +
                   std::string(h.host, strnlen(h.host, sizeof h.host));
      listed.emplace_back(dev.get(), std::move(info));
      layout.devices.push_back(dev.get());
      c.remote_parts.push_back(std::move(dev));
    }
  }
  devices::add_devices(std::move(listed));
  c.layouts.push_back(layout);
  return layout.devices;
}

Status check_same_file(const std::string& path, uint64_t head_bytes) {
  if (!driving()) return {};
  auto mine = identify_file(path, head_bytes);
  if (!mine.ok()) return mine.status();
  for (int r = 1; r < size(); ++r) {
    Command c;
    c.kind = CommandKind::kCheckFile;
    c.v[0] = mine->size;
    c.v[1] = mine->hashed;
    c.v[2] = mine->hash;
    Status st = ask_status(r, c, path.data(), path.size());
    if (!st.ok()) {
      return error(ErrorCode::kInvalidArgument,
                   "mpi:" + std::to_string(r) + " (rank " + std::to_string(r) +
                       ") does not see the same '" + path + "' as rank 0: " + st.message() +
                       " (every rank must open the same model file)");
    }
  }
  return {};
}

}  // namespace strata::mpi
