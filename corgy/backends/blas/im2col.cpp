#include "corgy/backends/blas/im2col.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace corgy::blas {

ValidRange valid_outputs(int offset, int stride, int input_size, int output_size) {
  // First output whose input is >= 0, and first whose input is >= input_size (ceil divisions; the numerators
  // are only negative when the whole axis reads padding, and the clamps below handle that).
  const int begin = std::min(output_size, offset >= 0 ? 0 : (-offset + stride - 1) / stride);
  const int end = std::clamp((input_size - offset + stride - 1) / stride, begin, output_size);
  return {begin, end};
}

namespace {

/// One row of the column matrix: kernel tap (y_offset, x_offset) of one input plane, for every output pixel.
void fill_column_row(const float* plane, int height, int width, const Conv2dWindow& window, int y_offset, int x_offset,
                     int out_h, int out_w, float* row) {
  const ValidRange rows = valid_outputs(y_offset, window.stride_h, height, out_h);
  const ValidRange cols = valid_outputs(x_offset, window.stride_w, width, out_w);
  const auto out_width = static_cast<std::size_t>(out_w);
  std::fill(row, row + rows.begin * out_width, 0.0f);
  for (int oy = rows.begin; oy < rows.end; ++oy) {
    const float* source = plane + static_cast<std::size_t>(oy * window.stride_h + y_offset) * width;
    float* target = row + oy * out_width;
    std::fill(target, target + cols.begin, 0.0f);
    if (window.stride_w == 1) {
      std::memcpy(target + cols.begin, source + cols.begin + x_offset, sizeof(float) * (cols.end - cols.begin));
    } else {
      for (int ox = cols.begin; ox < cols.end; ++ox) target[ox] = source[ox * window.stride_w + x_offset];
    }
    std::fill(target + cols.end, target + out_w, 0.0f);
  }
  std::fill(row + rows.end * out_width, row + out_h * out_width, 0.0f);
}

}  // namespace

void im2col(const TeamMember& member, const float* image, int channels, int height, int width, const Conv2dDesc& desc,
            int out_h, int out_w, float* columns) {
  const Conv2dWindow window = desc.window();
  const int taps = window.kernel_h * window.kernel_w;
  const std::size_t plane_size = static_cast<std::size_t>(height) * width;
  const std::size_t row_size = static_cast<std::size_t>(out_h) * out_w;
  const TeamMember::Range mine = member.share(static_cast<std::size_t>(channels) * taps);
  for (int row = static_cast<int>(mine.begin); row < static_cast<int>(mine.end); ++row) {
    const int channel = row / taps;
    const int ky = row % taps / window.kernel_w;
    const int kx = row % window.kernel_w;
    fill_column_row(image + channel * plane_size, height, width, window, ky * window.dilation_h - window.pad_top,
                    kx * window.dilation_w - window.pad_left, out_h, out_w, columns + row * row_size);
  }
  member.sync();
}

void col2im(const TeamMember& member, const float* columns, int channels, int height, int width,
            const ConvTranspose2dDesc& desc, int out_h, int out_w, float* output) {
  const std::size_t pixels = static_cast<std::size_t>(height) * width;
  const std::size_t out_plane = static_cast<std::size_t>(out_h) * out_w;
  const TeamMember::Range mine = member.share(static_cast<std::size_t>(channels));
  for (std::size_t c = mine.begin; c < mine.end; ++c) {
    float* plane = output + c * out_plane;
    for (int ky = 0; ky < desc.kernel_h; ++ky) {
      // The input rows whose output row iy * stride + y_offset lies inside the plane: valid_outputs solves the same
      // inequality for im2col, with the roles of input and output exchanged.
      const int y_offset = ky * desc.dilation_h - desc.pad_top;
      const ValidRange rows = valid_outputs(y_offset, desc.stride_h, out_h, height);
      for (int kx = 0; kx < desc.kernel_w; ++kx) {
        const int x_offset = kx * desc.dilation_w - desc.pad_left;
        const ValidRange cols = valid_outputs(x_offset, desc.stride_w, out_w, width);
        const float* row = columns + ((c * desc.kernel_h + ky) * desc.kernel_w + kx) * pixels;
        for (int iy = rows.begin; iy < rows.end; ++iy) {
          const float* source = row + static_cast<std::size_t>(iy) * width;
          float* target = plane + static_cast<std::size_t>(iy * desc.stride_h + y_offset) * out_w;
          for (int ix = cols.begin; ix < cols.end; ++ix) target[ix * desc.stride_w + x_offset] += source[ix];
        }
      }
    }
  }
  member.sync();
}

}  // namespace corgy::blas
