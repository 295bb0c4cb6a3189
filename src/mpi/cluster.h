// Starting and ending a run under mpirun: rank 0 drives, the other ranks serve.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.h"
#include "core/status.h"

namespace strata::mpi {

/// Under mpirun (see launched_by_mpirun), initialises MPI. On ranks other than 0 it then
/// serves rank 0 until told to stop and returns the exit code for the process; on rank 0 it
/// asks every rank what it serves, registers the devices "mpi:0" (this rank's own cores,
/// a partition of all of them) to "mpi:N-1" with the device registry, starts the listener
/// for the ranks' signals and heartbeats, and returns nullopt. Without mpirun it does nothing.
Result<std::optional<int>> start(int* argc, char*** argv);

/// Rank 0: tells every rank to stop and ends MPI. Safe to call twice, or without start().
void stop();

/// Whether this process is rank 0 of a run with other ranks.
bool driving();

/// Whether `d` is one of rank 0's own devices ("mpi:0", "mpi:0/part:K").
bool is_own_device(const backend::Device* d);

/// Rank 0: splits every rank's CPU into `n` partitions of `budget` bytes each (0: none), as
/// each rank's plan_partitions makes them, named "mpi:R/part:K"; they become known to the
/// device registry. Asking again for the same n and budget returns the same devices; another
/// layout makes a new set. kInvalidArgument when not driving.
Result<std::vector<backend::Device*>> make_partitions(int n, size_t budget);

/// Rank 0: kInvalidArgument naming the first rank whose copy of `path` differs from this
/// one's in size or in its first `head_bytes` bytes (a GGUF's header and tensor table), or
/// that cannot open it. OK at once when not driving.
Status check_same_file(const std::string& path, uint64_t head_bytes);

}  // namespace strata::mpi
