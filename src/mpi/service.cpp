#include "mpi/service.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cpu/graph_compute.h"
#include "cpu/thread_pool.h"
#include "devices/cpu_topology.h"
#include "devices/host_device.h"
#include "devices/partition_plan.h"
#include "memory/buffer.h"
#include "mpi/file_identity.h"
#include "mpi/protocol.h"
#include "mpi/transport.h"
#include "mpi/wire_graph.h"

namespace strata::mpi {
namespace {

struct Graph {
  DecodedGraph decoded;
  std::vector<Placement> placements;
};

// One rank's device: its buffers, the graphs rank 0 defined, the files it reads weights
// from, and the first error since rank 0 last asked (later work is skipped until then).
class Service {
 public:
  Service() : pool_(std::max<int>(1, static_cast<int>(devices::allowed_cpus().size()))) {}
  ~Service() {
    for (auto& [path, fd] : files_) ::close(fd);
  }

  // False once told to stop.
  bool handle(const Command& c, std::string& payload);

 private:
  Status keep(Status st) {
    if (error_.ok() && !st.ok()) error_ = st;
    return st;
  }
  Status reply(const Command& c, const Status& st) {
    const WireStatus w = WireStatus::from(st);
    return send(0, c.reply_tag, &w, sizeof w);
  }
  // The bytes [offset, offset + size) of buffer `id`, or an error naming what is wrong.
  Result<uint8_t*> span(uint64_t id, uint64_t offset, uint64_t size) const;
  Status run(const Command& c, std::string_view changes);
  Status load(const Command& c, const std::string& path);
  int file(const std::string& path);

  cpu::ThreadPool pool_;
  std::vector<uint8_t> scratch_;
  std::unordered_map<uint64_t, std::unique_ptr<memory::Buffer>> buffers_;
  std::unordered_map<uint64_t, Graph> graphs_;
  std::unordered_map<std::string, int> files_;
  Status error_;
};

Result<uint8_t*> Service::span(uint64_t id, uint64_t offset, uint64_t size) const {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) {
    return error(ErrorCode::kInternal,
                 "mpi:" + std::to_string(rank()) + ": no buffer " + std::to_string(id));
  }
  const memory::Buffer& b = *it->second;
  if (offset > b.size() || size > b.size() - offset) {
    return error(ErrorCode::kInternal, "mpi:" + std::to_string(rank()) + ": bytes " +
                                           std::to_string(offset) + "+" + std::to_string(size) +
                                           " are outside buffer " + std::to_string(id));
  }
  return static_cast<uint8_t*>(b.base()) + offset;
}

int Service::file(const std::string& path) {
  if (auto it = files_.find(path); it != files_.end()) return it->second;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) files_[path] = fd;
  return fd;
}

Status Service::load(const Command& c, const std::string& path) {
  auto dst = span(c.v[0], c.v[1], c.v[3]);
  if (!dst.ok()) return dst.status();
  const int fd = file(path);
  if (fd < 0) {
    return error(ErrorCode::kIo, "mpi:" + std::to_string(rank()) + ": cannot open '" + path +
                                     "': " + std::strerror(errno));
  }
  for (uint64_t done = 0; done < c.v[3];) {
    const ssize_t got = ::pread(fd, *dst + done, c.v[3] - done, static_cast<off_t>(c.v[2] + done));
    if (got <= 0) {
      return error(ErrorCode::kIo, "mpi:" + std::to_string(rank()) + ": '" + path +
                                       "' ends before byte " + std::to_string(c.v[2] + c.v[3]));
    }
    done += static_cast<uint64_t>(got);
  }
  return {};
}

Status Service::run(const Command& c, std::string_view changes) {
  auto it = graphs_.find(c.v[0]);
  if (it == graphs_.end()) {
    return error(ErrorCode::kInternal,
                 "mpi:" + std::to_string(rank()) + ": no graph " + std::to_string(c.v[0]));
  }
  Graph& g = it->second;
  STRATA_RETURN_IF_ERROR(apply_changes(changes, g.placements));
  if (g.placements.size() != g.decoded.tensors.size()) {
    return error(ErrorCode::kMalformed, "mpi: placements do not match the graph");
  }
  for (size_t i = 0; i < g.placements.size(); ++i) {
    core::Tensor& t = g.decoded.tensors[i];
    const Placement& p = g.placements[i];
    if (p.buffer == 0) {
      t.data = nullptr;
      t.buffer = nullptr;
      continue;
    }
    auto at = span(p.buffer, p.offset, t.nbytes());
    if (!at.ok()) return at.status().with_context("tensor '" + t.name + "'");
    t.data = *at;
    t.buffer = buffers_.at(p.buffer).get();
  }
  return cpu::compute_graph(g.decoded.graph, pool_, scratch_)
      .with_context("mpi:" + std::to_string(rank()));
}

bool Service::handle(const Command& c, std::string& payload) {
  const auto& v = c.v;
  switch (c.kind) {
    case CommandKind::kHello: {
      Hello h;
      const backend::DeviceMemory m = devices::host_device().memory();
      h.memory_total = m.total;
      h.memory_free = m.free;
      const std::vector<int> cpus = devices::allowed_cpus();
      h.cores = static_cast<int32_t>(cpus.size());
      for (size_t i = 0; i < cpus.size() && i < Hello::kMaxCpus; ++i) h.cpus[i] = cpus[i];
      const std::string host = host_name();
      std::strncpy(h.host, host.c_str(), sizeof h.host - 1);
      (void)send(0, c.reply_tag, &h, sizeof h);
      return true;
    }
    case CommandKind::kAlloc: {
      auto buf = memory::host_buffer_type().allocate(v[1]);
      if (buf.ok()) {
        std::memset((*buf)->base(), 0, (*buf)->size());
        buffers_[v[0]] = std::move(buf).value();
      }
      (void)reply(c, buf.ok() ? Status() : buf.status());
      return true;
    }
    case CommandKind::kFree:
      buffers_.erase(v[0]);
      return true;
    case CommandKind::kZero:
      if (auto it = buffers_.find(v[0]); it != buffers_.end()) {
        std::memset(it->second->base(), 0, it->second->size());
      }
      return true;
    case CommandKind::kWrite: {
      // The bytes came with the command; rank 0 sends them straight into place when it can.
      auto dst = span(v[0], v[1], payload.size());
      if (keep(dst.status()).ok()) std::memcpy(*dst, payload.data(), payload.size());
      return true;
    }
    case CommandKind::kLoad:
      (void)reply(c, load(c, payload));
      return true;
    case CommandKind::kRead: {
      auto src = span(v[0], v[1], v[2]);
      (void)reply(c, src.status());
      if (src.ok()) (void)send(0, c.reply_tag, *src, v[2]);
      return true;
    }
    case CommandKind::kCopy: {
      auto dst = span(v[0], v[1], v[4]);
      auto src = span(v[2], v[3], v[4]);
      if (keep(dst.status()).ok() && keep(src.status()).ok()) std::memmove(*dst, *src, v[4]);
      return true;
    }
    case CommandKind::kSendTo: {
      auto src = span(v[0], v[1], v[2]);
      if (!keep(src.status()).ok()) {
        // The receiver waits for these bytes whatever happened here.
        const std::vector<uint8_t> zeros(v[2]);
        (void)send(static_cast<int>(v[3]), static_cast<int>(v[4]), zeros.data(), zeros.size());
        return true;
      }
      (void)keep(send(static_cast<int>(v[3]), static_cast<int>(v[4]), *src, v[2]));
      return true;
    }
    case CommandKind::kRecvFrom: {
      auto dst = span(v[0], v[1], v[2]);
      std::vector<uint8_t> discard;
      uint8_t* into = dst.ok() ? *dst : (discard.resize(v[2]), discard.data());
      (void)keep(dst.status());
      (void)keep(recv(static_cast<int>(v[3]), static_cast<int>(v[4]), into, v[2]));
      return true;
    }
    case CommandKind::kDefineGraph: {
      auto g = decode_graph(payload);
      if (!keep(g.status()).ok()) return true;
      graphs_[v[0]] = Graph{std::move(g).value(), {}};
      return true;
    }
    case CommandKind::kRunGraph:
      if (error_.ok()) (void)keep(run(c, payload));
      return true;
    case CommandKind::kDropGraph:
      graphs_.erase(v[0]);
      return true;
    case CommandKind::kSignal: {
      AsyncMessage m;
      m.kind = AsyncMessage::kSignalled;
      m.token = v[0];
      m.status = WireStatus::from(error_);
      (void)send(0, kTagAsync, &m, sizeof m);
      return true;
    }
    case CommandKind::kSync:
      (void)reply(c, error_);
      error_ = Status();
      return true;
    case CommandKind::kCheckFile: {
      auto id = identify_file(payload, v[1]);
      Status st = id.status();
      if (id.ok() && (id->size != v[0] || id->hash != v[2])) {
        st = error(ErrorCode::kInvalidArgument, id->size != v[0]
                                                    ? "its copy has " + std::to_string(id->size) +
                                                          " bytes, not " + std::to_string(v[0])
                                                    : "its copy's header and tensor table differ");
      }
      (void)reply(c, st);
      return true;
    }
    case CommandKind::kShutdown:
      return false;
    case CommandKind::kMakeGroup: {
      std::vector<int> ranks(payload.size() / sizeof(int32_t));
      std::memcpy(ranks.data(), payload.data(), ranks.size() * sizeof(int32_t));
      (void)keep(make_group(v[0], ranks));
      return true;
    }
    case CommandKind::kFreeGroup:
      free_group(v[0]);
      return true;
    case CommandKind::kAllReduce: {
      // Every member must take part, whatever went wrong here before: the others wait for it.
      uint64_t n = 0;
      if (payload.size() == sizeof n) std::memcpy(&n, payload.data(), sizeof n);
      auto src = span(v[1], v[2], n * sizeof(float));
      auto dst = span(v[3], v[4], n * sizeof(float));
      std::vector<float> stand_in;
      if (!src.ok() || !dst.ok()) {
        (void)keep(src.ok() ? dst.status() : src.status());
        stand_in.assign(n, 0.0f);
      }
      const float* from =
          src.ok() && dst.ok() ? reinterpret_cast<const float*>(*src) : stand_in.data();
      float* into = src.ok() && dst.ok() ? reinterpret_cast<float*>(*dst) : stand_in.data();
      (void)keep(all_reduce(v[0], from, into, n));
      return true;
    }
  }
  return true;
}

}  // namespace

int serve() {
  // mpirun hands ^C to every rank: rank 0 ends the run and then tells this one to stop.
  std::signal(SIGINT, SIG_IGN);
  std::jthread heartbeat([](std::stop_token stop) {
    mark_heartbeat_thread();
    const AsyncMessage beat;
    while (!stop.stop_requested()) {
      if (!send(0, kTagAsync, &beat, sizeof beat).ok()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  auto service = std::make_unique<Service>();
  std::string payload;
  for (;;) {
    Command c;
    if (!recv(0, kTagCommand, &c, sizeof c).ok()) break;
    payload.resize(c.payload);
    if (c.payload != 0 && !recv(0, kTagPayload, payload.data(), payload.size()).ok()) break;
    if (!service->handle(c, payload)) break;
  }
  service.reset();
  heartbeat.request_stop();
  heartbeat.join();
  finalize();
  return 0;
}

}  // namespace strata::mpi
