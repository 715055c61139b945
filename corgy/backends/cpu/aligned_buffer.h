// AlignedBuffer: floats on 64-byte boundaries (allocate_pages: zero-filled, large ones mapped, so that zero-filling
// costs nothing), for data a CPU backend writes in full right away (packed weights).
#pragma once

#include <cstddef>
#include <memory>

namespace corgy::cpu {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  /// Room for `count` floats, contents undefined. Asks for transparent huge pages when large. Throws corgy::Error
  /// when memory runs out.
  explicit AlignedBuffer(std::size_t count);

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Free {
    std::size_t bytes;  // what allocate_pages was asked for
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace corgy::cpu
