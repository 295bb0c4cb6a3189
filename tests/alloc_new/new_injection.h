// A replacement of the global operator new for this test binary that fails the n-th
// allocation made (on any thread) after arm(n), as a machine out of memory would.
#pragma once

#include <cstdint>

namespace strata::testing {

/// Makes the allocation numbered `n` from now fail (0: the next one) by throwing
/// std::bad_alloc, or returning null for the nothrow forms.
void arm_new_failure(int64_t n);
/// Stops failing allocations; returns how many were made since arm_new_failure().
int64_t disarm_new_failure();
/// Whether the allocation made to fail was a nothrow form (the caller may then have carried
/// on without it, as std::stable_sort does).
bool failed_a_nothrow_new();
/// Prints the stack of the allocation made to fail to stderr (unsymbolized frames: addr2line).
void print_failed_allocation_site();

}  // namespace strata::testing
