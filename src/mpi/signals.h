// Signals rank 0 has asked other ranks for and not heard back about yet.
#pragma once

#include <cstdint>

#include "backend/event.h"
#include "core/status.h"

namespace strata::mpi {

/// A token for a kSignal to rank `r`: when the rank answers, `event` is raised to `value`.
uint64_t expect_signal(int r, backend::Event& event, uint64_t value);
/// The rank's answer: raises the event (as failed when `why` is an error).
void signalled(uint64_t token, const Status& why);
/// A dead rank's signals will never come: raises them all as failed with `why`.
void fail_signals(int r, const Status& why);
/// Signals of rank `r` not answered yet.
size_t signals_outstanding(int r);

}  // namespace strata::mpi
