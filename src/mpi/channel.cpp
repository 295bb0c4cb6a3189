#include "mpi/channel.h"

#include <mutex>

#include "mpi/transport.h"

namespace strata::mpi {
namespace {

std::mutex& order() {
  static std::mutex m;
  return m;
}

// Posted under the lock (the order), waited for after it.
Status post_to(Outbox& box, int r, const Command& c, const void* payload, size_t n) {
  STRATA_RETURN_IF_ERROR(box.post(r, command_tag(c.queue), &c, sizeof c));
  if (n != 0) STRATA_RETURN_IF_ERROR(box.post(r, payload_tag(c.queue), payload, n));
  return {};
}

}  // namespace

Status post(int r, Command c, const void* payload, size_t n) {
  c.payload = n;
  Outbox box;
  {
    std::lock_guard lock(order());
    STRATA_RETURN_IF_ERROR(post_to(box, r, c, payload, n));
  }
  return box.wait();
}

Status post_pair(int r1, const Command& c1, int r2, const Command& c2) {
  Outbox box;
  {
    std::lock_guard lock(order());
    STRATA_RETURN_IF_ERROR(post_to(box, r1, c1, nullptr, 0));
    STRATA_RETURN_IF_ERROR(post_to(box, r2, c2, nullptr, 0));
  }
  return box.wait();
}

Status ask(int r, Command c, const void* payload, size_t n, void* reply, size_t reply_n) {
  c.reply_tag = next_tag();
  STRATA_RETURN_IF_ERROR(post(r, c, payload, n));
  return recv(r, c.reply_tag, reply, reply_n);
}

Status ask_status(int r, const Command& c, const void* payload, size_t n) {
  WireStatus w;
  STRATA_RETURN_IF_ERROR(ask(r, c, payload, n, &w, sizeof w));
  return w.to_status();
}

}  // namespace strata::mpi
