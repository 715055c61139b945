// corgy-serve's copy of a batch's inputs, split among threads by bytes: every byte lands where a plain memcpy of
// each segment puts it, whatever the split (ranges that start and end inside segments, segments of odd sizes).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "serve/parallel_copy.h"

namespace corgy::serve {
namespace {

TEST(ParallelCopy, EveryByteLandsInItsSegmentsPlace) {
  // Segments of odd sizes around the 1 MB a thread takes at least, so that the threads' ranges cut them mid-way.
  const std::vector<std::size_t> sizes = {3, (1u << 20) + 7, 1, (3u << 20) + 5, 0, (2u << 20) - 3, 11};
  for (const int threads : {1, 2, 3, 8}) {
    for (const std::size_t parallel_bytes : {std::size_t{0}, std::size_t{1} << 40}) {
      std::vector<std::vector<std::uint8_t>> sources;
      std::size_t total = 0;
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        std::vector<std::uint8_t> bytes(sizes[k]);
        std::iota(bytes.begin(), bytes.end(), static_cast<std::uint8_t>(17 * k + 1));
        sources.push_back(std::move(bytes));
        total += sizes[k];
      }
      // The segments go to scattered places of one destination, in another order than their sources.
      std::vector<std::uint8_t> destination(total + sizes.size(), 0xEE), expected(total + sizes.size(), 0xEE);
      std::vector<CopySegment> segments;
      std::size_t offset = 0;
      for (std::size_t k = sizes.size(); k-- > 0;) {
        segments.push_back({sources[k].data(), destination.data() + offset, sizes[k]});
        std::copy(sources[k].begin(), sources[k].end(), expected.begin() + static_cast<std::ptrdiff_t>(offset));
        offset += sizes[k] + 1;  // a byte left alone between segments
      }
      copy_in_parallel(segments, parallel_bytes, threads);
      EXPECT_TRUE(destination == expected) << threads << " threads, parallel from " << parallel_bytes << " bytes";
    }
  }
}

TEST(ParallelCopy, NothingToCopy) {
  copy_in_parallel({}, 0, 8);
  const std::uint8_t source = 5;
  std::uint8_t destination = 0;
  const CopySegment empty{&source, &destination, 0};
  copy_in_parallel({&empty, 1}, 0, 8);
  EXPECT_EQ(destination, 0);
}

}  // namespace
}  // namespace corgy::serve
