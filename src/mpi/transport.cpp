#include "mpi/transport.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#if STRATA_HAVE_MPI
#include <mpi.h>
#endif

namespace strata::mpi {
namespace {

using Clock = std::chrono::steady_clock;

// A rank silent this long is dead: heartbeats come every 200 ms, so this is many missed
// beats, and still well inside the 10 s a user waits for a failed rank to be named.
constexpr auto kSilence = std::chrono::seconds(4);

// Largest piece of one message (MPI counts are int).
constexpr size_t kPiece = size_t{1} << 30;

struct State {
  std::atomic<bool> initialized{false};
  int rank = 0;
  int size = 1;
  std::atomic<int> tag{100};
  std::mutex mutex;  // guards the two below
  std::vector<Clock::time_point> last_heard;
  std::vector<bool> dead;
  std::atomic<bool> any_dead{false};
};

State& state() {
  static State s;
  return s;
}

// What this rank sent, for STRATA_MPI_TRAFFIC=1: heartbeats apart from the work's messages.
struct Traffic {
  std::atomic<uint64_t> messages{0}, bytes{0}, heartbeats{0};
};

Traffic& traffic() {
  static Traffic t;
  return t;
}

thread_local bool t_heartbeat_thread = false;

[[maybe_unused]] void count_sent(size_t n) {
  Traffic& t = traffic();
  if (t_heartbeat_thread) {
    t.heartbeats.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  t.messages.fetch_add(1, std::memory_order_relaxed);
  t.bytes.fetch_add(n, std::memory_order_relaxed);
}

[[maybe_unused]] void report_traffic() {
  const char* env = std::getenv("STRATA_MPI_TRAFFIC");
  if (env == nullptr || env[0] != '1') return;
  const Traffic& t = traffic();
  std::fprintf(stderr, "mpi: rank %d sent %llu messages, %llu bytes (and %llu heartbeats)\n",
               state().rank, static_cast<unsigned long long>(t.messages.load()),
               static_cast<unsigned long long>(t.bytes.load()),
               static_cast<unsigned long long>(t.heartbeats.load()));
}

// Polls yielding for a while (a collective or a reply on the critical path of a token usually
// comes within it), then sleeps growing to 200 us: a rank waiting for another must not take
// the core that rank computes on when they share one.
class Backoff {
 public:
  void pause() {
    if (++spins_ < kSpins) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, std::chrono::microseconds(200));
  }

 private:
  static constexpr int kSpins = 256;
  int spins_ = 0;
  std::chrono::microseconds sleep_{20};
};

Status dead_error(int r) {
  return error(
      ErrorCode::kIo,
      "mpi:" + std::to_string(r) + ": rank " + std::to_string(r) +
          " stopped answering (nothing heard from it for " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kSilence).count()) +
          " s)");
}

#if STRATA_HAVE_MPI
Status mpi_error(const char* what, int peer, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  const std::string who = peer >= 0 ? " rank " + std::to_string(peer) : " the group";
  return error(ErrorCode::kIo, std::string("mpi: ") + what + who +
                                   " failed: " + std::string(text, static_cast<size_t>(len)));
}

// Waits for `req`, failing when `peer` dies first (a receive from a dead rank never ends).
Status wait_request(MPI_Request& req, int peer, const char* what) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_error(what, peer, rc);
    if (done) return {};
    if (peer >= 0 && state().any_dead.load()) {
      if (Status st = alive(peer); !st.ok()) return st;
    }
    backoff.pause();
  }
}
#endif

}  // namespace

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

#if STRATA_HAVE_MPI

Status init(int* argc, char*** argv) {
  State& s = state();
  if (s.initialized) return {};
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return error(ErrorCode::kUnsupported, "mpi: initialisation failed");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_MULTIPLE) {
    return error(ErrorCode::kUnsupported,
                 "mpi: this MPI library does not support MPI_THREAD_MULTIPLE");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  s.last_heard.assign(static_cast<size_t>(s.size), Clock::now());
  s.dead.assign(static_cast<size_t>(s.size), false);
  s.initialized = true;
  return {};
}

void finalize() {
  State& s = state();
  if (!s.initialized) return;
  report_traffic();
  s.initialized = false;
  // Finalize waits for every rank; with one dead it would never return.
  if (!s.any_dead) MPI_Finalize();
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS) return "?";
  return std::string(name, static_cast<size_t>(len));
}

struct Outbox::Impl {
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
};

Outbox::Outbox() : impl_(std::make_unique<Impl>()) {}

Outbox::~Outbox() {
  (void)wait();
}

Status Outbox::post(int to, int tag, const void* data, size_t n) {
  if (!state().initialized) return error(ErrorCode::kInternal, "mpi: sending after the end");
  if (Status st = alive(to); !st.ok()) return st;
  count_sent(n);
  const auto* p = static_cast<const uint8_t*>(data);
  do {
    const size_t piece = std::min(n, kPiece);
    MPI_Request req;
    const int rc = MPI_Isend(p, static_cast<int>(piece), MPI_BYTE, to, tag, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error("send to", to, rc);
    impl_->requests.push_back(req);
    impl_->peers.push_back(to);
    p += piece;
    n -= piece;
  } while (n > 0);
  return {};
}

Status Outbox::wait() {
  Status first;
  for (size_t i = 0; i < impl_->requests.size(); ++i) {
    Status st = wait_request(impl_->requests[i], impl_->peers[i], "send to");
    if (!st.ok()) {
      // Left in flight to a dead rank: cancel, so nothing refers to the bytes any more.
      MPI_Cancel(&impl_->requests[i]);
      MPI_Request_free(&impl_->requests[i]);
      if (first.ok()) first = st;
    }
  }
  impl_->requests.clear();
  impl_->peers.clear();
  return first;
}

Status send(int to, int tag, const void* data, size_t n) {
  Outbox box;
  STRATA_RETURN_IF_ERROR(box.post(to, tag, data, n));
  return box.wait();
}

Status recv(int from, int tag, void* data, size_t n) {
  auto* p = static_cast<uint8_t*>(data);
  do {
    const size_t piece = std::min(n, kPiece);
    MPI_Request req;
    const int rc = MPI_Irecv(p, static_cast<int>(piece), MPI_BYTE, from, tag, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error("receive from", from, rc);
    STRATA_RETURN_IF_ERROR(wait_request(req, from, "receive from"));
    p += piece;
    n -= piece;
  } while (n > 0);
  return {};
}

Result<bool> recv_any(int tag, void* data, size_t n, int* from, const std::function<bool()>& idle) {
  MPI_Request req;
  int rc =
      MPI_Irecv(data, static_cast<int>(n), MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return mpi_error("receive from", -1, rc);
  auto last_idle = Clock::now();
  Backoff backoff;
  for (;;) {
    int done = 0;
    MPI_Status status;
    rc = MPI_Test(&req, &done, &status);
    if (rc != MPI_SUCCESS) return mpi_error("receive from", -1, rc);
    if (done) {
      *from = status.MPI_SOURCE;
      return true;
    }
    if (Clock::now() - last_idle > std::chrono::milliseconds(50)) {
      last_idle = Clock::now();
      if (!idle()) {
        if (MPI_Cancel(&req) == MPI_SUCCESS) MPI_Wait(&req, MPI_STATUS_IGNORE);
        return false;
      }
    }
    backoff.pause();
  }
}

namespace {

struct Group {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<int> ranks;
};

std::mutex& groups_mutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<uint64_t, Group>& groups() {
  static std::unordered_map<uint64_t, Group> g;
  return g;
}

}  // namespace

Status make_group(uint64_t id, const std::vector<int>& ranks) {
  MPI_Group world = MPI_GROUP_NULL, part = MPI_GROUP_NULL;
  if (MPI_Comm_group(MPI_COMM_WORLD, &world) != MPI_SUCCESS ||
      MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &part) != MPI_SUCCESS) {
    return error(ErrorCode::kInternal, "mpi: cannot form the group of ranks");
  }
  Group g;
  g.ranks = ranks;
  const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, part, static_cast<int>(id % 30000), &g.comm);
  MPI_Group_free(&part);
  MPI_Group_free(&world);
  if (rc != MPI_SUCCESS) return mpi_error("form a group with", -1, rc);
  std::lock_guard lock(groups_mutex());
  groups()[id] = std::move(g);
  return {};
}

void free_group(uint64_t id) {
  std::lock_guard lock(groups_mutex());
  auto it = groups().find(id);
  if (it == groups().end()) return;
  if (it->second.comm != MPI_COMM_NULL && state().initialized) MPI_Comm_free(&it->second.comm);
  groups().erase(it);
}

Status all_reduce(uint64_t id, const float* src, float* dst, size_t n) {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<int> ranks;
  {
    std::lock_guard lock(groups_mutex());
    auto it = groups().find(id);
    if (it != groups().end()) {
      comm = it->second.comm;
      ranks = it->second.ranks;
    }
  }
  if (comm == MPI_COMM_NULL) {
    return error(ErrorCode::kInternal, "mpi: no group " + std::to_string(id));
  }
  if (n > static_cast<size_t>(INT32_MAX)) {
    return error(ErrorCode::kUnsupported, "mpi: an all-reduce of more than 2^31 floats");
  }
  count_sent(n * sizeof(float));
  MPI_Request req;
  const int rc = MPI_Iallreduce(src == dst ? MPI_IN_PLACE : src, dst, static_cast<int>(n),
                                MPI_FLOAT, MPI_SUM, comm, &req);
  if (rc != MPI_SUCCESS) return mpi_error("all-reduce with", -1, rc);
  Backoff backoff;
  for (;;) {
    int done = 0;
    const int trc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (trc != MPI_SUCCESS) return mpi_error("all-reduce with", -1, trc);
    if (done) return {};
    if (state().any_dead.load()) {
      for (int r : ranks) {
        if (Status st = alive(r); !st.ok()) return st;
      }
    }
    backoff.pause();
  }
}

#else  // built without MPI
struct Outbox::Impl {};
Outbox::Outbox() : impl_(std::make_unique<Impl>()) {}
Outbox::~Outbox() = default;
Status Outbox::post(int, int, const void*, size_t) {
  return error(ErrorCode::kUnsupported, "mpi: built without MPI");
}
Status Outbox::wait() {
  return {};
}
Status make_group(uint64_t, const std::vector<int>&) {
  return error(ErrorCode::kUnsupported, "mpi: built without MPI");
}
void free_group(uint64_t) {}
Status all_reduce(uint64_t, const float*, float*, size_t) {
  return error(ErrorCode::kUnsupported, "mpi: built without MPI");
}

Status init(int*, char***) {
  return error(ErrorCode::kUnsupported,
               "mpi: this strata was built without MPI (install libopenmpi-dev and rebuild)");
}
void finalize() {}
std::string host_name() {
  return "?";
}
Status send(int, int, const void*, size_t) {
  return error(ErrorCode::kUnsupported, "mpi: built without MPI");
}
Status recv(int, int, void*, size_t) {
  return error(ErrorCode::kUnsupported, "mpi: built without MPI");
}
Result<bool> recv_any(int, void*, size_t, int*, const std::function<bool()>&) {
  return error(ErrorCode::kUnsupported, "mpi: built without MPI");
}
#endif

bool initialized() {
  return state().initialized;
}

void mark_heartbeat_thread() {
  t_heartbeat_thread = true;
}
int rank() {
  return state().rank;
}
int size() {
  return state().size;
}

int next_tag() {
  // Tags 100..30099 rotate: a tag is only reused long after its exchange has ended, and
  // messages between two ranks never overtake each other anyway.
  return 100 + state().tag.fetch_add(1) % 30000;
}

void heard_from(int r) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (r >= 0 && static_cast<size_t>(r) < s.last_heard.size())
    s.last_heard[static_cast<size_t>(r)] = Clock::now();
}

Status alive(int r) {
  State& s = state();
  if (!s.any_dead) return {};
  std::lock_guard lock(s.mutex);
  if (r >= 0 && static_cast<size_t>(r) < s.dead.size() && s.dead[static_cast<size_t>(r)])
    return dead_error(r);
  return {};
}

std::vector<int> find_dead() {
  State& s = state();
  std::vector<int> out;
  std::lock_guard lock(s.mutex);
  const auto now = Clock::now();
  for (size_t r = 1; r < s.last_heard.size(); ++r) {
    if (!s.dead[r] && now - s.last_heard[r] > kSilence) {
      s.dead[r] = true;
      s.any_dead = true;
      out.push_back(static_cast<int>(r));
    }
  }
  return out;
}

}  // namespace strata::mpi
