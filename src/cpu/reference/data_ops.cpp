// Reference products and data movement: mul_mat, mul_mat_id, cpy, get_rows, set_rows, argmax,
// top_k.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cpu/reference/ops.h"
#include "cpu/reference/tensor_io.h"

namespace strata::cpu::reference {
namespace {

using core::Tensor;
using core::Type;

// The type mul_mat rounds activations to before the dot products (core/ops.h): the weight
// type's dot type (F32 stays F32).
Type activation_type(Type weights) {
  return core::dot_type(weights);
}

// The row as the dot product sees it: rounded to `type` by core's from_float and read back.
std::vector<float> round_trip(const std::vector<float>& row, Type type) {
  std::vector<uint8_t> bytes(core::row_size(type, static_cast<int64_t>(row.size())));
  std::vector<float> out(row.size());
  core::traits(type).from_float(row.data(), bytes.data(), static_cast<int64_t>(row.size()));
  core::traits(type).to_float(bytes.data(), out.data(), static_cast<int64_t>(row.size()));
  return out;
}

Status check_ids(const Tensor& ids, int64_t limit, const char* op) {
  for (int64_t i2 = 0; i2 < ids.ne[2]; ++i2) {
    for (int64_t i1 = 0; i1 < ids.ne[1]; ++i1) {
      for (int64_t i0 = 0; i0 < ids.ne[0]; ++i0) {
        const int32_t id = get_i32(ids, i0, i1, i2);
        if (id < 0 || id >= limit) {
          return error(ErrorCode::kOutOfRange, std::string(op) + ": row id " + std::to_string(id) +
                                                   " is outside [0, " + std::to_string(limit) +
                                                   ")");
        }
      }
    }
  }
  return {};
}

}  // namespace

void mul_mat(const Tensor& dst) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Tensor* mask = dst.src[2];
  const Type act = activation_type(w.type);
  const int64_t k = w.ne[0];
  for (int64_t i3 = 0; i3 < dst.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < dst.ne[2]; ++i2) {
      for (int64_t n = 0; n < dst.ne[1]; ++n) {
        const std::vector<float> a = round_trip(get_row(x, n, i2, i3), act);
        for (int64_t m = 0; m < dst.ne[0]; ++m) {
          if (mask != nullptr && get(*mask, m, n, 0, 0) == -INFINITY) {
            set(dst, m, n, i2, i3, -INFINITY);
            continue;
          }
          // Weights broadcast: batch (i2, i3) of src1 uses batch (i2 / r2, i3 / r3) of src0.
          const std::vector<float> wr =
              get_row(w, m, i2 / (x.ne[2] / w.ne[2]), i3 / (x.ne[3] / w.ne[3]));
          double sum = 0.0;
          for (int64_t i = 0; i < k; ++i) {
            sum += static_cast<double>(wr[static_cast<size_t>(i)]) * a[static_cast<size_t>(i)];
          }
          set(dst, m, n, i2, i3, static_cast<float>(sum));
        }
      }
    }
  }
}

// Straight from the definition: every (slot, token) column is a mul_mat of the chosen expert.
Status mul_mat_id(const Tensor& dst) {
  const Tensor& w = *dst.src[0];
  const Tensor& x = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  STRATA_RETURN_IF_ERROR(check_ids(ids, w.ne[2], "mul_mat_id"));
  const Type act = activation_type(w.type);
  const int64_t k = w.ne[0];
  for (int64_t t = 0; t < dst.ne[2]; ++t) {
    for (int64_t i = 0; i < dst.ne[1]; ++i) {
      const int32_t e = get_i32(ids, i, t);
      const std::vector<float> a = round_trip(get_row(x, i % x.ne[1], t, 0), act);
      for (int64_t m = 0; m < dst.ne[0]; ++m) {
        const std::vector<float> wr = get_row(w, m, e, 0);
        double sum = 0.0;
        for (int64_t j = 0; j < k; ++j) {
          sum += static_cast<double>(wr[static_cast<size_t>(j)]) * a[static_cast<size_t>(j)];
        }
        set(dst, m, i, t, 0, static_cast<float>(sum));
      }
    }
  }
  return {};
}

// Stable sort by value, descending, NaNs last: ties keep index order.
void top_k(const Tensor& dst) {
  const Tensor& a = *dst.src[0];
  for (int64_t i3 = 0; i3 < a.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < a.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < a.ne[1]; ++i1) {
        std::vector<std::pair<float, int32_t>> v;
        for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) {
          v.emplace_back(get(a, i0, i1, i2, i3), static_cast<int32_t>(i0));
        }
        std::stable_sort(v.begin(), v.end(), [](const auto& p, const auto& q) {
          if (std::isnan(p.first) || std::isnan(q.first))
            return !std::isnan(p.first) && std::isnan(q.first);
          return p.first > q.first;
        });
        for (int64_t j = 0; j < dst.ne[0]; ++j) {
          const int32_t id = v[static_cast<size_t>(j)].second;
          std::memcpy(dst.row_ptr(i1, i2, i3) + static_cast<size_t>(j) * dst.nb[0], &id, sizeof id);
        }
      }
    }
  }
}

// Same type: the bytes are copied (exact for every type). Otherwise each row goes through
// f32 and is rounded by the destination type's from_float.
void cpy(const Tensor& dst) {
  const Tensor& src = *dst.src[0];
  const size_t ts = core::type_size(src.type);
  for (int64_t i3 = 0; i3 < src.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < src.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < src.ne[1]; ++i1) {
        if (src.type != dst.type) {
          set_row(dst, i1, i2, i3, get_row(src, i1, i2, i3));
          continue;
        }
        const int64_t elems = src.ne[0] / core::block_size(src.type);
        for (int64_t b = 0; b < elems; ++b) {
          std::memcpy(dst.row_ptr(i1, i2, i3) + b * dst.nb[0],
                      src.row_ptr(i1, i2, i3) + b * src.nb[0], ts);
        }
      }
    }
  }
}

Status get_rows(const Tensor& dst) {
  const Tensor& table = *dst.src[0];
  const Tensor& ids = *dst.src[1];
  STRATA_RETURN_IF_ERROR(check_ids(ids, table.ne[1], "get_rows"));
  for (int64_t i3 = 0; i3 < dst.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < dst.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < dst.ne[1]; ++i1) {
        set_row(dst, i1, i2, i3, get_row(table, get_i32(ids, i1, i2, i3), i2, i3));
      }
    }
  }
  return {};
}

// The node is a view of src0 (same shape and strides), so rows are written through it.
Status set_rows(const Tensor& dst) {
  const Tensor& rows = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  STRATA_RETURN_IF_ERROR(check_ids(ids, dst.ne[1], "set_rows"));
  for (int64_t r = 0; r < rows.ne[1]; ++r)
    set_row(dst, get_i32(ids, r), 0, 0, get_row(rows, r, 0, 0));
  return {};
}

// First index of the maximum; NaNs are skipped (a row of NaNs gives 0).
void argmax(const Tensor& dst) {
  const Tensor& a = *dst.src[0];
  int64_t row = 0;
  for (int64_t i3 = 0; i3 < a.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < a.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < a.ne[1]; ++i1) {
        int32_t best = 0;
        bool found = false;
        float best_v = 0.0f;
        for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) {
          const float v = get(a, i0, i1, i2, i3);
          if (v != v) continue;
          if (!found || v > best_v) {
            best = static_cast<int32_t>(i0);
            best_v = v;
            found = true;
          }
        }
        std::memcpy(static_cast<uint8_t*>(dst.data) + row * dst.nb[0], &best, sizeof best);
        ++row;
      }
    }
  }
}

}  // namespace strata::cpu::reference
