#include "corgy/backends/cpu/aligned_buffer.h"

#include <sys/mman.h>

#include "corgy/page_memory.h"

namespace corgy::cpu {

namespace {
constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
}  // namespace

AlignedBuffer::AlignedBuffer(std::size_t count) : size_(count) {
  if (count == 0) return;
  // Large buffers start on a huge-page boundary, so every whole 2 MiB of them can be a transparent huge page: the
  // first write then faults once per 2 MiB instead of once per 4 KiB (planning Tiny YOLO's 250 MB of Winograd
  // weights spent most of its time in page faults), and a GEMM streaming them misses the TLB less. Their size is
  // not rounded up to 2 MiB: the last, partial huge page would be resident whole (ResNet-50's packed weights grew
  // by up to 2 MB a buffer); the tail past the last whole one gets 4 KiB pages.
  const bool huge = count * sizeof(float) >= kHugePageBytes;
  const std::size_t alignment = huge ? kHugePageBytes : kAlignment;
  const std::size_t bytes = (count * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = allocate_pages(bytes, alignment, "packed weights");
  if (huge) madvise(memory, bytes, MADV_HUGEPAGE);
  data_ = std::unique_ptr<float, Free>(static_cast<float*>(memory), Free{bytes});
}

void AlignedBuffer::Free::operator()(float* p) const { free_pages(p, bytes); }

}  // namespace corgy::cpu
