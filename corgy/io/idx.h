// IDX files: the format of the MNIST and Fashion-MNIST databases (http://yann.lecun.com/exdb/mnist/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "corgy/io/load_limits.h"
#include "corgy/variable.h"

namespace corgy {

/// Reads an IDX image file: magic 0x00000803 (unsigned bytes, 3 dimensions), then big-endian int32 count, rows,
/// columns, then count * rows * columns pixels. Returns (count, 1, rows, columns) floats, pixel = byte / 255 (as
/// PyTorch's ToTensor does, no normalisation). Throws corgy::Error naming the file for another magic, a header
/// that is cut short, a zero dimension, a data size that differs from the header's, and images whose floats would
/// take more than `limits.max_tensor_bytes`.
Variable load_idx_images(const std::string& path, const LoadLimits& limits = {});

/// Reads an IDX label file: magic 0x00000801 (unsigned bytes, 1 dimension), big-endian int32 count, then count
/// labels. Throws corgy::Error as load_idx_images does.
std::vector<std::uint8_t> load_idx_labels(const std::string& path, const LoadLimits& limits = {});

/// The same from an IDX file's bytes in memory; `name` stands for the file in messages. Never reads outside `bytes`.
Variable decode_idx_images(std::span<const std::byte> bytes, const std::string& name, const LoadLimits& limits = {});
std::vector<std::uint8_t> decode_idx_labels(std::span<const std::byte> bytes, const std::string& name,
                                            const LoadLimits& limits = {});

/// Images and their labels, as a data set ships them (train-images-idx3-ubyte + train-labels-idx1-ubyte).
struct LabeledImages {
  Variable images;  ///< (count, 1, rows, columns)
  std::vector<std::uint8_t> labels;
};

/// Both files; throws corgy::Error naming both when their counts differ.
LabeledImages load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                               const LoadLimits& limits = {});

}  // namespace corgy
