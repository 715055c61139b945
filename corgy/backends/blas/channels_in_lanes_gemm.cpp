#include "corgy/backends/blas/channels_in_lanes_gemm.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "corgy/backends/blas/activation_kernels.h"

namespace corgy::blas {

namespace {

/// Depth per block: the weights' sub-panel (kc x 48 floats, 24 KB) stays in L1 while every pixel panel is
/// multiplied by it, and the next sub-panel is fetched meanwhile (the weights stream from memory: ResNet-50's last
/// stage holds 60 MB of them).
constexpr int kDepthBlock = 128;
/// The same where the tiles read the taps in place: the padded input's lines share L1 with the sub-panel (ResNet-50's
/// 7x7 512 -> 512 layer with its weights from memory 2.34 -> 2.25 ms against blocks of 128).
constexpr int kTapsDepthBlock = 64;
/// A grouped layer's whole depth where its sub-panel is within this (a group's 144 or 288 taps): each block after the
/// first loads and stores every tile of C^T once more.
constexpr std::size_t kGroupSubPanelBytes = 24 << 10;

int taps_depth_block(const ChannelPanels& weights) {
  if (weights.groups == 1) return kTapsDepthBlock;
  const int fits = static_cast<int>(kGroupSubPanelBytes / (sizeof(float) * weights.nr));
  return std::min(weights.depth, std::max(kTapsDepthBlock, fits));
}
/// The work of a tile one register wide, per element, against a wider tile's: its rate on L1 panels is 0.73x (one
/// broadcast per FMA; conv_benchmark micro_kernel).
constexpr double kOneRegisterTileCost = 1.0 / 0.73;

/// Where C^T's rows are: one run of rows over the whole batch (row r is pixel r % pixels of image r / pixels) when
/// the input's channel planes are B^T's columns as they are (a pointwise convolution), else `panels_per_image` row
/// panels per image (implicit im2col packs one image at a time), image n's pixel q at row n * panels_per_image * mr
/// + q.
struct RowLayout {
  int pixels = 0;
  int images = 0;
  int panels_per_image = 0;  // 0: one run over the batch
  int mr = 0;
  int rows() const { return panels_per_image ? images * panels_per_image * mr : images * pixels; }
  int panels() const { return panels_per_image ? images * panels_per_image : (images * pixels + mr - 1) / mr; }
  int row_of(int image, int pixel) const {
    return panels_per_image ? image * panels_per_image * mr + pixel : image * pixels + pixel;
  }
};

RowLayout row_layout(const Conv2dDesc& desc, const Shape& output, int mr) {
  const int pixels = static_cast<int>(output.plane_count());
  const bool pointwise = desc.kernel == 1 && desc.stride == 1 && desc.padding == 0;
  return {pixels, output.n, pointwise ? 0 : (pixels + mr - 1) / mr, mr};
}

/// Appends `count` values to the pixel panels of one depth row: `lane` is the next value's place in the current
/// panel, `slot` that panel's row (panels panel_stride floats apart). Values go one by one: implicit im2col's runs
/// are a few floats (a 7x7 map's rows into panels of 7) with zeros between them, too short for SIMD copies to pay
/// for their set-up. (A pointwise layer's planes go a whole panel row at a time: pack_plane_runs.)
struct PanelRowWriter {
  float* slot;
  int lane;
  int mr;
  std::size_t panel_stride;
  void put(float value) {
    slot[lane] = value;
    if (++lane == mr) {
      lane = 0;
      slot += panel_stride;
    }
  }
  /// Zeros to the end of the current panel.
  void finish() {
    if (lane == 0) return;
    for (; lane < mr; ++lane) slot[lane] = 0.0f;
  }
};

/// pack_pixel_panels of a pointwise convolution: row k of B^T is channel k's plane in every image, one run over the
/// batch, copied a panel's width at a time (kMr floats, a constant the copy is compiled for; 0: layout.mr at run
/// time). Put value by value through PanelRowWriter, ResNet-50's 7x7 2048 -> 512 layer spent 104 of its 711 us
/// packing (one thread, AMD EPYC).
template <int kMr>
void pack_plane_runs(const Variable& input, const RowLayout& layout, int k_begin, int k_end, std::size_t panel_stride,
                     float* out) {
  const Shape& in = input.shape();
  const int mr = kMr ? kMr : layout.mr;
  for (int k = k_begin; k < k_end; ++k) {
    PanelRowWriter writer{out + static_cast<std::size_t>(k) * mr, 0, mr, panel_stride};
    for (int n = 0; n < layout.images; ++n) {
      const float* plane = input.data() + n * in.image_count() + static_cast<std::size_t>(k) * in.plane_count();
      for (int q = 0; q < layout.pixels;) {
        if (writer.lane == 0 && layout.pixels - q >= mr) {
          std::memcpy(writer.slot, plane + q, sizeof(float) * mr);
          writer.slot += panel_stride;
          q += mr;
        } else {
          writer.put(plane[q++]);  // a panel that straddles two images
        }
      }
    }
    writer.finish();
  }
}

/// Packs B^T's rows (output pixels) in panels of mr, k-major (panel p's column k at out + (p * depth + k) * mr, rows
/// past the end zero): the depth rows [k_begin, k_end) of every panel.
void pack_pixel_panels(const Conv2dDesc& desc, const Variable& input, const Shape& output, const RowLayout& layout,
                       int depth, int k_begin, int k_end, float* out) {
  const Shape& in = input.shape();
  const std::size_t panel_stride = static_cast<std::size_t>(depth) * layout.mr;
  if (!layout.panels_per_image) {
    // A pointwise convolution: row k of B^T is channel k's plane in every image, one run over the batch.
    switch (layout.mr) {
      case 7: return pack_plane_runs<7>(input, layout, k_begin, k_end, panel_stride, out);
      case 14: return pack_plane_runs<14>(input, layout, k_begin, k_end, panel_stride, out);
      default: return pack_plane_runs<0>(input, layout, k_begin, k_end, panel_stride, out);
    }
  }
  // Implicit im2col, one image at a time: B^T's row (c, ky, kx) at output pixel (oy, ox) reads input channel c at
  // (oy * stride + ky * dilation - padding, ox * stride + kx * dilation - padding), or 0 outside the input.
  const int taps = desc.kernel * desc.kernel;
  for (int n = 0; n < layout.images; ++n) {
    float* image_out = out + static_cast<std::size_t>(n) * layout.panels_per_image * panel_stride;
    const float* image = input.data() + static_cast<std::size_t>(n) * in.image_count();
    for (int k = k_begin; k < k_end; ++k) {
      const float* plane = image + static_cast<std::size_t>(k / taps) * in.plane_count();
      const int y_offset = k % taps / desc.kernel * desc.dilation - desc.padding;
      const int x_offset = k % desc.kernel * desc.dilation - desc.padding;
      // The output columns that read inside the input: [ox_begin, ox_end).
      int ox_begin = 0;
      while (ox_begin < output.w && ox_begin * desc.stride + x_offset < 0) ++ox_begin;
      int ox_end = output.w;
      while (ox_end > ox_begin && (ox_end - 1) * desc.stride + x_offset >= in.w) --ox_end;
      PanelRowWriter writer{image_out + static_cast<std::size_t>(k) * layout.mr, 0, layout.mr, panel_stride};
      for (int oy = 0; oy < output.h; ++oy) {
        const int iy = oy * desc.stride + y_offset;
        if (iy < 0 || iy >= in.h) {
          for (int ox = 0; ox < output.w; ++ox) writer.put(0.0f);
          continue;
        }
        const float* row = plane + static_cast<std::size_t>(iy) * in.w + x_offset;
        int ox = 0;
        for (; ox < ox_begin; ++ox) writer.put(0.0f);
        for (; ox < ox_end; ++ox) writer.put(row[ox * desc.stride]);
        for (; ox < output.w; ++ox) writer.put(0.0f);
      }
      writer.finish();
    }
  }
}

/// C^T's block of channels [c0, c0 + count) (rows layout.rows(), nr apart) into NCHW output, plus the bias (and the
/// residual), then the activation: the rows [row_begin, row_end) of C^T only (a member's share of the pixels).
void write_channels(const float* block, int nr, const RowLayout& layout, int row_begin, int row_end, const float* bias,
                    int c0, int count, const Variable* residual, Activation activation, Variable& output) {
  const Shape& out = output.shape();
  for (int n = 0; n < layout.images; ++n) {
    const int first_row = layout.row_of(n, 0);
    const int q_begin = std::max(0, row_begin - first_row);
    const int q_end = std::min(layout.pixels, row_end - first_row);
    if (q_begin >= q_end) continue;
    for (int j = 0; j < count; ++j) {
      const std::size_t plane = static_cast<std::size_t>(n) * out.image_count() +
                                static_cast<std::size_t>(c0 + j) * out.plane_count() + q_begin;
      float* target = output.data() + plane;
      const float* column = block + static_cast<std::size_t>(first_row + q_begin) * nr + j;
      const float b = bias[c0 + j];
      const int run = q_end - q_begin;
      for (int q = 0; q < run; ++q) target[q] = column[static_cast<std::size_t>(q) * nr] + b;
      if (residual) {
        add_activate(target, residual->data() + plane, target, run, activation);
      } else if (activation.kind != ActivationKind::none) {
        bias_activate(target, target, run, 0.0f, activation);
      }
    }
  }
}

/// Whether channels_in_lanes_conv reads `desc`'s taps in place with `kernel` (strides 1 and 2; a pointwise
/// convolution's rows are its input's channel planes, packed as they are).
bool reads_taps_in_place(const Conv2dDesc& desc, const GemmMicroKernel& kernel) {
  const bool pointwise = desc.kernel == 1 && desc.stride == 1 && desc.padding == 0;
  return !pointwise && (desc.stride == 1 || desc.stride == 2) && kernel.run_taps[desc.stride - 1];
}

/// Where the taps path reads (the tiles' A read in place, gemm_kernels.h's MicroKernelTaps): every image's input
/// zero-padded, planes of padded_h x padded_w, so that a tile of output pixels along one row reads tap (c, ky, kx)
/// at offsets[k] + i * stride from its first pixel's window corner, and C^T's rows are the output rows, each rounded
/// up to whole tiles (the rounding's pixels read past the row, into the next one or the buffer's slack, and are
/// dropped).
struct PaddedTaps {
  int padded_h = 0;
  int padded_w = 0;
  int tiles_per_row = 0;  // tiles of mr pixels per output row
  std::size_t image_floats = 0;
  std::size_t floats = 0;  // every image's, and the slack
  int rows(const Shape& output, int mr) const { return output.n * output.h * tiles_per_row * mr; }
};

PaddedTaps padded_taps(const Conv2dDesc& desc, const Shape& input, const Shape& output, int mr) {
  PaddedTaps taps;
  taps.padded_h = input.h + 2 * desc.padding;
  taps.padded_w = input.w + 2 * desc.padding;
  taps.tiles_per_row = (output.w + mr - 1) / mr;
  taps.image_floats = static_cast<std::size_t>(input.c) * taps.padded_h * taps.padded_w;
  taps.floats = input.n * taps.image_floats + static_cast<std::size_t>(mr) * desc.stride + 64;
  return taps;
}

/// Copies input channels [c_begin, c_end) of every image into `padded` with their zero border.
void pad_channels(const Conv2dDesc& desc, const Variable& input, const PaddedTaps& taps, int c_begin, int c_end,
                  float* padded) {
  const Shape& in = input.shape();
  const std::size_t plane = static_cast<std::size_t>(taps.padded_h) * taps.padded_w;
  for (int n = 0; n < in.n; ++n) {
    for (int c = c_begin; c < c_end; ++c) {
      float* target = padded + n * taps.image_floats + c * plane;
      const float* source = input.data() + n * in.image_count() + c * in.plane_count();
      // The plane zeroed whole, then its rows copied in: one fill and short loops rather than three calls of
      // memset / memmove per row, which for the 14 and 7 pixels of DenseNet's late rows cost more than the copy.
      std::fill(target, target + plane, 0.0f);
      for (int y = 0; y < in.h; ++y) {
        float* row = target + static_cast<std::size_t>(y + desc.padding) * taps.padded_w + desc.padding;
        const float* line = source + static_cast<std::size_t>(y) * in.w;
        for (int x = 0; x < in.w; ++x) row[x] = line[x];
      }
    }
  }
}

/// C^T's block of channels [c0, c0 + count) from the taps path's rows (output row by output row, tiles_per_row * mr
/// rows each, nr apart) into NCHW output, plus the bias (and the residual), then the activation: the output rows
/// [row_begin, row_end) of the batch only (row n * out_h + oy is image n's row oy; a member's share of the pixels).
void write_tap_channels(const float* block, int nr, int mr, const PaddedTaps& taps, int row_begin, int row_end,
                        const float* bias, int c0, int count, const Variable* residual, Activation activation,
                        Variable& output) {
  const Shape& out = output.shape();
  const std::size_t row_stride = static_cast<std::size_t>(taps.tiles_per_row) * mr;
  for (int n = 0; n < out.n; ++n) {
    const int oy_begin = std::max(0, row_begin - n * out.h);
    const int oy_end = std::min(out.h, row_end - n * out.h);
    if (oy_begin >= oy_end) continue;
    for (int j = 0; j < count; ++j) {
      const std::size_t plane = static_cast<std::size_t>(n) * out.image_count() +
                                static_cast<std::size_t>(c0 + j) * out.plane_count() +
                                static_cast<std::size_t>(oy_begin) * out.w;
      float* target = output.data() + plane;
      const float b = bias[c0 + j];
      for (int oy = oy_begin; oy < oy_end; ++oy) {
        const float* column = block + (static_cast<std::size_t>(n) * out.h + oy) * row_stride * nr + j;
        float* target_row = target + static_cast<std::size_t>(oy - oy_begin) * out.w;
        for (int ox = 0; ox < out.w; ++ox) target_row[ox] = column[static_cast<std::size_t>(ox) * nr] + b;
      }
      const std::size_t run = static_cast<std::size_t>(oy_end - oy_begin) * out.w;
      if (residual) {
        add_activate(target, residual->data() + plane, target, run, activation);
      } else if (activation.kind != ActivationKind::none) {
        bias_activate(target, target, run, 0.0f, activation);
      }
    }
  }
}

/// Whether a team of `members` shares the GEMM by pixels rather than by output channels: `panels` weight panels
/// against `units` units of pixels (a tap path's output rows, else pixel panels), each member's share of one or the
/// other. By channels each member reads only its own panels, the weights once in all; but where the panels are too
/// few to go round evenly, by pixels each member computes every panel over its share of the pixels (DenseNet-121's
/// 7x7 128 -> 32 layers have one panel of 48 channels: by channels the second thread had nothing to do, and the
/// layer ran slower at two threads than at one).
bool split_by_pixels(int panels, int units, int members) {
  if (members <= 1) return false;
  const long long by_channels = static_cast<long long>((panels + members - 1) / members) * units;
  const long long by_pixels = static_cast<long long>(panels) * ((units + members - 1) / members);
  return by_pixels < by_channels;
}

/// The weights' panels of `kernel`'s width (ChannelPanels::panels).
int weight_panels(const Conv2dDesc& desc, const GemmMicroKernel& kernel) {
  return desc.groups * ((desc.out_channels / desc.groups + kernel.nr - 1) / kernel.nr);
}

/// What one member of the team computes: the weights' panels [panels.begin, panels.end) over the units of pixels
/// [units.begin, units.end) - its share of one of them (split_by_pixels decides which) and all of the other.
struct MemberWork {
  TeamMember::Range panels;
  TeamMember::Range units;
};

MemberWork member_work(const TeamMember& member, int panels, int units) {
  const TeamMember::Range all_panels{0, static_cast<std::size_t>(panels)};
  const TeamMember::Range all_units{0, static_cast<std::size_t>(units)};
  if (split_by_pixels(panels, units, member.count())) return {all_panels, member.share(all_units.end)};
  return {member.share(all_panels.end), all_units};
}

/// The units of pixels that split_by_pixels shares: the output rows where `kernel` reads the taps in place, else
/// the pixel panels.
int split_units(const Conv2dDesc& desc, const Shape& output, const GemmMicroKernel& kernel) {
  return reads_taps_in_place(desc, kernel) ? output.n * output.h : row_layout(desc, output, kernel.mr).panels();
}

}  // namespace

bool channels_in_lanes_applies(const Conv2dDesc& desc, const Shape& input) {
  if (!desc.is_square()) return false;
  if (desc.groups == 1) return true;
  // A group's panels hold its channels only: groups of fewer than 8 (or of 8 on AVX-512, half a register) would
  // leave most lanes empty; a grouped layer's pixels are never packed, only its taps read in place, so its padded
  // image must be one the 32-bit tap offsets reach (channels_in_lanes_conv packs the others, every channel at once).
  const bool depthwise = desc.groups == desc.in_channels && desc.groups == desc.out_channels;
  const std::size_t padded_image =
      static_cast<std::size_t>(input.c) * (input.h + 2 * desc.padding) * (input.w + 2 * desc.padding);
  return !depthwise && desc.out_channels / desc.groups % 8 == 0 && channels_in_lanes_reads_taps(desc) &&
         padded_image <= static_cast<std::size_t>(INT32_MAX);
}

bool channels_in_lanes_reads_taps(const Conv2dDesc& desc) {
  return reads_taps_in_place(desc, gemm_kernels().kernels[0]);
}

const GemmMicroKernel& channels_in_lanes_kernel(const Conv2dDesc& desc, const Shape& output, int members,
                                                const GemmKernelSet& set) {
  const GemmMicroKernel* best = nullptr;
  double best_work = 0.0;
  const auto consider = [&](const GemmMicroKernel& kernel) {
    // Tiles one register wide (avx512 28x16) broadcast a pixel for every FMA: 0.73x the 8x48 tile's rate on L1
    // panels (conv_benchmark micro_kernel), and ResNet-50's 14x14 layers, which they padded least, ran no faster.
    // A grouped layer may take them where wider tiles would pad its groups, their work counted at that rate.
    const bool one_register = one_register_wide(kernel);
    if (one_register && desc.groups == 1) return;
    if (desc.groups > 1 && !reads_taps_in_place(desc, kernel)) return;
    // The taps path rounds each output row up to whole tiles and shares whole rows; the others run the batch's
    // pixels as one and share pixel panels.
    const bool taps = reads_taps_in_place(desc, kernel);
    const int units = split_units(desc, output, kernel);
    const int rows_per_unit = taps ? (output.w + kernel.mr - 1) / kernel.mr * kernel.mr : kernel.mr;
    const int panels = weight_panels(desc, kernel);
    const bool by_pixels = split_by_pixels(panels, units, members);
    const double work = static_cast<double>(by_pixels ? panels : (panels + members - 1) / members) * kernel.nr *
                        (by_pixels ? (units + members - 1) / members : units) * rows_per_unit *
                        (one_register ? kOneRegisterTileCost : 1.0);
    if (!best || work < best_work) {
      best = &kernel;
      best_work = work;
    }
  };
  if (set.seven_rows.run) consider(set.seven_rows);
  if (set.fourteen_rows.run && reads_taps_in_place(desc, set.fourteen_rows)) consider(set.fourteen_rows);
  if (desc.groups > 1 && set.fourteen_rows_narrow.run) consider(set.fourteen_rows_narrow);
  for (const GemmMicroKernel& kernel : set.kernels) {
    if (kernel.run) consider(kernel);
  }
  return *best;
}

bool channels_in_lanes_splits_pixels(const Conv2dDesc& desc, const Shape& output, const GemmMicroKernel& kernel,
                                     int members) {
  return split_by_pixels(weight_panels(desc, kernel), split_units(desc, output, kernel), members);
}

bool ChannelPanels::share_buffer_if_equal(const ChannelPanels& other) {
  if (!data || !other.data) return false;
  if (data == other.data) return true;
  if (depth != other.depth || channels != other.channels || nr != other.nr || groups != other.groups ||
      std::memcmp(data->data(), other.data->data(), floats() * sizeof(float)) != 0) {
    return false;
  }
  data = other.data;
  return true;
}

ChannelPanels pack_channel_panels(const Conv2dDesc& desc, const float* weights, const float* bias,
                                  const GemmMicroKernel& kernel) {
  ChannelPanels packed;
  packed.depth = desc.in_channels / desc.groups * desc.kernel * desc.kernel;
  packed.channels = desc.out_channels;
  packed.nr = kernel.nr;
  packed.groups = desc.groups;
  packed.group_channels = desc.out_channels / desc.groups;
  const int nr = kernel.nr;
  packed.data = std::make_shared<cpu::AlignedBuffer>(packed.floats());
  float* out = packed.data->data();
  for (int p = 0; p < packed.panels(); ++p) {
    const int first = packed.first_channel(p);
    const int count = packed.channel_count(p);
    for (int k = 0; k < packed.depth; ++k) {
      for (int j = 0; j < nr; ++j) {
        *out++ = j < count ? weights[static_cast<std::size_t>(first + j) * packed.depth + k] : 0.0f;
      }
    }
  }
  packed.bias.assign(static_cast<std::size_t>(packed.panels()) * nr, 0.0f);
  if (bias) std::copy(bias, bias + packed.channels, packed.bias.begin());
  return packed;
}

namespace {

/// The GEMM's sweep over the weights' panels [panels.begin, panels.end): each panel's depth in blocks of
/// `depth_block`, each block multiplied into the tiles [tile_begin, tile_end) of C^T by `multiply(panel, tile, k0,
/// kc, sub_panel)`, then `finish(panel)` once the panel's depth is done.
template <class Multiply, class Finish>
void sweep_weight_panels(const ChannelPanels& weights, TeamMember::Range panels, int tile_begin, int tile_end,
                         int depth_block, Multiply&& multiply, Finish&& finish) {
  const int nr = weights.nr;
  const int depth = weights.depth;
  const int tiles = tile_end - tile_begin;
  if (tiles <= 0) return;
  for (int p = static_cast<int>(panels.begin); p < static_cast<int>(panels.end); ++p) {
    const float* panel = weights.panel(p);
    for (int k0 = 0; k0 < depth; k0 += depth_block) {
      const int kc = std::min(depth_block, depth - k0);
      const float* sub_panel = panel + static_cast<std::size_t>(k0) * nr;
      // The weights stream from memory, and a member's panels lie one after the other: while this sub-panel is
      // multiplied, ask for the next one (the next block of the depth, or of the next panel), a share per tile.
      // Into L2, not L1: a share is dozens of lines at once, more misses than L1 keeps in flight, and L1 is full
      // of this sub-panel (AMD EPYC, one thread, weights from memory: ResNet-50's 7x7 512 -> 2048 layer 1.21 ->
      // 1.07 ms, its 3x3 512 -> 512 2.81 -> 2.53; conv_benchmark's *_cold configs).
      const char* next = reinterpret_cast<const char*>(sub_panel + static_cast<std::size_t>(kc) * nr);
      const std::size_t next_bytes = static_cast<std::size_t>(std::min(depth_block, depth)) * nr * sizeof(float);
      const std::size_t bytes_per_tile = (next_bytes / tiles + 63) / 64 * 64;
      for (int i = 0; i < tiles; ++i) {
        for (std::size_t b = i * bytes_per_tile; b < std::min(next_bytes, (i + 1) * bytes_per_tile); b += 64) {
          __builtin_prefetch(next + b, 0, 2);
        }
        multiply(p, tile_begin + i, k0, kc, sub_panel);
      }
    }
    finish(p);
  }
}

/// channels_in_lanes_conv at strides 1 and 2 with the tiles' A read in place from the padded input (PaddedTaps):
/// no im2col panels (3x3 / 2 of 128 channels at 56x56: 9 floats packed per 4 input floats otherwise).
void channels_in_lanes_taps(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                            const ChannelPanels& weights, const Variable& input, const Variable* residual,
                            Activation activation, Variable& output, ChannelsInLanesBuffers& buffers) {
  const int mr = kernel.mr;
  const int nr = kernel.nr;
  const int depth = weights.depth;
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const PaddedTaps taps = padded_taps(desc, in, out, mr);
  const int rows = taps.rows(out, mr);
  if (member.index() == 0) {
    if (buffers.pixel_panels.size() < taps.floats) buffers.pixel_panels.assign(taps.floats, 0.0f);
    if (buffers.blocks.size() < static_cast<std::size_t>(member.count())) buffers.blocks.resize(member.count());
    // Depth k is tap (c, ky, kx) in that order; nested loops, not two divisions per k (1152 of them took member 0
    // ~7 us, alone, before DenseNet's 14x14 layers of ~45 us at two threads).
    buffers.tap_offsets.resize(static_cast<std::size_t>(depth));
    std::int32_t* offset = buffers.tap_offsets.data();
    for (int c = 0; c < depth / (desc.kernel * desc.kernel); ++c) {
      for (int ky = 0; ky < desc.kernel; ++ky) {
        for (int kx = 0; kx < desc.kernel; ++kx) {
          *offset++ = static_cast<std::int32_t>(
              (static_cast<std::size_t>(c) * taps.padded_h + static_cast<std::size_t>(ky) * desc.dilation) *
                  taps.padded_w +
              static_cast<std::size_t>(kx) * desc.dilation);
        }
      }
    }
  }
  member.sync();
  const TeamMember::Range channel_share = member.share(static_cast<std::size_t>(in.c));
  float* padded = buffers.pixel_panels.data();
  pad_channels(desc, input, taps, static_cast<int>(channel_share.begin), static_cast<int>(channel_share.end), padded);
  member.sync();
  std::vector<float>& block = buffers.blocks[member.index()];
  const std::size_t block_size = static_cast<std::size_t>(rows) * nr;
  if (block.size() < block_size) block.resize(block_size);
  const MicroKernelTaps run = kernel.run_taps[desc.stride - 1];
  const std::size_t group_floats =
      static_cast<std::size_t>(in.c / desc.groups) * taps.padded_h * taps.padded_w;  // one group's padded planes
  const std::int32_t* offsets = buffers.tap_offsets.data();
  // The units a member may share are whole output rows of tiles, so that each writes whole rows of the output.
  const MemberWork mine = member_work(member, weights.panels(), out.n * out.h);
  const int row_begin = static_cast<int>(mine.units.begin);
  const int row_end = static_cast<int>(mine.units.end);
  sweep_weight_panels(
      weights, mine.panels, row_begin * taps.tiles_per_row, row_end * taps.tiles_per_row, taps_depth_block(weights),
      [&](int p, int t, int k0, int kc, const float* sub_panel) {
        const int n = t / (out.h * taps.tiles_per_row);
        const int oy = t / taps.tiles_per_row % out.h;
        const int ox = t % taps.tiles_per_row * mr;
        // The panel's group reads its own input channels: the offsets count from the group's first plane.
        const float* corner = padded + n * taps.image_floats + weights.group_of(p) * group_floats +
                              static_cast<std::size_t>(oy) * desc.stride * taps.padded_w +
                              static_cast<std::size_t>(ox) * desc.stride;
        run(static_cast<std::size_t>(kc), corner, offsets + k0, sub_panel,
            block.data() + static_cast<std::size_t>(t) * mr * nr, static_cast<std::size_t>(nr), k0 > 0);
      },
      [&](int p) {
        write_tap_channels(block.data(), nr, mr, taps, row_begin, row_end, weights.bias.data(),
                           weights.first_channel(p), weights.channel_count(p), residual, activation, output);
      });
  member.sync();
}

}  // namespace

void channels_in_lanes_conv(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                            const ChannelPanels& weights, const Variable& input, const Variable* residual,
                            Activation activation, Variable& output, ChannelsInLanesBuffers& buffers) {
  const int mr = kernel.mr;
  const int nr = kernel.nr;
  const int depth = weights.depth;
  // The taps' offsets are 32-bit: an image of more than 2^31 padded floats packs its panels instead.
  const std::size_t padded_image = static_cast<std::size_t>(input.shape().c) * (input.shape().h + 2 * desc.padding) *
                                   (input.shape().w + 2 * desc.padding);
  if (reads_taps_in_place(desc, kernel) && padded_image <= static_cast<std::size_t>(INT32_MAX)) {
    return channels_in_lanes_taps(member, kernel, desc, weights, input, residual, activation, output, buffers);
  }
  // Packed pixel panels hold every input channel: a grouped layer never comes here (channels_in_lanes_applies).
  const RowLayout layout = row_layout(desc, output.shape(), mr);
  const std::size_t panel_stride = static_cast<std::size_t>(depth) * mr;
  // Member 0 grows the buffers while nobody uses them; then every member packs its share of the depth.
  if (member.index() == 0) {
    const std::size_t needed = static_cast<std::size_t>(layout.panels()) * panel_stride;
    if (buffers.pixel_panels.size() < needed) buffers.pixel_panels.resize(needed);
    if (buffers.blocks.size() < static_cast<std::size_t>(member.count())) buffers.blocks.resize(member.count());
  }
  member.sync();
  const TeamMember::Range depth_share = member.share(static_cast<std::size_t>(depth));
  pack_pixel_panels(desc, input, output.shape(), layout, depth, static_cast<int>(depth_share.begin),
                    static_cast<int>(depth_share.end), buffers.pixel_panels.data());
  member.sync();
  std::vector<float>& block = buffers.blocks[member.index()];
  const std::size_t block_size = static_cast<std::size_t>(layout.panels()) * mr * nr;
  if (block.size() < block_size) block.resize(block_size);
  const float* pixels = buffers.pixel_panels.data();
  const MemberWork mine = member_work(member, weights.panels(), layout.panels());  // units: pixel panels
  const int tile_begin = static_cast<int>(mine.units.begin);
  const int tile_end = static_cast<int>(mine.units.end);
  sweep_weight_panels(
      weights, mine.panels, tile_begin, tile_end, kDepthBlock,
      [&](int, int ip, int k0, int kc, const float* sub_panel) {
        kernel.run(static_cast<std::size_t>(kc), pixels + ip * panel_stride + static_cast<std::size_t>(k0) * mr,
                   sub_panel, block.data() + static_cast<std::size_t>(ip) * mr * nr, static_cast<std::size_t>(nr),
                   k0 > 0, nullptr);
      },
      [&](int p) {
        const int c0 = p * nr;
        write_channels(block.data(), nr, layout, tile_begin * mr, std::min(tile_end * mr, layout.rows()),
                       weights.bias.data(), c0, std::min(nr, weights.channels - c0), residual, activation, output);
      });
  member.sync();
}

}  // namespace corgy::blas
