// The depthwise convolution kernels of the blas backend (one channel plane in, one out), one variant per instruction
// set like the GEMM kernels (kernels/depthwise_<isa>.cpp, picked from cpuid), and the geometry they share.
//
// How a plane is computed, for any kernel size, stride, dilation and padding: the input plane is copied, zero-padded,
// into stride x stride "phase" planes (phase (ry, rx) holds padded rows ry, ry + stride, ... and columns rx,
// rx + stride, ...; one plane at stride 1). In phase coordinates every tap (ky, kx) reads, for output (oy, ox), the
// element at a fixed offset from oy * phase_w + ox: so over the "extended" output grid of out_h rows of phase_w
// columns, each tap is one contiguous run of the phase planes, and the convolution is k x k vectorised multiply-adds
// of whole registers, with no edge cases. The columns past out_w of each extended row are computed and dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "corgy/activation.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

/// The shape of one depthwise plane computation, planned once per layer and input shape.
struct DepthwiseGeometry {
  int kernel = 0;
  int stride = 1;
  int dilation = 1;
  int padding = 0;     ///< left and right
  int pad_top = 0;     ///< rows of zeros above the input: `padding`, or fewer for a band of rows inside an image
  int pad_bottom = 0;  ///< and below
  int in_h = 0;
  int in_w = 0;
  int out_h = 0;
  int out_w = 0;
  int phase_h = 0;  ///< rows of each phase plane: ceil((pad_top + in_h + pad_bottom) / stride)
  int phase_w = 0;  ///< columns of each phase plane, and of each extended output row
  /// Per tap (ky, kx), row-major: the offset in the phase buffer of the element output (0, 0) reads. A fixed array,
  /// so that the kernels (compiled per instruction set) use no std:: code; kernels up to 11 x 11.
  static constexpr int max_taps = 121;
  int taps = 0;
  std::int32_t tap_offsets[max_taps] = {};
  /// Floats of the phase buffer: the phase planes, then zeros that the last register of a block may read.
  std::size_t phase_floats = 0;
  /// Output rows computed per block (the block's extended rows stay in L1), and floats of the block buffer.
  int block_rows = 1;
  std::size_t block_floats = 0;
  /// The channel-block kernel's buffer (DepthwiseChannelBlockKernel): the padded input tile, a register of
  /// kDepthwiseChannelBlock channels per pixel, the output tile with a register of pixels of slack, then the output
  /// planes staged as they are laid out, and a register of slack.
  std::size_t channel_tile_floats = 0;
  std::size_t channel_buffer_floats = 0;

  /// Floats of one thread's buffer: phases, then the block.
  std::size_t buffer_floats() const { return phase_floats + block_floats; }
};

/// `kernel` x `kernel` depthwise geometry for an input plane of in_h x in_w (kernel * kernel <= max_taps).
DepthwiseGeometry depthwise_geometry(int kernel, int stride, int dilation, int padding, int in_h, int in_w);
/// The same for a band of an image's rows: `pad_top` and `pad_bottom` rows of zeros above and below it (the
/// convolution's padding at the image's edges, none inside it), `padding` columns left and right.
DepthwiseGeometry depthwise_band_geometry(int kernel, int stride, int dilation, int padding, int pad_top,
                                          int pad_bottom, int in_h, int in_w);

/// output = activation(depthwise conv of `input` with `weights` (kernel x kernel, row-major) + bias), one plane.
/// `buffer` holds geometry.buffer_floats() floats, and its tail past the phase planes must be zero
/// (prepare_depthwise_buffer, again after a call with another geometry); the kernel keeps it so.
using DepthwiseKernel = void (*)(const DepthwiseGeometry& geometry, const float* input, const float* weights,
                                 float bias, Activation activation, float* output, float* buffer);

/// Sizes `buffer` for `geometry` and zeroes the tail past the phase planes.
void prepare_depthwise_buffer(const DepthwiseGeometry& geometry, std::vector<float>& buffer);

/// Which way a kernel computes a plane. Each path falls back to the one before it where it does not apply:
///  - extended_rows: every geometry (the file comment above);
///  - row_blocks: 3 x 3 and 5 x 5 at strides 1 and 2, dilation 1, outputs at least 12 wide: several output rows per
///    register column, each phase row loaded once per column offset for all of them, written straight into the
///    output (no extended rows to copy out);
///  - direct_blocks: the same at strides 1 and 2 read straight from the input (no phase copy; masked loads at the
///    edges; at stride 2 each pair of registers split into its even and odd columns in registers);
///  - automatic: what the backend uses: the direct blocks where they apply, the extended rows otherwise (the
///    measurements: kernels/depthwise_kernel.h).
/// The SSE2 kernels (CPUs without AVX2) take the extended rows for every path.
enum class DepthwisePath { automatic, extended_rows, row_blocks, direct_blocks };

DepthwiseKernel generic_depthwise_kernel(DepthwisePath path);
DepthwiseKernel avx2_depthwise_kernel(DepthwisePath path);
DepthwiseKernel avx512_depthwise_kernel(DepthwisePath path);

/// True when the automatic path reads `geometry`'s plane straight from the input (the direct blocks) on this CPU:
/// AVX2 or AVX-512, 3 x 3 or 5 x 5, strides 1 and 2, dilation 1, outputs at least 12 wide (kernels/depthwise_kernel.h
/// holds the same rule; the plan's description says which path runs).
bool depthwise_direct_blocks_apply(const DepthwiseGeometry& geometry);

/// The kernel of the widest instruction set this CPU has (cpuid, once), or of `isa` and `path` when asked (tests,
/// benchmarks).
DepthwiseKernel depthwise_kernel();
DepthwiseKernel depthwise_kernel(CpuIsa isa, DepthwisePath path = DepthwisePath::automatic);

/// The channel-block kernel: planes [first, end) of a tensor (plane p at input + p * in_h * in_w, of channel
/// p % channels; its output at output + p * out_h * out_w), a register's worth of consecutive planes at once with
/// their channels in the lanes (kernels/depthwise_channel_block_kernel.h says why). 3 x 3, 5 x 5 and 7 x 7 kernels,
/// strides 1 and 2, dilation 1 (depthwise_channel_blocks_apply). `packed` is pack_depthwise_channel_weights's, and
/// `buffer` holds geometry.channel_buffer_floats floats, zeroed by prepare_depthwise_channel_buffer (the kernel keeps
/// the tile's padding border zero).
using DepthwiseChannelBlockKernel = void (*)(const DepthwiseGeometry& geometry, const float* input, std::size_t first,
                                             std::size_t end, int channels, const float* packed, Activation activation,
                                             float* output, float* buffer);

/// Lanes of the widest register: the packed weights' padding and the tiles' registers are sized for it.
constexpr int kDepthwiseChannelBlock = 16;

bool depthwise_channel_blocks_apply(int kernel, int stride, int dilation);
/// The weights (channels, k, k) and bias (channels values, or null for zeros) of a depthwise layer as the
/// channel-block kernel reads them: taps + 1 rows (the taps, then the bias) of channels + kDepthwiseChannelBlock
/// floats, row t holding tap t of channel c % channels at column c, so that the lanes of any block of consecutive
/// planes, even one that runs from one image into the next, are one unaligned load.
std::vector<float> pack_depthwise_channel_weights(const float* weights, const float* bias, int channels, int taps);
/// Sizes `buffer` for `geometry`'s channel-block kernel and zeroes it.
void prepare_depthwise_channel_buffer(const DepthwiseGeometry& geometry, std::vector<float>& buffer);

DepthwiseChannelBlockKernel generic_depthwise_channel_block_kernel();
DepthwiseChannelBlockKernel avx2_depthwise_channel_block_kernel();
DepthwiseChannelBlockKernel avx512_depthwise_channel_block_kernel();
/// The channel-block kernel of the widest instruction set this CPU has, or of `isa` (tests, benchmarks).
DepthwiseChannelBlockKernel depthwise_channel_block_kernel();
DepthwiseChannelBlockKernel depthwise_channel_block_kernel(CpuIsa isa);

}  // namespace corgy::blas
