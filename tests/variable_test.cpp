// Variable: page alignment (and allocate_pages beneath it), count/capacity, ownership (move, clone, view, reshape);
// TensorDims: how tensors of other ranks fold into a Variable.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include "corgy/page_memory.h"
#include "corgy/tensor_dims.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

TEST(Variable, DataIsPageAlignedAndCapacityIsWholePages) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  for (Shape shape : {Shape{1, 1, 1, 1}, Shape{1, 3, 13, 13}, Shape{2, 16, 208, 208}, Shape::vector(1024)}) {
    Variable v(shape);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % page, 0u) << shape.str();
    EXPECT_EQ(v.count(), shape.count());
    EXPECT_GE(v.capacity(), v.count());
    EXPECT_EQ(v.capacity() * sizeof(float) % page, 0u);
    EXPECT_LT(v.capacity() - v.count(), page / sizeof(float)) << "more than one page of slack";
  }
}

TEST(Variable, StartsZeroed) {
  Variable v(Shape{2, 3, 4, 5});
  for (float x : v.values()) EXPECT_EQ(x, 0.0f);
}

TEST(Variable, MoveTransfersStorageWithoutCopy) {
  Variable a(Shape{1, 2, 3, 4});
  a.fill(2.5f);
  const float* data = a.data();
  Variable b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is documented
  EXPECT_EQ(b.at(0, 1, 2, 3), 2.5f);
}

TEST(Variable, CloneIsDeep) {
  Variable a(Shape{1, 1, 2, 2}, std::vector<float>{1, 2, 3, 4});
  Variable b = a.clone();
  EXPECT_NE(a.data(), b.data());
  b.at(0, 0, 0, 0) = 9;
  EXPECT_EQ(a.at(0, 0, 0, 0), 1);
  EXPECT_NE(a.storage()->id(), b.storage()->id());
}

TEST(Variable, ReshapeKeepsDataAndViewSharesIt) {
  Variable a(Shape{2, 3, 4, 5});
  a.at(1, 2, 3, 4) = 7;
  const float* data = a.data();
  a.reshape(Shape{2, 60, 1, 1});
  EXPECT_EQ(a.data(), data);
  EXPECT_EQ(a.at(1, 59, 0, 0), 7);
  Variable v = a.view(Shape::vector(10));
  v.data()[0] = 3;
  EXPECT_EQ(a.data()[0], 3);
  EXPECT_EQ(v.storage()->id(), a.storage()->id());
}

TEST(Variable, BadShapesThrowClearErrors) {
  EXPECT_THROW(Variable(Shape{1, 0, 3, 3}), Error);
  EXPECT_THROW(Variable(Shape{1, -2, 3, 3}), Error);
  Variable a(Shape{1, 1, 2, 3});
  EXPECT_THROW(a.reshape(Shape{1, 1, 2, 2}), Error);
  EXPECT_THROW((void)a.view(Shape::vector(static_cast<int>(a.capacity()) + 1)), Error);
  try {
    Variable(Shape{1, 1, 2, 2}, std::vector<float>{1, 2, 3});
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 4 values, got 3"), std::string::npos) << e.what();
  }
}

TEST(Variable, OutOfMemoryIsAnError) {
  // 2^62 bytes cannot be allocated anywhere; the error must say so instead of crashing.
  EXPECT_THROW(Variable(Shape{1 << 15, 1 << 15, 1 << 15, 1 << 15}), Error);
}

// allocate_pages on both sides of kMappedBytes: aligned, zero, writable to the last byte, and freed again (a block
// freed and asked for again many times over must not exhaust memory or mappings).
TEST(PageMemory, BlocksAreAlignedZeroAndFreedAgain) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t huge = std::size_t{2} << 20;
  for (int round = 0; round < 200; ++round) {
    for (const auto& [bytes, alignment] : {std::pair{std::size_t{100}, std::size_t{64}}, std::pair{page * 3, page},
                                           std::pair{kMappedBytes - 64, std::size_t{64}}, std::pair{kMappedBytes, page},
                                           std::pair{huge + 12345, huge}, std::pair{3 * huge, huge}}) {
      auto* bytes_of = static_cast<unsigned char*>(allocate_pages(bytes, alignment, "a test block"));
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(bytes_of) % alignment, 0u) << bytes;
      if (round == 0) {
        for (std::size_t i = 0; i < bytes; i += 997) ASSERT_EQ(bytes_of[i], 0) << bytes << " at " << i;
        ASSERT_EQ(bytes_of[bytes - 1], 0) << bytes;
      }
      bytes_of[0] = 1;
      bytes_of[bytes - 1] = 2;
      free_pages(bytes_of, bytes);
    }
  }
}

/// The resident kilobytes and the name of the mapping of this process that holds `address` (/proc/self/smaps).
std::pair<long, std::string> mapping_of(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto where = reinterpret_cast<std::uintptr_t>(address);
  std::string line;
  bool inside = false;
  std::string name;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = begin <= where && where < end;
      const std::size_t path = line.find('/');
      name = path == std::string::npos ? "" : line.substr(path);
      continue;
    }
    long kilobytes = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kilobytes) == 1) return {kilobytes, name};
  }
  return {-1, ""};
}

// Storage::page_out: the same values at the same address, out of memory until read, read back from a file, and a
// write after it changes the block alone.
TEST(PageMemory, PagedOutBlocksKeepTheirValuesAndLeaveMemory) {
  Variable v(Shape::vector(16 << 20));  // 64 MB
  for (std::size_t i = 0; i < v.count(); ++i) v.data()[i] = static_cast<float>(i % 1000) * 0.5f;
  const float* before = v.data();
  EXPECT_GE(mapping_of(before).first, 60 << 10);
  if (!v.storage()->page_out())
    GTEST_SKIP() << "page_out declined: an AddressSanitizer build, or no temporary folder on a disk";
  EXPECT_EQ(v.data(), before);
  const auto [resident, name] = mapping_of(before);
  EXPECT_LT(resident, 1 << 10) << "kB still resident after page_out";
  EXPECT_FALSE(name.empty()) << "the block is not mapped from a file";
  for (std::size_t i = 0; i < v.count(); i += 1024) ASSERT_EQ(v.data()[i], static_cast<float>(i % 1000) * 0.5f) << i;
  EXPECT_GE(mapping_of(before).first, 60 << 10) << "kB resident after reading every page again";
  // Again: the pages read since leave memory, no new file (the same mapping), the values stay.
  EXPECT_TRUE(v.storage()->page_out());
  const auto [resident_again, name_again] = mapping_of(before);
  EXPECT_LT(resident_again, 1 << 10) << "kB still resident after the second page_out";
  EXPECT_EQ(name_again, name);
  for (std::size_t i = 0; i < v.count(); i += 4093) ASSERT_EQ(v.data()[i], static_cast<float>(i % 1000) * 0.5f) << i;
  v.data()[7] = -1.0f;
  EXPECT_TRUE(v.storage()->page_out());  // a page written since stays as it was written
  EXPECT_EQ(v.data()[7], -1.0f);
  EXPECT_EQ(v.data()[8], 4.0f);
  EXPECT_FALSE(Variable(Shape::vector(16)).storage()->page_out());  // small blocks come from the C library
}

TEST(TensorDims, FoldKeepsBatchAndChannels) {
  EXPECT_EQ((TensorDims{7}.folded()), (Shape{7, 1, 1, 1}));
  EXPECT_EQ((TensorDims{2, 1000}.folded()), (Shape{2, 1000, 1, 1}));
  EXPECT_EQ((TensorDims{1, 84, 8400}.folded()), (Shape{1, 84, 1, 8400}));
  EXPECT_EQ((TensorDims{1, 56, 56, 96}.folded()), (Shape{1, 56, 56, 96}));
  EXPECT_EQ((TensorDims{1, 2, 58, 28, 28}.folded()), (Shape{1, 116, 28, 28}));
  EXPECT_EQ((TensorDims{3, 2, 3, 4, 5, 6}.folded()), (Shape{3, 24, 5, 6}));
  const TensorDims dims{1, 4, 16, 8400};
  EXPECT_EQ(dims.count(), 4u * 16 * 8400);
  EXPECT_EQ(dims.strides()[0], 4u * 16 * 8400);
  EXPECT_EQ(dims.strides()[2], 8400u);
  EXPECT_EQ(dims.strides()[3], 1u);
  EXPECT_EQ(dims.matching(Shape{5, 4, 16, 8400}, "test"), (TensorDims{5, 4, 16, 8400}));
  EXPECT_EQ(dims.str(), "(1, 4, 16, 8400)");
}

TEST(TensorDims, BadDimsThrowClearErrors) {
  EXPECT_THROW((TensorDims{1, 0, 3}), Error);
  EXPECT_THROW((TensorDims{1, 2, 3, 4, 5, 6, 7}), Error);
  const std::int64_t too_large[] = {1, std::int64_t{1} << 40};
  EXPECT_THROW((void)TensorDims::from(too_large), Error);
  try {
    (void)TensorDims{1, 84, 8400}.matching(Shape{1, 84, 8400, 1}, "layer 3 (transpose)");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 3 (transpose): expects a tensor (1, 84, 8400)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace corgy::testing
