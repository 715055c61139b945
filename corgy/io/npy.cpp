#include "corgy/io/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>
#include <span>
#include <vector>

#include "corgy/error.h"
#include "corgy/io/mapped_file.h"

namespace corgy {

namespace {

// Format reference: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
constexpr char npy_magic[] = "\x93NUMPY";
constexpr std::size_t npy_magic_size = 6;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}

/// The dimensions of the header's 'shape' tuple, e.g. "(2, 3)" or "(5,)".
std::vector<int> parse_shape(const std::string& path, const std::string& header) {
  std::smatch match;
  if (!std::regex_search(header, match, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    throw Error(fmt::format("{}: .npy header has no shape: {}", path, header));
  }
  const std::string tuple = match[1];
  std::vector<std::string> entries;
  for (std::size_t start = 0; start <= tuple.size();) {
    const std::size_t comma = std::min(tuple.find(',', start), tuple.size());
    entries.push_back(trim(tuple.substr(start, comma - start)));
    start = comma + 1;
  }
  if (entries.size() > 1 && entries.back().empty()) entries.pop_back();  // "(5,)"
  if (entries.size() == 1 && entries[0].empty()) return {};              // "()", a 0-d array
  std::vector<int> dims;
  for (const std::string& entry : entries) {
    long long value = 0;
    const auto [end, status] = std::from_chars(entry.data(), entry.data() + entry.size(), value);
    if (entry.empty() || status != std::errc() || end != entry.data() + entry.size() || value < 0) {
      throw Error(fmt::format("{}: malformed .npy shape ({})", path, tuple));
    }
    if (value > INT_MAX) throw Error(fmt::format("{}: .npy shape ({}) has a dimension too large", path, tuple));
    dims.push_back(static_cast<int>(value));
  }
  return dims;
}

Shape to_shape(const std::string& path, const std::vector<int>& dims, const LoadLimits& limits) {
  if (dims.empty() || dims.size() > 4) {
    throw Error(fmt::format("{}: .npy has {} dimensions; corgy reads 1 to 4", path, dims.size()));
  }
  int padded[4] = {1, 1, 1, 1};
  std::copy(dims.begin(), dims.end(), padded + (4 - dims.size()));
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {
    throw Error(fmt::format("{}: .npy shape has no elements (a dimension is 0)", path));
  }
  // Before the data size is compared: the limit message is the clearer one for a header claiming terabytes.
  check_tensor_bytes(limits, path, fmt::format("the .npy array ({})", fmt::join(dims, ", ")),
                     float32_bytes({padded[0], padded[1], padded[2], padded[3]}));
  return {padded[0], padded[1], padded[2], padded[3]};
}

/// The magic, version and header of `bytes`; `data_offset` receives the offset of the first data byte.
std::string read_header(std::span<const std::byte> bytes, const std::string& name, std::size_t& data_offset) {
  constexpr std::size_t prefix_size = 8;  // magic, major and minor version
  if (bytes.size() < prefix_size || std::memcmp(bytes.data(), npy_magic, npy_magic_size) != 0) {
    throw Error(fmt::format("{}: not a .npy file (bad magic)", name));
  }
  const int major = std::to_integer<int>(bytes[6]);
  // Version 1 stores the header length in 2 bytes, versions 2 and 3 in 4 (little-endian).
  const std::size_t length_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (length_bytes == 0) throw Error(fmt::format("{}: unsupported .npy version {}", name, major));
  if (bytes.size() < prefix_size + length_bytes) throw Error(fmt::format("{}: truncated .npy header", name));
  std::size_t header_length = 0;
  for (std::size_t i = length_bytes; i-- > 0;) {
    header_length = header_length << 8 | std::to_integer<std::size_t>(bytes[prefix_size + i]);
  }
  const std::size_t header_offset = prefix_size + length_bytes;
  if (header_length > bytes.size() - header_offset) {
    throw Error(fmt::format("{}: truncated .npy header ({} bytes announced)", name, header_length));
  }
  data_offset = header_offset + header_length;
  return {reinterpret_cast<const char*>(bytes.data()) + header_offset, header_length};
}

}  // namespace

Variable decode_npy(std::span<const std::byte> bytes, const std::string& name, const LoadLimits& limits) {
  std::size_t data_offset = 0;
  const std::string header = read_header(bytes, name, data_offset);
  if (header.find("'descr': '<f4'") == std::string::npos) {
    throw Error(fmt::format("{}: .npy dtype must be little-endian float32 ('<f4'); header: {}", name, trim(header)));
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    throw Error(fmt::format("{}: .npy must be in C order (fortran_order False)", name));
  }
  const Shape shape = to_shape(name, parse_shape(name, header), limits);
  const std::size_t data_bytes = bytes.size() - data_offset;
  if (data_bytes != shape.count() * sizeof(float)) {
    throw Error(fmt::format("{}: shape {} needs {} data bytes, the file has {}", name, shape.str(),
                            shape.count() * sizeof(float), data_bytes));
  }
  Variable tensor(shape);
  std::memcpy(tensor.data(), bytes.data() + data_offset, data_bytes);
  return tensor;
}

Variable load_npy(const std::string& path, const LoadLimits& limits) {
  const MappedFile file(path, ".npy file");
  return decode_npy(file.bytes(), path, limits);
}

void save_npy(const std::string& path, const Variable& tensor) {
  const Shape& s = tensor.shape();
  const std::int64_t dims[] = {s.n, s.c, s.h, s.w};
  save_npy(path, tensor, dims);
}

void save_npy(const std::string& path, const Variable& tensor, std::span<const std::int64_t> dims) {
  if (tensor.empty()) throw Error(fmt::format("{}: cannot save an empty Variable as .npy", path));
  std::int64_t count = 1;
  for (std::int64_t d : dims) count *= d;
  if (dims.empty() || dims.size() > 4 || count != static_cast<std::int64_t>(tensor.count())) {
    throw Error(fmt::format("{}: cannot save {} values as shape ({})", path, tensor.count(), fmt::join(dims, ", ")));
  }
  // A 1-D shape is written "(n,)", as NumPy writes it.
  const std::string shape = dims.size() == 1 ? fmt::format("{},", dims[0]) : fmt::format("{}", fmt::join(dims, ", "));
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", shape);
  // Pad with spaces so that magic + length + header + newline is a multiple of 64, as the format asks.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error(fmt::format("{}: cannot create .npy file", path));
  const auto length = static_cast<std::uint16_t>(header.size());
  file.write(npy_magic, npy_magic_size);
  file.put('\x01').put('\x00');
  file.put(static_cast<char>(length & 0xff)).put(static_cast<char>(length >> 8));
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(reinterpret_cast<const char*>(tensor.data()),
             static_cast<std::streamsize>(tensor.count() * sizeof(float)));
  if (!file) throw Error(fmt::format("{}: writing the .npy file failed", path));
}

}  // namespace corgy
