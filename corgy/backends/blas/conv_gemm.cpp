#include "corgy/backends/blas/conv_gemm.h"

#include <algorithm>
#include <cstring>

namespace corgy::blas {

Im2colB::Im2colB(const Conv2dDesc& desc, const float* image, int channels, int height, int width, int out_h, int out_w,
                 Im2colRowPacker packer)
    : desc_(desc),
      image_(image),
      channels_(channels),
      height_(height),
      width_(width),
      out_h_(out_h),
      out_w_(out_w),
      depth_(channels * desc.kernel * desc.kernel),
      packer_(packer) {}

Im2colRow Im2colB::row(int k) const {
  const int taps = desc_.kernel * desc_.kernel;
  return {image_ + static_cast<std::size_t>(k / taps) * height_ * width_,
          height_,
          width_,
          k % taps / desc_.kernel * desc_.dilation - desc_.padding,
          k % desc_.kernel * desc_.dilation - desc_.padding,
          desc_.stride,
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

PackedConvWeights pack_conv_weights(const Conv2dDesc& desc, const float* weights, const float* bias,
                                    const GemmMicroKernel& kernel) {
  const int out_per_group = desc.out_channels / desc.groups;
  const int depth = desc.in_channels / desc.groups * desc.kernel * desc.kernel;
  PackedConvWeights packed;
  for (int g = 0; g < desc.groups; ++g) {
    packed.groups.emplace_back(weights + static_cast<std::size_t>(g) * out_per_group * depth, out_per_group, depth,
                               static_cast<std::size_t>(depth), bias ? bias + g * out_per_group : nullptr, kernel.mr);
  }
  return packed;
}

void conv_gemm_rows(const GemmMicroKernel& kernel, const Conv2dDesc& desc, const PackedConvWeights& weights,
                    const Variable& input, const Shape& output, int n, int y0, int y1, float* target,
                    std::size_t channel_stride, std::vector<float>& scratch) {
  const Shape& in = input.shape();
  const int in_per_group = desc.in_channels / desc.groups;
  const int out_per_group = desc.out_channels / desc.groups;
  const Im2colRowPacker packer = gemm_kernels(kernel.isa).pack_im2col_row;
  for (int g = 0; g < desc.groups; ++g) {
    const float* image = input.data() + (static_cast<std::size_t>(n) * in.c + g * in_per_group) * in.plane_count();
    const Im2colB columns(desc, image, in_per_group, in.h, in.w, output.h, output.w, packer);
    packed_gemm_columns(kernel, weights.groups[g], columns, y0 * output.w, y1 * output.w,
                        target + static_cast<std::size_t>(g) * out_per_group * channel_stride, channel_stride,
                        desc.activation, scratch);
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
