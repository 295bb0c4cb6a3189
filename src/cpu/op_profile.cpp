#include "cpu/op_profile.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <vector>

namespace strata::cpu {
namespace {

std::atomic<OpProfile*> g_active{nullptr};

// "blk.12.ffn_up" -> "blk.*.ffn_up": the layers of a model fold into one kind.
std::string kind_name(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    if (std::isdigit(static_cast<unsigned char>(name[i])) &&
        (i == 0 || name[i - 1] == '.' || name[i - 1] == '_')) {
      while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
      out += '*';
    } else {
      out += name[i++];
    }
  }
  return out;
}

}  // namespace

void OpProfile::add(const core::Tensor& node, double seconds) {
  std::string key(core::op_name(node.op));
  key += ' ';
  key += node.name.empty() ? "-" : kind_name(node.name);
  if (node.src[0] != nullptr) {
    key += ' ';
    key += core::type_name(node.src[0]->type);
  }
  const std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[key];
  e.seconds += seconds;
  ++e.calls;
}

std::string OpProfile::report(double units, const std::string& unit_name) const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double total = 0;
  for (const auto& r : rows) total += r.second.seconds;
  if (total <= 0 || units <= 0) return "";
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%7s %12s %12s  %s\n", "share", ("ms/" + unit_name).c_str(),
                ("calls/" + unit_name).c_str(), "op node weights");
  out += line;
  Entry rest;
  for (const auto& [key, e] : rows) {
    if (e.seconds < 0.001 * total) {
      rest.seconds += e.seconds;
      rest.calls += e.calls;
      continue;
    }
    std::snprintf(line, sizeof line, "%6.1f%% %12.3f %12.1f  %s\n", 100.0 * e.seconds / total,
                  1e3 * e.seconds / units, static_cast<double>(e.calls) / units, key.c_str());
    out += line;
  }
  if (rest.calls > 0) {
    std::snprintf(line, sizeof line, "%6.1f%% %12.3f %12.1f  (the rest)\n",
                  100.0 * rest.seconds / total, 1e3 * rest.seconds / units,
                  static_cast<double>(rest.calls) / units);
    out += line;
  }
  std::snprintf(line, sizeof line, "%7s %12.3f\n", "total", 1e3 * total / units);
  out += line;
  return out;
}

OpProfile* active_op_profile() {
  return g_active.load(std::memory_order_acquire);
}

OpProfileScope::OpProfileScope(OpProfile* profile) {
  g_active.store(profile, std::memory_order_release);
}

OpProfileScope::~OpProfileScope() {
  g_active.store(nullptr, std::memory_order_release);
}

}  // namespace strata::cpu
