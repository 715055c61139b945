#include "corgy/io/load_limits.h"

#include <fmt/format.h>

#include <iterator>
#include <limits>

#include "corgy/error.h"

namespace corgy {

namespace {

constexpr std::uint64_t saturated = std::numeric_limits<std::uint64_t>::max();

std::uint64_t saturating_multiply(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? saturated : product;
}

// "1073741824 bytes (1.0 GiB)", "6912 bytes (6.8 KiB)", or "more than 2^64 bytes" for a saturated count.
std::string bytes_text(std::uint64_t bytes) {
  if (bytes == saturated) return "more than 2^64 bytes";
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double scaled = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (scaled >= 1024.0 && unit + 1 < std::size(units)) {
    scaled /= 1024.0;
    ++unit;
  }
  return fmt::format("{} bytes ({:.1f} {})", bytes, scaled, units[unit]);
}

// "source: " before a message, or nothing when the caller adds the location itself.
std::string prefix(std::string_view source) { return source.empty() ? "" : fmt::format("{}: ", source); }

}  // namespace

std::uint64_t float32_bytes(std::span<const std::int64_t> dims) {
  std::uint64_t bytes = sizeof(float);
  for (std::int64_t dim : dims) bytes = saturating_multiply(bytes, dim < 0 ? 0 : static_cast<std::uint64_t>(dim));
  return bytes;
}

std::uint64_t float32_bytes(std::initializer_list<std::int64_t> dims) {
  return float32_bytes(std::span<const std::int64_t>(dims.begin(), dims.size()));
}

void check_tensor_bytes(const LoadLimits& limits, std::string_view source, std::string_view what, std::uint64_t bytes) {
  if (bytes <= limits.max_tensor_bytes && bytes != saturated) return;
  throw Error(
      fmt::format("{}{}: {}, more than LoadLimits::max_tensor_bytes ({}); raise the limit in the loader's "
                  "options if the file is trusted",
                  prefix(source), what, bytes_text(bytes), bytes_text(limits.max_tensor_bytes)));
}

void ModelBytes::add(std::string_view what, std::uint64_t bytes) {
  check_tensor_bytes(limits_, source_, what, bytes);
  std::uint64_t total = 0;
  if (__builtin_add_overflow(total_, bytes, &total)) total = saturated;
  if (total > limits_.max_model_bytes || total == saturated) {
    throw Error(
        fmt::format("{}{}: {} brings the model's weights to {}, more than LoadLimits::max_model_bytes ({}); "
                    "raise the limit in the loader's options if the file is trusted",
                    prefix(source_), what, bytes_text(bytes), bytes_text(total), bytes_text(limits_.max_model_bytes)));
  }
  total_ = total;
}

}  // namespace corgy
