// The coordinate rules of Backend::resize (ResizeDesc), in one place: the definition every CPU backend computes
// (the naive reference and blas's tables), as apply_activation is for the activations. kernels/resize.comp writes
// the same arithmetic in GLSL.
#pragma once

#include <cmath>

#include "corgy/backend.h"

namespace corgy {

/// Where output index x of an axis of `out` cells falls among the axis's `in` input cells (ResizeCoordinates), in
/// float32 as ONNX Runtime computes it (division by the scale).
inline float resize_source_coordinate(ResizeCoordinates mode, int x, float scale, int in, int out) {
  const auto fx = static_cast<float>(x);
  switch (mode) {
    case ResizeCoordinates::half_pixel: return (fx + 0.5f) / scale - 0.5f;
    case ResizeCoordinates::pytorch_half_pixel: return out > 1 ? (fx + 0.5f) / scale - 0.5f : 0.0f;
    case ResizeCoordinates::align_corners:
      return out > 1 ? fx * static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    case ResizeCoordinates::asymmetric: return fx / scale;
    case ResizeCoordinates::tf_half_pixel_for_nn: return (fx + 0.5f) / scale;
  }
  return 0.0f;
}

/// A source coordinate rounded to a cell by ResizeMode::nearest's rule (NearestRounding), before clamping.
inline float resize_nearest_cell(NearestRounding rounding, float source) {
  const float below = std::floor(source);
  const bool half = source == below + 0.5f;
  switch (rounding) {
    case NearestRounding::round_prefer_floor: return half ? below : std::round(source);
    case NearestRounding::round_prefer_ceil: return half ? std::ceil(source) : std::round(source);
    case NearestRounding::floor: return below;
    case NearestRounding::ceil: return std::ceil(source);
  }
  return below;
}

}  // namespace corgy
