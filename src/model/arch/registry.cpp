#include "model/arch/architecture.h"

#include <array>

namespace strata::model {

// Each defined in its own file.
extern const Architecture kLlamaArchitecture;
extern const Architecture kQwen2Architecture;
extern const Architecture kQwen3Architecture;
extern const Architecture kPhi3Architecture;

namespace {

const std::array<const Architecture*, 4>& all() {
  static const std::array<const Architecture*, 4> list = {&kLlamaArchitecture, &kQwen2Architecture,
                                                          &kQwen3Architecture, &kPhi3Architecture};
  return list;
}

}  // namespace

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture* a : all()) {
    if (a->name == name) return a;
  }
  return nullptr;
}

std::vector<std::string_view> architecture_names() {
  std::vector<std::string_view> names;
  for (const Architecture* a : all()) names.push_back(a->name);
  return names;
}

}  // namespace strata::model
