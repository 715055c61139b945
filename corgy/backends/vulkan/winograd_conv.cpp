#include "corgy/backends/vulkan/winograd_conv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/gemm_dispatch.h"
#include "corgy/backends/vulkan/implicit_gemm_conv.h"
#include "corgy/backends/vulkan/square_window.h"
#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

// The automatic choice: both channel counts at least this, so that the 16 GEMMs (K = input channels, M = output
// channels) outweigh the transforms' round trips through memory, which grow with the channels as the GEMM does
// not. On an H100 (benchmarks/vulkan_conv_benchmark, docs/vulkan.md#convolution), Tiny YOLO's layers with 64 or
// more channels in and out ran 1.0-2.2x faster as Winograd than as the best implicit GEMM at batch 1, 8 and 64
// (13x13 1024 -> 1024: 0.12 against 0.23 ms at batch 1, 3.2 against 7.0 ms at batch 64); 32 -> 64 channels at
// 104x104 was 1.2x slower at batch 64, 16 -> 32 at 208x208 1.6x slower.
constexpr int least_channels = 64;
// In fp16 precision its GEMMs run on tensor cores (conv2d_coopmat.comp) and so does the implicit GEMM it competes
// with: there it pays from this many input channels on. In Tiny YOLO at batch 64 on the H100 (vulkan_conv_benchmark,
// after the coalesced epilogue): 13x13 256 -> 512 0.28 against 0.33 ms, but 26x26 128 -> 256 0.31 against 0.30 and
// 52x52 64 -> 128 0.52 against 0.34.
constexpr int least_input_channels_on_tensor_cores = 256;
// ... and at least this many output tiles (of 2x2 pixels, every image): fewer leave the GEMMs too few columns
// (13x13 has 49).
constexpr std::uint64_t least_tiles = 32;

// A unique address per arrangement of a constant (TensorBuffers::derived_constant): U in fp32 (gemm_tiled.comp,
// conv2d_implicit_gemm.comp) and in fp16 with rows padded to 8 halves (conv2d_coopmat.comp).
constexpr char transformed_weights_kind = 0;
constexpr char transformed_half_weights_kind = 0;

struct WinogradGeometry {
  std::uint32_t out_height, out_width, tiles_h, tiles_w, tiles, tiles_pitch;
};

WinogradGeometry geometry(const Conv2dDesc& d, const Shape& in) {
  require_square_window(d, "the Winograd convolution");
  WinogradGeometry g{};
  g.out_height = u32(d.output_size(in.h));
  g.out_width = u32(d.output_size(in.w));
  g.tiles_h = ceil_div(g.out_height, 2);
  g.tiles_w = ceil_div(g.out_width, 2);
  const std::uint64_t tiles = static_cast<std::uint64_t>(in.n) * g.tiles_h * g.tiles_w;
  if (tiles >= (1ull << 30)) {
    throw Error(fmt::format("Vulkan: Winograd convolution of input {} has too many tiles ({})", in.str(), tiles));
  }
  g.tiles = u32(static_cast<std::size_t>(tiles));
  // Whole vec4s for the fp32 GEMM; whole 16-byte units of 8 halves, which conv2d_coopmat.comp loads at once, in fp16.
  g.tiles_pitch = (g.tiles + 7) / 8 * 8;
  return g;
}

// Bytes of the larger of the two scratch matrices (16 x channels x tiles_pitch floats).
std::uint64_t scratch_bytes(const Conv2dDesc& d, const WinogradGeometry& g) {
  const std::uint64_t channels = static_cast<std::uint64_t>(std::max(d.in_channels, d.out_channels));
  return 16ull * channels * g.tiles_pitch * sizeof(float);
}

}  // namespace

bool winograd_fits(const Conv2dDesc& conv) {
  return conv.kernel == 3 && conv.stride == 1 && conv.dilation == 1 && conv.groups == 1;
}

bool winograd_pool_fusable(const Pool2dDesc& pool) {
  return pool.kind == PoolKind::max && pool.kernel_h == 2 && pool.kernel_w == 2 && pool.stride_h == 2 &&
         pool.stride_w == 2 && pool.pad_top == 0 && pool.pad_left == 0 && pool.pad_bottom <= 1 && pool.pad_right <= 1;
}

bool winograd_runs(const Runtime& runtime, const Conv2dDesc& conv, const Shape& input) {
  if (!winograd_fits(conv) || (runtime.half_precision() && !runtime.context.features().cooperative_matrix)) {
    return false;
  }
  const std::uint64_t tiles = static_cast<std::uint64_t>(input.n) * ceil_div(u32(conv.output_size(input.h)), 2) *
                              ceil_div(u32(conv.output_size(input.w)), 2);
  return tiles < (1ull << 30) &&
         scratch_bytes(conv, geometry(conv, input)) <= runtime.context.limits().maxStorageBufferRange;
}

bool winograd_chosen(const Runtime& runtime, const Conv2dDesc& conv, const Shape& input,
                     const VulkanConvolutionOptions& options) {
  if (options.algorithm == VulkanConvAlgorithm::winograd) {
    if (!winograd_fits(conv)) {
      throw Error(fmt::format(
          "Vulkan: Winograd convolutions need a 3x3 kernel at stride 1 without dilation or groups; this one is "
          "{}x{} at stride {}, dilation {}, {} groups",
          conv.kernel, conv.kernel, conv.stride, conv.dilation, conv.groups));
    }
    return true;
  }
  // fp16 precision: only where its GEMMs run on tensor cores (conv2d_coopmat.comp); fp16 storage with fp32
  // arithmetic gains nothing from it.
  if (options.algorithm != VulkanConvAlgorithm::automatic || !options.tiles.automatic() ||
      !options.coopmat_tiles.automatic() || !winograd_fits(conv) ||
      (runtime.half_precision() && !runtime.context.features().cooperative_matrix)) {
    return false;
  }
  if (conv.in_channels < least_channels || conv.out_channels < least_channels) return false;
  if (runtime.half_precision() && conv.in_channels < least_input_channels_on_tensor_cores) return false;
  const WinogradGeometry g = geometry(conv, input);
  return g.tiles >= least_tiles && scratch_bytes(conv, g) <= runtime.context.limits().maxStorageBufferRange;
}

std::vector<float> winograd_weights(const float* weights, int out_channels, int in_channels) {
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const std::size_t out = static_cast<std::size_t>(out_channels);
  const std::size_t in = static_cast<std::size_t>(in_channels);
  std::vector<float> transformed(16 * out * in);
  for (std::size_t o = 0; o < out; ++o) {
    for (std::size_t i = 0; i < in; ++i) {
      const float* g = weights + (o * in + i) * 9;
      double gg[4][3];  // G g
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 3; ++c) gg[r][c] = G[r][0] * g[c] + G[r][1] * g[3 + c] + G[r][2] * g[6 + c];
      }
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 4; ++c) {
          const double value = gg[r][0] * G[c][0] + gg[r][1] * G[c][1] + gg[r][2] * G[c][2];
          transformed[((static_cast<std::size_t>(4 * r + c)) * out + o) * in + i] = static_cast<float>(value);
        }
      }
    }
  }
  return transformed;
}

namespace {

// U in fp32, 16 matrices of out x in channels (the A operand of gemm_tiled.comp and conv2d_implicit_gemm.comp).
BufferUse transformed_weights(Runtime& runtime, const Conv2dDesc& d, const Variable& weights) {
  return runtime.tensors.derived_constant(
      weights, &transformed_weights_kind, 16ull * d.out_channels * d.in_channels * sizeof(float),
      [&](const float* values, void* destination) {
        const std::vector<float> u = winograd_weights(values, d.out_channels, d.in_channels);
        std::memcpy(destination, u.data(), u.size() * sizeof(float));
      });
}

// The 16 GEMMs in fp16 precision: a 1x1 convolution of 16 groups over a one-row "image" of 16 x in_channels
// channels and tiles_pitch columns (the transformed input, fp16) into 16 x out_channels channels (the products,
// fp32), on conv2d_coopmat.comp (tensor cores) where the device has them, else conv2d_implicit_gemm_fp16; K unsplit.
ConvPlan record_half_gemms(Runtime& runtime, const Conv2dDesc& d, const WinogradGeometry& g, const Variable& weights,
                           const BufferUse& transformed, const BufferUse& products) {
  const std::uint32_t in_channels = u32(d.in_channels);
  const std::uint32_t out_channels = u32(d.out_channels);
  ImplicitGemmParams p{};
  p.m = out_channels;
  p.n = g.tiles_pitch;
  p.k = in_channels;
  p.in_channels = 16 * in_channels;
  p.height = 1;
  p.width = g.tiles_pitch;
  p.out_channels = 16 * out_channels;
  p.out_height = 1;
  p.out_width = g.tiles_pitch;
  p.stride = 1;
  p.dilation = 1;
  p.groups = 16;
  p.activation = activation_kind(Activation::none());
  const ConvDevice device{&runtime.context.limits(), runtime.context.features().cooperative_matrix};
  // A cooperative-matrix tile shape forced through VulkanOptions::convolution applies to these GEMMs too.
  const ConvPlan plan = plan_convolution(
      {p.m, p.n, p.k, p.groups}, {.coopmat_tiles = runtime.options.convolution.coopmat_tiles, .split_k = 1}, device);
  p.k_per_split = plan.k_per_split;
  p.tiles_m = ceil_div(p.m, plan.tile_m());
  p.lda = (p.k + 7) / 8 * 8;
  BufferUse a;
  if (plan.algorithm == VulkanConvAlgorithm::cooperative_matrix) {
    const std::uint32_t lda = p.lda;
    a = runtime.tensors.derived_constant(
        weights, &transformed_half_weights_kind, 16ull * out_channels * lda * sizeof(std::uint16_t),
        [&](const float* values, void* destination) {
          const std::vector<float> u = winograd_weights(values, d.out_channels, d.in_channels);
          auto* halves = static_cast<std::uint16_t*>(destination);
          for (std::size_t row = 0; row < 16ull * out_channels; ++row) {
            for (std::uint32_t i = 0; i < lda; ++i) {
              halves[row * lda + i] = i < in_channels ? to_half(u[row * in_channels + i]) : 0;
            }
          }
        });
    a.format = TensorFormat::fp16;
    a.count = 16ull * out_channels * lda;
  } else {
    a = transformed_weights(runtime, d, weights);
  }
  record_conv_gemm(runtime, p, plan, 1, false, transformed, a, runtime.recorder.unused_binding(), products);
  return plan;
}

}  // namespace

void record_winograd_conv(Runtime& runtime, const Conv2dDesc& d, const Pool2dDesc* fused_pool, const Variable& input,
                          const Variable& weights, const Variable* bias, Variable& output, const Variable* residual) {
  const Shape& in = input.shape();
  if (residual && (fused_pool || residual->shape() != output.shape())) {
    throw Error(fmt::format("Vulkan Winograd: a residual {} added to the convolution output {}{}",
                            residual->shape().str(), output.shape().str(), fused_pool ? " with a pool" : ""));
  }
  const WinogradGeometry g = geometry(d, in);
  const std::uint32_t in_channels = u32(d.in_channels);
  const std::uint32_t out_channels = u32(d.out_channels);
  TensorBuffers& tensors = runtime.tensors;
  CommandRecorder& recorder = runtime.recorder;
  // fp16 precision: the transformed input in fp16 and the output as fp16 as the next layer allows; the products
  // (sums over the input channels) stay fp32.
  const bool half = runtime.half_precision();

  // 1. The transformed input: 16 matrices of in_channels x tiles_pitch.
  const std::size_t transformed_count = 16ull * in_channels * g.tiles_pitch;
  const TensorFormat transformed_format = half ? TensorFormat::fp16 : TensorFormat::fp32;
  const VkDeviceSize transformed_bytes = transformed_count * element_bytes(transformed_format);
  const BufferUse source = tensors.read(input);
  BufferUse transformed = recorder.scratch(Scratch::winograd_input, transformed_bytes, true);
  transformed.format = transformed_format;
  transformed.count = transformed_count;
  const WinogradInputParams input_params{in_channels, u32(in.h), u32(in.w),     g.tiles_h,
                                         g.tiles_w,   g.tiles,   g.tiles_pitch, u32(d.padding)};
  SpecializationConstants input_constants;
  if (half) {
    input_constants.set_flag(WinogradInputConstant::source_fp16, source.format == TensorFormat::fp16)
        .set_flag(WinogradInputConstant::transformed_fp16, true);
  }
  recorder.dispatch(
      runtime.pipelines.get(half ? kernels::winograd_input_transform_fp16 : kernels::winograd_input_transform,
                            input_constants),
      {source, transformed}, input_params, elementwise_groups(static_cast<std::size_t>(in_channels) * g.tiles_pitch));
  if (recorder.profiling()) recorder.describe_last("winograd input 4x4 tiles", 0.0);
  transformed.writes = false;

  // 2. The 16 GEMMs: products_t (out x tiles) = U_t (out x in) x V_t (in x tiles).
  const VkDeviceSize products_bytes = 16ull * out_channels * g.tiles_pitch * sizeof(float);
  const BufferUse products = recorder.scratch(Scratch::winograd_products, products_bytes, true);
  // The arithmetic the GEMMs do: a direct convolution's / 2.25, plus the tiles' padding at odd sizes.
  const double flops = 2.0 * 16.0 * out_channels * in_channels * static_cast<double>(g.tiles);
  if (half) {
    const ConvPlan plan = record_half_gemms(runtime, d, g, weights, transformed, products);
    if (recorder.profiling()) recorder.describe_last("16 GEMMs " + plan.describe(), flops);
  } else {
    GemmCall call;
    call.a = transformed_weights(runtime, d, weights);
    call.b = transformed;
    call.c = products;
    call.bias = recorder.unused_binding();
    call.images = 1;
    call.params = {out_channels,
                   g.tiles_pitch,
                   in_channels,
                   in_channels,
                   g.tiles_pitch,
                   g.tiles_pitch,
                   16,
                   out_channels * in_channels,
                   0,
                   in_channels * g.tiles_pitch,
                   0,
                   out_channels * g.tiles_pitch,
                   GemmBias::none,
                   activation_kind(Activation::none()),
                   0.0f};
    const VulkanGemmTiles t = record_gemm(runtime, call);
    if (recorder.profiling()) {
      recorder.describe_last(
          fmt::format("16 gemm_tiled {}x{}x{}/{}x{}", t.tile_m, t.tile_n, t.tile_k, t.thread_m, t.thread_n), flops);
    }
  }

  // 3. Back to pixels, with bias, activation and pool.
  const bool pool = fused_pool != nullptr;
  const WinogradOutputParams output_params{out_channels,
                                           g.out_height,
                                           g.out_width,
                                           g.tiles_h,
                                           g.tiles_w,
                                           g.tiles,
                                           g.tiles_pitch,
                                           pool ? u32(output.shape().h) : 0,
                                           pool ? u32(output.shape().w) : 0,
                                           bias ? 1u : 0u,
                                           activation_kind(d.activation),
                                           d.activation.slope};
  BufferUse read_products = products;
  read_products.writes = false;
  const BufferUse residual_use = residual ? tensors.read(*residual) : recorder.unused_binding();
  const BufferUse result = tensors.write(output, half);
  SpecializationConstants output_constants;
  output_constants.set_flag(WinogradOutputConstant::pool, pool)
      .set_flag(WinogradOutputConstant::residual, residual != nullptr);
  if (half) {
    output_constants.set_flag(WinogradOutputConstant::result_fp16, result.format == TensorFormat::fp16)
        .set_flag(WinogradOutputConstant::residual_fp16,
                  residual != nullptr && residual_use.format == TensorFormat::fp16);
  }
  recorder.dispatch(
      runtime.pipelines.get(half ? kernels::winograd_output_transform_fp16 : kernels::winograd_output_transform,
                            output_constants),
      {read_products, bias ? tensors.read(*bias) : recorder.unused_binding(), result, residual_use}, output_params,
      elementwise_groups(static_cast<std::size_t>(out_channels) * g.tiles));
  if (recorder.profiling()) {
    recorder.describe_last(pool       ? "winograd output +maxpool"
                           : residual ? "winograd output +add"
                                      : "winograd output",
                           0.0);
  }
}

}  // namespace corgy::vulkan
