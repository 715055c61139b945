// Raw weight files: one tensor per file, little-endian float32, no header, as Apple's MPSCNN samples ship them
// (weights_conv1.dat, bias_conv1.dat). See docs/weights.md for the layouts and how to write such files.
#pragma once

#include <span>
#include <string>

#include "corgy/layers/conv2d.h"
#include "corgy/layers/linear.h"
#include "corgy/shape.h"

namespace corgy {

/// Order of the values in a raw convolution weight file. The caller says which one a file uses: the bytes alone
/// cannot tell.
enum class ConvWeightLayout {
  /// weight[out][in / groups][kh][kw]: PyTorch, darknet and corgy's own order (copied as is).
  oihw,
  /// weight[out][kh][kw][in / groups]: MPSCNN's order, and TensorFlow/Keras HWIO kernels after transpose(3, 0, 1, 2).
  ohwi,
};

/// Order of the values in a raw fully connected weight file.
enum class LinearWeightLayout {
  /// weight[out][in]: PyTorch's nn.Linear and corgy's own order; for a (C, H, W) input flattened in NCHW order,
  /// in = c * H * W + h * W + w (copied as is).
  out_by_in,
  /// MPSCNN's form: a convolution whose kernel covers the whole (C, H, W) input, weight[out][h][w][c] (OHWI).
  ohwi_conv,
};

/// "OIHW", "OHWI", "[out][in]", "OHWI (conv over the whole input)", for messages.
std::string layout_name(ConvWeightLayout layout);
std::string layout_name(LinearWeightLayout layout);

/// Memory-maps `path` and writes its values into conv.weights() (OIHW (out, in / groups, k, k)), converting from
/// `layout`. The file must hold exactly out * in / groups * k * k floats: otherwise corgy::Error names the file, the
/// layer and the expected and actual sizes in bytes. Call Sequential::weights_changed() if the model has run.
void load_raw_weights(Conv2d& conv, const std::string& path, ConvWeightLayout layout);

/// The same for a Linear layer (weights (1, 1, out, in)). For LinearWeightLayout::ohwi_conv, `input` is the shape
/// (1, C, H, W) of the feature map before flattening, with C * H * W = in_features; out_by_in ignores it.
void load_raw_weights(Linear& linear, const std::string& path, LinearWeightLayout layout, const Shape& input = {});

/// Memory-maps `path` (exactly out_channels / out_features floats) into the layer's bias, creating it if needed.
void load_raw_bias(Conv2d& conv, const std::string& path);
void load_raw_bias(Linear& linear, const std::string& path);

/// Writes `values` as raw little-endian float32, the format the loaders above read. Throws corgy::Error naming the
/// file when it cannot be written.
void save_raw(const std::string& path, std::span<const float> values);

}  // namespace corgy
