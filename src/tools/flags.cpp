#include "tools/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace strata::tools {
namespace {

Status bad_value(const std::string& name, const std::string& value, const char* want) {
  return error(ErrorCode::kInvalidArgument,
               "invalid value '" + value + "' for " + name + ": expected " + want);
}

}  // namespace

void FlagSet::add_int(std::vector<std::string> names, int64_t* out, std::string help) {
  flags_.push_back({std::move(names), true,
                    [out](const std::string& name, const std::string& v) -> Status {
                      errno = 0;
                      char* end = nullptr;
                      const long long x = std::strtoll(v.c_str(), &end, 10);
                      if (v.empty() || *end != '\0' || errno == ERANGE)
                        return bad_value(name, v, "an integer");
                      *out = x;
                      return {};
                    },
                    std::move(help)});
}

void FlagSet::add_float(std::vector<std::string> names, float* out, std::string help) {
  flags_.push_back({std::move(names), true,
                    [out](const std::string& name, const std::string& v) -> Status {
                      char* end = nullptr;
                      const float x = std::strtof(v.c_str(), &end);
                      if (v.empty() || *end != '\0' || !std::isfinite(x))
                        return bad_value(name, v, "a number");
                      *out = x;
                      return {};
                    },
                    std::move(help)});
}

void FlagSet::add_string(std::vector<std::string> names, std::string* out, std::string help) {
  flags_.push_back({std::move(names), true,
                    [out](const std::string&, const std::string& v) -> Status {
                      *out = v;
                      return {};
                    },
                    std::move(help)});
}

void FlagSet::add_bool(std::vector<std::string> names, bool* out, std::string help) {
  flags_.push_back({std::move(names), false,
                    [out](const std::string&, const std::string&) -> Status {
                      *out = true;
                      return {};
                    },
                    std::move(help)});
}

const FlagSet::Flag* FlagSet::find(std::string_view name) const {
  for (const Flag& f : flags_) {
    for (const std::string& n : f.names) {
      if (n == name) return &f;
    }
  }
  return nullptr;
}

Status FlagSet::parse(const std::vector<std::string>& args, std::vector<std::string>* positional) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::string value;
    bool inline_value = false;
    const bool is_flag = name.size() > 1 && name[0] == '-' &&
                         !(std::isdigit(static_cast<unsigned char>(name[1])) || name[1] == '.');
    if (!is_flag) {
      if (positional == nullptr) {
        return error(ErrorCode::kInvalidArgument, "unexpected argument '" + name + "'");
      }
      positional->push_back(name);
      continue;
    }
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const Flag* f = find(name);
    if (f == nullptr) return error(ErrorCode::kInvalidArgument, "unknown flag '" + name + "'");
    if (f->takes_value && !inline_value) {
      if (i + 1 >= args.size())
        return error(ErrorCode::kInvalidArgument, "flag " + name + " needs a value");
      value = args[++i];
    } else if (!f->takes_value && inline_value) {
      return error(ErrorCode::kInvalidArgument, "flag " + name + " takes no value");
    }
    STRATA_RETURN_IF_ERROR(f->set(name, value));
  }
  return {};
}

std::string FlagSet::usage() const {
  std::ostringstream os;
  for (const Flag& f : flags_) {
    std::string names;
    for (const std::string& n : f.names) names += (names.empty() ? "" : ", ") + n;
    if (f.takes_value) names += " X";
    os << "  " << names;
    for (size_t pad = names.size(); pad < 28; ++pad) os << ' ';
    os << ' ' << f.help << '\n';
  }
  return os.str();
}

Status check_range(const char* flag, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return error(ErrorCode::kInvalidArgument, std::string(flag) + " must be in [" +
                                                  std::to_string(lo) + ", " + std::to_string(hi) +
                                                  "], got " + std::to_string(v));
  }
  return {};
}

}  // namespace strata::tools
