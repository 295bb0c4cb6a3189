// The meta device against the plain host run: shards, split rules, all-reduce, host views.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "core/ops.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "meta/meta_device.h"
#include "sched/scheduler.h"

namespace strata::meta {
namespace {

using core::Tensor;

std::vector<backend::Device*> partitions(int n) {
  auto p = devices::make_partitions(n, 0);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : std::vector<backend::Device*>{};
}

std::unique_ptr<MetaDevice> make_meta(int n, std::vector<float> w = {}) {
  auto m = MetaDevice::create(partitions(n), std::move(w));
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.3f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

double relative_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
    r += b[i] * static_cast<double>(b[i]);
  }
  return std::sqrt(d / std::max(r, 1e-30));
}

TEST(MetaBuffer, ScattersAndGathersShardsOfEveryLayout) {
  auto meta = make_meta(2, {3, 1});
  ASSERT_TRUE(meta);
  core::Context ctx;
  auto buf = meta->buffer_type().allocate(1 << 20);
  ASSERT_TRUE(buf.ok());
  struct Case {
    core::Type type;
    core::Shape ne;
    memory::TensorSplit split;
  };
  const Case cases[] = {
      {core::Type::kQ8_0, {256, 6, 1, 1}, {0, {}, 64}},             // columns, whole q8_0 blocks
      {core::Type::kF16, {32, 384, 1, 1}, {1, {256, 64, 64}, 32}},  // fused rows
      {core::Type::kF32, {64, 1, 1, 1}, {}},                        // mirrored
  };
  size_t offset = 0;
  for (const Case& c : cases) {
    Tensor* t = ctx.new_tensor(c.type, c.ne, "t");
    ASSERT_TRUE((*buf)->place_split(*t, offset, c.split).ok());
    offset += (t->nbytes() + 63) / 64 * 64;
    std::vector<uint8_t> bytes(t->nbytes());
    std::mt19937 rng(7);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    ASSERT_TRUE((*buf)->write(*t, bytes.data(), 0, bytes.size()).ok());
    const Sharded* s = meta->find(t);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->shard.size(), 2u);
    if (c.split.axis >= 0) {
      EXPECT_EQ(s->axis, c.split.axis);
    }
    if (c.split.axis == 0) {
      EXPECT_LT(s->shard[1]->nbytes(), s->shard[0]->nbytes());  // 3:1
    }
    std::vector<uint8_t> back(bytes.size());
    ASSERT_TRUE((*buf)->read(*t, back.data(), 0, back.size()).ok());
    EXPECT_EQ(back, bytes);
    // Nothing may write the tensor's bytes in place: they live in the shards.
    EXPECT_EQ((*buf)->writable_data(*t), nullptr);
  }
  const auto held = meta->member_bytes();
  EXPECT_GT(held[0].sharded, held[1].sharded);
}

TEST(MetaBuffer, TooFewUnitsForTheDevicesMirrorsTheTensor) {
  auto meta = make_meta(3);
  ASSERT_TRUE(meta);
  core::Context ctx;
  auto buf = meta->buffer_type().allocate(1 << 16);
  ASSERT_TRUE(buf.ok());
  // Two heads for three devices: each device holds it whole.
  Tensor* t = ctx.new_tensor(core::Type::kF32, {64, 8, 1, 1}, "two_heads");
  ASSERT_TRUE((*buf)->place_split(*t, 0, {0, {}, 32}).ok());
  ASSERT_NE(meta->find(t), nullptr);
  EXPECT_EQ(meta->find(t)->axis, -1);
  // A block of 256 cut at 384: whole on each device too.
  Tensor* q = ctx.new_tensor(core::Type::kQ4_K, {768, 4, 1, 1}, "k_quant");
  auto meta2 = make_meta(2);
  auto buf2 = meta2->buffer_type().allocate(1 << 16);
  ASSERT_TRUE(buf2.ok());
  ASSERT_TRUE((*buf2)->place_split(*q, 0, {0, {}, 128}).ok());
  EXPECT_EQ(meta2->find(q)->axis, -1);
}

TEST(MetaBuffer, ProportionsThatStarveADeviceAreAnError) {
  auto meta = make_meta(2, {10, 1});
  ASSERT_TRUE(meta);
  core::Context ctx;
  auto buf = meta->buffer_type().allocate(1 << 16);
  ASSERT_TRUE(buf.ok());
  Tensor* t = ctx.new_tensor(core::Type::kF32, {64, 8, 1, 1}, "two_heads");
  Status st = (*buf)->place_split(*t, 0, {0, {}, 32});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("two_heads"), std::string::npos);
}

TEST(MetaBuffer, TensorsAtOneOffsetShareTheirShardsLikeAPlainBuffer) {
  auto meta = make_meta(2, {3, 1});
  ASSERT_TRUE(meta);
  core::Context ctx;
  auto buf = meta->buffer_type().allocate(1 << 16);
  ASSERT_TRUE(buf.ok());
  const memory::TensorSplit rows{1, {}, 1};
  Tensor* a = ctx.new_tensor(core::Type::kF32, {64, 8, 1, 1}, "a");
  Tensor* b = ctx.new_tensor(core::Type::kF32, {64, 8, 1, 1}, "b");   // a's slot
  Tensor* c = ctx.new_tensor(core::Type::kF32, {64, 8, 1, 1}, "c");   // another offset
  Tensor* d = ctx.new_tensor(core::Type::kF32, {32, 16, 1, 1}, "d");  // a's offset, shaped apart
  Tensor* m = ctx.new_tensor(core::Type::kF32, {64, 8, 1, 1}, "m");   // a's offset, mirrored
  ASSERT_TRUE((*buf)->place_split(*a, 0, rows).ok());
  ASSERT_TRUE((*buf)->place_split(*b, 0, rows).ok());
  ASSERT_TRUE((*buf)->place_split(*c, 4096, rows).ok());
  ASSERT_TRUE((*buf)->place_split(*d, 0, rows).ok());
  ASSERT_TRUE((*buf)->place_split(*m, 0, {}).ok());
  for (size_t member = 0; member < 2; ++member) {
    const void* at = meta->find(a)->shard[member]->data;
    EXPECT_EQ(meta->find(b)->shard[member]->data, at);
    EXPECT_NE(meta->find(c)->shard[member]->data, at);
    EXPECT_NE(meta->find(d)->shard[member]->data, at);
    EXPECT_NE(meta->find(m)->shard[member]->data, at);
  }
  // What b is written as, a reads back: they are one tensor's bytes, as in a plain buffer.
  const std::vector<float> v = random_values(64 * 8, 7);
  ASSERT_TRUE((*buf)->write(*b, v.data(), 0, v.size() * sizeof(float)).ok());
  std::vector<float> back(v.size());
  ASSERT_TRUE((*buf)->read(*a, back.data(), 0, back.size() * sizeof(float)).ok());
  EXPECT_EQ(back, v);
}

TEST(MetaBuffer, FreeBytesAreWhatTheTightestMemberHoldsOverItsShare) {
  const size_t budget = size_t{64} << 20;
  auto members = devices::make_partitions(2, budget);
  ASSERT_TRUE(members.ok()) << members.status().message();
  auto meta = MetaDevice::create(*members, {3, 1});
  ASSERT_TRUE(meta.ok());
  const size_t free0 = (*members)[0]->buffer_type().free_bytes();
  ASSERT_LE(free0, budget);
  // Member 0 takes three quarters of every split tensor: it runs out first.
  EXPECT_NEAR(static_cast<double>((*meta)->buffer_type().free_bytes()), free0 / 0.75, free0 * 1e-6);
  EXPECT_EQ(make_meta(2)->buffer_type().free_bytes(), SIZE_MAX) << "unbudgeted members";
}

TEST(MetaDevice, RejectsBadMembersAndProportions) {
  EXPECT_FALSE(MetaDevice::create(partitions(1), {}).ok());
  EXPECT_FALSE(MetaDevice::create(partitions(2), {1, 1, 1}).ok());
  EXPECT_FALSE(MetaDevice::create(partitions(2), {1, 0}).ok());
}

// Weights of a small attention block, placed either in host memory or split over a meta device
// the way the model loader splits them.
struct Block {
  static constexpr int64_t kEmbd = 64, kHead = 16, kHeads = 4, kKvHeads = 2, kCells = 8;
  core::Context ctx;
  std::vector<std::unique_ptr<memory::Buffer>> buffers;
  Tensor *table, *wm, *wq, *wo, *k_cache, *v_cache;

  Tensor* weight(memory::BufferType& type, core::Type t, core::Shape ne, const char* name,
                 memory::TensorSplit split, uint32_t seed, bool is_weight = true) {
    Tensor* w = ctx.new_tensor(t, ne, name);
    if (is_weight) w->flags |= core::kFlagWeight;
    auto buf = type.allocate(w->nbytes());
    EXPECT_TRUE(buf.ok());
    EXPECT_TRUE((*buf)->place_split(*w, 0, split).ok());
    const auto v = random_values(w->nelements(), seed);
    std::vector<uint8_t> bytes(w->nbytes());
    core::traits(t).from_float(v.data(), bytes.data(), w->nelements());
    EXPECT_TRUE((*buf)->write(*w, bytes.data(), 0, bytes.size()).ok());
    buffers.push_back(std::move(buf).value());
    return w;
  }

  // `dev` holds the projections; `out_dev` the output projection (partial offload when it is
  // the host). The embeddings and the KV cache always live on the host.
  Block(memory::BufferType& dev, memory::BufferType& out_dev) {
    auto& host = memory::host_buffer_type();
    const int64_t group = kHead * (kHeads / kKvHeads);
    table = weight(host, core::Type::kF32, {kEmbd, 10, 1, 1}, "table", {}, 1);
    wm = weight(dev, core::Type::kF32, {kHead, kHead, 1, 1}, "wm", {}, 2);
    wq = weight(dev, core::Type::kQ8_0, {kEmbd, kEmbd, 1, 1}, "wq", {1, {}, group}, 3);
    wo = weight(out_dev, core::Type::kF16, {kEmbd, kEmbd, 1, 1}, "wo", {0, {}, group}, 4);
    k_cache =
        weight(host, core::Type::kF32, {kHead * kKvHeads, kCells, 1, 1}, "k_cache", {}, 5, false);
    v_cache =
        weight(host, core::Type::kF32, {kHead * kKvHeads, kCells, 1, 1}, "v_cache", {}, 6, false);
  }
};

struct Built {
  std::unique_ptr<core::Context> ctx = std::make_unique<core::Context>();
  core::Graph graph;
  Tensor* ids = nullptr;
  Tensor* out = nullptr;
};

// Embeddings reshaped into heads straight from the host's get_rows, attention over views of a
// host KV cache, and a residual sum: the views of host tensors sit among the meta device's
// nodes.
Built build(const Block& b, int64_t T) {
  Built r;
  core::Context& c = *r.ctx;
  const int64_t hd = Block::kHead, H = Block::kHeads, Hkv = Block::kKvHeads;
  r.ids = c.new_tensor(core::Type::kI32, {T, 1, 1, 1}, "ids");
  r.ids->flags |= core::kFlagInput;
  Tensor* x = core::get_rows(c, b.table, r.ids);
  Tensor* heads = core::reshape(c, x, {hd, H, T, 1});
  Tensor* mixed = core::reshape(c, core::mul_mat(c, b.wm, heads), {Block::kEmbd, T, 1, 1});
  Tensor* q = core::reshape(c, core::mul_mat(c, b.wq, mixed), {hd, H, T, 1});
  Tensor* qp = core::permute(c, q, {0, 2, 1, 3});
  const size_t row = b.k_cache->nb[1];
  Tensor* keys = core::view(c, b.k_cache, {hd, Block::kCells, Hkv, 1},
                            {sizeof(float), row, hd * sizeof(float), row * Block::kCells}, 0);
  Tensor* values = core::view(c, b.v_cache, {hd, Block::kCells, Hkv, 1},
                              {sizeof(float), row, hd * sizeof(float), row * Block::kCells}, 0);
  Tensor* kq = core::soft_max(c, core::mul_mat(c, keys, qp), nullptr, 0.25f);
  Tensor* kqv = core::mul_mat(c, core::transpose(c, values), kq);
  Tensor* merged =
      core::reshape(c, core::cont(c, core::permute(c, kqv, {0, 2, 1, 3})), {Block::kEmbd, T, 1, 1});
  r.out = core::add(c, core::mul_mat(c, b.wo, merged), mixed);
  r.out->flags |= core::kFlagOutput;
  Tensor* outs[] = {r.out};
  r.graph = core::build_graph(outs);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return r;
}

std::vector<float> run(const Block& b, std::vector<backend::Backend*> backends, int64_t T,
                       std::string* describe = nullptr) {
  sched::Scheduler s(std::move(backends));
  Built g = build(b, T);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) ids[static_cast<size_t>(t)] = static_cast<int32_t>((t * 3) % 10);
  std::vector<float> out(static_cast<size_t>(g.out->nelements()));
  // Twice: the second run reuses the cached plan and expansion.
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(s.allocate(g.graph).ok());
    EXPECT_TRUE(s.backend_of(*g.ids).set_async(*g.ids, ids.data(), 0, ids.size() * 4).ok());
    Status st = s.compute_async();
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(s.backend_of(*g.out).get_async(*g.out, out.data(), 0, g.out->nbytes()).ok());
    st = s.synchronize();
    EXPECT_TRUE(st.ok()) << st.message();
  }
  if (describe != nullptr) *describe = s.describe();
  return out;
}

class HostViews : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(HostViews, InsideMetaSplitsMatchThePlainRun) {
  const auto [n, offload_output] = GetParam();
  auto meta = make_meta(n);
  ASSERT_TRUE(meta);
  auto host_backend = devices::host_device().make_backend({2});
  auto meta_backend = meta->make_backend({2});
  ASSERT_TRUE(host_backend.ok() && meta_backend.ok());
  Block plain(memory::host_buffer_type(), memory::host_buffer_type());
  Block split(meta->buffer_type(),
              offload_output ? meta->buffer_type() : memory::host_buffer_type());
  for (int64_t T : {1, 3}) {
    const auto expected = run(plain, {host_backend->get()}, T);
    std::string splits;
    const auto got = run(split, {meta_backend->get(), host_backend->get()}, T, &splits);
    EXPECT_LT(relative_rms(got, expected), 1e-5) << splits;
    EXPECT_NE(splits.find("on tensor("), std::string::npos) << splits;
    // With the output projection on the meta device, attention runs there too, over views of
    // the host's KV cache.
    if (offload_output) {
      EXPECT_NE(splits.find("k_cache"), std::string::npos) << splits;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, HostViews,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Bool()));

TEST(MetaBackend, ReportsComputeBytesPerMember) {
  auto meta = make_meta(2);
  ASSERT_TRUE(meta);
  auto host_backend = devices::host_device().make_backend({2});
  auto meta_backend = meta->make_backend({2});
  ASSERT_TRUE(host_backend.ok() && meta_backend.ok());
  Block split(meta->buffer_type(), meta->buffer_type());
  (void)run(split, {meta_backend->get(), host_backend->get()}, 3);
  for (const MemberBytes& b : meta->member_bytes()) {
    EXPECT_GT(b.sharded, 0u);
    EXPECT_GT(b.compute, 0u);
  }
}

}  // namespace
}  // namespace strata::meta
