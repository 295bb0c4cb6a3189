#include "mpi/signals.h"

#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace strata::mpi {
namespace {

struct Pending {
  int rank;
  const void* owner;
  backend::Event* event;
  uint64_t value;
};

struct Table {
  std::mutex mutex;
  uint64_t next = 1;
  std::unordered_map<uint64_t, Pending> pending;
  // Signals taken out of `pending` whose events are being raised, per owner.
  std::unordered_map<const void*, int> raising;
  std::condition_variable settled;
};

Table& table() {
  static Table t;
  return t;
}

// Raises outside the table's lock (an event's waiters may queue more signals), then lets
// await_signals() know the event is no longer touched.
void raise(Table& t, const Pending& p, const Status& why) {
  if (why.ok()) {
    p.event->signal(p.value);
  } else {
    p.event->signal_failed(p.value, why);
  }
  std::lock_guard lock(t.mutex);
  auto it = t.raising.find(p.owner);
  if (--it->second == 0) t.raising.erase(it);
  t.settled.notify_all();
}

}  // namespace

uint64_t expect_signal(int r, const void* owner, backend::Event& event, uint64_t value) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  const uint64_t token = t.next++;
  t.pending.emplace(token, Pending{r, owner, &event, value});
  return token;
}

void signalled(uint64_t token, const Status& why) {
  Table& t = table();
  Pending p{};
  {
    std::lock_guard lock(t.mutex);
    auto it = t.pending.find(token);
    if (it == t.pending.end()) return;
    p = it->second;
    t.pending.erase(it);
    ++t.raising[p.owner];
  }
  raise(t, p, why);
}

void fail_signals(int r, const Status& why) {
  Table& t = table();
  std::vector<Pending> failed;
  {
    std::lock_guard lock(t.mutex);
    for (auto it = t.pending.begin(); it != t.pending.end();) {
      if (it->second.rank == r) {
        failed.push_back(it->second);
        ++t.raising[it->second.owner];
        it = t.pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Pending& p : failed) raise(t, p, why);
}

size_t signals_outstanding(int r) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  size_t n = 0;
  for (const auto& [token, p] : t.pending) n += p.rank == r ? 1 : 0;
  return n;
}

bool await_signals(const void* owner, std::chrono::nanoseconds timeout) {
  Table& t = table();
  std::unique_lock lock(t.mutex);
  return t.settled.wait_for(lock, timeout, [&t, owner] {
    if (t.raising.contains(owner)) return false;
    for (const auto& [token, p] : t.pending) {
      if (p.owner == owner) return false;
    }
    return true;
  });
}

}  // namespace strata::mpi
