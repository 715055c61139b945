#include "corgy/backends/blas/depthwise_conv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/fused_activation.h"
#include "corgy/backends/blas/im2col.h"
#include "corgy/error.h"

namespace corgy::blas {

namespace {

/// output += weight * input shifted by one kernel tap, over the output pixels where the tap reads real input.
void accumulate_tap(const float* input, const Shape& in_shape, const Conv2dDesc& desc, float weight, int y_offset,
                    int x_offset, const Shape& out_shape, float* output) {
  const ValidRange rows = valid_outputs(y_offset, desc.stride, in_shape.h, out_shape.h);
  const ValidRange cols = valid_outputs(x_offset, desc.stride, in_shape.w, out_shape.w);
  for (int oy = rows.begin; oy < rows.end; ++oy) {
    const float* source = input + static_cast<std::size_t>(oy * desc.stride + y_offset) * in_shape.w;
    float* target = output + static_cast<std::size_t>(oy) * out_shape.w;
    for (int ox = cols.begin; ox < cols.end; ++ox) target[ox] += weight * source[ox * desc.stride + x_offset];
  }
}

/// Floats of an extended output block: about 8 KB, so that it stays in L1 until its rows are copied out.
constexpr int kBlockFloats = 2048;
/// Planes per item of the team's queue: enough work per item that taking one costs nothing next to it.
constexpr std::size_t kMinFloatsPerItem = 16384;

}  // namespace

void depthwise_conv2d_plane(const Conv2dDesc& desc, const Shape& in_shape, const float* input, const float* weights,
                            const float* bias, const Shape& out_shape, float* output, std::size_t plane) {
  const int taps = desc.kernel * desc.kernel;
  const std::size_t out_plane_size = out_shape.plane_count();
  // Input and output planes pair up one to one, so the same (image, channel) index addresses both.
  const int channel = static_cast<int>(plane % out_shape.c);
  const float* source = input + plane * in_shape.plane_count();
  float* target = output + plane * out_plane_size;
  std::fill(target, target + out_plane_size, 0.0f);
  for (int tap = 0; tap < taps; ++tap) {
    const int y_offset = tap / desc.kernel * desc.dilation - desc.padding;
    const int x_offset = tap % desc.kernel * desc.dilation - desc.padding;
    accumulate_tap(source, in_shape, desc, weights[channel * taps + tap], y_offset, x_offset, out_shape, target);
  }
  const float channel_bias = bias ? bias[channel] : 0.0f;
  with_activation(desc.activation,
                  [&](const auto& activate) { add_bias_and_activate(target, out_plane_size, channel_bias, activate); });
}

DepthwiseGeometry depthwise_geometry(int kernel, int stride, int dilation, int padding, int in_h, int in_w) {
  return depthwise_band_geometry(kernel, stride, dilation, padding, padding, padding, in_h, in_w);
}

DepthwiseGeometry depthwise_band_geometry(int kernel, int stride, int dilation, int padding, int pad_top,
                                          int pad_bottom, int in_h, int in_w) {
  if (kernel * kernel > DepthwiseGeometry::max_taps) {
    throw Error(fmt::format("blas: depthwise kernels of {0} x {0} are larger than the SIMD kernel takes", kernel));
  }
  DepthwiseGeometry g;
  g.kernel = kernel;
  g.stride = stride;
  g.dilation = dilation;
  g.padding = padding;
  g.pad_top = pad_top;
  g.pad_bottom = pad_bottom;
  g.in_h = in_h;
  g.in_w = in_w;
  g.out_h = (pad_top + in_h + pad_bottom - dilation * (kernel - 1) - 1) / stride + 1;
  g.out_w = (in_w + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
  g.phase_h = (pad_top + in_h + pad_bottom + stride - 1) / stride;
  g.phase_w = (in_w + 2 * padding + stride - 1) / stride;
  const std::size_t phase_size = static_cast<std::size_t>(g.phase_h) * g.phase_w;
  // Tap (ky, kx) of output (oy, ox) reads padded row oy * stride + ky * dilation: phase (ky * dilation) % stride,
  // phase row oy + (ky * dilation) / stride; columns alike.
  g.taps = kernel * kernel;
  for (int ky = 0; ky < kernel; ++ky) {
    for (int kx = 0; kx < kernel; ++kx) {
      const int y = ky * dilation;
      const int x = kx * dilation;
      const std::size_t phase = static_cast<std::size_t>((y % stride) * stride + x % stride);
      g.tap_offsets[ky * kernel + kx] =
          static_cast<std::int32_t>(phase * phase_size + static_cast<std::size_t>(y / stride) * g.phase_w + x / stride);
    }
  }
  // The last register of the last block reads up to a register past the extended grid, plus its offset: at most a
  // phase row and a register past the phase planes (depthwise_kernels.h).
  g.phase_floats = static_cast<std::size_t>(stride) * stride * phase_size + g.phase_w + 64;
  g.block_rows = std::clamp(kBlockFloats / g.phase_w, 1, g.out_h);
  g.block_floats = static_cast<std::size_t>(g.block_rows) * g.phase_w + 64;
  g.channel_tile_floats =
      static_cast<std::size_t>(pad_top + in_h + pad_bottom) * (in_w + 2 * padding) * kDepthwiseChannelBlock;
  const std::size_t out_plane = static_cast<std::size_t>(g.out_h) * g.out_w;
  g.channel_buffer_floats = g.channel_tile_floats + (out_plane + kDepthwiseChannelBlock) * kDepthwiseChannelBlock +
                            kDepthwiseChannelBlock * out_plane + kDepthwiseChannelBlock;
  return g;
}

void prepare_depthwise_buffer(const DepthwiseGeometry& geometry, std::vector<float>& buffer) {
  if (buffer.size() < geometry.buffer_floats()) buffer.resize(geometry.buffer_floats());
  // The kernel writes every phase plane's every element; only the tail past them, which the last registers read,
  // must be zeros.
  const std::size_t planes =
      static_cast<std::size_t>(geometry.stride) * geometry.stride * geometry.phase_h * geometry.phase_w;
  std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(planes),
            buffer.begin() + static_cast<std::ptrdiff_t>(geometry.phase_floats), 0.0f);
}

DepthwiseKernel depthwise_kernel(CpuIsa isa, DepthwisePath path) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} depthwise kernels", isa_name(isa)));
  switch (isa) {
    case CpuIsa::avx512: return avx512_depthwise_kernel(path);
    case CpuIsa::avx2: return avx2_depthwise_kernel(path);
    case CpuIsa::generic: break;
  }
  return generic_depthwise_kernel(path);
}

DepthwiseKernel depthwise_kernel() {
  static const DepthwiseKernel best = depthwise_kernel(widest_cpu_isa());
  return best;
}

bool depthwise_direct_blocks_apply(const DepthwiseGeometry& geometry) {
  return widest_cpu_isa() != CpuIsa::generic && (geometry.kernel == 3 || geometry.kernel == 5) &&
         (geometry.stride == 1 || geometry.stride == 2) && geometry.dilation == 1 && geometry.out_w >= 12;
}

bool depthwise_channel_blocks_apply(int kernel, int stride, int dilation) {
  return (kernel == 3 || kernel == 5 || kernel == 7) && (stride == 1 || stride == 2) && dilation == 1;
}

std::vector<float> pack_depthwise_channel_weights(const float* weights, const float* bias, int channels, int taps) {
  const std::size_t stride = static_cast<std::size_t>(channels) + kDepthwiseChannelBlock;
  std::vector<float> packed(stride * (taps + 1));
  for (std::size_t c = 0; c < stride; ++c) {
    const std::size_t channel = c % static_cast<std::size_t>(channels);
    for (int t = 0; t < taps; ++t) packed[t * stride + c] = weights[channel * taps + t];
    packed[taps * stride + c] = bias ? bias[channel] : 0.0f;
  }
  return packed;
}

void prepare_depthwise_channel_buffer(const DepthwiseGeometry& geometry, std::vector<float>& buffer) {
  if (buffer.size() < geometry.channel_buffer_floats) buffer.resize(geometry.channel_buffer_floats);
  std::fill(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(geometry.channel_buffer_floats), 0.0f);
}

DepthwiseChannelBlockKernel depthwise_channel_block_kernel(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} depthwise kernels", isa_name(isa)));
  switch (isa) {
    case CpuIsa::avx512: return avx512_depthwise_channel_block_kernel();
    case CpuIsa::avx2: return avx2_depthwise_channel_block_kernel();
    case CpuIsa::generic: break;
  }
  return generic_depthwise_channel_block_kernel();
}

DepthwiseChannelBlockKernel depthwise_channel_block_kernel() {
  static const DepthwiseChannelBlockKernel best = depthwise_channel_block_kernel(widest_cpu_isa());
  return best;
}

void depthwise_conv(const TeamMember& member, WorkQueue& queue, const Conv2dDesc& desc,
                    const DepthwiseGeometry& geometry, const Variable& input, const Variable& weights,
                    const Variable* bias, Variable& output, std::vector<float>& buffer) {
  prepare_depthwise_buffer(geometry, buffer);
  const DepthwiseKernel kernel = depthwise_kernel();
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const std::size_t per_item = depthwise_planes_per_item(out);
  const std::size_t planes = static_cast<std::size_t>(out.n) * out.c;
  const int taps = geometry.taps;
  std::size_t item = 0;
  while (queue.next(member, item)) {
    for (std::size_t plane = item * per_item; plane < std::min(planes, (item + 1) * per_item); ++plane) {
      const std::size_t channel = plane % static_cast<std::size_t>(out.c);
      kernel(geometry, input.data() + plane * in.plane_count(), weights.data() + channel * taps,
             bias ? bias->data()[channel] : 0.0f, desc.activation, output.data() + plane * out.plane_count(),
             buffer.data());
    }
  }
}

void depthwise_conv_channel_blocks(const TeamMember& member, WorkQueue& queue, std::size_t per_item,
                                   const ConvPlan& plan, const Variable& input, Variable& output,
                                   std::vector<float>& buffer) {
  prepare_depthwise_channel_buffer(plan.depthwise, buffer);
  const DepthwiseChannelBlockKernel kernel = depthwise_channel_block_kernel();
  const std::size_t planes = static_cast<std::size_t>(output.shape().n) * output.shape().c;
  std::size_t item = 0;
  while (queue.next(member, item)) {
    kernel(plan.depthwise, input.data(), item * per_item, std::min(planes, (item + 1) * per_item), output.shape().c,
           plan.depthwise_packed.data(), plan.desc.activation, output.data(), buffer.data());
  }
}

std::size_t depthwise_channel_planes_per_item(std::size_t planes, int threads) {
  constexpr std::size_t block = kDepthwiseChannelBlock;
  const std::size_t blocks = (planes + block - 1) / block;
  return std::max<std::size_t>(1, blocks / (4 * static_cast<std::size_t>(std::max(threads, 1)))) * block;
}

std::size_t depthwise_planes_per_item(const Shape& output) {
  return std::max<std::size_t>(1, kMinFloatsPerItem / std::max<std::size_t>(1, output.plane_count()));
}

}  // namespace corgy::blas
