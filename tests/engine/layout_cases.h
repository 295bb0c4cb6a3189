// The device layouts the equality tests run through, and opening a model and session with one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "model/model.h"

namespace strata::testing {

struct LayoutCase {
  const char* name;
  int partitions;
  int64_t ngl;
  std::vector<float> split;
  bool kv_offload;
};

/// Every multi-device layout: partial and full offload, 1 to 3 partitions, uneven splits,
/// KV cache on and off the devices.
const std::vector<LayoutCase>& layout_cases();

/// The plain single-device layout.
inline LayoutCase plain_layout() {
  return {"plain", 0, 0, {}, true};
}

struct Opened {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<engine::Session> session;
};

struct OpenOptions {
  int64_t ubatch = 512;
  bool pipeline = true;
  bool paged = false;
  bool flash_attn = false;
  int64_t n_ctx = 256;
  engine::KvPagingConfig kv_paging;
};

/// Loads `path` with layout `c` and creates a session (2 threads); failures are test failures
/// and leave the result empty.
Opened open_with_layout(const std::string& path, const LayoutCase& c, const OpenOptions& o = {});

/// The gtest name of a (model, layout) parameter.
std::string case_name(const std::string& model, const LayoutCase& c);

}  // namespace strata::testing
