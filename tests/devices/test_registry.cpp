// Partition planning, the device registry, device lists and byte sizes.
#include "devices/registry.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <cstdint>
#include <set>
#include <thread>

#include "devices/byte_size.h"
#include "devices/cpu_topology.h"
#include "devices/host_device.h"
#include "devices/partition_plan.h"

namespace strata::devices {
namespace {

TEST(PartitionPlan, SplitsTheCoresEvenly) {
  const std::vector<int> cpus = allowed_cpus();
  const int n_cores = static_cast<int>(cpus.size());
  for (int n = 1; n <= std::min(n_cores, 4); ++n) {
    auto specs = plan_partitions(n, 1024);
    ASSERT_TRUE(specs.ok()) << specs.status().message();
    ASSERT_EQ(specs->size(), static_cast<size_t>(n));
    std::set<int> seen;
    for (int i = 0; i < n; ++i) {
      const PartitionSpec& s = (*specs)[static_cast<size_t>(i)];
      EXPECT_EQ(s.index, i);
      EXPECT_EQ(s.budget, 1024u);
      EXPECT_GE(static_cast<int>(s.cores.size()), n_cores / n);
      EXPECT_LE(static_cast<int>(s.cores.size()), n_cores / n + 1);
      for (int c : s.cores) EXPECT_TRUE(seen.insert(c).second) << "core " << c << " twice";
    }
    EXPECT_EQ(seen, std::set<int>(cpus.begin(), cpus.end()));
  }
}

TEST(PartitionPlan, RefusesImpossibleCounts) {
  const int n_cores = static_cast<int>(allowed_cpus().size());
  auto zero = plan_partitions(0, 0);
  EXPECT_EQ(zero.status().message(), "partition count 0 must be at least 1");
  auto many = plan_partitions(4 * n_cores + 1, 0);
  EXPECT_EQ(many.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(many.status().message(), "cannot make " + std::to_string(4 * n_cores + 1) +
                                         " partitions: this process may use " +
                                         std::to_string(n_cores) +
                                         " cores (at most 4 partitions a core)");
}

TEST(PartitionPlan, MorePartitionsThanCoresShareCoresRoundRobin) {
  const auto cpus = allowed_cpus();
  const int n = static_cast<int>(cpus.size()) + 1;
  auto specs = plan_partitions(n, 0);
  ASSERT_TRUE(specs.ok()) << specs.status().message();
  ASSERT_EQ(specs->size(), static_cast<size_t>(n));
  for (const PartitionSpec& s : *specs) {
    ASSERT_EQ(s.cores.size(), 1u);
    EXPECT_EQ(s.cores[0], cpus[static_cast<size_t>(s.index) % cpus.size()]);
  }
}

TEST(PartitionPlan, FormatsCpuLists) {
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({3}), "3");
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

TEST(Registry, MakesNamedPartitionsAndResolvesLists) {
  auto parts = make_partitions(1, size_t{1} << 20);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0]->name(), "part:0");
  EXPECT_EQ((*parts)[0]->kind(), backend::DeviceKind::kPartition);
  auto again = make_partitions(1, size_t{1} << 20);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0], (*parts)[0]);

  auto list = parse_device_list("part:0,cpu");
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0], (*parts)[0]);
  EXPECT_EQ((*list)[1], &host_device());

  EXPECT_EQ(parse_device_list("part:1").status().message(),
            "unknown device 'part:1' (available: cpu, part:0)");
  EXPECT_EQ(parse_device_list("cpu,cpu").status().message(), "device 'cpu' is listed twice");
  EXPECT_EQ(parse_device_list("").status().message(), "bad device list '': empty device name");
  EXPECT_EQ(parse_device_list("cpu,").status().code(), ErrorCode::kInvalidArgument);

  const std::vector<DeviceInfo> infos = list_devices();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].name, "cpu");
  EXPECT_EQ(infos[0].cores, allowed_cpus());
  EXPECT_EQ(infos[1].name, "part:0");
  EXPECT_EQ(infos[1].budget, size_t{1} << 20);
  EXPECT_EQ(infos[1].memory.total, size_t{1} << 20);
  EXPECT_EQ(infos[1].cores, allowed_cpus());
  EXPECT_TRUE(infos[1].caps.async);

  EXPECT_EQ(make_partitions(0, 0).status().code(), ErrorCode::kInvalidArgument);
}

TEST(ByteSize, ParsesSuffixes) {
  EXPECT_EQ(*parse_byte_size("0"), 0u);
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  EXPECT_EQ(*parse_byte_size("4096B"), 4096u);
  EXPECT_EQ(*parse_byte_size("2K"), 2048u);
  EXPECT_EQ(*parse_byte_size("512M"), size_t{512} << 20);
  EXPECT_EQ(*parse_byte_size("512m"), size_t{512} << 20);
  EXPECT_EQ(*parse_byte_size("3G"), size_t{3} << 30);
  EXPECT_EQ(*parse_byte_size("3GiB"), size_t{3} << 30);
  EXPECT_EQ(*parse_byte_size("1T"), size_t{1} << 40);
}

TEST(ByteSize, RefusesAnythingElse) {
  for (const char* bad : {"", "M", "-1", "1.5G", "12X", "1 G", "1GG", "99999999999999999999"}) {
    auto r = parse_byte_size(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(parse_byte_size("12X").status().message(),
            "bad size '12X': expected a whole number with an optional K, M, G or T suffix");
  EXPECT_EQ(parse_byte_size("17179869184G").status().message(),
            "bad size '17179869184G': too large");
}

TEST(CpuTopology, PinsTheCallingThread) {
  const std::vector<int> cpus = allowed_cpus();
  bool pinned = false;
  int cpu = -1;
  std::thread t([&] {
    const int target[] = {cpus.back()};
    pinned = pin_current_thread(target);
    cpu = sched_getcpu();
  });
  t.join();
  ASSERT_TRUE(pinned);
  EXPECT_EQ(cpu, cpus.back());
  const int outside[] = {CPU_SETSIZE + 1};
  EXPECT_FALSE(pin_current_thread(outside));
}

TEST(CpuTopology, AllocatesPages) {
  for (int node : {-1, numa_node_of_cpu(allowed_cpus()[0])}) {
    void* p = allocate_pages(3 * 4096, node);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    static_cast<char*>(p)[3 * 4096 - 1] = 1;
    free_pages(p, 3 * 4096, node);
  }
}

}  // namespace
}  // namespace strata::devices
