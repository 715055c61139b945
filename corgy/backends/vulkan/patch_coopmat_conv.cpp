#include "corgy/backends/vulkan/patch_coopmat_conv.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/staged_patch.h"
#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

// conv2d_patch_coopmat.comp's block: 8 or 16 x 32 output pixels (4 or 8 x 16 pool windows), 16 input channels at a
// time, at most 4 x 16 output channels per workgroup. A block is 8 rows high per pair of rows each subgroup computes:
// two pairs where shared memory allows (fewer, larger workgroups, a smaller share of the patch's halo), else one.
// Tiny YOLO's 208x208 16 -> 32 layer with its pool at batch 64 on the H100: 0.73 ms with two, 0.81 with one.
constexpr std::uint32_t most_row_pairs = 2;
constexpr std::uint32_t block_width = 32;
constexpr std::uint32_t channels_per_chunk = 16;
constexpr std::uint32_t most_output_fragments = 4;
// Two 16x16 fp32 fragments per subgroup, 8 subgroups. The scratch has its own shared array beside the patch and the
// weights: laid over them after the main loop (as conv2d_coopmat.comp's is), which would let blocks of two row pairs
// fit beside 64 output channels, the kernel ran 13% slower at the same block shape (Tiny YOLO's 208x208 16 -> 32 at
// batch 64, 0.89 -> 1.01 ms) and 1.4-3.6x slower with two row pairs over 64 channels (VGG-16's 224x224 64 -> 64 at
// batch 32, 1.33 -> 1.87 ms; 104x104 32 -> 64, 0.51 -> 0.82), on an H200 (2026-11-29).
constexpr std::uint64_t fragment_scratch_bytes = 8 * 512 * sizeof(float);
// The automatic choice: up to one chunk of input channels, where the direct kernel did not take the layer first.
// On an H200 at batch 64 (vulkan_conv_benchmark, fp16, with the layer's 2x2 max pool fused) against the
// cooperative-matrix implicit GEMM: Tiny YOLO's 208x208 16 -> 32 layer 0.81 against 1.06 ms; 104x104 32 -> 64 0.50
// against 0.50; 52x52 64 -> 128 0.39 against 0.32; and its first layer (3 -> 16 at 416x416) 1.49 against 1.33,
// where the direct kernel takes 0.67.
constexpr int most_automatic_in_channels = 16;

// A unique address for TensorBuffers::derived_constant: the weights as fp16 [rows][chunks][taps][16].
constexpr char arranged_weights_kind = 0;

std::uint32_t output_fragments(const Conv2dDesc& d) {
  return std::min(ceil_div(u32(d.out_channels), 16), most_output_fragments);
}

// The kernel's shared memory: the patch of one chunk (the input under the block), that chunk's weights (a row
// of taps x 16 halves per output channel, padded by 16 bytes) and the epilogue's scratch.
std::uint64_t shared_bytes(const Conv2dDesc& d, std::uint32_t row_pairs) {
  const std::uint64_t patch = patch_extent(d, 8 * row_pairs) * patch_extent(d, block_width) * channels_per_chunk * 2;
  const std::uint64_t weights =
      output_fragments(d) * 16ull * (static_cast<std::uint64_t>(d.kernel) * d.kernel * 16 + 8) * 2;
  return patch + weights + fragment_scratch_bytes;
}

}  // namespace

bool patch_coopmat_fits(const Runtime& runtime, const Conv2dDesc& conv) {
  return runtime.half_precision() && runtime.context.features().cooperative_matrix && conv.groups == 1 &&
         shared_bytes(conv, 1) <= runtime.context.limits().maxComputeSharedMemorySize;
}

bool patch_coopmat_chosen(const Runtime& runtime, const Conv2dDesc& conv, const VulkanConvolutionOptions& options) {
  if (options.algorithm == VulkanConvAlgorithm::patch_cooperative_matrix) {
    if (!patch_coopmat_fits(runtime, conv)) {
      throw Error(fmt::format(
          "Vulkan: the patch cooperative-matrix convolution needs fp16 precision on a device with "
          "VK_NV_cooperative_matrix, one group, and its input patch, weights and scratch in shared memory; this "
          "{}x{} convolution (stride {}, dilation {}) has {} groups and {} input channels and needs {} bytes (the "
          "device allows {})",
          conv.kernel, conv.kernel, conv.stride, conv.dilation, conv.groups, conv.in_channels, shared_bytes(conv, 1),
          runtime.context.limits().maxComputeSharedMemorySize));
    }
    return true;
  }
  return options.algorithm == VulkanConvAlgorithm::automatic && options.tiles.automatic() &&
         options.coopmat_tiles.automatic() && patch_coopmat_fits(runtime, conv) &&
         conv.in_channels <= most_automatic_in_channels;
}

void record_patch_coopmat_conv(Runtime& runtime, const Conv2dDesc& d, const Pool2dDesc* fused_pool,
                               const Variable& input, const Variable& weights, const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const bool pool = fused_pool != nullptr;
  PatchConvParams p = patch_conv_params(d, fused_pool, in, out, bias != nullptr);
  const std::uint32_t fragments = output_fragments(d);
  p.channel_blocks = ceil_div(p.out_channels, fragments * 16);
  const std::uint32_t chunks = ceil_div(p.in_channels, channels_per_chunk);
  p.chunks = chunks;
  const std::uint32_t taps = u32(d.kernel * d.kernel);

  const VkPhysicalDeviceLimits& limits = runtime.context.limits();
  const std::uint32_t row_pairs =
      shared_bytes(d, most_row_pairs) <= limits.maxComputeSharedMemorySize ? most_row_pairs : 1;
  const std::uint32_t block_height = 8 * row_pairs;
  // The kernel indexes elements with 32 bits and spreads images and channel blocks along workgroup z.
  const std::uint64_t layers = static_cast<std::uint64_t>(in.n) * p.channel_blocks;
  // A block is block_height / 2 x block_width / 2 cells of 2x2 pixels (pool windows when pooling).
  const std::uint32_t groups_x = ceil_div(p.cells_width, block_width / 2);
  const std::uint32_t groups_y = ceil_div(p.cells_height, block_height / 2);
  check_dispatch_fits(limits, "patch cooperative-matrix convolution", in.str(), out.str(),
                      std::max(input.count(), output.count()), groups_x, groups_y, layers);

  // A: the weights as fp16 rows of chunks x taps x 16 input channels, rows padded to whole blocks with zeros.
  const std::uint32_t rows = p.channel_blocks * fragments * 16;
  const std::uint32_t row_length = taps * chunks * channels_per_chunk;
  TensorBuffers& tensors = runtime.tensors;
  BufferUse a = tensors.derived_constant(
      weights, &arranged_weights_kind, static_cast<VkDeviceSize>(rows) * row_length * sizeof(std::uint16_t),
      [&](const float* values, void* destination) {
        auto* halves = static_cast<std::uint16_t*>(destination);
        std::fill(halves, halves + static_cast<std::size_t>(rows) * row_length, std::uint16_t{0});
        for (std::uint32_t m = 0; m < p.out_channels; ++m) {
          for (std::uint32_t c = 0; c < p.in_channels; ++c) {
            for (std::uint32_t t = 0; t < taps; ++t) {
              halves[static_cast<std::size_t>(m) * row_length +
                     (c / channels_per_chunk * taps + t) * channels_per_chunk + c % channels_per_chunk] =
                  to_half(values[(static_cast<std::size_t>(m) * p.in_channels + c) * taps + t]);
            }
          }
        }
      });
  a.format = TensorFormat::fp16;
  a.count = static_cast<std::size_t>(rows) * row_length;

  CommandRecorder& recorder = runtime.recorder;
  const BufferUse source = tensors.read(input);
  const BufferUse bias_use = bias ? tensors.read(*bias) : recorder.unused_binding();
  const BufferUse result = tensors.write(output, true);
  SpecializationConstants constants;
  constants.set(PatchCoopmatConstant::output_fragments, fragments)
      .set(PatchCoopmatConstant::kernel_size, u32(d.kernel))
      .set_flag(PatchCoopmatConstant::pool, pool)
      .set(PatchCoopmatConstant::stride, u32(d.stride))
      .set(PatchCoopmatConstant::dilation, u32(d.dilation))
      .set(PatchCoopmatConstant::row_pairs, row_pairs)
      .set_flag(PatchCoopmatConstant::source_fp16, source.format == TensorFormat::fp16)
      .set_flag(PatchCoopmatConstant::result_fp16, result.format == TensorFormat::fp16);
  recorder.dispatch(runtime.pipelines.get(kernels::conv2d_patch_coopmat_fp16, constants), {source, a, bias_use, result},
                    p, groups_x, groups_y, u32(static_cast<std::size_t>(layers)));
  if (recorder.profiling()) {
    const double pixels = static_cast<double>(in.n) * p.out_height * p.out_width;
    recorder.describe_last(fmt::format("{} channels x {}x32 pixels, {} input chunks{}", fragments * 16, block_height,
                                       chunks, pool ? " +maxpool" : ""),
                           2.0 * p.out_channels * pixels * p.in_channels * taps);
  }
}

}  // namespace corgy::vulkan
