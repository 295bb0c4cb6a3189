#include "layout_cases.h"

#include <gtest/gtest.h>

#include <cctype>

#include "devices/host_device.h"
#include "devices/registry.h"
#include "engine/layout.h"

namespace strata::testing {

const std::vector<LayoutCase>& layout_cases() {
  static const std::vector<LayoutCase> cases = {
      {"ngl0_1part", 1, 0, {}, true},
      {"partial_1part", 1, 2, {}, true},
      {"full_1part", 1, 99, {}, true},
      {"full_2parts", 2, 99, {}, true},
      {"partial_2parts", 2, 3, {}, true},
      {"uneven_3to1", 2, 99, {3, 1}, true},
      {"uneven_1to3", 2, 99, {1, 3}, true},
      {"no_kv_offload", 2, 99, {}, false},
      {"partial_no_kv_offload", 2, 2, {}, false},
      {"full_3parts", 3, 99, {}, true},
      {"uneven_3parts", 3, 3, {2, 1, 1}, true},
  };
  return cases;
}

Opened open_with_layout(const std::string& path, const LayoutCase& c, const OpenOptions& o) {
  Opened r;
  engine::LayoutParams lp;
  if (c.partitions > 0) {
    auto parts = devices::make_partitions(c.partitions, 0);
    EXPECT_TRUE(parts.ok()) << parts.status().message();
    if (!parts.ok()) return r;
    lp.devices = *parts;
  }
  lp.n_gpu_layers = c.ngl;
  lp.tensor_split = c.split;
  lp.kv_offload = c.kv_offload;
  auto probe = model::Model::load(path, devices::host_device().buffer_type());
  EXPECT_TRUE(probe.ok());
  if (!probe.ok()) return r;
  auto layout = engine::make_layout((*probe)->hparams().n_layer, lp);
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  auto m = model::Model::load(path, engine::weight_placement(*layout, devices::host_device()));
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return r;
  r.model = std::move(m).value();
  auto s = engine::Session::create(*r.model, devices::host_device(), *layout,
                                   {.n_ctx = o.n_ctx,
                                    .n_ubatch = o.ubatch,
                                    .n_threads = 2,
                                    .pipeline = o.pipeline,
                                    .flash_attn = o.flash_attn,
                                    .paged = o.paged,
                                    .kv_paging = o.kv_paging});
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) r.session = std::move(s).value();
  return r;
}

std::string case_name(const std::string& model, const LayoutCase& c) {
  std::string n = model + "_" + c.name;
  for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n;
}

}  // namespace strata::testing
