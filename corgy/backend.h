// Backend: the operations every backend implements. Layers call these and nothing backend-specific.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "corgy/activation.h"
#include "corgy/tensor_math.h"
#include "corgy/variable.h"

namespace corgy {

/// A convolution window given per axis: kernel height and width, strides, dilations and the four pads (ONNX's
/// kernel_shape, strides, dilations and pads [top, left, bottom, right]; Inception's 1x7 and 7x1 kernels).
struct Conv2dWindow {
  int kernel_h = 1;
  int kernel_w = 1;
  int stride_h = 1;
  int stride_w = 1;
  int dilation_h = 1;
  int dilation_w = 1;
  int pad_top = 0;
  int pad_left = 0;
  int pad_bottom = 0;
  int pad_right = 0;

  /// One kernel, stride and dilation for both axes and the same pad on all four sides.
  bool is_square() const {
    return kernel_h == kernel_w && stride_h == stride_w && dilation_h == dilation_w && pad_top == pad_left &&
           pad_top == pad_bottom && pad_top == pad_right;
  }
  int output_h(int h) const { return (h + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1; }
  int output_w(int w) const { return (w + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1; }
  bool operator==(const Conv2dWindow&) const = default;
};

/// Convolution geometry. Weights are OIHW: [out_channels][in_channels / groups][kernel_h][kernel_w], i.e. a
/// row-major [out_channels x (in_channels / groups * kernel_h * kernel_w)] matrix per the im2col convention.
///
/// Two forms, so that the common case costs nothing: a square, symmetric window (kernel x kernel, one stride, one
/// dilation, `padding` on every side) in the scalar fields, which every fast path (Winograd, packed GEMMs,
/// depthwise kernels, the Vulkan shaders, the fused blocks) reads; or, for any other window, `general` set (then the
/// scalar fields hold the height axis's values and the top pad, and only the general paths — im2col + GEMM on the
/// CPU and the GPU, the naive loops — may run it). Build the general form with with_window(), which keeps a window
/// that happens to be square in the scalar form. Code that reads the scalar fields must check is_square() first.
struct Conv2dDesc {
  int in_channels = 0;
  int out_channels = 0;
  int kernel = 1;
  int stride = 1;
  int padding = 0;
  int dilation = 1;
  int groups = 1;
  Activation activation{};
  /// The window when it is not square and symmetric; empty otherwise.
  std::optional<Conv2dWindow> general{};

  /// True when the scalar fields describe the whole window (no `general` window).
  bool is_square() const { return !general; }
  /// The window per axis, in either form.
  Conv2dWindow window() const {
    if (general) return *general;
    return {kernel, kernel, stride, stride, dilation, dilation, padding, padding, padding, padding};
  }
  /// Sets the window: the scalar form when `w` is square and symmetric, else `general`.
  void set_window(const Conv2dWindow& w) {
    kernel = w.kernel_h;
    stride = w.stride_h;
    dilation = w.dilation_h;
    padding = w.pad_top;
    general = w.is_square() ? std::nullopt : std::optional<Conv2dWindow>(w);
  }

  /// Output extent along one axis of a square window for an input extent `size` (output_h / output_w for any).
  int output_size(int size) const { return (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1; }
  int output_h(int h) const { return general ? general->output_h(h) : output_size(h); }
  int output_w(int w) const { return general ? general->output_w(w) : output_size(w); }
  /// Kernel taps per input channel: kernel_h * kernel_w.
  int taps() const { return general ? general->kernel_h * general->kernel_w : kernel * kernel; }
};

enum class PoolKind { max, average };

/// Pooling window. Padding may be asymmetric (darknet pads only right/bottom for size 2 stride 1).
/// Max pooling ignores padded cells; average pooling counts them as zeros when count_include_pad is set
/// (PyTorch's default) and otherwise divides by the number of real cells.
struct Pool2dDesc {
  PoolKind kind = PoolKind::max;
  int kernel_h = 2;
  int kernel_w = 2;
  int stride_h = 2;
  int stride_w = 2;
  int pad_top = 0;
  int pad_left = 0;
  int pad_bottom = 0;
  int pad_right = 0;
  bool count_include_pad = true;

  int output_h(int h) const { return (h + pad_top + pad_bottom - kernel_h) / stride_h + 1; }
  int output_w(int w) const { return (w + pad_left + pad_right - kernel_w) / stride_w + 1; }
};

/// Squeeze-and-excitation (Hu et al. 2018, as MobileNetV3 and EfficientNet use it) on an input (N, C, H, W): per
/// image, s = mean of each channel plane (C values), z = reduce_activation(reduce x s + reduce bias) (S values),
/// g = expand_activation(expand x z + expand bias) (C values), output = input scaled by g per channel. The two
/// weight matrices are 1x1 convolutions' OIHW tensors: reduce (S, C, 1, 1), expand (C, S, 1, 1).
struct SqueezeExciteDesc {
  int channels = 0;
  int squeeze_channels = 0;
  Activation reduce_activation{};
  Activation expand_activation{};
};

/// A squeeze-and-excitation block's parameters (SqueezeExciteDesc): reduce_weights (S, C, 1, 1), expand_weights
/// (C, S, 1, 1), the biases (1, 1, 1, S) and (1, 1, 1, C) or null.
struct SqueezeExciteWeights {
  const Variable* reduce_weights = nullptr;
  const Variable* reduce_bias = nullptr;
  const Variable* expand_weights = nullptr;
  const Variable* expand_bias = nullptr;
};

/// One convolution of a fused block (Backend::inverted_residual): its geometry, OIHW weights and bias (or null).
struct ConvStage {
  Conv2dDesc desc;
  const Variable* weights = nullptr;
  const Variable* bias = nullptr;
};

/// MobileNetV2's inverted residual block (Sandler et al. 2018) without squeeze-and-excitation: a pointwise expansion
/// (C -> E, 1x1), a depthwise convolution (E -> E, any kernel, stride and padding) and a pointwise projection
/// (E -> O, 1x1), each with its activation; with a residual, the block's output is
/// project.activation(projection + residual). No projection (project.weights null): the block's output is the
/// depthwise convolution's (the first half of a block with squeeze-and-excitation). No expansion (expand.weights
/// null, E = C: the first blocks of MobileNetV2 and MobileNetV3): the depthwise convolution reads the input; such a
/// block always has its projection. With a squeeze-and-excitation (excite.channels > 0; a block with an expansion
/// and a projection: MobileNetV3's and EfficientNet's), its gates scale the depthwise output before the projection
/// reads it (Backend::squeeze_excite). Backend::inverted_residual.
struct InvertedResidualDesc {
  ConvStage expand;
  ConvStage depthwise;
  ConvStage project;
  SqueezeExciteDesc excite{};
  SqueezeExciteWeights excite_weights{};
};

/// One entry of a profiled forward (Backend::set_profiling): what computed part of a layer, and how long it took.
/// A layer may have several entries (a GPU backend records one per dispatch).
struct OpProfile {
  int layer = -1;         ///< Sequential's layer index (Backend::begin_layer), -1 outside a model's forward
  std::string algorithm;  ///< e.g. "im2col + OpenBLAS sgemm", "winograd F(4x4, 3x3)", "gemm_tiled 64x64x16"
  double ms = 0.0;        ///< CPU backends: wall time; GPU backends: device time from timestamp queries
};

/// How Pad fills the cells outside the input: a constant, the input mirrored at its border without repeating the
/// border (reflect: ... 2 1 | 0 1 2 3 | 2 1 ...), or the border repeated (edge: 0 0 | 0 1 2 3 | 3 3).
enum class PadMode { constant, reflect, edge };

/// Padding of each plane: (N, C, H, W) -> (N, C, top + H + bottom, left + W + right). Reflect needs every pad
/// smaller than the input extent along its axis (as PyTorch and ONNX do).
struct PadDesc {
  PadMode mode = PadMode::constant;
  int top = 0;
  int left = 0;
  int bottom = 0;
  int right = 0;
  /// The fill of PadMode::constant.
  float value = 0.0f;
};

/// Transposed convolution geometry (PyTorch's ConvTranspose2d, ONNX's ConvTranspose): every input pixel (iy, ix)
/// of channel ic scatters weights[ic][oc'][ky][kx] * value to output pixel (iy * stride_h - pad_top + ky *
/// dilation_h, ix * stride_w - pad_left + kx * dilation_w) of each output channel oc of its group (oc' = oc's index
/// within the group), where that pixel lies inside the output. Weights are (in_channels, out_channels / groups,
/// kernel_h, kernel_w), PyTorch's and ONNX's layout. The pads crop the full result; output_padding adds rows and
/// columns at the bottom and right (reached by taps only when stride > 1 or pad_bottom / pad_right > 0).
struct ConvTranspose2dDesc {
  int in_channels = 0;
  int out_channels = 0;
  int kernel_h = 1;
  int kernel_w = 1;
  int stride_h = 1;
  int stride_w = 1;
  int pad_top = 0;
  int pad_left = 0;
  int pad_bottom = 0;
  int pad_right = 0;
  int output_padding_h = 0;
  int output_padding_w = 0;
  int dilation_h = 1;
  int dilation_w = 1;
  int groups = 1;

  /// Output extent for an input extent `h` or `w`: (h - 1) * stride - pads + dilation * (kernel - 1) + 1 +
  /// output_padding.
  int output_h(int h) const {
    return (h - 1) * stride_h - pad_top - pad_bottom + dilation_h * (kernel_h - 1) + 1 + output_padding_h;
  }
  int output_w(int w) const {
    return (w - 1) * stride_w - pad_left - pad_right + dilation_w * (kernel_w - 1) + 1 + output_padding_w;
  }
};

/// How Backend::resize computes an output pixel from the input: the nearest input pixel, bilinear interpolation of
/// the 2 x 2 nearest, or bicubic interpolation of the 4 x 4 nearest (ONNX Resize's modes nearest, linear, cubic).
enum class ResizeMode { nearest, linear, cubic };

/// Where output index x (along an axis of `in` input and `out` output cells, `scale` the axis's scale) falls in the
/// input, as ONNX Resize's coordinate_transformation_mode defines it:
///  - half_pixel: (x + 0.5) / scale - 0.5
///  - pytorch_half_pixel: the same, but 0 when out is 1 (PyTorch's linear and cubic with align_corners=False)
///  - align_corners: x * (in - 1) / (out - 1), 0 when out is 1 (align_corners=True)
///  - asymmetric: x / scale (PyTorch's nearest; TensorFlow's resize without half-pixel centers)
///  - tf_half_pixel_for_nn: (x + 0.5) / scale (TensorFlow 1's nearest with half-pixel centers)
enum class ResizeCoordinates { half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn };

/// How ResizeMode::nearest rounds the input coordinate to a pixel (ONNX Resize's nearest_mode): to the nearest
/// integer with halves going down or up, or always down (PyTorch's nearest) or up. Then clamped into the input.
enum class NearestRounding { round_prefer_floor, round_prefer_ceil, floor, ceil };

/// Resizing of every plane: (N, C, H, W) -> (N, C, Ho, Wo), output's H and W chosen by the caller. The coordinates
/// are computed in float32 as ONNX Runtime computes them (division by the scale). Linear clamps the coordinate into
/// [0, size - 1]; cubic reads pixels outside the input as the nearest edge pixel, or with exclude_outside gives
/// them weight 0 and renormalises the others (ONNX's exclude_outside).
struct ResizeDesc {
  ResizeMode mode = ResizeMode::nearest;
  ResizeCoordinates coordinates = ResizeCoordinates::half_pixel;
  NearestRounding rounding = NearestRounding::round_prefer_floor;
  /// Output extent / input extent per axis: the scale given to ONNX's Resize, or Ho / H and Wo / W for sizes.
  float scale_h = 1.0f;
  float scale_w = 1.0f;
  /// The cubic convolution's a (ONNX's cubic_coeff_a; PyTorch's bicubic uses -0.75).
  float cubic_a = -0.75f;
  bool exclude_outside = false;
};

/// Which input channel each output channel copies (Backend::gather_channels): output channel k = (k / inner) * inner
/// + k % inner reads input channel first + (k / inner) * outer_stride + (k % inner) * inner_stride. A channel slice
/// [start, stop) with step s is {start, C_out, s, 0}; ShuffleNet's channel shuffle of C = g * m channels in g groups
/// (output channel j * g + i is input channel i * m + j) is {0, g, m, 1}.
struct ChannelGatherDesc {
  int first = 0;
  int inner = 1;
  int inner_stride = 1;
  int outer_stride = 0;

  int source_channel(int k) const { return first + (k / inner) * outer_stride + (k % inner) * inner_stride; }
};

/// A box of elements copied from one row-major tensor to another (Backend::copy_strided): for every index
/// (i_0, ..., i_{rank-1}) with 0 <= i_k < extent[k],
///   output[output_offset + sum_k i_k * output_stride[k]] = input[input_offset + sum_k i_k * input_stride[k]].
/// Offsets and strides count elements of the Variables' memory. An input stride may be 0 (the same value broadcast
/// along that axis: Expand) or negative (a reversed slice); the output's addresses must be distinct. One operation
/// does the data movement of tensors of any rank (TensorDims): Transpose (input strides permuted), Slice with steps,
/// Split, Concat along any axis (one copy per input into its part of the output), Expand, Gather of one index. The
/// caller keeps every address inside the two Variables.
struct StridedCopyDesc {
  static constexpr int max_rank = 6;

  int rank = 0;
  std::array<int, max_rank> extent{};
  std::int64_t input_offset = 0;
  std::array<std::int64_t, max_rank> input_stride{};
  std::int64_t output_offset = 0;
  std::array<std::int64_t, max_rank> output_stride{};

  /// Elements copied: the product of the extents (1 for rank 0).
  std::size_t count() const;
  /// The same copy with as few axes as it takes: axes of extent 1 dropped, and each axis merged into the one before
  /// it where both tensors step over it contiguously (input_stride[k - 1] = input_stride[k] * extent[k], the same for
  /// the output). A plain copy of n elements becomes rank 1, extent n, strides 1. Backends run this form.
  StridedCopyDesc simplified() const;
  /// True when every address lies inside an input of `input_count` and an output of `output_count` elements, the
  /// rank is 0..max_rank and every extent >= 1 (what a layer checks before calling copy_strided).
  bool fits(std::size_t input_count, std::size_t output_count) const;
};

/// The arithmetic of Backend::elementwise.
enum class ElementwiseOp { add, subtract, multiply, divide };

/// The operations a backend implements. Shapes are validated by the layers before these are called;
/// a backend may assume them consistent. Each call writes all of `output` (copy_strided only what its desc names).
///
/// A CPU backend runs each call as it comes. A GPU backend may record calls between begin_forward() and
/// end_forward() and run them in one submission, so no call may read results on the host before
/// end_forward() returns.
class Backend {
 public:
  virtual ~Backend() = default;

  /// "naive", "blas", "vulkan", ...
  virtual std::string name() const = 0;
  /// Worker threads used by the backend's CPU loops and BLAS calls (0 = all cores).
  virtual void set_threads(int threads) { (void)threads; }
  virtual int threads() const { return 1; }

  /// Called for each tensor that stays constant across forwards (weights, biases) before the first forward
  /// on this backend, so a GPU backend can upload it once in the layout its kernels want. Called again for
  /// the same tensor (same Storage::id) after its values changed (Sequential::weights_changed()).
  virtual void upload_constant(const Variable& tensor) { (void)tensor; }
  /// Called by Sequential after it plans a forward for an input shape, with the ids (Storage::id) of the
  /// storages that hold only intermediates, which no caller reads on the host after a forward. A GPU backend
  /// keeps those in device memory and never copies them back; whatever else an operation writes must be
  /// readable on the host after end_forward(). Replaces the previous set. CPU backends ignore it.
  virtual void set_device_only(std::span<const std::uint64_t> storage_ids) { (void)storage_ids; }
  /// How many input shapes the model keeps plans for (Sequential::set_kept_plans): a backend that plans an
  /// operation per input shape (packed weights, a chosen algorithm) keeps that many per operation too, so that
  /// alternating shapes do not plan again. Called before the first forward and at every change.
  virtual void set_kept_plans(int count) { (void)count; }
  /// Bracket one model forward.
  virtual void begin_forward() {}
  virtual void end_forward() {}

  /// Profiling (model_benchmark --profile): while on, the backend records what computes each layer and how long
  /// it takes. Sequential calls begin_layer(i) before the operations of layer i and begin_layer(-1) after the
  /// last; take_profile() returns the entries recorded since the previous call and forgets them. Off by default;
  /// a backend that cannot profile returns no entries.
  virtual void set_profiling(bool enabled) { (void)enabled; }
  virtual void begin_layer(int index) { (void)index; }
  virtual std::vector<OpProfile> take_profile() { return {}; }

  /// output = activation(conv(input, weights) + bias). input (N, Cin, H, W), weights OIHW
  /// (Cout, Cin/groups, kernel_h, kernel_w), bias (1, 1, 1, Cout) or null, output (N, Cout, Ho, Wo). Every backend
  /// runs any window (Conv2dDesc::general too) here and in conv2d_add and conv2d_maxpool; the fused blocks
  /// (squeeze_excite, inverted_residual) take square windows only (fusion.cpp fuses nothing else).
  virtual void conv2d(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
                      Variable& output) = 0;
  /// A convolution whose output only a max pool reads, as one operation (Sequential fuses such pairs; see
  /// corgy/model/fusion.h): output = maxpool(activation(conv(input, weights) + bias)), (N, Cin, H, W) ->
  /// (N, Cout, Hp, Wp). `pool` is a max pool over the convolution's (N, Cout, Ho, Wo) output.
  virtual void conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input,
                              const Variable& weights, const Variable* bias, Variable& output) = 0;
  /// A convolution whose output only an add reads, with the add (and the activation after it) folded in
  /// (Sequential fuses such pairs; corgy/model/fusion.h): output = activation(conv(input, weights) + bias + residual),
  /// desc.activation being the one applied after the add. residual has output's shape (N, Cout, Ho, Wo) and is
  /// never output itself.
  virtual void conv2d_add(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
                          const Variable& residual, Variable& output) = 0;
  /// A convolution of a per-channel affine and activation of the channel concatenation of `inputs` (DenseNet's
  /// BN-ReLU-Conv on its concatenated features; Sequential fuses a Concat, a ChannelAffine and a pointwise
  /// convolution into it, corgy/model/fusion.h): output = conv(a) with a = input_activation(concat(inputs) *
  /// scale[c] + shift[c]), the convolution's bias and desc.activation as in conv2d; zero padding pads a. inputs
  /// (N, C_i, H, W) with sum C_i = desc.in_channels; scale, shift (1, 1, 1, desc.in_channels). With `input_pool`
  /// (an average pool without padding, or null), the convolution (then pointwise, without activation) reads
  /// avgpool(a): Sequential fuses such a pool after the convolution into it (DenseNet's transitions), as the two
  /// commute and the convolution then runs on a quarter of the pixels.
  virtual void preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs,
                                   const Variable& scale, const Variable& shift, Activation input_activation,
                                   const Pool2dDesc* input_pool, const Variable& weights, const Variable* bias,
                                   Variable& output) = 0;
  /// Squeeze-and-excitation as one operation (SqueezeExciteDesc; Sequential fuses the pool, the two 1x1 convolutions
  /// and the product into it): input and output (N, C, H, W); reduce_weights (S, C, 1, 1), expand_weights
  /// (C, S, 1, 1); the biases (1, 1, 1, S) and (1, 1, 1, C) or null.
  virtual void squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                              const Variable* reduce_bias, const Variable& expand_weights, const Variable* expand_bias,
                              Variable& output) = 0;
  /// A squeeze-and-excitation block and the pointwise convolution that reads its output, as one operation
  /// (Sequential fuses them, corgy/model/fusion.h; MobileNetV3's and EfficientNet's projections): output =
  /// conv.activation(conv(squeeze_excite(input)) + bias [+ residual]). input (N, C, H, W); conv a 1x1 convolution of
  /// stride 1 and no padding, C -> O, weights (O, C, 1, 1), bias (1, 1, 1, O) or null; residual and output
  /// (N, O, H, W), residual null without the add. A backend may apply each (image, channel) gate while it reads the
  /// convolution's input instead of writing the scaled tensor.
  virtual void squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                                     const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                                     const Variable* bias, const Variable* residual, Variable& output) = 0;
  /// An inverted residual block as one operation (Sequential fuses the three convolutions into it; a backend may
  /// then keep the expanded tensor, E channels at full resolution, in cache band by band instead of writing it out):
  /// input (N, C, H, W) -> output (N, O, Ho, Wo) (O = E without a projection); residual (N, O, Ho, Wo) or null
  /// (always null without a projection).
  virtual void inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                                 Variable& output) = 0;
  /// Max or average pooling, (N, C, H, W) -> (N, C, Ho, Wo).
  virtual void pool2d(const Pool2dDesc& desc, const Variable& input, Variable& output) = 0;
  /// Element-wise activation; input and output have the same shape and may be the same Variable.
  virtual void activation(Activation activation, const Variable& input, Variable& output) = 0;
  /// Fully connected: output[n][o] = activation(sum_i weights[o][i] * input[n][i] + bias[o]).
  /// input (N, I, 1, 1) or any (N, C, H, W) with C*H*W = I; weights (1, 1, O, I); bias (1, 1, 1, O) or null;
  /// output (N, O, 1, 1).
  virtual void linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
                      Variable& output) = 0;
  /// Softmax over the channel axis, separately for every (n, h, w).
  virtual void softmax(const Variable& input, Variable& output) = 0;
  /// output[n][c] = activation(input[n][c] * scale[c] + shift[c]) (inference batch norm, folded; DenseNet's batch
  /// norm and ReLU before each convolution). scale, shift (1, 1, 1, C).
  virtual void channel_affine(const Variable& input, const Variable& scale, const Variable& shift,
                              Activation activation, Variable& output) = 0;
  /// Nearest-neighbour upsampling by an integer factor: (N, C, H, W) -> (N, C, H*scale, W*scale).
  virtual void upsample_nearest(int scale, const Variable& input, Variable& output) = 0;
  /// Transposed convolution (ConvTranspose2dDesc): input (N, in_channels, H, W), weights (in_channels,
  /// out_channels / groups, kernel_h, kernel_w), bias (1, 1, 1, out_channels) or null, output (N, out_channels,
  /// desc.output_h(H), desc.output_w(W)).
  virtual void conv_transpose2d(const ConvTranspose2dDesc& desc, const Variable& input, const Variable& weights,
                                const Variable* bias, Variable& output) = 0;
  /// Resizes every plane as `desc` says: (N, C, H, W) -> (N, C, Ho, Wo), Ho and Wo those of output.
  virtual void resize(const ResizeDesc& desc, const Variable& input, Variable& output) = 0;
  /// Concatenates along channels; every input has output's N, H, W.
  virtual void concat_channels(std::span<const Variable* const> inputs, Variable& output) = 0;
  /// Copies whole channel planes: output (N, C_out, H, W) channel k is input (N, C_in, H, W) channel
  /// desc.source_channel(k), which the caller keeps inside [0, C_in).
  virtual void gather_channels(const ChannelGatherDesc& desc, const Variable& input, Variable& output) = 0;
  /// Copies a box of elements from input to output as `desc` says (StridedCopyDesc): the data movement of tensors of
  /// any rank (Transpose, Slice, Split, Concat, Expand, Gather). Unlike the other operations it writes only the
  /// addresses the desc names, so several calls may fill one output (a Concat along any axis).
  virtual void copy_strided(const StridedCopyDesc& desc, const Variable& input, Variable& output) = 0;
  /// output = activation(a + b), all the same shape.
  virtual void add(const Variable& a, const Variable& b, Activation activation, Variable& output) = 0;
  /// Instance normalisation: each plane (n, c) is normalised by its own mean and biased variance over (H, W),
  /// output = activation((input - mean) / sqrt(variance + epsilon) * scale[c] + shift[c]). scale, shift (1, 1, 1, C).
  virtual void instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                             Activation activation, Variable& output) = 0;
  /// output = a op b, element-wise, output of a's shape. b has a's shape, or (N, C, 1, 1) with a's N and C: one
  /// value per plane, broadcast over H and W (a squeeze-and-excitation gate).
  virtual void elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) = 0;
  /// PReLU with one slope per channel: output = input where input > 0, else input * slope[c]. slope (1, 1, 1, C).
  virtual void prelu(const Variable& input, const Variable& slope, Variable& output) = 0;
  /// Pads every plane as `desc` says: (N, C, H, W) -> (N, C, H + top + bottom, W + left + right).
  virtual void pad(const PadDesc& desc, const Variable& input, Variable& output) = 0;
  /// c = op(a) x op(b) for matrices (1, 1, rows, cols); op transposes when the flag is set.
  virtual void matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) = 0;

  // --- Arithmetic on tensors of any rank (corgy/tensor_math.h). The Variables hold row-major tensors whatever their
  // 4-D shapes say (TensorDims::folded); the descriptions give the extents that matter.
  /// output = a op b, element-wise with NumPy broadcasting: output holds desc.count() values, row-major over
  /// desc.extent; the value at output index (i_0, ..) reads a and b at sum_k i_k * desc.a_stride[k] and
  /// sum_k i_k * desc.b_stride[k]. a or b may be a constant (uploaded) or an activation; output is neither.
  virtual void broadcast_binary(BinaryOp op, const BroadcastDesc& desc, const Variable& a, const Variable& b,
                                Variable& output) = 0;
  /// output = op(input) element-wise; the same count, and output may be input.
  virtual void unary(UnaryOp op, const Variable& input, Variable& output) = 0;
  /// Reduces input, read as (axis.outer, axis.length, axis.inner), along its middle axis: output (axis.outer,
  /// axis.inner).
  virtual void reduce_axis(ReduceOp op, const AxisExtent& axis, const Variable& input, Variable& output) = 0;
  /// Softmax (or, with `log`, log-softmax) of input, read as (axis.outer, axis.length, axis.inner), along its middle
  /// axis; output of the same count.
  virtual void softmax_axis(const AxisExtent& axis, bool log, const Variable& input, Variable& output) = 0;
  /// output[i] = a[i] x b[i] for every index i of desc.batch (BatchedMatmulDesc): a (rows x inner) and b
  /// (inner x cols) matrices packed one after another, output (rows x cols) per batch index.
  virtual void batched_matmul(const BatchedMatmulDesc& desc, const Variable& a, const Variable& b,
                              Variable& output) = 0;
  /// Layer normalisation of input, read as (axis.outer, axis.length, axis.inner), along its middle axis: each line of
  /// `length` values is normalised by its own mean and biased variance, output = (x - mean) / sqrt(variance +
  /// epsilon) * scale[l] + shift[l] at position l of the line; scale and shift hold `length` values. ConvNeXt's
  /// LayerNorm over the last axis (inner 1) and over the channels of (N, C, H, W) (inner H * W).
  virtual void layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                          const Variable& input, Variable& output) = 0;
};

/// Names of the backends built into this library, in order of preference for "auto" (best first).
std::vector<std::string> available_backends();

/// Creates a backend by name: "naive", "blas", "vulkan" or "auto" (the best that works here; says on stderr
/// what it chose and why). "vulkan:<index>" or "vulkan:<part of the name>" picks a device (vulkan_devices()).
/// "blas:im2col" computes every convolution as im2col + OpenBLAS sgemm (corgy's baseline), where "blas" picks the
/// fastest algorithm per layer. A suffix "+fp16" asks for fp16 precision (Precision), e.g. "vulkan+fp16" or
/// "vulkan:0+fp16"; it comes after the device, so it never reads as part of a device name.
/// Throws corgy::Error for an unknown or unavailable name.
std::unique_ptr<Backend> make_backend(const std::string& name, int threads = 0);

/// The arithmetic precision a backend may use.
///  - fp32: everything in fp32 (the default, and all the CPU backends do).
///  - fp16 (Vulkan; the other backends compute in fp32): weights and the intermediates only the device reads are
///    kept in fp16, sums are accumulated in fp32, and convolutions run on tensor cores where the device offers
///    cooperative matrices. The model's input and the outputs a caller reads stay fp32. Results differ from fp32
///    by about 1e-3 of their magnitude. A device without 16-bit storage runs fp32.
enum class Precision { fp32, fp16 };

/// What make_backend can set beyond the name.
struct BackendOptions {
  int threads = 0;
  /// Also set by a "+fp16" (or "+fp32") suffix of the backend name: "vulkan+fp16", "vulkan:1+fp16".
  Precision precision = Precision::fp32;
  /// Turns on the backend's own debug checks where it has them (Vulkan: the Khronos validation layer, and a
  /// finding of it makes end_forward() throw corgy::Error; see VulkanOptions::validation). For tests; slower.
  bool validation = false;
  /// Vulkan: time the candidate plans of each new convolution shape on the device at its first forward and keep
  /// the fastest, remembered in a cache file (VulkanConvolutionOptions::tuning, docs/vulkan.md#tuning); false: the
  /// static tables. The blas backend times its candidates whatever this says (blas/conv_tuner.h).
  bool tuning = true;
  /// The tuning cache file (VulkanOptions::tuning_cache, BlasOptions::tuning_cache: one file per backend kind);
  /// empty: the backend's default file under $XDG_CACHE_HOME/corgy (or ~/.cache/corgy).
  std::string tuning_cache{};
};
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options);

}  // namespace corgy
