#include "engine/open.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "cpu/weight_forms.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "engine/session_checks.h"
#include "gguf/file.h"
#include "meta/meta_device.h"
#include "model/arch/hparams.h"
#include "mpi/cluster.h"

namespace strata::engine {
namespace {

Status invalid(const std::string& what) {
  return error(ErrorCode::kInvalidArgument, what);
}

// -ngl for "every layer and the output".
constexpr int64_t kAllLayers = int64_t{1} << 30;

// Most partitions one layout makes, so the highest index a device list may name is one less.
constexpr int64_t kMaxPartitions = 256;

// The partitions a device list needs: one more than the highest "part:K" it names. Names
// that are not "part:" and a digit string are left for the device list to reject.
Result<int> partitions_named(const std::string& list, bool of_ranks = false) {
  int wanted = 0;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    // A rank's partition: "mpi:R/part:K".
    const size_t slash = name.find("/part:");
    if (of_ranks != (name.rfind("mpi:", 0) == 0 && slash != std::string::npos)) continue;
    if (of_ranks) name = name.substr(slash + 1);
    if (name.rfind("part:", 0) != 0) continue;
    const std::string index = name.substr(5);
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) continue;
    errno = 0;
    const long long k = std::strtoll(index.c_str(), nullptr, 10);
    if (errno == ERANGE || k >= kMaxPartitions) {
      return invalid("--devices: partition index " + index + " is out of range [0, " +
                     std::to_string(kMaxPartitions - 1) + "]");
    }
    wanted = std::max(wanted, static_cast<int>(k) + 1);
  }
  return wanted;
}

Result<std::vector<backend::Device*>> make_devices(const OpenParams& p) {
  if (p.partitions < 0 || p.partitions > kMaxPartitions) {
    return invalid("--partitions must be in [0, " + std::to_string(kMaxPartitions) + "], got " +
                   std::to_string(p.partitions));
  }
  if (p.device_mem != 0 && p.partitions == 0 && p.devices.empty())
    return invalid("--device-mem needs --partitions N or --devices part:K");
  std::vector<backend::Device*> devs;
  // A device list naming part:K needs the partitions to exist; make as many as it names.
  int wanted = static_cast<int>(p.partitions);
  if (wanted == 0 && !p.devices.empty()) {
    auto named = partitions_named(p.devices);
    if (!named.ok()) return named.status();
    wanted = *named;
  }
  if (wanted > 0) {
    auto parts = devices::make_partitions(wanted, p.device_mem);
    if (!parts.ok()) return parts.status();
    devs = *parts;
  }
  if (!p.devices.empty()) {
    // Partitions of MPI ranks are made on every rank, as many as the list names (or
    // --partitions asks for).
    auto of_ranks = partitions_named(p.devices, /*of_ranks=*/true);
    if (!of_ranks.ok()) return of_ranks.status();
    if (*of_ranks > 0 && mpi::driving()) {
      auto parts =
          mpi::make_partitions(std::max(*of_ranks, static_cast<int>(p.partitions)), p.device_mem);
      if (!parts.ok()) return parts.status();
    }
    auto listed = devices::parse_device_list(p.devices);
    if (!listed.ok()) return listed.status();
    devs.clear();
    for (backend::Device* d : *listed) {
      if (d != &devices::host_device()) devs.push_back(d);
    }
  }
  return devs;
}

// The meta device over `members` split as `weights` says. Layouts hold plain device pointers,
// so meta devices live for the process, like partitions; asking again for the same split
// returns the same device.
Result<backend::Device*> tensor_device(const std::vector<backend::Device*>& members,
                                       const std::vector<float>& weights) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<meta::MetaDevice>> made;
  std::lock_guard lock(mutex);
  const std::vector<float> w = weights.empty() ? std::vector<float>(members.size(), 1.0f) : weights;
  for (const auto& m : made) {
    if (m->members() == members &&
        std::equal(w.begin(), w.end(), m->weights().begin(), m->weights().end())) {
      return m.get();
    }
  }
  auto dev = meta::MetaDevice::create(members, w);
  if (!dev.ok()) return dev.status();
  made.push_back(std::move(dev).value());
  return made.back().get();
}

// --mem-budget is the host alone as one budgeted partition holding everything offloadable.
Result<OpenParams> with_mem_budget(const OpenParams& asked) {
  if (asked.mem_budget == 0) return asked;
  if (asked.partitions != 0 || !asked.devices.empty() || asked.n_gpu_layers != 0 ||
      asked.device_mem != 0) {
    return invalid(
        "--mem-budget budgets the host alone: it does not combine with --partitions, "
        "--devices, --device-mem or -ngl");
  }
  OpenParams p = asked;
  p.partitions = 1;
  p.device_mem = asked.mem_budget;
  p.n_gpu_layers = kAllLayers;
  p.split_mode = SplitMode::kNone;
  p.stream_weights = true;
  return p;
}

Result<LayoutParams> layout_params(const OpenParams& p, std::string* note) {
  if (p.stream_slots < 0) return invalid("--stream-slots must not be negative");
  if (p.stream_slots == 1) {
    return invalid("--stream-slots must be at least 2 (one layer is read while another runs)");
  }
  auto devs = make_devices(p);
  if (!devs.ok()) return devs.status();
  for (float f : p.tensor_split) {
    if (!(f >= 0.0f)) return invalid("-ts: a proportion is negative or not a number");
  }
  LayoutParams lp;
  lp.devices = *devs;
  lp.tensor_split = p.tensor_split;
  SplitMode mode = p.split_mode;
  if (mode == SplitMode::kTensor && lp.devices.size() < 2) {
    if (note != nullptr) *note = "-sm tensor on a single device runs as -sm none";
    mode = SplitMode::kNone;
  }
  if (mode == SplitMode::kTensor) {
    auto meta = tensor_device(lp.devices, p.tensor_split);
    if (!meta.ok()) return meta.status();
    lp.devices = {*meta};
    lp.tensor_split.clear();
  }
  if (mode == SplitMode::kNone && lp.devices.size() > 1)
    lp.devices.erase(lp.devices.begin() + 1, lp.devices.end());
  lp.n_gpu_layers = p.n_gpu_layers;
  lp.kv_offload = p.kv_offload;
  if (lp.n_gpu_layers > 0 && lp.devices.empty())
    return invalid("-ngl needs devices: pass --partitions N or --devices LIST");
  return lp;
}

SessionParams with_execution(const OpenParams& p, const SessionParams& params) {
  SessionParams sp = params;
  sp.pipeline = p.pipeline;
  sp.paged = p.paged;
  sp.kv_paging = p.kv_paging;
  sp.prefill = p.prefill;
  sp.band_layers = p.band_layers;
  return sp;
}

// The layout needs the layer count before the weights are placed, so the header is read on
// its own first; with `session` the session's size is checked against the machine there too,
// before anything large is allocated.
Result<OpenedModel> open_checked(const std::string& path, const OpenParams& asked,
                                 const SessionParams* session) {
  auto budgeted = with_mem_budget(asked);
  if (!budgeted.ok()) return budgeted.status();
  const OpenParams& params = *budgeted;
  std::string note;
  auto lp = layout_params(params, &note);
  if (!lp.ok()) return lp.status();
  int64_t n_layer = 0;
  {
    auto file = gguf::File::open(path);
    if (!file.ok()) return file.status();
    auto hp = model::read_hparams(*file);
    if (!hp.ok()) return hp.status();
    n_layer = hp->n_layer;
    // Other ranks read their shards of the weights from their own copy of the file.
    STRATA_RETURN_IF_ERROR(mpi::check_same_file(path, file->data_section_offset()));
    if (session != nullptr) {
      STRATA_RETURN_IF_ERROR(check_session(*hp, with_execution(params, *session),
                                           devices::host_device().memory().total));
    }
  }
  auto layout = make_layout(n_layer, *lp);
  if (!layout.ok()) return layout.status();
  OpenedModel out;
  out.layout = *layout;
  out.layout.note = note;
  out.params = params;
  model::StreamOptions stream;
  stream.enabled = params.stream_weights || params.stream_slots > 0;
  stream.slots = params.stream_slots;
  // The host's copy of the weights in the layout its kernels read fastest.
  model::HostForm form;
  if (params.repack) {
    form.type = cpu::host_weight_type;
    form.convert = cpu::convert_weight_rows;
  }
  auto m =
      model::Model::load(path, weight_placement(out.layout, devices::host_device()), stream, form);
  if (!m.ok()) return m.status();
  out.model = std::move(m).value();
  return out;
}

}  // namespace

Result<OpenedModel> open_model(const std::string& path, const OpenParams& params) {
  return open_checked(path, params, nullptr);
}

Result<std::unique_ptr<Session>> open_session(const OpenedModel& model,
                                              const SessionParams& params) {
  const SessionParams sp = with_execution(model.params, params);
  STRATA_RETURN_IF_ERROR(
      check_session(model.model->hparams(), sp, devices::host_device().memory().total));
  return Session::create(*model.model, devices::host_device(), model.layout, sp);
}

Result<Opened> open(const std::string& path, const OpenParams& params,
                    const SessionParams& session_params) {
  auto m = open_checked(path, params, &session_params);
  if (!m.ok()) return m.status();
  auto s = Session::create(*m->model, devices::host_device(), m->layout,
                           with_execution(params, session_params));
  if (!s.ok()) return s.status();
  Opened out;
  out.model = std::move(m->model);
  out.layout = m->layout;
  out.session = std::move(s).value();
  return out;
}

}  // namespace strata::engine
