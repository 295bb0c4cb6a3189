// Allocation-failure injection: a buffer type that fails its n-th allocation, swept over every
// allocation of a model load, a session's creation, a prefill and a decode step, on the host
// on a layout that offloads layers to a second device, and on a tensor split. Each failure
// must end in an error value (kOutOfMemory), never a crash; a session whose decode failed stays
// usable, as Session::decode promises.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/host_event.h"
#include "cpu/cpu_backend.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "engine/layout.h"
#include "engine/session.h"
#include "golden.h"
#include "memory/buffer.h"
#include "meta/meta_device.h"
#include "model/model.h"

namespace strata::engine {
namespace {

// Host memory that refuses the allocation numbered `fail_at` (counting from the last arm()).
class FailingBufferType final : public memory::BufferType {
 public:
  std::string_view name() const override { return "failing-host"; }
  size_t alignment() const override { return memory::host_buffer_type().alignment(); }
  bool is_host() const override { return true; }
  Result<std::unique_ptr<memory::Buffer>> allocate(size_t size) override {
    if (calls_++ == fail_at_) {
      return error(ErrorCode::kOutOfMemory,
                   "injected failure of a " + std::to_string(size) + "-byte allocation");
    }
    return memory::host_buffer_type().allocate(size);
  }

  /// Fails the n-th allocation from now (0: the next); -1 fails none.
  /// The n-th compute fails (-1: none): refused when queued, or with `inside` queued and then
  /// failed on the member's queue, after the tasks queued before it.
  void arm(int64_t n, bool inside = false) {
    calls_ = 0;
    fail_at_ = n;
    inside_ = inside;
  }
  /// Allocations since the last arm().
  int64_t calls() const { return calls_; }

 private:
  int64_t calls_ = 0;
  int64_t fail_at_ = -1;
  bool inside_ = false;
  std::vector<std::unique_ptr<backend::HostEvent>> failed_events_;  // queued waits name them
};

// The host CPU with its memory from a FailingBufferType.
class FailingDevice final : public backend::Device {
 public:
  std::string_view name() const override { return "failing-cpu"; }
  backend::DeviceKind kind() const override { return backend::DeviceKind::kCpu; }
  backend::DeviceMemory memory() const override { return devices::host_device().memory(); }
  backend::DeviceCaps caps() const override { return devices::host_device().caps(); }
  memory::BufferType& buffer_type() override { return type_; }
  bool supports_op(const core::Tensor& node) const override {
    return devices::host_device().supports_op(node);
  }
  Result<std::unique_ptr<backend::Backend>> make_backend(
      const backend::BackendOptions& options) override {
    return std::unique_ptr<backend::Backend>(
        new cpu::CpuBackend(*this, options.n_threads, options.wait_timeout));
  }
  FailingBufferType& failing() { return type_; }

 private:
  FailingBufferType type_;
};

// A partition seen through another device object: everything is the partition's until a
// subclass changes it.
class PartitionProxy : public backend::Device {
 public:
  explicit PartitionProxy(backend::Device& part) : part_(&part) {}
  std::string_view name() const override { return part_->name(); }
  backend::DeviceKind kind() const override { return part_->kind(); }
  backend::DeviceMemory memory() const override { return part_->memory(); }
  backend::DeviceCaps caps() const override { return part_->caps(); }
  memory::BufferType& buffer_type() override { return part_->buffer_type(); }
  bool supports_op(const core::Tensor& node) const override { return part_->supports_op(node); }
  Result<std::unique_ptr<backend::Backend>> make_backend(
      const backend::BackendOptions& options) override {
    return part_->make_backend(options);
  }
  Result<std::unique_ptr<backend::Event>> make_event() override { return part_->make_event(); }

 private:
  backend::Device* part_;
};

// A partition whose memory comes from a FailingBufferType (its queue is the partition's).
class FailingMember final : public PartitionProxy {
 public:
  using PartitionProxy::PartitionProxy;
  memory::BufferType& buffer_type() override { return type_; }
  FailingBufferType& failing() { return type_; }

 private:
  FailingBufferType type_;
};

// A partition whose queue refuses the compute numbered `fail_at` (counting from arm()), as a
// device that runs out of memory mid-run would: the work queued before it stays queued.
class RefusingMember final : public PartitionProxy {
 public:
  using PartitionProxy::PartitionProxy;
  Result<std::unique_ptr<backend::Backend>> make_backend(
      const backend::BackendOptions& options) override {
    auto inner = PartitionProxy::make_backend(options);
    if (!inner.ok()) return inner.status();
    return std::unique_ptr<backend::Backend>(new Refusing(*this, std::move(inner).value()));
  }

  /// The n-th compute fails (-1: none): refused when queued, or with `inside` queued and then
  /// failed on the member's queue, after the tasks queued before it.
  void arm(int64_t n, bool inside = false) {
    calls_ = 0;
    fail_at_ = n;
    inside_ = inside;
  }
  int64_t calls() const { return calls_; }

 private:
  class Refusing final : public backend::Backend {
   public:
    Refusing(RefusingMember& owner, std::unique_ptr<backend::Backend> inner)
        : owner_(&owner), inner_(std::move(inner)) {}
    backend::Device& device() override { return inner_->device(); }
    Status compute_async(const core::Graph& g) override {
      if (owner_->calls_++ == owner_->fail_at_) {
        if (!owner_->inside_)
          return error(ErrorCode::kOutOfMemory, "injected refusal of a compute");
        // A wait released by a failed signal fails on the queue, like a task out of memory.
        auto failed = std::make_unique<backend::HostEvent>(inner_->device());
        failed->signal_failed(1, error(ErrorCode::kOutOfMemory, "injected failure in a queue"));
        STRATA_RETURN_IF_ERROR(inner_->wait(*failed, 1));
        owner_->failed_events_.push_back(std::move(failed));
      }
      return inner_->compute_async(g);
    }
    Status reserve(const core::Graph& g) override { return inner_->reserve(g); }
    Status set_async(core::Tensor& t, const void* src, size_t o, size_t n) override {
      return inner_->set_async(t, src, o, n);
    }
    Status get_async(const core::Tensor& t, void* dst, size_t o, size_t n) override {
      return inner_->get_async(t, dst, o, n);
    }
    Status copy_async(core::Tensor& dst, const core::Tensor& src) override {
      return inner_->copy_async(dst, src);
    }
    Status signal(backend::Event& e, uint64_t v) override { return inner_->signal(e, v); }
    Status wait(backend::Event& e, uint64_t v) override { return inner_->wait(e, v); }
    Status synchronize() override { return inner_->synchronize(); }

   private:
    RefusingMember* owner_;
    std::unique_ptr<backend::Backend> inner_;
  };

  int64_t calls_ = 0;
  int64_t fail_at_ = -1;
  bool inside_ = false;
  std::vector<std::unique_ptr<backend::HostEvent>> failed_events_;  // queued waits name them
};

const std::string kModel = testing::model_path("stories260K.gguf");
const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 95, 292, 44, 262, 300};

// Runs `step` with the n-th allocation failing, for n = 0, 1, ... until a run needs no more
// than n allocations (then it must succeed); returns how many allocation points failed.
template <typename Step>
int64_t sweep(FailingBufferType& type, const Step& step) {
  for (int64_t n = 0;; ++n) {
    type.arm(n);
    const Status st = step();
    if (type.calls() <= n) {
      EXPECT_TRUE(st.ok()) << st.message();
      type.arm(-1);
      return n;
    }
    EXPECT_FALSE(st.ok()) << "allocation " << n << " failed but the step succeeded";
    EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory) << st.message();
  }
}

TEST(AllocFailure, ModelLoadEndsInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  FailingBufferType type;
  const int64_t points = sweep(type, [&]() -> Status {
    auto m = model::Model::load(kModel, type);
    return m.ok() ? Status{} : m.status();
  });
  std::printf("model load: %lld allocation points, each failed cleanly\n",
              static_cast<long long>(points));
  EXPECT_GT(points, 0);
}

TEST(AllocFailure, SessionPrefillAndDecodeEndInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto model = model::Model::load(kModel, memory::host_buffer_type());
  ASSERT_TRUE(model.ok()) << model.status().message();
  FailingDevice device;
  SessionParams sp;
  sp.n_ctx = 64;
  sp.n_ubatch = 4;
  const int64_t create_points = sweep(device.failing(), [&]() -> Status {
    auto s = Session::create(**model, device, sp);
    return s.ok() ? Status{} : s.status();
  });
  EXPECT_GT(create_points, 0);

  auto session = Session::create(**model, device, sp);
  ASSERT_TRUE(session.ok()) << session.status().message();
  Session& s = **session;
  // A failed decode leaves the session as it was, so each retry starts from an empty cache.
  const int64_t prefill_points = sweep(device.failing(), [&]() -> Status {
    const Status st = s.decode(kPrompt);
    if (st.ok()) s.reset();
    return st;
  });
  ASSERT_TRUE(s.decode(kPrompt).ok());
  const int32_t next[] = {300};
  const int64_t decode_points = sweep(device.failing(), [&]() -> Status {
    const Status st = s.decode(next);
    EXPECT_EQ(s.n_past(), static_cast<int64_t>(kPrompt.size()) + (st.ok() ? 1 : 0));
    return st;
  });
  std::printf(
      "session: %lld allocation points at creation, %lld in a prefill, %lld in a "
      "decode step, each failed cleanly\n",
      static_cast<long long>(create_points), static_cast<long long>(prefill_points),
      static_cast<long long>(decode_points));
  // Still usable after every injected failure.
  EXPECT_TRUE(s.decode(next).ok());
}

struct LayoutPoints {
  int64_t load = 0, create = 0, prefill = 0;
};

// Sweeps the allocations `type` makes in a model load, a session's creation and a prefill, with
// every layer offloaded to `device`; afterwards the session must still decode.
LayoutPoints sweep_layout(FailingBufferType& type, backend::Device& device, const char* what) {
  LayoutPoints p;
  LayoutParams lp;
  lp.devices = {&device};
  lp.n_gpu_layers = 99;
  auto layout = make_layout(5, lp);
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  if (!layout.ok()) return p;
  const model::WeightPlacement placement = weight_placement(*layout, devices::host_device());
  p.load = sweep(type, [&]() -> Status {
    auto m = model::Model::load(kModel, placement);
    return m.ok() ? Status{} : m.status();
  });
  auto model = model::Model::load(kModel, placement);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return p;
  SessionParams sp;
  sp.n_ctx = 64;
  sp.n_ubatch = 4;
  p.create = sweep(type, [&]() -> Status {
    auto s = Session::create(**model, devices::host_device(), *layout, sp);
    return s.ok() ? Status{} : s.status();
  });
  auto session = Session::create(**model, devices::host_device(), *layout, sp);
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (!session.ok()) return p;
  p.prefill = sweep(type, [&]() -> Status {
    const Status st = (*session)->decode(kPrompt);
    if (st.ok()) (*session)->reset();
    return st;
  });
  std::printf(
      "%s: %lld allocation points in model load, %lld at session creation, %lld in a prefill, "
      "each failed cleanly\n",
      what, static_cast<long long>(p.load), static_cast<long long>(p.create),
      static_cast<long long>(p.prefill));
  EXPECT_TRUE((*session)->decode(kPrompt).ok());
  return p;
}

// Two devices: every layer, their KV cache and the output on the failing device.
TEST(AllocFailure, MultiDeviceLayoutEndsInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  FailingDevice device;
  const LayoutPoints p = sweep_layout(device.failing(), device, "two devices");
  EXPECT_GT(p.load, 0);
  EXPECT_GT(p.create, 0);
}

// A tensor split over two partitions, the first one's memory failing: its shards of the
// weights and KV cache and its compute buffer.
TEST(AllocFailure, TensorSplitEndsInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  FailingMember failing(*(*parts)[0]);
  auto meta = meta::MetaDevice::create({&failing, (*parts)[1]}, {});
  ASSERT_TRUE(meta.ok()) << meta.status().message();
  const LayoutPoints p = sweep_layout(failing.failing(), **meta, "tensor split");
  EXPECT_GT(p.load, 10);  // a shard of every split or mirrored tensor
  EXPECT_GT(p.create, 0);
}

// stories260K with every layer on a tensor split over `members` (n_ctx 64); failures are test
// failures and leave the session null.
struct SplitSession {
  std::unique_ptr<meta::MetaDevice> meta;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<Session> session;
};

SplitSession open_tensor_split(const std::vector<backend::Device*>& members, int64_t ubatch) {
  SplitSession out;
  auto meta = meta::MetaDevice::create(members, {});
  EXPECT_TRUE(meta.ok()) << meta.status().message();
  if (!meta.ok()) return out;
  out.meta = std::move(meta).value();
  LayoutParams lp;
  lp.devices = {out.meta.get()};
  lp.n_gpu_layers = 99;
  auto layout = make_layout(5, lp);
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  if (!layout.ok()) return out;
  auto model = model::Model::load(kModel, weight_placement(*layout, devices::host_device()));
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return out;
  out.model = std::move(model).value();
  SessionParams sp;
  sp.n_ctx = 64;
  sp.n_ubatch = ubatch;
  auto session = Session::create(*out.model, devices::host_device(), *layout, sp);
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (session.ok()) out.session = std::move(session).value();
  return out;
}

// A tensor split whose second member refuses one compute of a run, after the first member has
// queued all of its own (including waits for the second's signals): the decode fails, returns
// within the test's time (no member is left waiting), and the next decode computes what a
// session that never failed does.
TEST(AllocFailure, TensorSplitRecoversFromAMemberThatFailsMidRun) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  RefusingMember refusing(*(*parts)[1]);
  SplitSession split = open_tensor_split({(*parts)[0], &refusing}, 4);
  ASSERT_TRUE(split.session);
  Session& s = *split.session;
  ASSERT_TRUE(s.decode(kPrompt).ok());
  const std::vector<float> want(s.logits().begin(), s.logits().end());
  s.reset();
  int64_t failures = 0;
  for (int64_t n = 0;; ++n) {
    refusing.arm(n);
    const Status st = s.decode(kPrompt);
    if (refusing.calls() <= n) {
      ASSERT_TRUE(st.ok()) << st.message();
      break;
    }
    ++failures;
    EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory) << st.message();
    EXPECT_EQ(s.n_past(), 0);
    refusing.arm(-1);
    ASSERT_TRUE(s.decode(kPrompt).ok());
    ASSERT_EQ(std::vector<float>(s.logits().begin(), s.logits().end()), want)
        << "after a refused compute " << n;
    s.reset();
  }
  std::printf("tensor split: %lld refused computes, each recovered\n",
              static_cast<long long>(failures));
  EXPECT_GT(failures, 10);
}

// A tensor split whose member fails inside its queue (after its earlier tasks, while the other
// member runs on), during decode steps queued back to back after a prompt: the step fails
// with the member's error, and the next steps compute what a session that never failed does.
// Member 0 uploads the inputs, so when it fails the other must not go on from stale cell
// indices into cells the prompt holds.
TEST(AllocFailure, TensorSplitRecoversFromAMemberWhoseQueuedTaskFails) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  for (int failing = 0; failing < 2; ++failing) {
    RefusingMember member(*(*parts)[failing]);
    std::vector<backend::Device*> members = {(*parts)[0], (*parts)[1]};
    members[static_cast<size_t>(failing)] = &member;
    SplitSession split = open_tensor_split(members, 1);
    ASSERT_TRUE(split.session);
    Session& s = *split.session;
    const std::vector<int32_t> steps = {261, 378, 403};
    ASSERT_TRUE(s.decode(kPrompt).ok());
    ASSERT_TRUE(s.decode(steps).ok());
    const std::vector<float> want(s.logits().begin(), s.logits().end());
    int64_t failures = 0;
    for (int64_t n = 0;; ++n) {
      s.reset();
      ASSERT_TRUE(s.decode(kPrompt).ok());
      member.arm(n, /*inside=*/true);
      const Status st = s.decode(steps);
      if (member.calls() <= n) {
        ASSERT_TRUE(st.ok()) << st.message();
        break;
      }
      ++failures;
      EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory) << st.message();
      EXPECT_EQ(s.n_past(), static_cast<int64_t>(kPrompt.size()));
      member.arm(-1);
      ASSERT_TRUE(s.decode(steps).ok());
      ASSERT_EQ(std::vector<float>(s.logits().begin(), s.logits().end()), want)
          << "member " << failing << ", failure at compute " << n;
    }
    std::printf("tensor split, member %d failing in its queue: %lld points, each recovered\n",
                failing, static_cast<long long>(failures));
    EXPECT_GT(failures, 10);
  }
}

}  // namespace
}  // namespace strata::engine
