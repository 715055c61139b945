#include "corgy/backends/naive/naive_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "corgy/resize_coordinates.h"

namespace corgy {

namespace {

// Direct convolution, one output element at a time, accumulated in double so that the reference is more
// accurate than the backends it checks; with a residual, its element is added to the sum before the activation.
void direct_conv2d(const Conv2dDesc& d, const Variable& input, const Variable& weights, const Variable* bias,
                   const Variable* residual, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const int in_per_group = d.in_channels / d.groups;
  const int out_per_group = d.out_channels / d.groups;
  const Conv2dWindow w = d.window();
  for (int n = 0; n < out.n; ++n) {
    for (int oc = 0; oc < out.c; ++oc) {
      const int group = oc / out_per_group;
      for (int oy = 0; oy < out.h; ++oy) {
        for (int ox = 0; ox < out.w; ++ox) {
          double sum = bias ? bias->data()[oc] : 0.0;
          for (int ic = 0; ic < in_per_group; ++ic) {
            for (int ky = 0; ky < w.kernel_h; ++ky) {
              for (int kx = 0; kx < w.kernel_w; ++kx) {
                const int iy = oy * w.stride_h - w.pad_top + ky * w.dilation_h;
                const int ix = ox * w.stride_w - w.pad_left + kx * w.dilation_w;
                if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
                sum += static_cast<double>(input.at(n, group * in_per_group + ic, iy, ix)) * weights.at(oc, ic, ky, kx);
              }
            }
          }
          if (residual) sum += residual->at(n, oc, oy, ox);
          output.at(n, oc, oy, ox) = apply_activation(d.activation, static_cast<float>(sum));
        }
      }
    }
  }
}

}  // namespace

void NaiveBackend::conv2d(const Conv2dDesc& d, const Variable& input, const Variable& weights, const Variable* bias,
                          Variable& output) {
  direct_conv2d(d, input, weights, bias, nullptr, output);
}

void NaiveBackend::conv2d_add(const Conv2dDesc& desc, const Variable& input, const Variable& weights,
                              const Variable* bias, const Variable& residual, Variable& output) {
  direct_conv2d(desc, input, weights, bias, &residual, output);
}

void NaiveBackend::preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs,
                                       const Variable& scale, const Variable& shift, Activation input_activation,
                                       const Pool2dDesc* input_pool, const Variable& weights, const Variable* bias,
                                       Variable& output) {
  const Shape& first = inputs[0]->shape();
  Variable preactivated(Shape{first.n, desc.in_channels, first.h, first.w});
  for (int n = 0; n < first.n; ++n) {
    int channel = 0;
    for (const Variable* input : inputs) {
      for (int c = 0; c < input->shape().c; ++c, ++channel) {
        for (int y = 0; y < first.h; ++y) {
          for (int x = 0; x < first.w; ++x) {
            const float value = input->at(n, c, y, x) * scale.data()[channel] + shift.data()[channel];
            preactivated.at(n, channel, y, x) = apply_activation(input_activation, value);
          }
        }
      }
    }
  }
  if (input_pool) {
    Variable pooled(Shape{first.n, desc.in_channels, input_pool->output_h(first.h), input_pool->output_w(first.w)});
    pool2d(*input_pool, preactivated, pooled);
    return direct_conv2d(desc, pooled, weights, bias, nullptr, output);
  }
  direct_conv2d(desc, preactivated, weights, bias, nullptr, output);
}

void NaiveBackend::inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                                     Variable& output) {
  const Shape& in = input.shape();
  const Conv2dDesc& d = desc.depthwise.desc;
  Variable expansion;
  if (desc.expand.weights) {
    expansion = Variable(Shape{in.n, desc.expand.desc.out_channels, in.h, in.w});
    direct_conv2d(desc.expand.desc, input, *desc.expand.weights, desc.expand.bias, nullptr, expansion);
  }
  const Variable& expanded = desc.expand.weights ? expansion : input;  // no expansion: the depthwise reads the input
  if (!desc.project.weights)
    return direct_conv2d(d, expanded, *desc.depthwise.weights, desc.depthwise.bias, nullptr, output);
  Variable filtered(Shape{in.n, d.out_channels, d.output_h(in.h), d.output_w(in.w)});
  direct_conv2d(d, expanded, *desc.depthwise.weights, desc.depthwise.bias, nullptr, filtered);
  if (desc.excite.channels > 0) {
    const SqueezeExciteWeights& w = desc.excite_weights;
    Variable excited(filtered.shape());
    squeeze_excite(desc.excite, filtered, *w.reduce_weights, w.reduce_bias, *w.expand_weights, w.expand_bias, excited);
    return direct_conv2d(desc.project.desc, excited, *desc.project.weights, desc.project.bias, residual, output);
  }
  direct_conv2d(desc.project.desc, filtered, *desc.project.weights, desc.project.bias, residual, output);
}

void NaiveBackend::squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                                  const Variable* reduce_bias, const Variable& expand_weights,
                                  const Variable* expand_bias, Variable& output) {
  const Shape& shape = input.shape();
  const std::size_t plane = shape.plane_count();
  std::vector<double> mean(static_cast<std::size_t>(desc.channels));
  std::vector<float> squeezed(static_cast<std::size_t>(desc.squeeze_channels));
  for (int n = 0; n < shape.n; ++n) {
    for (int c = 0; c < desc.channels; ++c) {
      double sum = 0.0;
      for (int y = 0; y < shape.h; ++y) {
        for (int x = 0; x < shape.w; ++x) sum += input.at(n, c, y, x);
      }
      mean[c] = static_cast<float>(sum / static_cast<double>(plane));  // the pool's output is a float tensor
    }
    for (int s = 0; s < desc.squeeze_channels; ++s) {
      double sum = reduce_bias ? reduce_bias->data()[s] : 0.0;
      for (int c = 0; c < desc.channels; ++c) sum += reduce_weights.at(s, c, 0, 0) * mean[c];
      squeezed[s] = apply_activation(desc.reduce_activation, static_cast<float>(sum));
    }
    for (int c = 0; c < desc.channels; ++c) {
      double sum = expand_bias ? expand_bias->data()[c] : 0.0;
      for (int s = 0; s < desc.squeeze_channels; ++s)
        sum += static_cast<double>(expand_weights.at(c, s, 0, 0)) * squeezed[s];
      const float gate = apply_activation(desc.expand_activation, static_cast<float>(sum));
      for (int y = 0; y < shape.h; ++y) {
        for (int x = 0; x < shape.w; ++x) output.at(n, c, y, x) = input.at(n, c, y, x) * gate;
      }
    }
  }
}

void NaiveBackend::squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                                         const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                                         const Variable* bias, const Variable* residual, Variable& output) {
  Variable excited(input.shape());
  squeeze_excite(excite, input, *excite_weights.reduce_weights, excite_weights.reduce_bias,
                 *excite_weights.expand_weights, excite_weights.expand_bias, excited);
  direct_conv2d(conv, excited, weights, bias, residual, output);
}

void NaiveBackend::begin_layer(int index) {
  profiler_.begin_layer(index);
  if (index >= 0) profiler_.note("direct loops");
}

void NaiveBackend::conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input,
                                  const Variable& weights, const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  Variable conv_output(Shape{in.n, conv.out_channels, conv.output_h(in.h), conv.output_w(in.w)});
  conv2d(conv, input, weights, bias, conv_output);
  pool2d(pool, conv_output, output);
}

void NaiveBackend::pool2d(const Pool2dDesc& d, const Variable& input, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  for (int n = 0; n < out.n; ++n) {
    for (int c = 0; c < out.c; ++c) {
      for (int oy = 0; oy < out.h; ++oy) {
        for (int ox = 0; ox < out.w; ++ox) {
          float max = -std::numeric_limits<float>::infinity();
          double sum = 0.0;
          int cells = 0;
          for (int ky = 0; ky < d.kernel_h; ++ky) {
            for (int kx = 0; kx < d.kernel_w; ++kx) {
              const int iy = oy * d.stride_h - d.pad_top + ky;
              const int ix = ox * d.stride_w - d.pad_left + kx;
              if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
              max = std::max(max, input.at(n, c, iy, ix));
              sum += input.at(n, c, iy, ix);
              ++cells;
            }
          }
          float result = max;
          if (d.kind == PoolKind::average) {
            const int divisor = d.count_include_pad ? d.kernel_h * d.kernel_w : cells;
            result = static_cast<float>(sum / divisor);
          }
          output.at(n, c, oy, ox) = result;
        }
      }
    }
  }
}

void NaiveBackend::activation(Activation activation, const Variable& input, Variable& output) {
  for (std::size_t i = 0; i < input.count(); ++i) output.data()[i] = apply_activation(activation, input.data()[i]);
}

void NaiveBackend::linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
                          Variable& output) {
  const int batch = input.shape().n;
  const int in_features = weights.shape().cols();
  const int out_features = weights.shape().rows();
  for (int n = 0; n < batch; ++n) {
    const float* x = input.data() + static_cast<std::size_t>(n) * in_features;
    for (int o = 0; o < out_features; ++o) {
      double sum = bias ? bias->data()[o] : 0.0;
      for (int i = 0; i < in_features; ++i) sum += static_cast<double>(weights.at(0, 0, o, i)) * x[i];
      output.data()[static_cast<std::size_t>(n) * out_features + o] =
          apply_activation(activation, static_cast<float>(sum));
    }
  }
}

void NaiveBackend::softmax(const Variable& input, Variable& output) {
  const Shape& s = input.shape();
  for (int n = 0; n < s.n; ++n) {
    for (int y = 0; y < s.h; ++y) {
      for (int x = 0; x < s.w; ++x) {
        float max = -std::numeric_limits<float>::infinity();
        for (int c = 0; c < s.c; ++c) max = std::max(max, input.at(n, c, y, x));
        double sum = 0.0;
        for (int c = 0; c < s.c; ++c) sum += std::exp(static_cast<double>(input.at(n, c, y, x) - max));
        for (int c = 0; c < s.c; ++c) {
          output.at(n, c, y, x) = static_cast<float>(std::exp(static_cast<double>(input.at(n, c, y, x) - max)) / sum);
        }
      }
    }
  }
}

void NaiveBackend::channel_affine(const Variable& input, const Variable& scale, const Variable& shift,
                                  Activation activation, Variable& output) {
  const Shape& s = input.shape();
  for (int n = 0; n < s.n; ++n) {
    for (int c = 0; c < s.c; ++c) {
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) {
          output.at(n, c, y, x) =
              apply_activation(activation, input.at(n, c, y, x) * scale.data()[c] + shift.data()[c]);
        }
      }
    }
  }
}

void NaiveBackend::upsample_nearest(int scale, const Variable& input, Variable& output) {
  const Shape& s = output.shape();
  for (int n = 0; n < s.n; ++n) {
    for (int c = 0; c < s.c; ++c) {
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) output.at(n, c, y, x) = input.at(n, c, y / scale, x / scale);
      }
    }
  }
}

void NaiveBackend::conv_transpose2d(const ConvTranspose2dDesc& d, const Variable& input, const Variable& weights,
                                    const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const int in_per_group = d.in_channels / d.groups;
  const int out_per_group = d.out_channels / d.groups;
  std::vector<double> sums(output.count());
  auto sum_at = [&](int n, int oc, int oy, int ox) -> double& {
    return sums[((static_cast<std::size_t>(n) * out.c + oc) * out.h + oy) * out.w + ox];
  };
  for (int n = 0; n < out.n; ++n) {
    for (int oc = 0; oc < out.c; ++oc) {
      for (int oy = 0; oy < out.h; ++oy) {
        for (int ox = 0; ox < out.w; ++ox) sum_at(n, oc, oy, ox) = bias ? bias->data()[oc] : 0.0;
      }
    }
  }
  // Input pixel (iy, ix) of channel ic reaches output (iy * stride - pad + k * dilation) of every channel of its group.
  for (int n = 0; n < in.n; ++n) {
    for (int ic = 0; ic < in.c; ++ic) {
      const int group = ic / in_per_group;
      for (int iy = 0; iy < in.h; ++iy) {
        for (int ix = 0; ix < in.w; ++ix) {
          const double value = input.at(n, ic, iy, ix);
          for (int j = 0; j < out_per_group; ++j) {
            for (int ky = 0; ky < d.kernel_h; ++ky) {
              const int oy = iy * d.stride_h - d.pad_top + ky * d.dilation_h;
              if (oy < 0 || oy >= out.h) continue;
              for (int kx = 0; kx < d.kernel_w; ++kx) {
                const int ox = ix * d.stride_w - d.pad_left + kx * d.dilation_w;
                if (ox < 0 || ox >= out.w) continue;
                sum_at(n, group * out_per_group + j, oy, ox) += value * weights.at(ic, j, ky, kx);
              }
            }
          }
        }
      }
    }
  }
  for (std::size_t i = 0; i < sums.size(); ++i) output.data()[i] = static_cast<float>(sums[i]);
}

namespace {

/// The cubic convolution kernel (Keys 1981) at distance d with coefficient a.
double cubic_weight(double d, double a) {
  d = std::abs(d);
  if (d <= 1.0) return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
  if (d < 2.0) return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
  return 0.0;
}

/// The input cells one output cell reads along an axis, with their weights.
struct ResizeTaps {
  int count = 0;
  std::array<int, 4> index{};
  std::array<double, 4> weight{};
};

ResizeTaps resize_taps(const ResizeDesc& desc, int x, float scale, int in, int out) {
  const float source = resize_source_coordinate(desc.coordinates, x, scale, in, out);
  ResizeTaps taps;
  switch (desc.mode) {
    case ResizeMode::nearest: {
      const float rounded = resize_nearest_cell(desc.rounding, source);
      taps.count = 1;
      taps.index[0] = static_cast<int>(std::clamp(rounded, 0.0f, static_cast<float>(in - 1)));
      taps.weight[0] = 1.0;
      break;
    }
    case ResizeMode::linear: {
      const float clamped = std::clamp(source, 0.0f, static_cast<float>(in - 1));
      const int first = static_cast<int>(std::floor(clamped));
      const double fraction = clamped - static_cast<float>(first);
      taps.count = 2;
      taps.index = {first, std::min(first + 1, in - 1), 0, 0};
      taps.weight = {1.0 - fraction, fraction, 0.0, 0.0};
      break;
    }
    case ResizeMode::cubic: {
      const float below = std::floor(source);
      const double fraction = source - below;
      const int first = static_cast<int>(below) - 1;
      double total = 0.0;
      taps.count = 4;
      for (int k = 0; k < 4; ++k) {
        const int i = first + k;
        const bool outside = i < 0 || i >= in;
        taps.index[k] = std::clamp(i, 0, in - 1);
        taps.weight[k] = desc.exclude_outside && outside ? 0.0 : cubic_weight(fraction + 1.0 - k, desc.cubic_a);
        total += taps.weight[k];
      }
      if (desc.exclude_outside) {
        for (double& w : taps.weight) w /= total;
      }
      break;
    }
  }
  return taps;
}

}  // namespace

void NaiveBackend::resize(const ResizeDesc& desc, const Variable& input, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  for (int n = 0; n < out.n; ++n) {
    for (int c = 0; c < out.c; ++c) {
      for (int y = 0; y < out.h; ++y) {
        const ResizeTaps rows = resize_taps(desc, y, desc.scale_h, in.h, out.h);
        for (int x = 0; x < out.w; ++x) {
          const ResizeTaps cols = resize_taps(desc, x, desc.scale_w, in.w, out.w);
          double sum = 0.0;
          for (int i = 0; i < rows.count; ++i) {
            for (int j = 0; j < cols.count; ++j) {
              sum += rows.weight[i] * cols.weight[j] * input.at(n, c, rows.index[i], cols.index[j]);
            }
          }
          output.at(n, c, y, x) = static_cast<float>(sum);
        }
      }
    }
  }
}

void NaiveBackend::concat_channels(std::span<const Variable* const> inputs, Variable& output) {
  const Shape& s = output.shape();
  for (int n = 0; n < s.n; ++n) {
    int first_channel = 0;
    for (const Variable* in : inputs) {
      for (int c = 0; c < in->shape().c; ++c) {
        for (int y = 0; y < s.h; ++y) {
          for (int x = 0; x < s.w; ++x) output.at(n, first_channel + c, y, x) = in->at(n, c, y, x);
        }
      }
      first_channel += in->shape().c;
    }
  }
}

void NaiveBackend::gather_channels(const ChannelGatherDesc& desc, const Variable& input, Variable& output) {
  const Shape& s = output.shape();
  for (int n = 0; n < s.n; ++n) {
    for (int c = 0; c < s.c; ++c) {
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) output.at(n, c, y, x) = input.at(n, desc.source_channel(c), y, x);
      }
    }
  }
}

void NaiveBackend::add(const Variable& a, const Variable& b, Activation activation, Variable& output) {
  for (std::size_t i = 0; i < a.count(); ++i) {
    output.data()[i] = apply_activation(activation, a.data()[i] + b.data()[i]);
  }
}

// Two passes over each plane in double: the mean, then the variance around it (no cancellation from E[x^2] - m^2).
void NaiveBackend::instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                                 Activation activation, Variable& output) {
  const Shape& s = input.shape();
  const double cells = static_cast<double>(s.plane_count());
  for (int n = 0; n < s.n; ++n) {
    for (int c = 0; c < s.c; ++c) {
      double sum = 0.0;
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) sum += input.at(n, c, y, x);
      }
      const double mean = sum / cells;
      double squares = 0.0;
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) squares += (input.at(n, c, y, x) - mean) * (input.at(n, c, y, x) - mean);
      }
      const double factor = scale.data()[c] / std::sqrt(squares / cells + epsilon);
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) {
          const double normalised = (input.at(n, c, y, x) - mean) * factor + shift.data()[c];
          output.at(n, c, y, x) = apply_activation(activation, static_cast<float>(normalised));
        }
      }
    }
  }
}

namespace {

/// The input row or column that output index `i` (counted from the padded border) reads, or -1 for a constant
/// cell. `before` cells of padding precede the `size` input cells.
int padded_source(PadMode mode, int i, int before, int size) {
  const int j = i - before;
  if (j >= 0 && j < size) return j;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::reflect: return j < 0 ? -j : 2 * (size - 1) - j;
    case PadMode::edge: return j < 0 ? 0 : size - 1;
  }
  return -1;
}

}  // namespace

void NaiveBackend::pad(const PadDesc& desc, const Variable& input, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  for (int n = 0; n < out.n; ++n) {
    for (int c = 0; c < out.c; ++c) {
      for (int y = 0; y < out.h; ++y) {
        for (int x = 0; x < out.w; ++x) {
          const int iy = padded_source(desc.mode, y, desc.top, in.h);
          const int ix = padded_source(desc.mode, x, desc.left, in.w);
          output.at(n, c, y, x) = iy < 0 || ix < 0 ? desc.value : input.at(n, c, iy, ix);
        }
      }
    }
  }
}

void NaiveBackend::elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) {
  const Shape& s = a.shape();
  const bool per_plane = b.shape() != s;
  for (int n = 0; n < s.n; ++n) {
    for (int c = 0; c < s.c; ++c) {
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) {
          const float left = a.at(n, c, y, x);
          const float right = per_plane ? b.at(n, c, 0, 0) : b.at(n, c, y, x);
          float result = 0.0f;
          switch (op) {
            case ElementwiseOp::add: result = left + right; break;
            case ElementwiseOp::subtract: result = left - right; break;
            case ElementwiseOp::multiply: result = left * right; break;
            case ElementwiseOp::divide: result = left / right; break;
          }
          output.at(n, c, y, x) = result;
        }
      }
    }
  }
}

void NaiveBackend::prelu(const Variable& input, const Variable& slope, Variable& output) {
  const Shape& s = input.shape();
  for (int n = 0; n < s.n; ++n) {
    for (int c = 0; c < s.c; ++c) {
      for (int y = 0; y < s.h; ++y) {
        for (int x = 0; x < s.w; ++x) {
          const float value = input.at(n, c, y, x);
          output.at(n, c, y, x) = value > 0.0f ? value : value * slope.data()[c];
        }
      }
    }
  }
}

void NaiveBackend::matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) {
  const int rows = c.shape().rows();
  const int cols = c.shape().cols();
  const int inner = transpose_a ? a.shape().rows() : a.shape().cols();
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      double sum = 0.0;
      for (int k = 0; k < inner; ++k) {
        const float left = transpose_a ? a.at(0, 0, k, i) : a.at(0, 0, i, k);
        const float right = transpose_b ? b.at(0, 0, j, k) : b.at(0, 0, k, j);
        sum += static_cast<double>(left) * right;
      }
      c.at(0, 0, i, j) = static_cast<float>(sum);
    }
  }
}

}  // namespace corgy
