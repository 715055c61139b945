// decode_image on inputs that Debian 12's stb_image mishandles: JPEG Huffman tables of more than 256 codes
// (check_jpeg_huffman_tables refuses them; real photos and other formats pass), 16-bit PNM files (refused) and PNM
// header numbers beyond an int (check_pnm_header_numbers refuses them); image_from_pixels, which makes a decoded
// image's floats.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "corgy/error.h"
#include "corgy/io/image.h"
#include "corgy/io/jpeg_check.h"
#include "corgy/io/pnm_check.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

std::vector<std::byte> bytes_of(const std::vector<int>& values) {
  std::vector<std::byte> bytes;
  for (int value : values) bytes.push_back(static_cast<std::byte>(value));
  return bytes;
}

// SOI, then a DHT segment with one table whose 16 code counts are all `count`, and EOI.
std::vector<std::byte> jpeg_with_huffman_counts(int count) {
  std::vector<int> values = {0xFF, 0xD8, 0xFF, 0xC4};
  const int codes = 16 * count;
  const int length = 2 + 17 + codes;
  values.insert(values.end(), {length >> 8, length & 0xFF, 0x00});
  values.insert(values.end(), 16, count);
  values.insert(values.end(), static_cast<std::size_t>(codes), 0);
  values.insert(values.end(), {0xFF, 0xD9});
  return bytes_of(values);
}

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  std::vector<std::byte> bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  return bytes;
}

TEST(JpegCheck, HuffmanTableOfMoreThan256CodesIsAnError) {
  const std::vector<std::byte> jpeg = jpeg_with_huffman_counts(17);  // 272 codes
  const std::string message = error_of([&] { check_jpeg_huffman_tables(jpeg, "bad.jpg"); });
  EXPECT_TRUE(contains(message, "bad.jpg: cannot read the image: the JPEG Huffman table at byte 6 declares 272 codes"))
      << message;
  const std::string decoded = error_of([&] { decode_image(jpeg, "bad.jpg"); });
  EXPECT_TRUE(contains(decoded, "declares 272 codes, more than 256")) << decoded;
}

TEST(JpegCheck, TableOf256CodesIsLeftToStb) {
  EXPECT_NO_THROW(check_jpeg_huffman_tables(jpeg_with_huffman_counts(16), "full.jpg"));
}

TEST(JpegCheck, FillBytesBeforeTheStartOfImageAreSkipped) {
  // stb reads any number of 0xFF bytes before a marker, SOI included, so the check must too.
  std::vector<std::byte> jpeg = bytes_of({0xFF, 0xFF, 0xFF});
  const std::vector<std::byte> table = jpeg_with_huffman_counts(17);
  jpeg.insert(jpeg.end(), table.begin() + 1, table.end());
  const std::string message = error_of([&] { check_jpeg_huffman_tables(jpeg, "filled.jpg"); });
  EXPECT_TRUE(contains(message, "declares 272 codes")) << message;
  EXPECT_NO_THROW(check_jpeg_huffman_tables(bytes_of({0xFF, 0xFF, 0xFF}), "only-fill.jpg"));
}

TEST(JpegCheck, TableAfterTheFirstScanIsChecked) {
  // A progressive JPEG defines tables between scans: SOS header, entropy-coded bytes with a stuffed 0xFF 0x00 and a
  // restart marker, then a bad DHT.
  std::vector<std::byte> jpeg =
      bytes_of({0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x08, 1, 1, 0, 0, 63, 0, 0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56});
  const std::vector<std::byte> table = jpeg_with_huffman_counts(20);
  jpeg.insert(jpeg.end(), table.begin() + 2, table.end());
  const std::string message = error_of([&] { check_jpeg_huffman_tables(jpeg, "scan.jpg"); });
  EXPECT_TRUE(contains(message, "declares 320 codes")) << message;
}

TEST(JpegCheck, RealPhotosAndOtherFormatsPass) {
  for (const char* photo : {"fruits.jpg", "baboon.jpg", "eagle.jpg"}) {
    const std::string path = fixture_path(std::string("../../data/style_transfer/content/") + photo);
    const std::vector<std::byte> bytes = file_bytes(path);
    ASSERT_GT(bytes.size(), 1000u) << path;
    EXPECT_NO_THROW(check_jpeg_huffman_tables(bytes, path));
    EXPECT_EQ(decode_image(bytes, path).shape().c, 3);
  }
  const std::vector<std::byte> png = file_bytes(fixture_path("../../data/mnist/samples/digit_3_label_4.png"));
  EXPECT_NO_THROW(check_jpeg_huffman_tables(png, "digit.png"));
  EXPECT_NO_THROW(check_jpeg_huffman_tables({}, "empty"));
}

std::vector<std::byte> pnm_16_bit(const std::string& magic, int width, int height, const std::vector<int>& samples) {
  const std::string header = fmt::format("{}\n{} {}\n65535\n", magic, width, height);
  std::vector<std::byte> bytes;
  for (char c : header) bytes.push_back(static_cast<std::byte>(c));
  for (int sample : samples) {
    bytes.push_back(static_cast<std::byte>(sample >> 8));
    bytes.push_back(static_cast<std::byte>(sample & 0xFF));
  }
  return bytes;
}

TEST(SixteenBitPnm, IsRefusedWithAClearError) {
  // Debian's stb_image would read these samples byte-swapped (0x1234 as 0x34), and overflow its buffer when asked
  // for 3 channels of a grey file.
  for (int channels : {1, 3}) {
    const std::string grey = error_of([&] {
      decode_image(pnm_16_bit("P5", 2, 1, {0x1234, 0xFF00}), "g.pgm", channels);
    });
    EXPECT_TRUE(contains(grey, "g.pgm: cannot read the image: 16-bit PNM files (maxval above 255) are not supported"))
        << grey;
  }
  const std::string rgb = error_of([&] { decode_image(pnm_16_bit("P6", 1, 1, {1, 2, 3}), "c.ppm", 1); });
  EXPECT_TRUE(contains(rgb, "16-bit PNM")) << rgb;
}

std::vector<std::byte> text_bytes(const std::string& text) {
  std::vector<std::byte> bytes;
  for (char c : text) bytes.push_back(static_cast<std::byte>(c));
  return bytes;
}

TEST(PnmCheck, HeaderNumberBeyondAnIntIsAnError) {
  const std::string width = error_of([&] { decode_image(text_bytes("P6\n4294967297 1\n255\n"), "w.ppm"); });
  EXPECT_TRUE(contains(width, "w.ppm: cannot read the image: the PNM header's width (at byte 12) is larger than"))
      << width;
  // After a comment, as stb skips it; the maximum value too.
  const std::string height =
      error_of([&] { check_pnm_header_numbers(text_bytes("P5 # 99999999999\n1 2147483648 255\n"), "h.pgm"); });
  EXPECT_TRUE(contains(height, "the PNM header's height")) << height;
  const std::string maximum = error_of([&] { decode_image(text_bytes("P5 1 1 99999999999\n"), "m.pgm"); });
  EXPECT_TRUE(contains(maximum, "the PNM header's maximum value")) << maximum;
}

TEST(PnmCheck, LargestIntAndOtherFormatsAreLeftToStb) {
  EXPECT_NO_THROW(check_pnm_header_numbers(text_bytes("P6 2147483647 2147483647 255\n"), "big.ppm"));
  EXPECT_NO_THROW(check_pnm_header_numbers(text_bytes("P3 99999999999 1 255\n"), "ascii.ppm"));  // stb reads no P3
  EXPECT_NO_THROW(check_pnm_header_numbers({}, "empty"));
  // The load limits then refuse the huge one.
  const std::string big = error_of([&] { decode_image(text_bytes("P6 2147483647 2147483647 255\n"), "big.ppm"); });
  EXPECT_TRUE(contains(big, "big.ppm: the image (2147483647 x 2147483647 pixels, 3 channels)")) << big;
}

TEST(SixteenBitPnm, EightBitPnmStillDecodes) {
  const std::string header = "P5\n2 1\n255\n";
  std::vector<std::byte> pgm;
  for (char c : header) pgm.push_back(static_cast<std::byte>(c));
  pgm.push_back(std::byte{0x12});
  pgm.push_back(std::byte{0xFF});
  const Variable rgb = decode_image(pgm, "g8.pgm", 3);
  ASSERT_EQ(rgb.shape(), (Shape{1, 3, 1, 2}));
  EXPECT_EQ(rgb.data()[4], static_cast<float>(0x12 / 255.0));
  EXPECT_EQ(rgb.data()[5], 1.0f);
}

TEST(ImageFromPixels, InterleavedBytesBecomeWhatTheDecoderGives) {
  // A 2 x 1 PGM of bytes 0x12, 0xFF read as RGB is the same as its pixels (H, W, C) interleaved.
  const std::string header = "P5\n2 1\n255\n";
  std::vector<std::byte> pgm;
  for (char c : header) pgm.push_back(static_cast<std::byte>(c));
  pgm.push_back(std::byte{0x12});
  pgm.push_back(std::byte{0xFF});
  const Variable decoded = decode_image(pgm, "g8.pgm", 3);
  const std::vector<std::uint8_t> pixels = {0x12, 0x12, 0x12, 0xFF, 0xFF, 0xFF};
  const Variable made = image_from_pixels(pixels, 2, 1, 3, "pixels");
  ASSERT_EQ(made.shape(), decoded.shape());
  for (std::size_t i = 0; i < made.count(); ++i) EXPECT_EQ(made.data()[i], decoded.data()[i]) << i;
  // Channels are planes: pixel (0, 1) of an RGB image whose bytes differ per channel.
  const Variable rgb = image_from_pixels(std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}, 2, 1, 3, "rgb");
  EXPECT_EQ(rgb.at(0, 2, 0, 1), static_cast<float>(6 / 255.0));
  EXPECT_EQ(rgb.at(0, 0, 0, 1), static_cast<float>(4 / 255.0));
  EXPECT_TRUE(contains(error_of([&] { image_from_pixels(pixels, 2, 2, 3, "short"); }),
                       "short: 2 x 2 pixels of 3 channels are 12 bytes, got 6"));
  EXPECT_TRUE(contains(error_of([&] { image_from_pixels(pixels, 1, 1, 6, "six"); }),
                       "six: an image of 1 x 1 pixels and 6 channels (1 to 4) cannot be made"));
}

}  // namespace
}  // namespace corgy::testing
