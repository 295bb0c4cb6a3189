// What every rank but 0 runs: it serves its CPU as a device, doing what rank 0 sends.
#pragma once

namespace strata::mpi {

/// Executes rank 0's commands until it says to stop (or the job ends); returns the process's
/// exit code. MPI must be initialised.
int serve();

}  // namespace strata::mpi
