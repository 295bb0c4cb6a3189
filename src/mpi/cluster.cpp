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
#include "devices/registry.h"
#include "mpi/channel.h"
#include "mpi/file_identity.h"
#include "mpi/remote_device.h"
#include "mpi/service.h"
#include "mpi/signals.h"
#include "mpi/transport.h"

namespace strata::mpi {
namespace {

struct Cluster {
  std::mutex mutex;
  bool driving = false;
  // Devices live for the process: backends and buffers anywhere may point at them.
  std::unique_ptr<devices::PartitionDevice> own;
  std::vector<std::unique_ptr<RemoteDevice>> remote;
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

backend::Device* own_device() {
  Cluster& c = cluster();
  std::lock_guard lock(c.mutex);
  return c.driving ? c.own.get() : nullptr;
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
