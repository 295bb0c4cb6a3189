#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "memory/huge_page_buffer.h"

namespace strata::memory {
namespace {

TEST(HugePageBuffer, IsHostMemoryOnA2MiBBoundary) {
  HugePageBufferType& type = huge_page_buffer_type();
  EXPECT_TRUE(type.is_host());
  auto buf = type.allocate(3 << 20);
  ASSERT_TRUE(buf.ok()) << buf.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*buf)->base()) % (2 << 20), 0u);
  EXPECT_GE((*buf)->size(), size_t{3} << 20);
  EXPECT_EQ((*buf)->size() % (2 << 20), 0u);

  core::Context ctx;
  core::Tensor* t = ctx.new_tensor(core::Type::kF32, {1000, 3, 1, 1}, "t");
  ASSERT_TRUE((*buf)->place(*t, 4096).ok());
  std::vector<float> in(3000), out(3000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
  ASSERT_TRUE((*buf)->write(*t, in.data(), 0, t->nbytes()).ok());
  ASSERT_TRUE((*buf)->read(*t, out.data(), 0, t->nbytes()).ok());
  EXPECT_EQ(in, out);
  // Bytes written in place are where write() puts them.
  EXPECT_EQ((*buf)->writable_data(*t), t->data);
}

TEST(HugePageBuffer, ImpossibleSizeIsOutOfMemory) {
  for (size_t size : {SIZE_MAX, SIZE_MAX / 2, size_t{1} << 60}) {
    auto buf = huge_page_buffer_type().allocate(size);
    ASSERT_FALSE(buf.ok());
    EXPECT_EQ(buf.status().code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(buf.status().message().find("host-huge"), std::string::npos);
  }
}

}  // namespace
}  // namespace strata::memory
