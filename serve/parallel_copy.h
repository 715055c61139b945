// Copies of many megabytes split among threads: the inputs of a batch into its tensor. One thread's memcpy on a
// loaded server moves about 5 GB/s, so copying 15 Tiny YOLO requests (30 MB) into a batch took longer than their
// forward on an H100 (about 6 ms of copies against 4 ms of forward per batch, 2026-11-27).
#pragma once

#include <cstddef>
#include <span>

namespace corgy::serve {

/// One contiguous copy: `bytes` from `source` to `destination` (the regions do not overlap).
struct CopySegment {
  const void* source;
  void* destination;
  std::size_t bytes;
};

/// Performs every segment. Below `parallel_bytes` in total it copies on the calling thread; above, it splits the
/// bytes (not the segments: one large request is split too) into equal ranges, one per thread, up to
/// `max_threads` threads (the caller's included), started for this call.
void copy_in_parallel(std::span<const CopySegment> segments, std::size_t parallel_bytes = std::size_t{4} << 20,
                      int max_threads = 8);

}  // namespace corgy::serve
