// A map from pointers to small values in one flat table: passes that run for every node of
// every micro-batch (building a graph, its signature) look tensors up here instead of in a
// node-allocating std::unordered_map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata::core {

template <typename V>
class PointerMap {
 public:
  /// Sized for `expected` keys without growing.
  explicit PointerMap(size_t expected = 64) { reset_capacity(expected); }

  /// The value of `key`, inserting `value` when absent; second: whether it was inserted.
  std::pair<V*, bool> insert(const void* key, V value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot& s = probe(key);
    if (s.key == key) return {&s.value, false};
    s = {key, std::move(value)};
    ++size_;
    return {&s.value, true};
  }
  /// The value of `key`, or nullptr.
  V* find(const void* key) {
    Slot& s = probe(key);
    return s.key == key ? &s.value : nullptr;
  }
  bool contains(const void* key) { return find(key) != nullptr; }

 private:
  struct Slot {
    const void* key = nullptr;
    V value{};
  };

  // The slot holding `key`, or the empty one where it would go (the table is never full).
  Slot& probe(const void* key) {
    auto x = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key));
    x ^= x >> 33;  // mix: tensors are allocated at regular strides
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    for (size_t i = static_cast<size_t>(x) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == key || slots_[i].key == nullptr) return slots_[i];
    }
  }
  void reset_capacity(size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected) cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    size_ = 0;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reset_capacity(old.size());
    for (Slot& s : old) {
      if (s.key != nullptr) insert(s.key, std::move(s.value));
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace strata::core
