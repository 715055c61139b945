#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace corgy {

/// Reads a binary PNM's header (P5 or P6, then width, height and maximum value, with whitespace and '#' comments
/// between them) the way stb_image does, and throws corgy::Error naming `source` for a number that does not fit
/// an int. Debian 12's stb_image (2022-09) accumulates such a number in an int and overflows, undefined behaviour
/// that can make a garbage header pass its checks; decode_image calls this before stb sees the bytes. Bytes that
/// do not start with "P5" or "P6" are left alone.
void check_pnm_header_numbers(std::span<const std::byte> bytes, const std::string& source);

}  // namespace corgy
