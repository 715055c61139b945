// AlignedBuffer: floats on 64-byte boundaries, not initialised: for data a CPU backend writes in full right away
// (packed weights), where zero-filling first would touch hundreds of megabytes twice.
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
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace corgy::cpu
