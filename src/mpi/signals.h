// Signals rank 0 has asked other ranks for and not heard back about yet.
#pragma once

#include <chrono>
#include <cstdint>

#include "backend/event.h"
#include "core/status.h"

namespace strata::mpi {

/// A token for a kSignal to rank `r` on behalf of `owner` (the backend that queued it): when
/// the rank answers, `event` is raised to `value`.
uint64_t expect_signal(int r, const void* owner, backend::Event& event, uint64_t value);
/// The rank's answer: raises the event (as failed when `why` is an error).
void signalled(uint64_t token, const Status& why);
/// A dead rank's signals will never come: raises them all as failed with `why`.
void fail_signals(int r, const Status& why);
/// Signals of rank `r` not answered yet.
size_t signals_outstanding(int r);
/// Waits until every signal `owner` asked for has been raised, so that its events may be
/// destroyed: the answers come on rank 0's listener thread, which may still be on its way to
/// an event after the rank has answered a later command. False after `timeout`.
bool await_signals(const void* owner, std::chrono::nanoseconds timeout);

}  // namespace strata::mpi
