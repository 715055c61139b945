// Variable: corgy's tensor. Page-aligned float32 storage so that a GPU backend can import it without a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "corgy/shape.h"

namespace corgy {

/// A page-aligned block of floats. Its capacity is rounded up to whole pages (the page size comes from
/// sysconf), so the block can be imported by Vulkan's VK_EXT_external_memory_host as it is.
/// Each Storage has a process-unique id that backends use to key device-side copies of it.
class Storage {
 public:
  /// Allocates room for at least `count` floats, zero-filled. Throws corgy::Error when memory runs out.
  explicit Storage(std::size_t count);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  /// Floats that fit in the allocated pages (>= the count asked for).
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const { return capacity_ * sizeof(float); }
  std::uint64_t id() const { return id_; }
  /// Moves the block's pages to a temporary file (page_memory.h: move_pages_to_file): the same values at the same
  /// address, out of the process's memory until they are read again. For a constant that a backend keeps a copy of
  /// in its own layout. Returns whether it did (small blocks, for one, stay as they are). Again on a block already
  /// moved, it only drops the pages read since (drop_file_pages): no second file is written.
  bool page_out();

  static std::size_t page_size();

 private:
  float* data_ = nullptr;
  std::size_t capacity_ = 0;
  bool in_file_ = false;  // page_out moved the pages to a file
  std::uint64_t id_ = 0;
};

/// A float32 tensor of shape (N, C, H, W) in NCHW order over page-aligned Storage.
///
/// Ownership rules:
/// - A Variable shares its Storage through a reference count. Moving a Variable is cheap and leaves the
///   source empty. Copying is explicit: clone() makes a deep copy with its own storage.
/// - reshape() changes the shape in place (same count, no copy). view() makes a second Variable over the
///   same storage with another shape (count <= capacity); writes through one are seen through the other.
///   Sequential uses views so that intermediates whose lifetimes do not overlap share memory.
/// - count() is the number of elements in use (shape.count()); capacity() is what the storage holds,
///   rounded up to whole pages, as in Corgy.
class Variable {
 public:
  /// An empty Variable: shape (0, 0, 0, 0), no storage.
  Variable() = default;
  /// Allocates zero-filled storage for `shape`. Throws corgy::Error for a zero or negative dimension.
  explicit Variable(Shape shape);
  /// Copies `values` (exactly shape.count() of them) into new storage.
  Variable(Shape shape, std::span<const float> values);

  Variable(Variable&&) noexcept = default;
  Variable& operator=(Variable&&) noexcept = default;
  Variable(const Variable&) = delete;
  Variable& operator=(const Variable&) = delete;

  /// A deep copy with storage of its own.
  Variable clone() const;
  /// Same storage, another shape with count() <= capacity().
  Variable view(Shape shape) const;
  /// Same storage and shape: a second handle, no copy (a layer copy sharing its weights). Empty gives empty.
  Variable share() const;
  /// New shape with the same count; no copy.
  void reshape(Shape shape);

  const Shape& shape() const { return shape_; }
  std::size_t count() const { return shape_.count(); }
  std::size_t capacity() const { return storage_ ? storage_->capacity() : 0; }
  bool empty() const { return storage_ == nullptr; }

  float* data() { return storage_ ? storage_->data() : nullptr; }
  const float* data() const { return storage_ ? storage_->data() : nullptr; }
  std::span<float> values() { return {data(), count()}; }
  std::span<const float> values() const { return {data(), count()}; }
  float& at(int n, int c, int h, int w) { return data()[index(n, c, h, w)]; }
  float at(int n, int c, int h, int w) const { return data()[index(n, c, h, w)]; }

  /// The storage itself, for backends that keep device copies keyed by Storage::id().
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  void fill(float value);

 private:
  std::size_t index(int n, int c, int h, int w) const {
    return ((static_cast<std::size_t>(n) * shape_.c + c) * shape_.h + h) * shape_.w + w;
  }

  Shape shape_{};
  std::shared_ptr<Storage> storage_;
};

}  // namespace corgy
