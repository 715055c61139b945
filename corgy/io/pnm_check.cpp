#include "corgy/io/pnm_check.h"

#include <fmt/format.h>

#include <climits>

#include "corgy/error.h"

namespace corgy {

namespace {

// The header reader of stb_image's PNM loader (stbi__pnm_info), with the number reader checked for overflow. Past
// the end reads 0, as stb's reader does.
class PnmHeader {
 public:
  explicit PnmHeader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  char next() {
    const char c = position_ < bytes_.size() ? static_cast<char>(bytes_[position_]) : '\0';
    ++position_;
    return c;
  }
  bool at_end() const { return position_ >= bytes_.size(); }

  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  void skip_whitespace_and_comments(char& c) {
    for (;;) {
      while (!at_end() && is_space(c)) c = next();
      if (at_end() || c != '#') return;
      while (!at_end() && c != '\n' && c != '\r') c = next();
    }
  }

  // The digits from `c` on; throws where stb's int would overflow.
  void read_number(char& c, const char* what, const std::string& source) {
    long long value = 0;
    while (!at_end() && is_digit(c)) {
      value = value * 10 + (c - '0');
      if (value > INT_MAX) {
        throw Error(fmt::format("{}: cannot read the image: the PNM header's {} (at byte {}) is larger than {}", source,
                                what, position_ - 1, INT_MAX));
      }
      c = next();
    }
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t position_ = 0;
};

}  // namespace

void check_pnm_header_numbers(std::span<const std::byte> bytes, const std::string& source) {
  PnmHeader header(bytes);
  const char p = header.next();
  const char t = header.next();
  if (p != 'P' || (t != '5' && t != '6')) return;
  char c = header.next();
  for (const char* what : {"width", "height", "maximum value"}) {
    header.skip_whitespace_and_comments(c);
    header.read_number(c, what, source);
  }
}

}  // namespace corgy
