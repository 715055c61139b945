// PoolOptions: the window parameters MaxPool2d and AvgPool2d share, and how they become a Pool2dDesc.
#pragma once

#include "corgy/backend.h"
#include "corgy/shape.h"

namespace corgy {

struct PoolOptions {
  int kernel = 2;
  /// 0 means stride = kernel.
  int stride = 0;
  /// Padding at the top and left.
  int padding = 0;
  /// Padding at the bottom and right; -1 means the same as `padding`. Darknet's maxpool pads
  /// (size - 1) cells split as padding = (size-1)/2, padding_bottom_right = the rest.
  int padding_bottom_right = -1;
  /// The window covers the whole input (global pooling): kernel, stride and padding are ignored.
  bool global = false;
  /// Average pooling only: padded cells count as zeros (PyTorch's default).
  bool count_include_pad = true;
  /// TensorFlow's padding 'same': output = ceil(input / stride), padded by the cells that needs, the odd one at the
  /// bottom/right (2x2/2 on 207 rows pads one row below). `padding` and `padding_bottom_right` are ignored.
  /// TensorFlow's average pooling counts real cells only (count_include_pad = false).
  bool same = false;
};

/// Fills the descriptor for an input shape; throws corgy::Error when the input is smaller than the window.
Pool2dDesc make_pool_desc(PoolKind kind, const PoolOptions& options, const Shape& input);
/// Throws corgy::Error for options that no input can satisfy.
void validate_pool_options(std::string_view layer, const PoolOptions& options);
/// "3x3/2 pad 1", "2x2/2 same" or "global".
std::string describe_pool_options(const PoolOptions& options);

}  // namespace corgy
