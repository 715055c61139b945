// Convolution as our own packed GEMM with implicit im2col: the B panels are packed straight from the NCHW input,
// so no column matrix is written, and the weights are packed once, when the layer is planned.
#pragma once

#include <cstdint>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/packed_gemm.h"

namespace corgy::blas {

/// The column matrix of one image and group of a convolution ([channels * kernel_h * kernel_w] x [out_h * out_w], as
/// im2col writes it), read from the input planes while packing. The window may differ between the axes (Inception's
/// 1x7 and 7x1) when its stride and dilation do not.
class Im2colB final : public BSource {
 public:
  /// `image`: the group's first input plane; planes are height x width, contiguous. `packer` writes rows into
  /// panels (the kernel set's pack_im2col_row).
  Im2colB(const Conv2dDesc& desc, const float* image, int channels, int height, int width, int out_h, int out_w,
          Im2colRowPacker packer);
  int depth() const override { return depth_; }
  int columns() const override { return out_h_ * out_w_; }
  PackedBlock pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const override;

 private:
  Im2colRow row(int k) const;

  const Conv2dDesc& desc_;
  const float* image_;
  int height_;
  int width_;
  int out_h_;
  int out_w_;
  int depth_;
  Im2colRowPacker packer_;
};

/// The column matrix of a stride-1 convolution read in place, unpacked, from a zero-padded copy of the input rows a
/// band needs: with the padded width Wp, column j of the band's "extended" output grid (its rows x Wp; the last
/// dilation * (k - 1) columns of each row are not outputs) reads, for B's row (c, ky, kx), the float at
/// padded + offset(c, ky, kx) + j, so consecutive columns are consecutive floats and B's panels are the padded
/// rows themselves. For layers of few input channels (Tiny YOLO's first, MNIST's first), where packing im2col
/// panels cost as much as the arithmetic, and for strided layers, whose rows are first split into phase planes
/// (conv_gemm.cpp's conv_padded_rows) so that the same holds at stride s.
class PaddedRowsB final : public BSource {
 public:
  /// `row_offsets`: one per row of B, depth of them; `columns`: of the extended grid.
  PaddedRowsB(const float* padded, int columns, const std::vector<std::int32_t>& row_offsets)
      : padded_(padded), columns_(columns), row_offsets_(row_offsets) {}
  int depth() const override { return static_cast<int>(row_offsets_.size()); }
  int columns() const override { return columns_; }
  PackedBlock pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const override;
  bool prepacked() const override { return true; }

 private:
  const float* padded_;
  int columns_;
  const std::vector<std::int32_t>& row_offsets_;
};

/// One thread's buffers for conv_gemm_rows.
struct GemmRowsBuffers {
  std::vector<float> packed_b;
  std::vector<float> padded_input;     // PaddedRowsB's rows (with room to read a panel past the end)
  std::vector<float> extended_output;  // the extended grid's output, before its columns are cropped
  std::vector<std::int32_t> row_offsets;
};

/// True when conv_gemm_rows reads `desc`'s input through PaddedRowsB rather than packing im2col panels: a small
/// column-matrix depth (in channels x k x k), where packing dominates, a stride above 1 (read from phase planes,
/// where packing would also pick every stride-th value), or a window that differs between the axes (its stride and
/// dilation the same along both).
bool reads_padded_rows(const Conv2dDesc& desc);

/// True when conv_gemm_rows reads `desc`'s B rows in place from the input planes, neither packed nor copied: a
/// pointwise convolution (1x1, stride 1, no padding), whose column matrix is the input image itself.
bool reads_planes_in_place(const Conv2dDesc& desc);

/// A convolution's weights packed for the GEMM: one PackedA per group ([group out channels] x [in/groups * k * k]).
struct PackedConvWeights {
  std::vector<PackedA> groups;
};
PackedConvWeights pack_conv_weights(const Conv2dDesc& desc, const float* weights, const float* bias,
                                    const GemmMicroKernel& kernel);

/// Rows [y0, y1) of image n's output, every channel, by the calling thread alone: channel c's row y goes to
/// target + c * channel_stride + (y - y0) * out_w.
void conv_gemm_rows(const GemmMicroKernel& kernel, const Conv2dDesc& desc, const PackedConvWeights& weights,
                    const Variable& input, const Shape& output, int n, int y0, int y1, float* target,
                    std::size_t channel_stride, GemmRowsBuffers& buffers);

/// target (rows ldc apart) = activation(A's panels [panel_begin, panel_end) x B) for B = `count` columns of depth
/// rows, row c at rows + c * plane_stride (the same pixels of consecutive channel planes: a pointwise convolution's
/// input, no packing): the micro-kernels read whole panels of B in place and write straight into target; the last
/// partial panel is copied, so nothing past a row's `count` values is read. By the calling thread alone.
void planes_gemm(const GemmMicroKernel& kernel, const PackedA& a, int panel_begin, int panel_end, const float* rows,
                 std::size_t plane_stride, int count, float* target, std::size_t ldc, Activation activation,
                 GemmRowsBuffers& buffers);

/// A pointwise convolution (reads_planes_in_place) by the whole team split over output channels: each member its
/// share of A's row panels over every image and pixel, reading the same input planes (each member calls it; it
/// returns after the team's barrier). Balanced however small the image, where bands of rows are not.
void conv_pointwise_by_channels(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                                const PackedConvWeights& weights, const Variable& input, Variable& output,
                                GemmRowsBuffers& buffers);

/// A convolution of one group read through PaddedRowsB (reads_padded_rows) by the whole team split over output
/// channels: each member pads each image's whole input into phase planes of its own and multiplies its share of A's
/// row panels over every pixel (each member calls it; it returns after the team's barrier). For weights too large
/// to read again for each band of a small image (conv_bands.h's splits_weights_by_channels): in two bands of 9 rows
/// each member streamed all of Inception v3's 1 MB 1x7 and 7x1 weights for half of a 17x17 map.
void conv_padded_rows_by_channels(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                                  const PackedConvWeights& weights, const Variable& input, Variable& output,
                                  GemmRowsBuffers& buffers);

/// A pointwise convolution of one group (reads_planes_in_place) by the whole team split over the depth: each member
/// multiplies its share of the input channels into sums for every output channel and pixel, then adds up a share of
/// the output channels from every member's sums, with the bias and activation (each member calls it; it returns
/// after the team's barrier). After a layer split over output channels each member's input planes are the ones its
/// own core wrote, where a split over output channels would read half of the input from the other core's caches.
/// `partial_sums`: the team's, grown to (members - 1) images of output.
void conv_pointwise_by_depth(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
                             const PackedConvWeights& weights, const Variable& input, Variable& output,
                             std::vector<float>& partial_sums, GemmRowsBuffers& buffers);

/// output = activation(conv(input) + bias) for every image and group, by the whole team (each member calls it).
void conv_gemm(const TeamMember& member, const GemmMicroKernel& kernel, const Conv2dDesc& desc,
               const PackedConvWeights& weights, const Variable& input, Variable& output, GemmWorkspace& workspace);

}  // namespace corgy::blas
