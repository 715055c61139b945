// MappedFile: a whole file memory-mapped read-only, so loaders copy from the page cache straight into a layer.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace corgy {

/// A read-only memory map of a regular file. An empty file maps to an empty span. Throws corgy::Error naming the
/// file (and the system's reason) when it cannot be opened, is not a regular file, or cannot be mapped.
/// `what` says what the file should hold, for the message ("raw weights", "IDX images").
class MappedFile {
 public:
  MappedFile(const std::string& path, const std::string& what);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes, valid while this object lives. The start is page-aligned.
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace corgy
