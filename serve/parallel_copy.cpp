#include "serve/parallel_copy.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

namespace corgy::serve {

namespace {

/// Copies the bytes [begin, end) of the segments' concatenation.
void copy_range(std::span<const CopySegment> segments, std::size_t begin, std::size_t end) {
  std::size_t offset = 0;  // of the current segment in the concatenation
  for (const CopySegment& segment : segments) {
    const std::size_t from = std::max(begin, offset);
    const std::size_t to = std::min(end, offset + segment.bytes);
    if (from < to) {
      std::memcpy(static_cast<char*>(segment.destination) + (from - offset),
                  static_cast<const char*>(segment.source) + (from - offset), to - from);
    }
    offset += segment.bytes;
    if (offset >= end) break;
  }
}

}  // namespace

void copy_in_parallel(std::span<const CopySegment> segments, std::size_t parallel_bytes, int max_threads) {
  std::size_t total = 0;
  for (const CopySegment& segment : segments) total += segment.bytes;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // At least 1 MB per thread: below that, starting a thread costs more than the copy it takes over.
  const int threads = static_cast<int>(
      std::min<std::size_t>({static_cast<std::size_t>(std::max(1, std::min(max_threads, cores))), total >> 20}));
  if (total < parallel_bytes || threads < 2) {
    copy_range(segments, 0, total);
    return;
  }
  const std::size_t share = (total + threads - 1) / threads;
  std::vector<std::future<void>> others;
  for (int t = 1; t < threads; ++t) {
    const std::size_t begin = std::min(total, share * t);
    const std::size_t end = std::min(total, begin + share);
    others.push_back(std::async(std::launch::async, [=] { copy_range(segments, begin, end); }));
  }
  copy_range(segments, 0, std::min(total, share));
  for (std::future<void>& other : others) other.get();
}

}  // namespace corgy::serve
