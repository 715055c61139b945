// The interface of each kernel in kernels/*.comp as the host sees it: push-constant blocks (field for field the
// GLSL `Params` block; scalars only, so std430 and C++ agree) and the ids of specialization constants.
#pragma once

#include <cstddef>
#include <cstdint>

#include "corgy/activation.h"
#include "corgy/backend.h"

namespace corgy::vulkan {

// activation_functions.glsl numbers the activations as ActivationKind does.
static_assert(static_cast<int>(ActivationKind::none) == 0 && static_cast<int>(ActivationKind::relu) == 1 &&
              static_cast<int>(ActivationKind::leaky_relu) == 2 && static_cast<int>(ActivationKind::sigmoid) == 3 &&
              static_cast<int>(ActivationKind::tanh) == 4 && static_cast<int>(ActivationKind::mish) == 5 &&
              static_cast<int>(ActivationKind::swish) == 6 && static_cast<int>(ActivationKind::clipped_relu) == 7 &&
              static_cast<int>(ActivationKind::hard_swish) == 8 && static_cast<int>(ActivationKind::gelu) == 9);

inline std::uint32_t activation_kind(Activation activation) { return static_cast<std::uint32_t>(activation.kind); }

struct Im2colParams {
  std::uint32_t images, groups, channels_per_group, height, width, out_height, out_width, kernel_h, kernel_w, stride_h,
      stride_w, pad_top, pad_left, dilation_h, dilation_w, pitch;
};

/// gemm_tiled.comp's constant_id values.
enum class GemmConstant : std::uint32_t {
  tile_m = 0,
  tile_n = 1,
  tile_k = 2,
  thread_m = 3,
  thread_n = 4,
  a_transposed = 5,
  b_transposed = 6,
  a_vec4 = 7,
  b_vec4 = 8,
  c_vec4 = 9,
  workgroup_size = 10,
};

enum class GemmBias : std::uint32_t { none = 0, per_row = 1, per_column = 2 };

struct GemmParams {
  std::uint32_t m, n, k, lda, ldb, ldc, groups, a_group_stride, b_image_stride, b_group_stride, c_image_stride,
      c_group_stride;
  GemmBias bias_mode;
  std::uint32_t activation;
  float slope;
};

/// conv2d_implicit_gemm.comp's and conv2d_coopmat.comp's constant_id values.
enum class ImplicitGemmConstant : std::uint32_t {
  tile_m = 0,
  tile_n = 1,
  tile_k = 2,
  thread_m = 3,
  thread_n = 4,
  a_vec4 = 5,
  kernel_size = 6,
  pool = 7,
  split_k = 8,
  workgroup_size = 9,
  source_fp16 = 10,  // the _fp16 variants only (tensor_storage.glsl)
  result_fp16 = 11,
  residual = 12,  // a residual connection added before the activation (binding 4)
  residual_fp16 = 13,
};

enum class CoopmatConstant : std::uint32_t {
  warps_m = 0,
  warps_n = 1,
  frags_m = 2,
  frags_n = 3,
  tile_k = 4,
  kernel_size = 5,
  pool = 6,
  split_k = 7,
  workgroup_size = 8,
  contiguous_b = 9,
  source_fp16 = 10,
  result_fp16 = 11,
  residual = 12,
  residual_fp16 = 13,
  vector_epilogue = 14,  // 16-byte units of 8 output columns per lane (no pool, no split, planes of whole units)
  activation = 15,       // ImplicitGemmParams::activation's kind, compiled in
};

/// Both implicit-GEMM convolution kernels; lda is read by conv2d_coopmat.comp only.
struct ImplicitGemmParams {
  std::uint32_t m, n, k, in_channels, height, width, out_channels, out_height, out_width, pool_height, pool_width,
      pool_pad_top, pool_pad_left, stride, padding, dilation, groups, k_per_split, tiles_m, has_bias, activation;
  float slope;
  std::uint32_t lda;
};

/// conv2d_direct.comp's constant_id values.
enum class DirectConvConstant : std::uint32_t {
  channels = 0,
  taps = 1,
  kernel_size = 2,
  pool = 3,
  stride = 4,
  dilation = 5,
  chunk = 6,
  source_fp16 = 10,  // the _fp16 variant only (tensor_storage.glsl)
  result_fp16 = 11,
};

/// conv2d_direct.comp's and conv2d_patch_coopmat.comp's push constants (staged_patch.h): the convolution's output,
/// and its cells of 2x2 pixels (the pooled output with a fused pool), which start at (2 cy - cell_top, 2 cx -
/// cell_left).
struct PatchConvParams {
  std::uint32_t in_channels, height, width, out_channels, out_height, out_width, cells_height, cells_width, cell_top,
      cell_left, channel_blocks, padding, has_bias, activation;
  float slope;
  // conv2d_patch_coopmat.comp only: chunks of 16 input channels. A push constant, not a specialization constant, so
  // that one pipeline serves every channel count (each of DenseNet-121's took a compile of its own at tuning).
  std::uint32_t chunks;
};

/// conv2d_patch_coopmat.comp's constant_id values.
enum class PatchCoopmatConstant : std::uint32_t {
  output_fragments = 0,
  kernel_size = 2,
  pool = 3,
  stride = 4,
  dilation = 5,
  row_pairs = 6,
  source_fp16 = 10,
  result_fp16 = 11,
};

/// winograd_input_transform.comp's and winograd_output_transform.comp's push constants (winograd_conv.cpp).
struct WinogradInputParams {
  std::uint32_t channels, height, width, tiles_h, tiles_w, tiles, tiles_pitch, padding;
};

/// winograd_input_transform.comp's constant ids (source_fp16, transformed_fp16: its _fp16 variant only).
enum class WinogradInputConstant : std::uint32_t { source_fp16 = 10, transformed_fp16 = 11 };

/// winograd_output_transform.comp's constant ids (result_fp16: its _fp16 variant only).
enum class WinogradOutputConstant : std::uint32_t { pool = 0, residual = 1, result_fp16 = 11, residual_fp16 = 12 };

struct WinogradOutputParams {
  std::uint32_t out_channels, out_height, out_width, tiles_h, tiles_w, tiles, tiles_pitch, pool_height, pool_width,
      has_bias, activation;
  float slope;
};

enum class SplitKReduceConstant : std::uint32_t { pool = 0, result_fp16 = 1, residual = 2, residual_fp16 = 3 };

struct SplitKReduceParams {
  std::uint32_t m, n, groups, splits, out_channels, out_height, out_width, pool_height, pool_width, pool_pad_top,
      pool_pad_left, has_bias, activation;
  float slope;
};

/// The ids of tensor_storage.glsl's constants in the element-wise _fp16 kernels (pool2d, upsample_nearest,
/// concat_copy, tensor_convert): binding 0 read, binding 1 written.
enum class ElementwiseFp16Constant : std::uint32_t { source_fp16 = 0, result_fp16 = 1, second_source_fp16 = 2 };

struct ConvertParams {
  std::uint32_t count;
};

struct DepthwiseParams {
  std::uint32_t images, in_channels, height, width, out_channels, out_height, out_width, padding, has_bias, activation;
  float slope;
};

/// kernels/depthwise_conv2d.comp's specialization constants after the fp16 flags (ElementwiseFp16Constant): the
/// window, and the output rows one thread computes.
enum class DepthwiseConstant : std::uint32_t { kernel = 2, stride = 3, dilation = 4, rows = 5 };

enum class PoolKernelKind : std::uint32_t { max = 0, average = 1 };

struct Pool2dParams {
  std::uint32_t planes, height, width, out_height, out_width, kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left;
  PoolKernelKind kind;
  std::uint32_t count_include_pad;
};

struct GlobalPoolParams {
  std::uint32_t planes, plane_size, threads_per_plane;
  PoolKernelKind kind;
};

struct MatvecParams {
  std::uint32_t images, rows, columns, has_bias, activation;
  float slope;
};

/// Output rows of one kernels/matvec.comp workgroup (its workgroup size over its LANES).
constexpr std::uint32_t matvec_rows_per_group = 8;

struct ScaleChannelsParams {
  std::uint32_t count, plane_size;
};

struct ActivationParams {
  std::uint32_t count, activation;
  float slope;
};

struct SoftmaxParams {
  std::uint32_t images, channels, plane;
};

struct ChannelAffineParams {
  std::uint32_t count, channels, plane, activation;
  float slope;
};

struct UpsampleParams {
  std::uint32_t planes, height, width, scale;
};

/// Mirrors kernels/gather_channels.comp (ChannelGatherDesc's fields after the shapes).
struct GatherChannelsParams {
  std::uint32_t images, channels, in_channels, plane, first, inner, inner_stride, outer_stride;
};

struct ConcatCopyParams {
  std::uint32_t images, channels, plane, out_channels, channel_offset;
};

struct AddParams {
  std::uint32_t count, activation;
  float slope;
};

struct InstanceNormParams {
  std::uint32_t planes, channels, plane;
  float epsilon;
  std::uint32_t activation;
  float slope;
};

struct InstanceNormStatisticsParams {
  std::uint32_t planes, plane, chunks, chunk_size;
};

struct InstanceNormApplyParams {
  std::uint32_t planes, channels, plane, chunks, chunk_size;
  float epsilon;
  std::uint32_t activation;
  float slope;
};

// pad.comp numbers the modes as PadMode does.
static_assert(static_cast<int>(PadMode::constant) == 0 && static_cast<int>(PadMode::reflect) == 1 &&
              static_cast<int>(PadMode::edge) == 2);

// elementwise.comp numbers the operations as ElementwiseOp does.
static_assert(static_cast<int>(ElementwiseOp::add) == 0 && static_cast<int>(ElementwiseOp::subtract) == 1 &&
              static_cast<int>(ElementwiseOp::multiply) == 2 && static_cast<int>(ElementwiseOp::divide) == 3);

struct ElementwiseParams {
  std::uint32_t count, op, b_plane, plane;
};

struct PreluParams {
  std::uint32_t count, channels, plane;
};

struct PadParams {
  std::uint32_t count, height, width, out_height, out_width, pad_top, pad_left, mode;
  float value;
};

struct ConvTransposeParams {
  std::uint32_t count, in_channels, out_channels, groups, height, width, out_height, out_width, kernel_h, kernel_w,
      stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w, has_bias;
};

// resize.comp numbers the modes, coordinate transformations and roundings as ResizeDesc's enums do.
static_assert(static_cast<int>(ResizeMode::nearest) == 0 && static_cast<int>(ResizeMode::linear) == 1 &&
              static_cast<int>(ResizeMode::cubic) == 2);
static_assert(static_cast<int>(ResizeCoordinates::half_pixel) == 0 &&
              static_cast<int>(ResizeCoordinates::pytorch_half_pixel) == 1 &&
              static_cast<int>(ResizeCoordinates::align_corners) == 2 &&
              static_cast<int>(ResizeCoordinates::asymmetric) == 3 &&
              static_cast<int>(ResizeCoordinates::tf_half_pixel_for_nn) == 4);
static_assert(static_cast<int>(NearestRounding::round_prefer_floor) == 0 &&
              static_cast<int>(NearestRounding::round_prefer_ceil) == 1 &&
              static_cast<int>(NearestRounding::floor) == 2 && static_cast<int>(NearestRounding::ceil) == 3);

struct ResizeParams {
  std::uint32_t count, height, width, out_height, out_width, mode, coordinates, rounding, exclude_outside;
  float scale_h, scale_w, cubic_a;
};

/// Mirrors kernels/copy_strided.comp: a simplified StridedCopyDesc, axes past the rank of extent 1.
struct CopyStridedParams {
  std::uint32_t count, rank;
  std::int32_t input_offset, output_offset;
  std::uint32_t extent[6];
  std::int32_t input_stride[6], output_stride[6];
};

/// Threads per workgroup of the element-wise kernels (their local_size_x).
constexpr std::uint32_t elementwise_workgroup = 256;

/// Workgroups for a grid-stride loop over `elements` with the element-wise kernels' workgroup size.
std::uint32_t elementwise_groups(std::size_t elements);

}  // namespace corgy::vulkan

namespace corgy::vulkan {

/// A kernel: its name in kernels/ (kernels/<name>.comp), its storage buffers (bindings 0 .. bindings-1, in the
/// order the shader declares them) and the size of its push-constant block.
struct KernelInfo {
  const char* name;
  std::uint32_t bindings;
  std::uint32_t push_constant_bytes;
  /// Reads bindings that hold fp16 (an _fp16 variant): the recorder converts fp16 tensors for the others.
  bool reads_fp16 = false;
};

namespace kernels {
inline constexpr KernelInfo im2col{"im2col", 2, sizeof(Im2colParams)};
inline constexpr KernelInfo gemm_tiled{"gemm_tiled", 4, sizeof(GemmParams)};
inline constexpr KernelInfo conv2d_implicit_gemm{"conv2d_implicit_gemm", 5, sizeof(ImplicitGemmParams)};
inline constexpr KernelInfo conv2d_implicit_gemm_fp16{"conv2d_implicit_gemm_fp16", 5, sizeof(ImplicitGemmParams), true};
inline constexpr KernelInfo conv2d_coopmat_fp16{"conv2d_coopmat_fp16", 5, sizeof(ImplicitGemmParams), true};
inline constexpr KernelInfo conv2d_patch_coopmat_fp16{"conv2d_patch_coopmat_fp16", 4, sizeof(PatchConvParams), true};
inline constexpr KernelInfo conv2d_direct{"conv2d_direct", 4, sizeof(PatchConvParams)};
inline constexpr KernelInfo conv2d_direct_fp16{"conv2d_direct_fp16", 4, sizeof(PatchConvParams), true};
inline constexpr KernelInfo conv2d_split_k_reduce{"conv2d_split_k_reduce", 4, sizeof(SplitKReduceParams)};
inline constexpr KernelInfo conv2d_split_k_reduce_fp16{"conv2d_split_k_reduce_fp16", 4, sizeof(SplitKReduceParams),
                                                       true};
inline constexpr KernelInfo winograd_input_transform{"winograd_input_transform", 2, sizeof(WinogradInputParams)};
inline constexpr KernelInfo winograd_output_transform{"winograd_output_transform", 4, sizeof(WinogradOutputParams)};
inline constexpr KernelInfo winograd_input_transform_fp16{"winograd_input_transform_fp16", 2,
                                                          sizeof(WinogradInputParams), true};
inline constexpr KernelInfo winograd_output_transform_fp16{"winograd_output_transform_fp16", 4,
                                                           sizeof(WinogradOutputParams), true};
inline constexpr KernelInfo tensor_convert_fp16{"tensor_convert_fp16", 2, sizeof(ConvertParams), true};
inline constexpr KernelInfo pool2d_fp16{"pool2d_fp16", 2, sizeof(Pool2dParams), true};
inline constexpr KernelInfo upsample_nearest_fp16{"upsample_nearest_fp16", 2, sizeof(UpsampleParams), true};
inline constexpr KernelInfo concat_copy_fp16{"concat_copy_fp16", 2, sizeof(ConcatCopyParams), true};
inline constexpr KernelInfo gather_channels_fp16{"gather_channels_fp16", 2, sizeof(GatherChannelsParams), true};
inline constexpr KernelInfo depthwise_conv2d{"depthwise_conv2d", 4, sizeof(DepthwiseParams)};
inline constexpr KernelInfo depthwise_conv2d_fp16{"depthwise_conv2d_fp16", 4, sizeof(DepthwiseParams), true};
inline constexpr KernelInfo pool2d{"pool2d", 2, sizeof(Pool2dParams)};
inline constexpr KernelInfo activation{"activation", 2, sizeof(ActivationParams)};
inline constexpr KernelInfo softmax{"softmax", 2, sizeof(SoftmaxParams)};
inline constexpr KernelInfo channel_affine{"channel_affine", 4, sizeof(ChannelAffineParams)};
inline constexpr KernelInfo channel_affine_fp16{"channel_affine_fp16", 4, sizeof(ChannelAffineParams), true};
inline constexpr KernelInfo upsample_nearest{"upsample_nearest", 2, sizeof(UpsampleParams)};
inline constexpr KernelInfo concat_copy{"concat_copy", 2, sizeof(ConcatCopyParams)};
inline constexpr KernelInfo gather_channels{"gather_channels", 2, sizeof(GatherChannelsParams)};
inline constexpr KernelInfo add{"add", 3, sizeof(AddParams)};
inline constexpr KernelInfo add_fp16{"add_fp16", 3, sizeof(AddParams), true};
inline constexpr KernelInfo instance_norm{"instance_norm", 4, sizeof(InstanceNormParams)};
inline constexpr KernelInfo instance_norm_statistics{"instance_norm_statistics", 2,
                                                     sizeof(InstanceNormStatisticsParams)};
inline constexpr KernelInfo instance_norm_statistics_fp16{"instance_norm_statistics_fp16", 2,
                                                          sizeof(InstanceNormStatisticsParams), true};
inline constexpr KernelInfo instance_norm_apply{"instance_norm_apply", 5, sizeof(InstanceNormApplyParams)};
inline constexpr KernelInfo instance_norm_apply_fp16{"instance_norm_apply_fp16", 5, sizeof(InstanceNormApplyParams),
                                                     true};
inline constexpr KernelInfo pad{"pad", 2, sizeof(PadParams)};
inline constexpr KernelInfo pad_fp16{"pad_fp16", 2, sizeof(PadParams), true};
inline constexpr KernelInfo elementwise{"elementwise", 3, sizeof(ElementwiseParams)};
inline constexpr KernelInfo prelu{"prelu", 3, sizeof(PreluParams)};
inline constexpr KernelInfo conv_transpose2d{"conv_transpose2d", 4, sizeof(ConvTransposeParams)};
inline constexpr KernelInfo resize{"resize", 2, sizeof(ResizeParams)};
inline constexpr KernelInfo global_pool{"global_pool", 2, sizeof(GlobalPoolParams)};
inline constexpr KernelInfo global_pool_fp16{"global_pool_fp16", 2, sizeof(GlobalPoolParams), true};
inline constexpr KernelInfo matvec{"matvec", 4, sizeof(MatvecParams)};
inline constexpr KernelInfo matvec_fp16{"matvec_fp16", 4, sizeof(MatvecParams), true};
inline constexpr KernelInfo scale_channels{"scale_channels", 3, sizeof(ScaleChannelsParams)};
inline constexpr KernelInfo scale_channels_fp16{"scale_channels_fp16", 3, sizeof(ScaleChannelsParams), true};
inline constexpr KernelInfo copy_strided{"copy_strided", 2, sizeof(CopyStridedParams)};
inline constexpr KernelInfo copy_strided_fp16{"copy_strided_fp16", 2, sizeof(CopyStridedParams), true};
}  // namespace kernels

}  // namespace corgy::vulkan

// Arithmetic on tensors of any rank (vulkan_tensor_math.cpp, corgy/tensor_math.h).
namespace corgy::vulkan {

// The kernels number the operations as the enums do.
static_assert(static_cast<int>(BinaryOp::add) == 0 && static_cast<int>(BinaryOp::subtract) == 1 &&
              static_cast<int>(BinaryOp::multiply) == 2 && static_cast<int>(BinaryOp::divide) == 3 &&
              static_cast<int>(BinaryOp::power) == 4 && static_cast<int>(BinaryOp::minimum) == 5 &&
              static_cast<int>(BinaryOp::maximum) == 6);
static_assert(static_cast<int>(UnaryOp::sqrt) == 0 && static_cast<int>(UnaryOp::erf) == 1 &&
              static_cast<int>(UnaryOp::exp) == 2 && static_cast<int>(UnaryOp::log) == 3 &&
              static_cast<int>(UnaryOp::neg) == 4 && static_cast<int>(UnaryOp::abs) == 5 &&
              static_cast<int>(UnaryOp::reciprocal) == 6 && static_cast<int>(UnaryOp::floor) == 7 &&
              static_cast<int>(UnaryOp::ceil) == 8 && static_cast<int>(UnaryOp::square) == 9 &&
              static_cast<int>(UnaryOp::gelu) == 10 && static_cast<int>(UnaryOp::gelu_tanh) == 11);
static_assert(static_cast<int>(ReduceOp::mean) == 0 && static_cast<int>(ReduceOp::sum) == 1 &&
              static_cast<int>(ReduceOp::max) == 2 && static_cast<int>(ReduceOp::min) == 3);

/// The _fp16 variants' constant_id values: which bindings hold fp16 (the first input and the output as
/// ElementwiseFp16Constant numbers them, the second input of the two-input kernels).

struct BroadcastBinaryParams {
  std::uint32_t count, op, rank;
  std::uint32_t extent[6], a_stride[6], b_stride[6];
};

struct UnaryParams {
  std::uint32_t count, op;
};

struct ReduceAxisParams {
  std::uint32_t outer, length, inner, op;
};

struct SoftmaxAxisParams {
  std::uint32_t outer, length, inner, log_softmax;
};

struct BatchedMatmulParams {
  std::uint32_t count, rows, inner, cols, rank;
  std::uint32_t extent[6], a_stride[6], b_stride[6];
};

struct LayerNormParams {
  std::uint32_t outer, length, inner;
  float epsilon;
};

/// kernels/layer_norm.comp's specialization constant after the fp16 flags (ElementwiseFp16Constant): the neighbouring
/// lines one workgroup normalises together.
enum class LayerNormConstant : std::uint32_t { lines = 3 };

namespace kernels {
inline constexpr KernelInfo broadcast_binary{"broadcast_binary", 3, sizeof(BroadcastBinaryParams)};
inline constexpr KernelInfo broadcast_binary_fp16{"broadcast_binary_fp16", 3, sizeof(BroadcastBinaryParams), true};
inline constexpr KernelInfo unary{"unary", 2, sizeof(UnaryParams)};
inline constexpr KernelInfo unary_fp16{"unary_fp16", 2, sizeof(UnaryParams), true};
inline constexpr KernelInfo reduce_axis{"reduce_axis", 2, sizeof(ReduceAxisParams)};
inline constexpr KernelInfo reduce_axis_fp16{"reduce_axis_fp16", 2, sizeof(ReduceAxisParams), true};
inline constexpr KernelInfo softmax_axis{"softmax_axis", 2, sizeof(SoftmaxAxisParams)};
inline constexpr KernelInfo softmax_axis_fp16{"softmax_axis_fp16", 2, sizeof(SoftmaxAxisParams), true};
inline constexpr KernelInfo batched_matmul{"batched_matmul", 3, sizeof(BatchedMatmulParams)};
inline constexpr KernelInfo batched_matmul_fp16{"batched_matmul_fp16", 3, sizeof(BatchedMatmulParams), true};
inline constexpr KernelInfo layer_norm{"layer_norm", 4, sizeof(LayerNormParams)};
inline constexpr KernelInfo layer_norm_fp16{"layer_norm_fp16", 4, sizeof(LayerNormParams), true};
}  // namespace kernels

}  // namespace corgy::vulkan
