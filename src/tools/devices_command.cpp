#include <cstdio>
#include <string>
#include <vector>

#include "cpu/kernel_sets.h"
#include "devices/byte_size.h"
#include "devices/partition_plan.h"
#include "devices/registry.h"
#include "memory/buffer.h"
#include "mpi/cluster.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace strata::tools {
namespace {

std::string describe_memory(const devices::DeviceInfo& d) {
  const std::string free = memory::format_bytes(d.memory.free);
  if (d.budget != 0) return memory::format_bytes(d.budget) + " budget, " + free + " free";
  return memory::format_bytes(d.memory.total) + " total, " + free + " free";
}

std::string describe_caps(const backend::DeviceCaps& caps) {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (on) out += (out.empty() ? "" : ",") + std::string(name);
  };
  add(caps.async, "async");
  add(caps.events, "events");
  add(caps.host_buffers, "host-buffers");
  return out.empty() ? "-" : out;
}

}  // namespace

int devices_command(const std::vector<std::string>& args) {
  bool help = false;
  int64_t partitions = 0;
  std::string device_mem = "0";
  FlagSet flags;
  flags.add_int({"--partitions"}, &partitions, "CPU partitions to make from the cores (0: none)");
  flags.add_string({"--device-mem"}, &device_mem,
                   "memory budget of each partition, e.g. 512M or 2G (0: no budget)");
  flags.add_bool({"-h", "--help"}, &help, "show this help");
  if (Status st = flags.parse(args); !st.ok()) return report_error("devices", st);
  if (help) {
    std::printf("usage: strata devices [--partitions N] [--device-mem SIZE]\n%s",
                flags.usage().c_str());
    return 0;
  }
  auto budget = devices::parse_byte_size(device_mem);
  if (!budget.ok()) return report_error("devices", budget.status().with_context("--device-mem"));
  if (partitions != 0) {
    if (partitions < 0 || partitions > 4096) {
      return report_error(
          "devices", error(ErrorCode::kInvalidArgument,
                           "--partitions must be in [0, 4096], got " + std::to_string(partitions)));
    }
    auto made = devices::make_partitions(static_cast<int>(partitions), *budget);
    if (!made.ok()) return report_error("devices", made.status().with_context("--partitions"));
    if (mpi::driving()) {
      // Under mpirun every rank splits its cores the same way: mpi:R/part:K.
      auto ranks = mpi::make_partitions(static_cast<int>(partitions), *budget);
      if (!ranks.ok()) return report_error("devices", ranks.status().with_context("--partitions"));
    }
  } else if (*budget != 0) {
    return report_error("devices",
                        error(ErrorCode::kInvalidArgument, "--device-mem needs --partitions"));
  }
  for (const devices::DeviceInfo& d : devices::list_devices()) {
    const std::string node = d.numa_node >= 0 ? std::to_string(d.numa_node) : "-";
    std::printf("%-8s %-10s memory %-34s cores %-3zu (%s)  numa %s  caps %s\n", d.name.c_str(),
                std::string(backend::device_kind_name(d.kind)).c_str(), describe_memory(d).c_str(),
                d.cores.size(), devices::format_cpu_list(d.cores).c_str(), node.c_str(),
                describe_caps(d.caps).c_str());
    if (!d.where.empty()) std::printf("         %s\n", d.where.c_str());
  }
  std::string sets;
  for (const cpu::KernelSetInfo& k : cpu::kernel_sets()) {
    sets +=
        std::string(sets.empty() ? "" : ", ") + k.set->name + (k.runs_here ? "" : " (not here)");
  }
  std::printf("cpu kernels: %s (this build holds %s; STRATA_KERNELS=<set> picks one)\n",
              cpu::kernel_set().name, sets.c_str());
  return 0;
}

}  // namespace strata::tools
