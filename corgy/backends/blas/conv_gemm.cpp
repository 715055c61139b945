#include "corgy/backends/blas/conv_gemm.h"

#include <algorithm>
#include <cstring>

#include "corgy/backends/blas/activation_kernels.h"

namespace corgy::blas {

Im2colB::Im2colB(const Conv2dDesc& desc, const float* image, int channels, int height, int width, int out_h, int out_w,
                 Im2colRowPacker packer)
    : desc_(desc),
      image_(image),
      height_(height),
      width_(width),
      out_h_(out_h),
      out_w_(out_w),
      depth_(channels * desc.taps()),
      packer_(packer) {}

Im2colRow Im2colB::row(int k) const {
  // Any window whose stride and dilation are the same along both axes (Im2colRow has one stride).
  const Conv2dWindow w = desc_.window();
  const int taps = w.kernel_h * w.kernel_w;
  return {image_ + static_cast<std::size_t>(k / taps) * height_ * width_,
          height_,
          width_,
          k % taps / w.kernel_w * w.dilation_h - w.pad_top,
          k % w.kernel_w * w.dilation_w - w.pad_left,
          w.stride_h,
          out_w_};
}

PackedBlock Im2colB::pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const {
  const std::size_t panel_stride = static_cast<std::size_t>(kc) * nr;
  const int valid = std::max(0, std::min(nc, columns() - n0));
  const int tail = valid % nr;  // the last panel's columns past the matrix are zero
  float* last_panel = scratch + static_cast<std::size_t>(valid / nr) * panel_stride;
  for (int k = 0; k < kc; ++k) {
    packer_(row(k0 + k), n0, valid, nr, panel_stride, scratch + static_cast<std::size_t>(k) * nr);
    if (tail != 0) std::fill(last_panel + k * nr + tail, last_panel + (k + 1) * nr, 0.0f);
  }
  return {scratch, panel_stride};
}

PackedBlock PaddedRowsB::pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const {
  (void)kc;
  (void)nc;
  (void)scratch;
  return {padded_ + n0, static_cast<std::size_t>(nr), row_offsets_.data() + k0};
}

bool reads_padded_rows(const Conv2dDesc& desc) {
  // Measured on Tiny YOLO's first layer (27) and MNIST's (25); packing costs about as much as a depth of ~100. At
  // stride 2 packing also picks every other value, and writes each input value k * k / 4 times where the phase
  // planes copy it once: ResNet-50's 7x7/2 stem (depth 147) 3.0 -> 2.7 ms, its 3x3/2 256 -> 256 on 28x28 2.89 ->
  // 2.73 ms (1 thread; the others tied).
  // (A strided 1x1 convolution packs each value it reads once, and would copy all s * s phases for one.)
  constexpr int kMostDepth = 96;
  // Inception v3's 17x17 7x1 and 1x7 layers (depth 896-1344), one thread: 0.93-1.02 ms against 1.27-1.46 packed
  // (7x1), 1.22-1.38 against 1.28-1.47 (1x7, whose extended rows are 23 wide for 17 outputs); short output rows cut
  // the im2col panels into short runs.
  if (!desc.is_square()) return true;
  if (desc.stride > 1) return desc.kernel > 1;
  return desc.in_channels / desc.groups * desc.kernel * desc.kernel <= kMostDepth;
}

namespace {

/// Padded row `padded_row` of one channel plane (input row padded_row - pad_top, zeros outside the input, the input's
/// columns from pad_left on) cut into `stride` column phases: phase px (at phases + px * phase_plane) holds padded
/// columns px, px + stride, ...
void copy_row_phases(const float* plane, const Shape& in, int pad_top, int pad_left, int stride, int padded_row,
                     int phase_w, std::size_t phase_plane, float* phases) {
  const int iy = padded_row - pad_top;
  if (iy < 0 || iy >= in.h) {
    for (int px = 0; px < stride; ++px) std::fill(phases + px * phase_plane, phases + px * phase_plane + phase_w, 0.0f);
    return;
  }
  const float* source = plane + static_cast<std::size_t>(iy) * in.w;
  if (stride == 1) {
    std::fill(phases, phases + pad_left, 0.0f);
    std::memcpy(phases + pad_left, source, sizeof(float) * in.w);
    std::fill(phases + pad_left + in.w, phases + phase_w, 0.0f);
    return;
  }
  for (int px = 0; px < stride; ++px) {
    float* phase = phases + px * phase_plane;
    for (int i = 0; i < phase_w; ++i) {
      const int x = i * stride + px - pad_left;
      phase[i] = x >= 0 && x < in.w ? source[x] : 0.0f;
    }
  }
}

/// Rows [y0, y1) of image n by PaddedRowsB: the input rows they read, zero-padded, then one GEMM per group into the
/// extended grid, cropped into target. At stride s each channel's padded rows are first split into s x s phase
/// planes (row phase py, column phase px: the padded pixels (py + s * i, px + s * j)), so that tap (ky, kx) of
/// output pixels (y, x), (y, x + 1), ... reads consecutive floats of plane (ky * d % s, kx * d % s) from row
/// y - y0 + ky * d / s, column x + kx * d / s on: B's rows are still read in place, and the extended grid is
/// phase_w (the padded width / s) columns wide, of which output.w are outputs (a 7x7/2 stem: 112 of 115).
/// The zero-padded phase planes that PaddedRowsB reads for output rows [y0, y1) of one group of a convolution whose
/// stride and dilation are the same along both axes: s x s phase planes per input channel, each phase_h x phase_w.
///
/// At stride 1 consecutive padded rows share their horizontal padding: row r's input values start at
/// r * phase_w + pad_left, and the max(pad_left, pad_right) zeros between two rows' values serve as the right padding
/// of the one and the left padding of the next, so a row of the extended grid is input.w + max(pad_left, pad_right)
/// columns wide rather than input.w + pad_left + pad_right (a 1x7 window on a 17x17 map: 20 columns for 17 outputs
/// where 23 were computed). The last row's right padding is the next channel's first row's left padding (or, after
/// the last channel, the zeroed room past the planes).
struct PaddedRowsLayout {
  int stride = 1;
  int phase_w = 0;  // at stride 1: input.w + the padding the rows share (at least output.w)
  int phase_h = 0;
  std::size_t phase_plane = 0;
  std::size_t channel_size = 0;  // phase_plane * stride * stride
  int columns = 0;               // of the extended grid: (y1 - y0) * phase_w
  std::size_t padded_size = 0;   // every channel's planes, with room for the last panel's reads past the grid
};

PaddedRowsLayout padded_rows_layout(const GemmMicroKernel& kernel, const Conv2dDesc& desc, const Shape& in, int y0,
                                    int y1) {
  const Conv2dWindow window = desc.window();
  PaddedRowsLayout layout;
  layout.stride = window.stride_h;
  const int halo_h = window.dilation_h * (window.kernel_h - 1);
  const int padded_w = in.w + window.pad_left + window.pad_right;
  layout.phase_w = (padded_w + layout.stride - 1) / layout.stride;
  // Rows that share their padding are no shorter than the output's (a padding wider than the window's halo is not
  // shared).
  const int shared_w = in.w + std::max(window.pad_left, window.pad_right);
  const int out_w = padded_w - window.dilation_w * (window.kernel_w - 1);
  if (layout.stride == 1 && shared_w >= out_w) layout.phase_w = shared_w;
  layout.phase_h = y1 - y0 + halo_h / layout.stride;
  layout.phase_plane = static_cast<std::size_t>(layout.phase_h) * layout.phase_w;
  layout.channel_size = layout.phase_plane * layout.stride * layout.stride;
  layout.columns = (y1 - y0) * layout.phase_w;
  layout.padded_size = (desc.in_channels / desc.groups) * layout.channel_size + kernel.nr + layout.phase_w;
  return layout;
}

/// B's row (c, ky, kx) in the phase planes: one offset per row of the group's depth.
void padded_row_offsets(const Conv2dDesc& desc, const PaddedRowsLayout& layout, std::vector<std::int32_t>& offsets) {
  const Conv2dWindow window = desc.window();
  const int s = layout.stride;
  const int d = window.dilation_h;
  offsets.clear();
  for (int c = 0; c < desc.in_channels / desc.groups; ++c) {
    for (int ky = 0; ky < window.kernel_h; ++ky) {
      for (int kx = 0; kx < window.kernel_w; ++kx) {
        const int dy = ky * d;
        const int dx = kx * d;
        const std::size_t phase = static_cast<std::size_t>(dy % s) * s + dx % s;
        offsets.push_back(static_cast<std::int32_t>(c * layout.channel_size + phase * layout.phase_plane +
                                                    (dy / s) * layout.phase_w + dx / s));
      }
    }
  }
}

/// Channels [c0, c1) of group g of image n into their phase planes in `padded` (laid out by padded_rows_layout for
/// output rows from y0).
void fill_padded_channels(const Conv2dDesc& desc, const Variable& input, const PaddedRowsLayout& layout, int n, int g,
                          int c0, int c1, int y0, float* padded) {
  const Shape& in = input.shape();
  const Conv2dWindow window = desc.window();
  const int s = layout.stride;
  const int in_per_group = desc.in_channels / desc.groups;
  for (int c = c0; c < c1; ++c) {
    const float* source = input.data() + (static_cast<std::size_t>(n) * in.c + g * in_per_group + c) * in.plane_count();
    float* channel = padded + c * layout.channel_size;
    for (int py = 0; py < s; ++py) {
      for (int r = 0; r < layout.phase_h; ++r) {  // row phase py's row r: padded row (y0 + r) * s + py
        copy_row_phases(source, in, window.pad_top, window.pad_left, s, (y0 + r) * s + py, layout.phase_w,
                        layout.phase_plane,
                        channel + py * s * layout.phase_plane + static_cast<std::size_t>(r) * layout.phase_w);
      }
    }
  }
}

/// Output rows [0, rows) of channels [c0, c1) of the extended grid (rows `ldc` apart, phase_w columns per output row)
/// into the output planes at target (channel c at target + c * channel_stride), the halo columns dropped.
void crop_extended_rows(const float* extended, std::size_t ldc, const PaddedRowsLayout& layout, int c0, int c1,
                        int rows, int out_w, float* target, std::size_t channel_stride) {
  for (int o = c0; o < c1; ++o) {
    const float* from = extended + o * ldc;
    float* plane_out = target + static_cast<std::size_t>(o) * channel_stride;
    for (int r = 0; r < rows; ++r) {
      std::memcpy(plane_out + static_cast<std::size_t>(r) * out_w, from + static_cast<std::size_t>(r) * layout.phase_w,
                  sizeof(float) * out_w);
    }
  }
}

void conv_padded_rows(const GemmMicroKernel& kernel, const Conv2dDesc& desc, const PackedConvWeights& weights,
                      const Variable& input, const Shape& output, int n, int y0, int y1, float* target,
                      std::size_t channel_stride, GemmRowsBuffers& buffers) {
  const int in_per_group = desc.in_channels / desc.groups;
  const int out_per_group = desc.out_channels / desc.groups;
  const PaddedRowsLayout layout = padded_rows_layout(kernel, desc, input.shape(), y0, y1);
  if (buffers.padded_input.size() < layout.padded_size) buffers.padded_input.resize(layout.padded_size);
  const std::size_t extended_size = static_cast<std::size_t>(out_per_group) * (layout.columns + kernel.nr);
  if (buffers.extended_output.size() < extended_size) buffers.extended_output.resize(extended_size);
  padded_row_offsets(desc, layout, buffers.row_offsets);
  for (int g = 0; g < desc.groups; ++g) {
    float* padded = buffers.padded_input.data();
    std::fill(padded + in_per_group * layout.channel_size, padded + layout.padded_size, 0.0f);
    fill_padded_channels(desc, input, layout, n, g, 0, in_per_group, y0, padded);
    const PaddedRowsB rows(padded, layout.columns, buffers.row_offsets);
    const std::size_t ldc = static_cast<std::size_t>(layout.columns) + kernel.nr;
    packed_gemm_columns(kernel, weights.groups[g], rows, 0, layout.columns, buffers.extended_output.data(), ldc,
                        desc.activation, buffers.packed_b, true);
    crop_extended_rows(buffers.extended_output.data(), ldc, layout, 0, out_per_group, y1 - y0, output.w,
                       target + static_cast<std::size_t>(g * out_per_group) * channel_stride, channel_stride);
  }
}

/// Hands `count` columns of `depth` rows, row c at rows + c * plane_stride (the same pixels of consecutive channel
/// planes), to product(b, column_begin, column_end) in two parts: the whole column panels read in place
/// (PaddedRowsB over row_offsets, filled here) and the tail of fewer than nr columns from MatrixB, which the GEMM
/// packs, so nothing past a row's `count` values is read.
template <class Product>
void for_each_planes_source(const GemmMicroKernel& kernel, const float* rows, int depth, std::size_t plane_stride,
                            int count, std::vector<std::int32_t>& row_offsets, const Product& product) {
  const int whole = count / kernel.nr * kernel.nr;
  row_offsets.resize(static_cast<std::size_t>(depth));
  for (int c = 0; c < depth; ++c) row_offsets[c] = static_cast<std::int32_t>(c * plane_stride);
  if (whole > 0) product(PaddedRowsB(rows, whole, row_offsets), 0, whole);
  if (whole < count) product(MatrixB(rows, depth, count, plane_stride), whole, count);
}

/// Output rows [y0, y1) of image n, group g, A's panels [panel_begin, panel_end) (panel_end -1: all) of a pointwise
/// convolution (reads_planes_in_place), into target (the group's first channel). Packing B cost as much as the
/// arithmetic where few output channels share each packed value (MobileNet's 144 -> 24): see planes_gemm.
void pointwise_gemm(const GemmMicroKernel& kernel, const Conv2dDesc& desc, const PackedConvWeights& weights,
                    const Variable& input, const Shape& output, int n, int g, int y0, int y1, int panel_begin,
                    int panel_end, float* target, std::size_t channel_stride, GemmRowsBuffers& buffers) {
  const Shape& in = input.shape();
  const int in_per_group = desc.in_channels / desc.groups;
  const PackedA& a = weights.groups[g];
  const float* rows = input.data() + (static_cast<std::size_t>(n) * in.c + g * in_per_group) * in.plane_count() +
                      static_cast<std::size_t>(y0) * output.w;
  planes_gemm(kernel, a, panel_begin, panel_end < 0 ? a.panels() : panel_end, rows, in.plane_count(),
              (y1 - y0) * output.w, target, channel_stride, desc.activation, buffers);
}

void conv_pointwise_rows(const GemmMicroKernel& kernel, const Conv2dDesc& desc, const PackedConvWeights& weights,
                         const Variable& input, const Shape& output, int n, int y0, int y1, float* target,
                         std::size_t channel_stride, GemmRowsBuffers& buffers) {
  const int out_per_group = desc.out_channels / desc.groups;
  for (int g = 0; g < desc.groups; ++g) {
    pointwise_gemm(kernel, desc, weights, input, output, n, g, y0, y1, 0, -1,
                   target + static_cast<std::size_t>(g) * out_per_group * channel_stride, channel_stride, buffers);
  }
}

}  // namespace

void planes_gemm(const GemmMicroKernel& kernel, const PackedA& a, int panel_begin, int panel_end, const float* rows,
                 std::size_t plane_stride, int count, float* target, std::size_t ldc, Activation activation,
                 GemmRowsBuffers& buffers) {
  for_each_planes_source(kernel, rows, a.depth(), plane_stride, count, buffers.row_offsets,
                         [&](const BSource& b, int column_begin, int column_end) {
                           packed_gemm_panels(kernel, a, panel_begin, panel_end, b, column_begin, column_end,
                                              target + column_begin, ldc, activation, buffers.packed_b);
                         });
}

bool reads_planes_in_place(const Conv2dDesc& desc) {
  return desc.is_square() && desc.kernel == 1 && desc.stride == 1 && desc.padding == 0;
}

void conv_pointwise_by_channels(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                                const PackedConvWeights& weights, const Variable& input, Variable& output,
                                GemmRowsBuffers& buffers) {
  const Shape& out = output.shape();
  const int out_per_group = desc.out_channels / desc.groups;
  const int panels = weights.groups[0].panels();
  // (group, panel) pairs, a contiguous share each; every member computes its channels over every image and pixel.
  const TeamMember::Range mine = member.share(static_cast<std::size_t>(desc.groups) * panels);
  for (int n = 0; n < out.n; ++n) {
    for (std::size_t item = mine.begin; item < mine.end;) {
      const int g = static_cast<int>(item / panels);
      const int first = static_cast<int>(item % panels);
      const int last = static_cast<int>(std::min<std::size_t>(mine.end - item, panels - first)) + first;
      float* target = output.data() + (static_cast<std::size_t>(n) * out.c + g * out_per_group) * out.plane_count();
      pointwise_gemm(kernel, desc, weights, input, out, n, g, 0, out.h, first, last, target, out.plane_count(),
                     buffers);
      item += static_cast<std::size_t>(last - first);
    }
  }
  member.sync();
}

void conv_pointwise_by_depth(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                             const PackedConvWeights& weights, const Variable& input, Variable& output,
                             std::vector<float>& partial_sums, GemmRowsBuffers& buffers) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const PackedA& a = weights.groups[0];
  const std::size_t pixels = out.plane_count();
  const std::size_t image_floats = out.image_count();
  // Member 0's sums go straight into the output, the others' into their slice of partial_sums.
  if (member.index() == 0 && partial_sums.size() < (member.count() - 1) * image_floats) {
    partial_sums.resize((member.count() - 1) * image_floats);
  }
  member.sync();
  const TeamMember::Range depth = member.share(static_cast<std::size_t>(in.c));
  for (int n = 0; n < out.n; ++n) {
    const float* rows = input.data() + static_cast<std::size_t>(n) * in.image_count();
    float* sums = member.index() == 0 ? output.data() + n * image_floats
                                      : partial_sums.data() + (member.index() - 1) * image_floats;
    if (depth.begin == depth.end) {
      std::fill(sums, sums + image_floats, 0.0f);
    } else {
      const int d0 = static_cast<int>(depth.begin);
      const int d1 = static_cast<int>(depth.end);
      for_each_planes_source(kernel, rows, in.c, pixels, static_cast<int>(pixels), buffers.row_offsets,
                             [&](const BSource& b, int column_begin, int column_end) {
                               packed_gemm_partial_depth(kernel, a, d0, d1, b, column_begin, column_end,
                                                         sums + column_begin, pixels, buffers.packed_b);
                             });
    }
    member.sync();
    // Each member adds up its share of the output channels: the other members' sums, the bias, the activation.
    const TeamMember::Range channels = member.share(static_cast<std::size_t>(out.c));
    float* target = output.data() + n * image_floats;
    for (std::size_t c = channels.begin; c < channels.end; ++c) {
      float* plane = target + c * pixels;
      for (int m = 1; m < member.count(); ++m) {
        const float* other = partial_sums.data() + (m - 1) * image_floats + c * pixels;
        for (std::size_t i = 0; i < pixels; ++i) plane[i] += other[i];
      }
      bias_activate(plane, plane, pixels, a.bias() ? a.bias()[c] : 0.0f, desc.activation);
    }
    member.sync();
  }
}

void conv_padded_rows_by_channels(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                                  const PackedConvWeights& weights, const Variable& input, Variable& output,
                                  GemmRowsBuffers& buffers) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const PackedA& a = weights.groups[0];
  const TeamMember::Range panels = member.share(static_cast<std::size_t>(a.panels()));
  const int c0 = static_cast<int>(panels.begin) * a.mr();
  const int c1 = std::min(static_cast<int>(panels.end) * a.mr(), out.c);
  if (c0 < c1) {
    const PaddedRowsLayout layout = padded_rows_layout(kernel, desc, in, 0, out.h);
    if (buffers.padded_input.size() < layout.padded_size) buffers.padded_input.resize(layout.padded_size);
    const std::size_t ldc = static_cast<std::size_t>(layout.columns) + kernel.nr;
    const std::size_t extended_size = static_cast<std::size_t>(a.panels()) * a.mr() * ldc;
    if (buffers.extended_output.size() < extended_size) buffers.extended_output.resize(extended_size);
    padded_row_offsets(desc, layout, buffers.row_offsets);
    float* padded = buffers.padded_input.data();
    for (int n = 0; n < out.n; ++n) {
      // Each member pads the whole input into planes of its own: with planes shared by the team, half of them
      // written by the other core, the members' B reads crossed between the cores' caches and Inception v3's 17x17
      // layers gained about half as much; the copy costs a fraction of the product.
      std::fill(padded + in.c * layout.channel_size, padded + layout.padded_size, 0.0f);
      fill_padded_channels(desc, input, layout, n, 0, 0, in.c, 0, padded);
      const PaddedRowsB rows(padded, layout.columns, buffers.row_offsets);
      packed_gemm_panels(kernel, a, static_cast<int>(panels.begin), static_cast<int>(panels.end), rows, 0,
                         layout.columns, buffers.extended_output.data(), ldc, desc.activation, buffers.packed_b, true);
      crop_extended_rows(buffers.extended_output.data(), ldc, layout, c0, c1, out.h, out.w,
                         output.data() + static_cast<std::size_t>(n) * out.image_count(), out.plane_count());
    }
  }
  member.sync();
}

PackedConvWeights pack_conv_weights(const Conv2dDesc& desc, const float* weights, const float* bias,
                                    const GemmMicroKernel& kernel) {
  const int out_per_group = desc.out_channels / desc.groups;
  const int depth = desc.in_channels / desc.groups * desc.taps();
  PackedConvWeights packed;
  for (int g = 0; g < desc.groups; ++g) {
    packed.groups.emplace_back(weights + static_cast<std::size_t>(g) * out_per_group * depth, out_per_group, depth,
                               static_cast<std::size_t>(depth), bias ? bias + g * out_per_group : nullptr, kernel.mr);
  }
  return packed;
}

void conv_gemm_rows(const GemmMicroKernel& kernel, const Conv2dDesc& desc, const PackedConvWeights& weights,
                    const Variable& input, const Shape& output, int n, int y0, int y1, float* target,
                    std::size_t channel_stride, GemmRowsBuffers& buffers) {
  if (reads_planes_in_place(desc)) {
    conv_pointwise_rows(kernel, desc, weights, input, output, n, y0, y1, target, channel_stride, buffers);
    return;
  }
  if (reads_padded_rows(desc)) {
    conv_padded_rows(kernel, desc, weights, input, output, n, y0, y1, target, channel_stride, buffers);
    return;
  }
  const Shape& in = input.shape();
  const int in_per_group = desc.in_channels / desc.groups;
  const int out_per_group = desc.out_channels / desc.groups;
  const Im2colRowPacker packer = gemm_kernels(kernel.isa).pack_im2col_row;
  for (int g = 0; g < desc.groups; ++g) {
    const float* image = input.data() + (static_cast<std::size_t>(n) * in.c + g * in_per_group) * in.plane_count();
    const Im2colB columns(desc, image, in_per_group, in.h, in.w, output.h, output.w, packer);
    packed_gemm_columns(kernel, weights.groups[g], columns, y0 * output.w, y1 * output.w,
                        target + static_cast<std::size_t>(g) * out_per_group * channel_stride, channel_stride,
                        desc.activation, buffers.packed_b);
  }
}

void conv_gemm(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
               const PackedConvWeights& weights, const Variable& input, Variable& output, GemmWorkspace& workspace) {
  const Im2colRowPacker packer = gemm_kernels(kernel.isa).pack_im2col_row;
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const int in_per_group = desc.in_channels / desc.groups;
  const int out_per_group = desc.out_channels / desc.groups;
  const std::size_t pixels = out.plane_count();
  for (int n = 0; n < in.n; ++n) {
    for (int g = 0; g < desc.groups; ++g) {
      const float* image = input.data() + (static_cast<std::size_t>(n) * in.c + g * in_per_group) * in.plane_count();
      float* target = output.data() + (static_cast<std::size_t>(n) * out.c + g * out_per_group) * pixels;
      const Im2colB columns(desc, image, in_per_group, in.h, in.w, out.h, out.w, packer);
      packed_gemm(member, kernel, weights.groups[g], columns, target, pixels, desc.activation, workspace);
    }
  }
}

}  // namespace corgy::blas
