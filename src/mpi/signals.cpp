#include "mpi/signals.h"

#include <mutex>
#include <unordered_map>
#include <vector>

namespace strata::mpi {
namespace {

struct Pending {
  int rank;
  backend::Event* event;
  uint64_t value;
};

struct Table {
  std::mutex mutex;
  uint64_t next = 1;
  std::unordered_map<uint64_t, Pending> pending;
};

Table& table() {
  static Table t;
  return t;
}

void raise(const Pending& p, const Status& why) {
  if (why.ok()) {
    p.event->signal(p.value);
  } else {
    p.event->signal_failed(p.value, why);
  }
}

}  // namespace

uint64_t expect_signal(int r, backend::Event& event, uint64_t value) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  const uint64_t token = t.next++;
  t.pending.emplace(token, Pending{r, &event, value});
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
  }
  raise(p, why);
}

void fail_signals(int r, const Status& why) {
  Table& t = table();
  std::vector<Pending> failed;
  {
    std::lock_guard lock(t.mutex);
    for (auto it = t.pending.begin(); it != t.pending.end();) {
      if (it->second.rank == r) {
        failed.push_back(it->second);
        it = t.pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Pending& p : failed) raise(p, why);
}

size_t signals_outstanding(int r) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  size_t n = 0;
  for (const auto& [token, p] : t.pending) n += p.rank == r ? 1 : 0;
  return n;
}

}  // namespace strata::mpi
