#include "corgy/io/npy.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <vector>

#include "corgy/error.h"

namespace corgy {

namespace {

constexpr char npy_magic[] = "\x93NUMPY";

std::vector<int> parse_shape(const std::string& path, const std::string& header) {
  std::smatch match;
  if (!std::regex_search(header, match, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    throw Error(fmt::format("{}: .npy header has no shape: {}", path, header));
  }
  std::vector<int> dims;
  const std::string text = match[1];
  const std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
    dims.push_back(std::stoi(it->str()));
  }
  return dims;
}

Shape to_shape(const std::string& path, const std::vector<int>& dims) {
  if (dims.empty() || dims.size() > 4) {
    throw Error(fmt::format("{}: .npy has {} dimensions; corgy reads 1 to 4", path, dims.size()));
  }
  int padded[4] = {1, 1, 1, 1};
  std::copy(dims.begin(), dims.end(), padded + (4 - dims.size()));
  return {padded[0], padded[1], padded[2], padded[3]};
}

}  // namespace

Variable load_npy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(fmt::format("{}: cannot open .npy file", path));
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || std::memcmp(bytes.data(), npy_magic, 6) != 0) {
    throw Error(fmt::format("{}: not a .npy file (bad magic)", path));
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_length = 0;
  std::size_t header_start = 0;
  if (major == 1) {
    header_length =
        static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    header_start = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    for (int i = 3; i >= 0; --i) header_length = header_length << 8 | static_cast<unsigned char>(bytes[8 + i]);
    header_start = 12;
  } else {
    throw Error(fmt::format("{}: unsupported .npy version {}", path, major));
  }
  if (header_start + header_length > bytes.size()) throw Error(fmt::format("{}: truncated .npy header", path));
  const std::string header(bytes.data() + header_start, header_length);
  if (header.find("'descr': '<f4'") == std::string::npos) {
    throw Error(fmt::format("{}: .npy dtype must be little-endian float32 ('<f4'); header: {}", path, header));
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    throw Error(fmt::format("{}: .npy must be in C order (fortran_order False)", path));
  }
  const Shape shape = to_shape(path, parse_shape(path, header));
  const std::size_t data_bytes = bytes.size() - header_start - header_length;
  if (shape.has_zero_or_negative() || data_bytes != shape.count() * sizeof(float)) {
    throw Error(fmt::format("{}: shape {} needs {} data bytes, the file has {}", path, shape.str(),
                            shape.count() * sizeof(float), data_bytes));
  }
  Variable tensor(shape);
  std::memcpy(tensor.data(), bytes.data() + header_start + header_length, data_bytes);
  return tensor;
}

void save_npy(const std::string& path, const Variable& tensor) {
  const Shape& s = tensor.shape();
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}, {}, {}), }}", s.n, s.c, s.h, s.w);
  // Pad with spaces so that magic + length + header + newline is a multiple of 64, as the format asks.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error(fmt::format("{}: cannot create .npy file", path));
  const auto length = static_cast<std::uint16_t>(header.size());
  file.write(npy_magic, 6);
  file.put('\x01').put('\x00');
  file.put(static_cast<char>(length & 0xff)).put(static_cast<char>(length >> 8));
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(reinterpret_cast<const char*>(tensor.data()),
             static_cast<std::streamsize>(tensor.count() * sizeof(float)));
  if (!file) throw Error(fmt::format("{}: writing the .npy file failed", path));
}

}  // namespace corgy
