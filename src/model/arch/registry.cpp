#include "model/arch/architecture.h"

#include <vector>

namespace strata::model {

// Each defined in its own file.
extern const Architecture kLlamaArchitecture;
extern const Architecture kQwen2Architecture;
extern const Architecture kQwen3Architecture;
extern const Architecture kPhi3Architecture;
extern const Architecture kGemma2Architecture;
extern const Architecture kGemma3Architecture;

namespace {

const std::vector<const Architecture*>& all() {
  static const std::vector<const Architecture*> list = {&kLlamaArchitecture,  &kQwen2Architecture,
                                                        &kQwen3Architecture,  &kPhi3Architecture,
                                                        &kGemma2Architecture, &kGemma3Architecture};
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
