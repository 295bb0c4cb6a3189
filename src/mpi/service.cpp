#include "mpi/service.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
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

std::string here() {
  return "mpi:" + std::to_string(rank());
}

// The rank's memory, shared by its queues: buffers rank 0 allocated, and the files weights
// are read from.
class RankMemory {
 public:
  ~RankMemory() {
    for (auto& [path, fd] : files_) ::close(fd);
  }

  // The bytes [offset, offset + size) of buffer `id`, or an error naming what is wrong.
  Result<uint8_t*> span(uint64_t id, uint64_t offset, uint64_t size) const {
    std::lock_guard lock(mutex_);
    auto it = buffers_.find(id);
    if (it == buffers_.end()) {
      return error(ErrorCode::kInternal, here() + ": no buffer " + std::to_string(id));
    }
    const memory::Buffer& b = *it->second;
    if (offset > b.size() || size > b.size() - offset) {
      return error(ErrorCode::kInternal, here() + ": bytes " + std::to_string(offset) + "+" +
                                             std::to_string(size) + " are outside buffer " +
                                             std::to_string(id));
    }
    return static_cast<uint8_t*>(b.base()) + offset;
  }
  memory::Buffer* buffer(uint64_t id) const {
    std::lock_guard lock(mutex_);
    auto it = buffers_.find(id);
    return it == buffers_.end() ? nullptr : it->second.get();
  }
  Status allocate(uint64_t id, uint64_t size) {
    auto buf = memory::host_buffer_type().allocate(size);
    if (!buf.ok()) return buf.status();
    std::memset((*buf)->base(), 0, (*buf)->size());
    std::lock_guard lock(mutex_);
    buffers_[id] = std::move(buf).value();
    return {};
  }
  void free(uint64_t id) {
    std::unique_ptr<memory::Buffer> gone;
    std::lock_guard lock(mutex_);
    if (auto it = buffers_.find(id); it != buffers_.end()) {
      gone = std::move(it->second);
      buffers_.erase(it);
    }
  }
  void zero(uint64_t id) {
    if (memory::Buffer* b = buffer(id)) std::memset(b->base(), 0, b->size());
  }
  // v0 buffer, v1 offset, v2 file offset, v3 size; the payload is the path.
  Status load(const Command& c, const std::string& path) {
    return load_run(c.v[0], c.v[1], c.v[2], c.v[3], path);
  }
  // kLoadRuns: the runs, then the path.
  Status load_runs(const Command& c, const std::string& payload) {
    const size_t head = c.v[3] * 3 * sizeof(uint64_t);
    if (c.v[3] > payload.size() / (3 * sizeof(uint64_t))) {
      return error(ErrorCode::kMalformed, here() + ": a load of runs without its runs");
    }
    const std::string path = payload.substr(head);
    for (uint64_t i = 0; i < c.v[3]; ++i) {
      uint64_t run[3];
      std::memcpy(run, payload.data() + i * sizeof run, sizeof run);
      STRATA_RETURN_IF_ERROR(load_run(c.v[0], c.v[1] + run[1], c.v[2] + run[0], run[2], path));
    }
    return {};
  }

 private:
  Status load_run(uint64_t buffer, uint64_t offset, uint64_t file_offset, uint64_t size,
                  const std::string& path) {
    auto dst = span(buffer, offset, size);
    if (!dst.ok()) return dst.status();
    const int fd = file(path);
    if (fd < 0) {
      return error(ErrorCode::kIo,
                   here() + ": cannot open '" + path + "': " + std::strerror(errno));
    }
    for (uint64_t done = 0; done < size;) {
      const ssize_t got =
          ::pread(fd, *dst + done, size - done, static_cast<off_t>(file_offset + done));
      if (got <= 0) {
        return error(ErrorCode::kIo, here() + ": '" + path + "' ends before byte " +
                                         std::to_string(file_offset + size));
      }
      done += static_cast<uint64_t>(got);
    }
    return {};
  }
  int file(const std::string& path) {
    std::lock_guard lock(mutex_);
    if (auto it = files_.find(path); it != files_.end()) return it->second;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) files_[path] = fd;
    return fd;
  }

  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, std::unique_ptr<memory::Buffer>> buffers_;
  std::unordered_map<std::string, int> files_;
};

struct Graph {
  DecodedGraph decoded;
  std::vector<Placement> placements;
};

class Rank;

// One queue of the rank (its whole CPU, or one partition): runs its commands in order on its
// own cores, keeping the first error since rank 0 last asked (later work is skipped until
// then, all-reduces excepted).
class Queue {
 public:
  Queue(Rank& rank, RankMemory& memory, const std::vector<int>& cores)
      : rank_(&rank), memory_(&memory), pool_(std::max<int>(1, static_cast<int>(cores.size()))) {}

  // False once told to stop.
  bool handle(const Command& c, std::string& payload);
  // Worker i > 0 of the team computes on cores[i] from now on.
  void pin(const std::vector<int>& cores) {
    pool_.run([&cores](int ith, int) {
      if (ith == 0 || static_cast<size_t>(ith) >= cores.size()) return;
      const int one[] = {cores[static_cast<size_t>(ith)]};
      (void)devices::pin_current_thread(one);
    });
  }

 private:
  Status keep(Status st) {
    if (error_.ok() && !st.ok()) error_ = st;
    return st;
  }
  static Status reply(const Command& c, const Status& st) {
    const WireStatus w = WireStatus::from(st);
    return send(0, c.reply_tag, &w, sizeof w);
  }
  Status run(const Command& c, std::string_view changes);
  void all_reduce(const Command& c, const std::string& payload);

  Rank* rank_;
  RankMemory* memory_;
  cpu::ThreadPool pool_;
  std::vector<uint8_t> scratch_;
  std::unordered_map<uint64_t, Graph> graphs_;
  Status error_;
};

// Receives one queue's commands until it is told to stop.
void serve_queue(Queue& q, int queue) {
  std::string payload;
  for (;;) {
    Command c;
    if (!recv(0, command_tag(queue), &c, sizeof c).ok()) return;
    payload.resize(c.payload);
    if (c.payload != 0 && !recv(0, payload_tag(queue), payload.data(), payload.size()).ok()) {
      return;
    }
    if (!q.handle(c, payload)) return;
  }
}

// The rank: its memory, its whole-CPU queue (served by the main thread) and the partitions
// rank 0 asked for (each served by a thread of its own).
class Rank {
 public:
  Rank() : whole_(*this, memory_, devices::allowed_cpus()) {}
  ~Rank() {
    for (auto& t : threads_) t.join();
  }
  void serve() { serve_queue(whole_, 0); }

  // v0 count, v1 budget, v2 the first one's queue.
  void make_partitions(const Command& c) {
    auto plan = devices::plan_partitions(static_cast<int>(c.v[0]), c.v[1]);
    Status st = plan.status();
    if (st.ok() && c.v[2] + plan->size() > static_cast<uint64_t>(kMaxQueues)) {
      st = error(ErrorCode::kInvalidArgument,
                 here() + ": more than " + std::to_string(kMaxQueues) + " queues");
    }
    const WireStatus w = WireStatus::from(st);
    (void)send(0, c.reply_tag, &w, sizeof w);
    if (!st.ok()) return;
    std::vector<PartitionInfo> infos(plan->size());
    for (size_t k = 0; k < plan->size(); ++k) {
      const std::vector<int>& cores = (*plan)[k].cores;
      infos[k].cores = static_cast<int32_t>(cores.size());
      for (size_t i = 0; i < cores.size() && i < Hello::kMaxCpus; ++i) infos[k].cpus[i] = cores[i];
      const int queue = static_cast<int>(c.v[2] + k);
      Queue& q = partitions_.emplace_back(*this, memory_, cores);
      q.pin(cores);
      threads_.emplace_back([&q, queue, cores] {
        // The partition's queue computes on its own cores only.
        (void)devices::pin_current_thread(cores);
        serve_queue(q, queue);
      });
    }
    (void)send(0, c.reply_tag, infos.data(), infos.size() * sizeof(PartitionInfo));
  }

 private:
  RankMemory memory_;
  Queue whole_;
  std::list<Queue> partitions_;  // stable addresses
  std::vector<std::thread> threads_;
};

Status Queue::run(const Command& c, std::string_view changes) {
  auto it = graphs_.find(c.v[0]);
  if (it == graphs_.end()) {
    return error(ErrorCode::kInternal, here() + ": no graph " + std::to_string(c.v[0]));
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
    auto at = memory_->span(p.buffer, p.offset, t.nbytes());
    if (!at.ok()) return at.status().with_context("tensor '" + t.name + "'");
    t.data = *at;
    t.buffer = memory_->buffer(p.buffer);
  }
  return cpu::compute_graph(g.decoded.graph, pool_, scratch_).with_context(here());
}

void Queue::all_reduce(const Command& c, const std::string& payload) {
  // Every member must take part, whatever went wrong here before: the others wait for it.
  uint64_t n = 0;
  if (payload.size() == sizeof n) std::memcpy(&n, payload.data(), sizeof n);
  auto src = memory_->span(c.v[1], c.v[2], n * sizeof(float));
  auto dst = memory_->span(c.v[3], c.v[4], n * sizeof(float));
  std::vector<float> stand_in;
  const bool placed = src.ok() && dst.ok();
  if (!placed) {
    (void)keep(src.ok() ? dst.status() : src.status());
    stand_in.assign(n, 0.0f);
  }
  const float* from = placed ? reinterpret_cast<const float*>(*src) : stand_in.data();
  float* into = placed ? reinterpret_cast<float*>(*dst) : stand_in.data();
  (void)keep(mpi::all_reduce(c.v[0], from, into, n));
}

bool Queue::handle(const Command& c, std::string& payload) {
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
    case CommandKind::kAlloc:
      (void)reply(c, memory_->allocate(v[0], v[1]));
      return true;
    case CommandKind::kFree:
      memory_->free(v[0]);
      return true;
    case CommandKind::kZero:
      memory_->zero(v[0]);
      return true;
    case CommandKind::kWrite: {
      // The bytes came with the command; rank 0 sends them straight into place when it can.
      auto dst = memory_->span(v[0], v[1], payload.size());
      if (keep(dst.status()).ok()) std::memcpy(*dst, payload.data(), payload.size());
      return true;
    }
    case CommandKind::kLoad:
      (void)reply(c, memory_->load(c, payload));
      return true;
    case CommandKind::kLoadRuns:
      (void)reply(c, memory_->load_runs(c, payload));
      return true;
    case CommandKind::kRead: {
      auto src = memory_->span(v[0], v[1], v[2]);
      (void)reply(c, src.status());
      if (src.ok()) (void)send(0, c.reply_tag, *src, v[2]);
      return true;
    }
    case CommandKind::kCopy: {
      auto dst = memory_->span(v[0], v[1], v[4]);
      auto src = memory_->span(v[2], v[3], v[4]);
      if (keep(dst.status()).ok() && keep(src.status()).ok()) std::memmove(*dst, *src, v[4]);
      return true;
    }
    case CommandKind::kSendTo: {
      auto src = memory_->span(v[0], v[1], v[2]);
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
      auto dst = memory_->span(v[0], v[1], v[2]);
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
    case CommandKind::kAllReduce:
      all_reduce(c, payload);
      return true;
    case CommandKind::kMakePartitions:
      rank_->make_partitions(c);
      return true;
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
  {
    // Rank 0 stops every partition's queue before the whole CPU's.
    Rank r;
    r.serve();
  }
  heartbeat.request_stop();
  heartbeat.join();
  finalize();
  return 0;
}

}  // namespace strata::mpi
