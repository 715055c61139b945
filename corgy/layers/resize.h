// Resize: nearest, bilinear or bicubic resizing of every plane to a scale or a size (ONNX's Resize, PyTorch's
// F.interpolate). Nearest enlargement by one integer factor is also the Upsample layer (darknet's [upsample]).
#pragma once

#include <string_view>

#include "corgy/layers/layer.h"

namespace corgy {

/// How the output's H and W are chosen, and how each output pixel is computed from the input (ResizeDesc).
struct ResizeOptions {
  ResizeMode mode = ResizeMode::nearest;
  ResizeCoordinates coordinates = ResizeCoordinates::half_pixel;
  NearestRounding rounding = NearestRounding::round_prefer_floor;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  /// By scales: Ho = floor(H * scale_h), Wo = floor(W * scale_w), and the coordinates use these scales (ONNX's
  /// scales input; F.interpolate's scale_factor). 0 when resizing to a size.
  float scale_h = 0.0f;
  float scale_w = 0.0f;
  /// To a size: Ho = height, Wo = width, the scales being Ho / H and Wo / W (ONNX's sizes; F.interpolate's size).
  /// 0 when resizing by scales.
  int height = 0;
  int width = 0;
};

/// Input (N, C, H, W) -> output (N, C, Ho, Wo) with Ho and Wo from the scales or the size (ResizeOptions).
///   F.interpolate(x, scale_factor=2, mode="bilinear")  Resize({.mode = linear, .coordinates = pytorch_half_pixel,
///                                                              .scale_h = 2, .scale_w = 2})
///   F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=True)
///                                                     Resize({.mode = cubic, .coordinates = align_corners,
///                                                              .height = 7, .width = 9})
///   F.interpolate(x, scale_factor=1.5) (nearest)      Resize({.coordinates = asymmetric, .rounding = floor,
///                                                              .scale_h = 1.5f, .scale_w = 1.5f})
class Resize final : public Layer {
 public:
  /// Throws corgy::Error unless exactly one of the scales and the size is given, for scales that are not finite
  /// and in (0, 2^16], and for sizes outside [1, 2^16].
  explicit Resize(const ResizeOptions& options);

  std::string_view type() const override { return "resize"; }
  std::string describe() const override;
  /// Throws corgy::Error when an output extent would be 0 or over 2^16.
  Shape output_shape(std::span<const Shape> inputs) const override;
  void forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const override;

  const ResizeOptions& options() const { return options_; }

 private:
  ResizeOptions options_;
};

/// "nearest", "linear", "cubic".
std::string_view resize_mode_name(ResizeMode mode);
/// ONNX's names: "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn".
std::string_view resize_coordinates_name(ResizeCoordinates coordinates);
/// ONNX's names: "round_prefer_floor", "round_prefer_ceil", "floor", "ceil".
std::string_view nearest_rounding_name(NearestRounding rounding);

}  // namespace corgy
