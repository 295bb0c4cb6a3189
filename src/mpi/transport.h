// Messages between MPI ranks: start-up, point-to-point sends and receives that never block
// forever, and which ranks are still alive. The only file of the layer that includes <mpi.h>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace strata::mpi {

/// Message tags. Replies to one request use their own tag from next_tag().
enum Tag : int {
  kTagCommand = 1,  ///< rank 0 -> R: a Command for queue 0 (see command_tag for the others)
  kTagPayload = 2,  ///< rank 0 -> R: the bytes that follow a Command
  kTagAsync = 3,    ///< R -> rank 0: an AsyncMessage (event reached, heartbeat)
};

/// Whether mpirun started this process (its environment says so); MPI is not touched.
bool launched_by_mpirun();
/// Initialises MPI with threads and errors returned as values. kUnsupported when built
/// without MPI or when initialisation fails.
Status init(int* argc, char*** argv);
bool initialized();
int rank();
int size();
/// This rank's host name.
std::string host_name();
/// Ends MPI (all ranks must call it), unless a rank died: then it returns at once.
void finalize();

/// Messages this thread sends are heartbeats: counted apart from the work's messages in the
/// traffic report (STRATA_MPI_TRAFFIC=1 prints each rank's at finalize).
void mark_heartbeat_thread();

/// A fresh tag for a request's reply or a transfer between two ranks.
int next_tag();

/// Sends `n` bytes to `to` and returns once the bytes may be reused (large messages go in
/// pieces). Fails when `to` is dead or MPI reports an error.
Status send(int to, int tag, const void* data, size_t n);
/// Sends posted in order now and waited for later: a lock held for the order of messages need
/// not be held while a busy receiver takes them.
class Outbox {
 public:
  Outbox();
  ~Outbox();  ///< waits for what is still in flight
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  /// Starts sending `n` bytes to `to` (they must stay valid until wait()).
  Status post(int to, int tag, const void* data, size_t n);
  /// Until every posted send is done; fails when a receiver dies first.
  Status wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Receives exactly `n` bytes sent by send() with the same tag.
Status recv(int from, int tag, void* data, size_t n);

/// Receives `n` bytes with `tag` from any rank into `data`, setting `*from`. Between polls it
/// calls `idle`, and gives up (returning false) once `idle` returns false.
Result<bool> recv_any(int tag, void* data, size_t n, int* from, const std::function<bool()>& idle);

/// Groups of ranks that all-reduce together. Every rank of `ranks` (world ranks, in the
/// group's order) calls make_group with the same arguments; it returns once all have.
Status make_group(uint64_t id, const std::vector<int>& ranks);
void free_group(uint64_t id);
/// dst = the sum over the group's ranks of their src (n floats; src may be dst). Fails when a
/// rank of the group is known dead (rank 0 knows) instead of waiting for it.
Status all_reduce(uint64_t id, const float* src, float* dst, size_t n);

/// Liveness, kept by rank 0: every other rank sends a heartbeat; a rank not heard from for
/// kSilence is dead, and every wait on it fails naming it.
void heard_from(int r);
/// OK while `r` is alive, else the error naming it.
Status alive(int r);
/// Marks ranks not heard from for too long as dead; returns the ranks newly dead.
std::vector<int> find_dead();

}  // namespace strata::mpi
