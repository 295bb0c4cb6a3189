// Rank 0's command stream to the other ranks. Commands to all ranks leave in one total order,
// so two ranks see the two ends of every transfer between them in the same order (no
// rank waits on a transfer its peer has queued behind one that waits on it).
#pragma once

#include <cstddef>

#include "core/status.h"
#include "mpi/protocol.h"

namespace strata::mpi {

/// Sends `c` and its payload (`n` bytes) to rank `r`.
Status post(int r, Command c, const void* payload = nullptr, size_t n = 0);
/// Sends two commands back to back: the two ends of a transfer between ranks.
Status post_pair(int r1, const Command& c1, int r2, const Command& c2);
/// Sends `c` and receives its `reply_n`-byte answer into `reply`.
Status ask(int r, Command c, const void* payload, size_t n, void* reply, size_t reply_n);
/// ask() for a WireStatus, returned as a Status.
Status ask_status(int r, const Command& c, const void* payload = nullptr, size_t n = 0);

}  // namespace strata::mpi
