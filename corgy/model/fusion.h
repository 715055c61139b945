// Fusion: the model-level rewrites that let a backend compute several layers as one operation. Each rewrite
// replaces a small pattern of layers by one fused layer that every backend implements (the naive one as the layers
// it replaces), so the layer harness checks the fused paths like any layer.
#pragma once

#include <memory>
#include <vector>

#include "corgy/layers/layer.h"

namespace corgy {

/// A layer of a model as the fusion pass sees it.
struct FusionNode {
  const Layer* layer = nullptr;
  std::vector<int> inputs;  // producer layers; -1 is the model input
  bool keep = false;        // read by the caller after a forward (marked output, or the last layer)
  bool absorbed = false;    // computed inside a later node's fused layer: no step, no output of its own
  /// A second layer, or null: then `layer` writes a temporary slot of the node's own, which `then` reads to write
  /// the node's output (a rewrite with one step more than the nodes it replaces: rule 12's pool, then its bias).
  const Layer* then = nullptr;
};

/// The model after fusion: node i computes layer i's output with `layer` (the model's own, or one of
/// `fused_layers`) from `inputs`, unless it is absorbed.
struct FusedGraph {
  std::vector<FusionNode> nodes;
  std::vector<std::unique_ptr<Layer>> fused_layers;
};

/// Applies every rewrite, each to the result of the ones before, to layers whose outputs only the pattern reads
/// (never a kept output, never a layer read from elsewhere):
///  1. x * sigmoid(x) (an Elementwise multiply of a tensor by its own Sigmoid; how exporters write SiLU / swish)
///     becomes one swish ActivationLayer; x * hard_sigmoid(x) (an Elementwise multiply of a tensor by a ChannelAffine
///     of it with scale 1/6, shift 1/2 and clipped_relu(1): how exporters before ONNX opset 14 write HardSwish)
///     becomes one hard_swish ActivationLayer;
///  2. an activation layer after a convolution without one, or after an Add without one, moves into it
///     (a FusedConv2d; the Add's own activation);
///  3. an Add of a convolution's output (the convolution without activation) and another tensor becomes a
///     FusedConv2d that adds that tensor, with the Add's activation (ResNet's residual connections);
///  4. a convolution whose output only a max pool reads becomes a Conv2dMaxPool (Tiny YOLO);
///  5. squeeze-and-excitation, AvgPool2d::global() -> 1x1 convolution -> 1x1 convolution -> Elementwise multiply of
///     the pool's input by the result, becomes a SqueezeExcite (MobileNetV3, EfficientNet);
///  6. a 1x1 convolution -> a depthwise convolution -> a 1x1 convolution (with or without a residual add from rule
///     3) becomes an InvertedResidual (MobileNetV2's blocks); then a 1x1 convolution -> a depthwise convolution
///     whose output something else reads becomes one without the projection (MobileNetV3's and EfficientNet's
///     blocks, whose squeeze-and-excitation sits before the projection).
///  7. GELU as exporters write it, x * (erf(x / sqrt(2)) + 1) * 0.5 (the scalar steps as ChannelAffine or
///     BroadcastBinary layers), becomes one gelu ActivationLayer (applied first, so that rule 2 fuses it into a
///     convolution before it like any activation), its tanh form x * (tanh(sqrt(2 / pi) * (x + 0.044715 *
///     x * (x * x))) + 1) * 0.5 one Unary gelu_tanh; and LayerNorm as ReduceMean / Sub / Pow / ReduceMean / Add /
///     Sqrt / Div along one axis (ReduceAxis, BroadcastBinary, Unary square, a scalar shift, Unary sqrt,
///     BroadcastBinary), with the scale and shift after it (BroadcastBinary constants along that axis, or a
///     ChannelAffine when the axis is the channels), becomes one LayerNorm (ConvNeXt's blocks).
///  8. a ChannelAffine (a batch norm no convolution precedes, with its activation) whose output only a pointwise
///     convolution (a Conv2d or a FusedConv2d without a residual) reads becomes a PreactivatedConv2d, and the Concat
///     before it joins it when only the ChannelAffine reads the Concat (DenseNet's BN-ReLU-Conv); then such a layer
///     with a pointwise convolution without activation whose output only an average pool without padding (and of
///     stride 2 or more, or global) reads takes the pool, applied to its input before the convolution (the two
///     commute; DenseNet's transitions then convolve a quarter of the pixels).
///  9. a SqueezeExcite (rule 5) whose output only a pointwise convolution reads (a Conv2d or a FusedConv2d, with or
///     without a residual from rule 3) becomes a SqueezeExciteConv2d (MobileNetV3's and EfficientNet's projections):
///     the backend may apply the gates while it reads the convolution's input, so the scaled tensor is never
///     written.
/// 10. a TensorLinear without activation whose output only a BroadcastBinary add of a constant along its last axis
///     reads becomes a TensorLinear with that bias (exporters write a Linear on a tensor of rank 3 or more as MatMul
///     + Add: ConvNeXt's channels-last blocks), which the backends add in the GEMM's epilogue.
/// 11. a Transpose (0, 2, 3, 1) of a rank-4 tensor, then a chain of layers that each work along the last axis
///     (LayerNorm over it, TensorLinear, Unary, activation), then the Transpose (0, 3, 1, 2) back, becomes the same
///     chain on the channels-first tensor without the transposes: LayerNorm over the channels, 1x1 Conv2d layers
///     (the Linear weights viewed as OIHW) and the same element-wise layers (ConvNeXt's blocks and its downsampling
///     layers' LayerNorm2d); the convolutions then run the backends' convolution GEMMs, and rule 2 runs once more
///     to give them the activation after them (ConvNeXt's GELU into its first 1x1 convolution's epilogue).
/// 12. an average pool of stride 1 whose output is as large as its input (any padding, count_include_pad or not;
///     or no padding after a zero Pad that only it reads, which becomes its padding), whose output only a 1x1
///     convolution (a Conv2d or a FusedConv2d without a residual) with fewer output than input channels reads,
///     becomes that convolution without bias and activation on the pool's input, then the pool, then the bias and
///     the activation as a ChannelAffine of scale 1 (Inception v3's pool branches: avg_pool2d(x, 3, 1, 1) -> 1x1
///     convolution, 192 -> 32, 768 -> 192, 2048 -> 192). The pool is the same linear map of every channel plane and
///     the convolution a linear map of every pixel's channels, so the two commute; the bias waits until after the
///     pool, whose border windows' weights do not sum to 1 with count_include_pad. The pool then averages the
///     fewer channels. Where the pattern has two nodes (no Pad), the last one runs two layers (FusionNode::then).
/// 13. an InvertedResidual with an expansion and without a projection (rule 6) whose output only a
///     SqueezeExciteConv2d (rule 9) reads becomes one InvertedResidual with the squeeze-and-excitation between its
///     depthwise convolution and its projection, and that layer's residual (MobileNetV3's and EfficientNet's
///     blocks): the backend gets the block from its input to its output.
/// Convolutions with reflect or edge padding are left alone (they run as Pad + convolution, padded_conv.h).
FusedGraph fuse_layers(std::vector<FusionNode> nodes);

}  // namespace corgy
