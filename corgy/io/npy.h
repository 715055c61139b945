// NumPy .npy files: the tensor interchange format of Python users.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "corgy/io/load_limits.h"
#include "corgy/variable.h"

namespace corgy {

/// Reads a little-endian float32, C-order .npy file of 1 to 4 dimensions. Shapes map to the trailing
/// dimensions: (n) -> (1, 1, 1, n), (r, c) -> (1, 1, r, c), (a, b, c) -> (1, a, b, c), 4-D as is.
/// Throws corgy::Error naming the file when it cannot be opened, for a bad magic, an unknown version, a truncated
/// header, another dtype, Fortran order, 0 or more than 4 dimensions, a malformed shape or one with no elements,
/// a data size that differs from the header's shape, and a shape over `limits.max_tensor_bytes` (checked before
/// anything is allocated).
Variable load_npy(const std::string& path, const LoadLimits& limits = {});

/// The same from a .npy file's bytes in memory (an embedded resource, a download); `name` stands for the file in
/// messages. Never reads outside `bytes`.
Variable decode_npy(std::span<const std::byte> bytes, const std::string& name, const LoadLimits& limits = {});

/// Writes `tensor` as a float32 .npy (format version 1.0) with its 4-D shape (N, C, H, W). Throws corgy::Error
/// for an empty Variable or when the file cannot be written.
void save_npy(const std::string& path, const Variable& tensor);
/// The same with the shape `dims` (any rank from 1 to 4, e.g. an ONNX graph's declared (N, F)), whose product must
/// be the tensor's count; throws corgy::Error naming both otherwise.
void save_npy(const std::string& path, const Variable& tensor, std::span<const std::int64_t> dims);

}  // namespace corgy
