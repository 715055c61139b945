#include "corgy/io/idx.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
#include <span>

#include "corgy/error.h"
#include "corgy/io/mapped_file.h"

namespace corgy {

namespace {

// The magic's third byte is the element type (0x08 = unsigned byte), the fourth the number of dimensions.
constexpr std::uint32_t idx_images_magic = 0x00000803;
constexpr std::uint32_t idx_labels_magic = 0x00000801;

std::uint32_t big_endian_u32(std::span<const std::byte> bytes, std::size_t offset) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) value = (value << 8) | std::to_integer<std::uint32_t>(bytes[offset + i]);
  return value;
}

/// Checks the magic, header and data size of an unsigned-byte IDX file and returns its dimensions.
std::vector<std::uint32_t> read_idx_header(std::span<const std::byte> bytes, const std::string& name,
                                           std::uint32_t magic, const char* what) {
  const std::size_t rank = magic & 0xff;
  const std::size_t header = 4 * (1 + rank);
  if (bytes.size() < 4) {
    throw Error(
        fmt::format("{}: not IDX {}: the file has {} bytes, too few for the magic number", name, what, bytes.size()));
  }
  const std::uint32_t found = big_endian_u32(bytes, 0);
  if (found != magic) {
    throw Error(fmt::format("{}: not IDX {}: magic number 0x{:08x}, expected 0x{:08x} (unsigned bytes, {} dimensions)",
                            name, what, found, magic, rank));
  }
  if (bytes.size() < header) {
    throw Error(fmt::format("{}: truncated IDX {}: the header needs {} bytes, the file has {}", name, what, header,
                            bytes.size()));
  }
  std::vector<std::uint32_t> dims;
  // Three 32-bit dimensions can overflow 64 bits: a product beyond 2^62 bytes is reported as more than the file has.
  constexpr std::uint64_t beyond_any_file = std::uint64_t{1} << 62;
  std::uint64_t elements = 1;
  bool beyond_file = false;
  for (std::size_t d = 0; d < rank; ++d) {
    dims.push_back(big_endian_u32(bytes, 4 * (1 + d)));
    if (dims.back() == 0) throw Error(fmt::format("{}: IDX {}: dimension {} is 0", name, what, d));
    beyond_file = beyond_file || dims.back() > beyond_any_file / elements;
    if (!beyond_file) elements *= dims.back();
  }
  if (beyond_file || bytes.size() != header + elements) {
    const std::string needed = beyond_file ? fmt::format("more than {}", bytes.size()) : std::to_string(elements);
    throw Error(
        fmt::format("{}: {} IDX {}: the header's dimensions {} need {} data bytes after the {}-byte header, "
                    "the file has {} bytes in all",
                    name, bytes.size() < header + elements || beyond_file ? "truncated" : "oversized", what,
                    fmt::join(dims, " x "), needed, header, bytes.size()));
  }
  return dims;
}

}  // namespace

Variable decode_idx_images(std::span<const std::byte> bytes, const std::string& name, const LoadLimits& limits) {
  const std::vector<std::uint32_t> dims = read_idx_header(bytes, name, idx_images_magic, "images");
  for (std::uint32_t dim : dims) {
    if (dim > 0x7fffffff) throw Error(fmt::format("{}: IDX images: dimension {} is too large", name, dim));
  }
  check_tensor_bytes(limits, name, fmt::format("IDX images {} as float32", fmt::join(dims, " x ")),
                     float32_bytes({dims[0], dims[1], dims[2]}));
  Variable images(Shape{static_cast<int>(dims[0]), 1, static_cast<int>(dims[1]), static_cast<int>(dims[2])});
  const std::span<const std::byte> pixels = bytes.subspan(16);
  float* target = images.data();
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    target[i] = static_cast<float>(std::to_integer<int>(pixels[i])) / 255.0f;
  }
  return images;
}

std::vector<std::uint8_t> decode_idx_labels(std::span<const std::byte> bytes, const std::string& name,
                                            const LoadLimits& limits) {
  read_idx_header(bytes, name, idx_labels_magic, "labels");
  check_tensor_bytes(limits, name, "the IDX labels", bytes.size() - 8);
  std::vector<std::uint8_t> labels(bytes.size() - 8);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = std::to_integer<std::uint8_t>(bytes[8 + i]);
  return labels;
}

Variable load_idx_images(const std::string& path, const LoadLimits& limits) {
  const MappedFile file(path, "IDX images");
  return decode_idx_images(file.bytes(), path, limits);
}

std::vector<std::uint8_t> load_idx_labels(const std::string& path, const LoadLimits& limits) {
  const MappedFile file(path, "IDX labels");
  return decode_idx_labels(file.bytes(), path, limits);
}

LabeledImages load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                               const LoadLimits& limits) {
  LabeledImages set{load_idx_images(images_path, limits), load_idx_labels(labels_path, limits)};
  if (static_cast<std::size_t>(set.images.shape().n) != set.labels.size()) {
    throw Error(fmt::format("{} has {} images but {} has {} labels", images_path, set.images.shape().n, labels_path,
                            set.labels.size()));
  }
  return set;
}

}  // namespace corgy
