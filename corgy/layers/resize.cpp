#include "corgy/layers/resize.h"

#include <fmt/format.h>

#include <cmath>

namespace corgy {

namespace {

// Like pads and windows: no model resizes further, and larger extents would overflow int in the shapes after it.
constexpr int largest_extent = 1 << 16;

}  // namespace

std::string_view resize_mode_name(ResizeMode mode) {
  switch (mode) {
    case ResizeMode::nearest: return "nearest";
    case ResizeMode::linear: return "linear";
    case ResizeMode::cubic: return "cubic";
  }
  return "?";
}

std::string_view resize_coordinates_name(ResizeCoordinates coordinates) {
  switch (coordinates) {
    case ResizeCoordinates::half_pixel: return "half_pixel";
    case ResizeCoordinates::pytorch_half_pixel: return "pytorch_half_pixel";
    case ResizeCoordinates::align_corners: return "align_corners";
    case ResizeCoordinates::asymmetric: return "asymmetric";
    case ResizeCoordinates::tf_half_pixel_for_nn: return "tf_half_pixel_for_nn";
  }
  return "?";
}

std::string_view nearest_rounding_name(NearestRounding rounding) {
  switch (rounding) {
    case NearestRounding::round_prefer_floor: return "round_prefer_floor";
    case NearestRounding::round_prefer_ceil: return "round_prefer_ceil";
    case NearestRounding::floor: return "floor";
    case NearestRounding::ceil: return "ceil";
  }
  return "?";
}

Resize::Resize(const ResizeOptions& o) : options_(o) {
  const bool by_scales = o.scale_h != 0.0f || o.scale_w != 0.0f;
  const bool by_size = o.height != 0 || o.width != 0;
  if (by_scales == by_size) {
    throw_parameter_error("resize", fmt::format("needs either scales or a size, got scales {} x {} and size {} x {}",
                                                o.scale_h, o.scale_w, o.height, o.width));
  }
  auto valid_scale = [](float s) { return std::isfinite(s) && s > 0.0f && s <= static_cast<float>(largest_extent); };
  if (by_scales && !(valid_scale(o.scale_h) && valid_scale(o.scale_w))) {
    throw_parameter_error("resize", fmt::format("scales {} x {} must be finite, > 0 and at most {}", o.scale_h,
                                                o.scale_w, largest_extent));
  }
  if (by_size && (o.height < 1 || o.width < 1 || o.height > largest_extent || o.width > largest_extent)) {
    throw_parameter_error("resize",
                          fmt::format("size {} x {} must be between 1 and {}", o.height, o.width, largest_extent));
  }
  if (o.mode == ResizeMode::cubic && !std::isfinite(o.cubic_a)) {
    throw_parameter_error("resize", fmt::format("cubic coefficient a {} must be finite", o.cubic_a));
  }
}

std::string Resize::describe() const {
  const ResizeOptions& o = options_;
  std::string text = fmt::format("resize {} {}", resize_mode_name(o.mode), resize_coordinates_name(o.coordinates));
  if (o.mode == ResizeMode::nearest) text += fmt::format(" {}", nearest_rounding_name(o.rounding));
  if (o.mode == ResizeMode::cubic) {
    text += fmt::format(" a {}{}", o.cubic_a, o.exclude_outside ? " exclude_outside" : "");
  }
  if (o.height > 0) return text + fmt::format(" to {} x {}", o.height, o.width);
  return text + fmt::format(" x{} x{}", o.scale_h, o.scale_w);
}

Shape Resize::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  if (options_.height > 0) return {in.n, in.c, options_.height, options_.width};
  const double out_h = std::floor(static_cast<double>(in.h) * options_.scale_h);
  const double out_w = std::floor(static_cast<double>(in.w) * options_.scale_w);
  if (out_h < 1 || out_w < 1 || out_h > largest_extent || out_w > largest_extent) {
    throw_shape_error(fmt::format("an input that scales by {} x {} to between 1 and {} rows and columns (this one "
                                  "gives {} x {})",
                                  options_.scale_h, options_.scale_w, largest_extent, out_h, out_w),
                      in);
  }
  return {in.n, in.c, static_cast<int>(out_h), static_cast<int>(out_w)};
}

void Resize::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  const Shape& in = inputs[0]->shape();
  const Shape& out = output.shape();
  const ResizeOptions& o = options_;
  const bool by_size = o.height > 0;
  const ResizeDesc desc{.mode = o.mode,
                        .coordinates = o.coordinates,
                        .rounding = o.rounding,
                        .scale_h = by_size ? static_cast<float>(out.h) / static_cast<float>(in.h) : o.scale_h,
                        .scale_w = by_size ? static_cast<float>(out.w) / static_cast<float>(in.w) : o.scale_w,
                        .cubic_a = o.cubic_a,
                        .exclude_outside = o.exclude_outside};
  backend.resize(desc, *inputs[0], output);
}

}  // namespace corgy
