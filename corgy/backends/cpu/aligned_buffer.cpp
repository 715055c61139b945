#include "corgy/backends/cpu/aligned_buffer.h"

#include "corgy/page_memory.h"

namespace corgy::cpu {

namespace {
constexpr std::size_t kAlignment = 64;
}  // namespace

AlignedBuffer::AlignedBuffer(std::size_t count) : size_(count) {
  if (count == 0) return;
  // Large buffers start on a huge-page boundary (allocate_pages).
  const std::size_t bytes = (count * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = allocate_pages(bytes, kAlignment, "packed weights");
  data_ = std::unique_ptr<float, Free>(static_cast<float*>(memory), Free{bytes});
}

void AlignedBuffer::Free::operator()(float* p) const { free_pages(p, bytes); }

}  // namespace corgy::cpu
