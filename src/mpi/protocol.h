// What rank 0 and the other ranks say to each other: fixed-size records sent as bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/status.h"

namespace strata::mpi {

/// What rank 0 asks a rank to do. Commands run one at a time, in the order they were sent.
enum class CommandKind : uint32_t {
  kHello,        ///< reply: a Hello
  kAlloc,        ///< v0 buffer id, v1 size; reply: a WireStatus
  kFree,         ///< v0 buffer id
  kZero,         ///< v0 buffer id
  kWrite,        ///< v0 buffer id, v1 offset; the payload is the bytes
  kLoad,         ///< v0 buffer id, v1 offset, v2 file offset, v3 size; payload: the path; reply
  kRead,         ///< v0 buffer id, v1 offset, v2 size; reply: the bytes
  kCopy,         ///< v0 dst buffer, v1 dst offset, v2 src buffer, v3 src offset, v4 size
  kSendTo,       ///< v0 src buffer, v1 offset, v2 size, v3 to rank, v4 tag
  kRecvFrom,     ///< v0 dst buffer, v1 offset, v2 size, v3 from rank, v4 tag
  kDefineGraph,  ///< v0 graph key; payload: its structure (wire_graph.h)
  kRunGraph,     ///< v0 graph key; payload: the placements that changed
  kDropGraph,    ///< v0 graph key
  kSignal,       ///< v0 token; an AsyncMessage answers once everything before it is done
  kSync,         ///< reply: a WireStatus with the first error since the last kSync (cleared)
  kCheckFile,    ///< v0 file size, v1 bytes hashed, v2 their hash; payload: the path; reply
  kShutdown,
  kMakeGroup,       ///< v0 group id; payload: the group's world ranks (int32, in order)
  kFreeGroup,       ///< v0 group id
  kAllReduce,       ///< v0 group id, v1 src buffer, v2 src offset, v3 dst buffer, v4 dst offset;
                    ///< payload: the float count (uint64). Runs even after an error.
  kMakePartitions,  ///< v0 count, v1 budget each, v2 the first one's queue; reply: a
                    ///< WireStatus, then `count` PartitionInfo
  kLoadRuns,        ///< v0 buffer id, v1 offset, v2 file offset, v3 run count; payload: the runs
                    ///< (from, to, size as uint64 each, from relative to the file offset), then the
                    ///< path; reply: a WireStatus
};

/// Queue 0 is the rank's whole CPU (and takes the commands of buffers); each partition of the
/// rank is a queue of its own, with a thread and tags of its own.
constexpr int kMaxQueues = 256;
inline int command_tag(int queue) {
  return queue == 0 ? 1 : 30100 + 2 * queue;
}
inline int payload_tag(int queue) {
  return queue == 0 ? 2 : 30101 + 2 * queue;
}

struct Command {
  CommandKind kind = CommandKind::kHello;
  int32_t reply_tag = 0;
  int32_t queue = 0;  ///< the rank's queue that runs it (see command_tag)
  int32_t reserved = 0;
  uint64_t v[5] = {};
  uint64_t payload = 0;  ///< bytes that follow on kTagPayload
};
static_assert(std::is_trivially_copyable_v<Command>);

/// A Status as bytes; the message is cut to fit.
struct WireStatus {
  int32_t code = 0;
  char message[484] = {};

  static WireStatus from(const Status& st) {
    WireStatus w;
    w.code = static_cast<int32_t>(st.code());
    const std::string& m = st.message();
    std::memcpy(w.message, m.data(), std::min(m.size(), sizeof w.message - 1));
    return w;
  }
  Status to_status() const {
    if (code == 0) return {};
    return error(static_cast<ErrorCode>(code),
                 std::string(message, strnlen(message, sizeof message)));
  }
};

/// What a rank serves, for rank 0's device list.
struct Hello {
  uint64_t memory_total = 0;
  uint64_t memory_free = 0;
  int32_t cores = 0;  ///< its logical CPUs, the first kMaxCpus of which are listed
  static constexpr int kMaxCpus = 256;
  int32_t cpus[kMaxCpus] = {};
  char host[128] = {};
};

/// A partition a rank made: the logical CPUs its queue computes on.
struct PartitionInfo {
  int32_t cores = 0;
  int32_t cpus[Hello::kMaxCpus] = {};
};

/// A rank's unrequested messages to rank 0.
struct AsyncMessage {
  enum Kind : uint32_t { kHeartbeat, kSignalled } kind = kHeartbeat;
  uint64_t token = 0;
  WireStatus status;  ///< for kSignalled: the failure of work before the signal, if any
};

}  // namespace strata::mpi
