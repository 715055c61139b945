#include "corgy/layers/pool_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/error.h"
#include "corgy/layers/layer.h"

namespace corgy {

namespace {
int bottom_right(const PoolOptions& o) { return o.padding_bottom_right < 0 ? o.padding : o.padding_bottom_right; }
int stride_of(const PoolOptions& o) { return o.stride == 0 ? o.kernel : o.stride; }

// TensorFlow's 'same' padding along one axis (tf.nn.max_pool): total = max((ceil(size / stride) - 1) * stride +
// kernel - size, 0), the smaller half before.
void same_padding(int size, int kernel, int stride, int& before, int& after) {
  const int output = (size + stride - 1) / stride;
  const int total = std::max((output - 1) * stride + kernel - size, 0);
  before = total / 2;
  after = total - before;
}
constexpr int kLargestWindow = 1 << 16;
}  // namespace

void validate_pool_options(std::string_view layer, const PoolOptions& o) {
  if (o.global) return;
  if (o.kernel <= 0 || o.stride < 0 || o.padding < 0 || o.padding_bottom_right < -1) {
    throw_parameter_error(layer, fmt::format("invalid parameters: kernel {}, stride {}, padding {}, "
                                             "padding_bottom_right {}",
                                             o.kernel, o.stride, o.padding, o.padding_bottom_right));
  }
  if (o.kernel > kLargestWindow || o.stride > kLargestWindow) {
    // Larger windows are no model's; they would overflow int when added to an input's size and padding.
    throw_parameter_error(
        layer, fmt::format("kernel {} and stride {} must be at most {}", o.kernel, o.stride, kLargestWindow));
  }
  if (o.padding >= o.kernel || bottom_right(o) >= o.kernel) {
    // A window made only of padding would have no input cell to pool.
    throw_parameter_error(
        layer, fmt::format("padding {}/{} must be smaller than the kernel {}", o.padding, bottom_right(o), o.kernel));
  }
}

Pool2dDesc make_pool_desc(PoolKind kind, const PoolOptions& o, const Shape& input) {
  Pool2dDesc d;
  d.kind = kind;
  d.count_include_pad = o.count_include_pad;
  if (o.global) {
    d.kernel_h = d.stride_h = input.h;
    d.kernel_w = d.stride_w = input.w;
    return d;
  }
  d.kernel_h = d.kernel_w = o.kernel;
  d.stride_h = d.stride_w = stride_of(o);
  if (o.same) {
    same_padding(input.h, d.kernel_h, d.stride_h, d.pad_top, d.pad_bottom);
    same_padding(input.w, d.kernel_w, d.stride_w, d.pad_left, d.pad_right);
  } else {
    d.pad_top = d.pad_left = o.padding;
    d.pad_bottom = d.pad_right = bottom_right(o);
  }
  if (d.output_h(input.h) <= 0 || d.output_w(input.w) <= 0 || input.h + d.pad_top + d.pad_bottom < d.kernel_h ||
      input.w + d.pad_left + d.pad_right < d.kernel_w) {
    const int smallest = o.kernel - o.padding - bottom_right(o);
    throw_shape_error(fmt::format("an input of at least {} x {} pixels", smallest, smallest), input);
  }
  return d;
}

std::string describe_pool_options(const PoolOptions& o) {
  if (o.global) return "global";
  std::string text = fmt::format("{}x{}/{}", o.kernel, o.kernel, stride_of(o));
  if (o.same) return text + " same";
  if (o.padding != 0 || bottom_right(o) != 0) {
    text += o.padding == bottom_right(o) ? fmt::format(" pad {}", o.padding)
                                         : fmt::format(" pad {} (bottom/right {})", o.padding, bottom_right(o));
  }
  return text;
}

}  // namespace corgy
