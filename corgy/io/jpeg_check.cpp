#include "corgy/io/jpeg_check.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy {

namespace {

constexpr int kMarkerDht = 0xC4;  // define Huffman tables
constexpr int kMarkerSos = 0xDA;  // start of scan: entropy-coded data follows its header
constexpr int kMarkerEoi = 0xD9;  // end of image
constexpr std::size_t kMostCodes = 256;

// A marker without a length: stuffed 0x00, TEM, SOI, RST0-7.
bool stands_alone(int marker) { return marker == 0x00 || marker == 0x01 || marker == 0xD8 || (marker & 0xF8) == 0xD0; }

class JpegBytes {
 public:
  explicit JpegBytes(std::span<const std::byte> bytes) : bytes_(bytes) {}
  std::size_t size() const { return bytes_.size(); }
  // Past the end reads 0, as stb's reader does: a table is checked as stb would build it.
  int at(std::size_t offset) const {
    return offset < bytes_.size() ? static_cast<int>(std::to_integer<unsigned char>(bytes_[offset])) : 0;
  }
  int be16(std::size_t offset) const { return at(offset) << 8 | at(offset + 1); }

 private:
  std::span<const std::byte> bytes_;
};

// The tables of the DHT segment whose length field is at `offset`, as stb_image reads them.
void check_dht_segment(const JpegBytes& jpeg, std::size_t offset, const std::string& source) {
  long left = jpeg.be16(offset) - 2;
  std::size_t table = offset + 2;
  while (left > 0 && table < jpeg.size()) {
    const int class_and_id = jpeg.at(table);
    if (class_and_id >> 4 > 1 || (class_and_id & 15) > 3) return;  // stb rejects the file here
    std::size_t codes = 0;
    for (int length = 0; length < 16; ++length) codes += static_cast<std::size_t>(jpeg.at(table + 1 + length));
    if (codes > kMostCodes) {
      throw Error(
          fmt::format("{}: cannot read the image: the JPEG Huffman table at byte {} declares {} codes, "
                      "more than {}",
                      source, table, codes, kMostCodes));
    }
    table += 17 + codes;
    left -= static_cast<long>(17 + codes);
  }
}

// The offset of the marker that ends the entropy-coded data starting at `offset` (a 0xFF not followed by a stuffed
// 0x00, a restart marker or another 0xFF), or the end of the bytes.
std::size_t skip_entropy_coded_data(const JpegBytes& jpeg, std::size_t offset) {
  while (offset + 1 < jpeg.size()) {
    if (jpeg.at(offset) == 0xFF) {
      const int next = jpeg.at(offset + 1);
      if (next != 0xFF && !stands_alone(next)) return offset;
    }
    ++offset;
  }
  return jpeg.size();
}

}  // namespace

void check_jpeg_huffman_tables(std::span<const std::byte> bytes, const std::string& source) {
  const JpegBytes jpeg(bytes);
  // stb accepts any number of 0xFF fill bytes before each marker, SOI included.
  if (jpeg.at(0) != 0xFF) return;
  std::size_t offset = 1;
  while (offset < jpeg.size() && jpeg.at(offset) == 0xFF) ++offset;
  if (jpeg.at(offset) != 0xD8) return;
  offset += 1;
  while (offset + 1 < jpeg.size()) {
    if (jpeg.at(offset) != 0xFF) {  // not a marker: stb stops or skips junk; look for the next one
      ++offset;
      continue;
    }
    const int marker = jpeg.at(offset + 1);
    if (marker == 0xFF) {  // fill byte
      ++offset;
      continue;
    }
    if (marker == kMarkerEoi) return;
    if (stands_alone(marker)) {
      offset += 2;
      continue;
    }
    const std::size_t length_at = offset + 2;
    if (marker == kMarkerDht) check_dht_segment(jpeg, length_at, source);
    offset = length_at + static_cast<std::size_t>(jpeg.be16(length_at));
    if (marker == kMarkerSos) offset = skip_entropy_coded_data(jpeg, offset);
  }
}

}  // namespace corgy
