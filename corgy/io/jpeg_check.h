#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace corgy {

/// Walks a JPEG's marker segments (SOI to EOI, skipping the entropy-coded data of each scan) and throws
/// corgy::Error, naming `source` and the byte offset, for a Huffman table (DHT segment) that declares more than
/// 256 codes. Debian 12's stb_image (2022-09) writes such a table's code lengths past the end of a 257-byte array
/// before it checks anything (upstream stb fixed it later); decode_image calls this before stb sees the bytes.
/// Bytes that do not start with a JPEG's SOI marker (after any 0xFF fill bytes) are left alone.
void check_jpeg_huffman_tables(std::span<const std::byte> bytes, const std::string& source);

}  // namespace corgy
