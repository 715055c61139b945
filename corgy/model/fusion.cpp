#include "corgy/model/fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "corgy/layers/activation_layer.h"
#include "corgy/layers/add.h"
#include "corgy/layers/avgpool2d.h"
#include "corgy/layers/broadcast_binary.h"
#include "corgy/layers/channel_affine.h"
#include "corgy/layers/concat.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/conv2d_maxpool.h"
#include "corgy/layers/elementwise.h"
#include "corgy/layers/fused_conv2d.h"
#include "corgy/layers/inverted_residual.h"
#include "corgy/layers/layer_norm.h"
#include "corgy/layers/maxpool2d.h"
#include "corgy/layers/pad.h"
#include "corgy/layers/preactivated_conv2d.h"
#include "corgy/layers/reduce_axis.h"
#include "corgy/layers/squeeze_excite.h"
#include "corgy/layers/squeeze_excite_conv2d.h"
#include "corgy/layers/tensor_linear.h"
#include "corgy/layers/transpose.h"
#include "corgy/layers/unary.h"

namespace corgy {

namespace {

/// Readers of each node's output among the live nodes (model input reads are not counted).
std::vector<int> count_readers(const std::vector<FusionNode>& nodes) {
  std::vector<int> readers(nodes.size(), 0);
  for (const FusionNode& node : nodes) {
    if (node.absorbed) continue;
    for (int input : node.inputs) {
      if (input >= 0) ++readers[input];
    }
  }
  return readers;
}

class Rewriter {
 public:
  explicit Rewriter(FusedGraph& graph) : graph_(graph), readers_(count_readers(graph.nodes)) {}

  FusionNode& node(int i) { return graph_.nodes[i]; }
  const FusionNode& graph_node(int i) const { return graph_.nodes[i]; }
  int size() const { return static_cast<int>(graph_.nodes.size()); }

  /// Node i is a live layer of type L (null when it is not, or it is the model input, or it runs two layers: a
  /// rewrite's own, FusionNode::then, which the rules after it leave alone).
  template <class L>
  const L* as(int i) const {
    if (i < 0 || graph_.nodes[i].absorbed || graph_.nodes[i].then) return nullptr;
    return dynamic_cast<const L*>(graph_.nodes[i].layer);
  }
  /// Node i's output is read only by the pattern being rewritten, `uses` times, and not by the caller.
  bool private_to_pattern(int i, int uses = 1) const { return i >= 0 && !graph_.nodes[i].keep && readers_[i] == uses; }

  /// Node `output` becomes `layer` reading `inputs`; the nodes in `absorbed` get no step of their own.
  void rewrite(int output, std::unique_ptr<Layer> layer, std::vector<int> inputs, std::vector<int> absorbed) {
    for (int input : inputs) {
      if (input >= 0) ++readers_[input];
    }
    for (int input : graph_.nodes[output].inputs) {
      if (input >= 0) --readers_[input];
    }
    for (int a : absorbed) {
      graph_.nodes[a].absorbed = true;
      for (int input : graph_.nodes[a].inputs) {
        if (input >= 0) --readers_[input];
      }
    }
    graph_.nodes[output].layer = layer.get();
    graph_.nodes[output].then = nullptr;
    graph_.nodes[output].inputs = std::move(inputs);
    graph_.fused_layers.push_back(std::move(layer));
  }
  /// The same with two layers in turn (FusionNode::then): `first` reads `inputs`, `then` reads `first`'s output and
  /// writes the node's; for a rewrite with one step more than the nodes it replaces (the nodes are the model's
  /// layers, and each writes the slot its readers read, so there is no node to add).
  void rewrite(int output, std::unique_ptr<Layer> first, std::unique_ptr<Layer> then, std::vector<int> inputs,
               std::vector<int> absorbed) {
    rewrite(output, std::move(first), std::move(inputs), std::move(absorbed));
    graph_.nodes[output].then = then.get();
    graph_.fused_layers.push_back(std::move(then));
  }

 private:
  FusedGraph& graph_;
  std::vector<int> readers_;
};

/// A convolution that can take a fused epilogue: no activation of its own, zero padding.
const Conv2d* plain_conv(const Rewriter& r, int i) {
  const Conv2d* conv = r.as<Conv2d>(i);
  if (!conv || conv->desc().activation.kind != ActivationKind::none) return nullptr;
  if (conv->padding_mode() != PadMode::constant && conv->desc().padding > 0) return nullptr;
  return conv;
}

// 1. x * sigmoid(x) -> swish(x).
void fuse_swish(Rewriter& r) {
  for (int m = 0; m < r.size(); ++m) {
    const auto* multiply = r.as<Elementwise>(m);
    if (!multiply || multiply->op() != ElementwiseOp::multiply || r.node(m).inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const int s = r.node(m).inputs[side];
      const int x = r.node(m).inputs[1 - side];
      const auto* sigmoid = r.as<ActivationLayer>(s);
      if (!sigmoid || sigmoid->activation().kind != ActivationKind::sigmoid) continue;
      if (r.node(s).inputs != std::vector<int>{x} || !r.private_to_pattern(s)) continue;
      r.rewrite(m, std::make_unique<ActivationLayer>(Activation::swish()), {x}, {s});
      break;
    }
  }
}

/// A ChannelAffine that computes hard sigmoid as PyTorch defines it, min(max(x / 6 + 1/2, 0), 1) on every channel:
/// what exporters write for the gate of hard swish (ONNX HardSigmoid with alpha 1/6, before opset 14's HardSwish).
bool is_hard_sigmoid(const ChannelAffine& affine) {
  const Activation gate = affine.activation();
  if (gate.kind != ActivationKind::clipped_relu || gate.slope != 1.0f) return false;
  // alpha = 1/6 as the exporter rounded it to float; a tolerance of an ulp or two, not a different function.
  const auto one_sixth = [](float scale) { return std::abs(scale * 6.0f - 1.0f) <= 1e-6f; };
  const std::span<const float> scale = affine.scale().values();
  const std::span<const float> shift = affine.shift().values();
  return std::all_of(scale.begin(), scale.end(), one_sixth) &&
         std::all_of(shift.begin(), shift.end(), [](float s) { return s == 0.5f; });
}

// 1b. x * hard_sigmoid(x) -> hard_swish(x).
void fuse_hard_swish(Rewriter& r) {
  for (int m = 0; m < r.size(); ++m) {
    const auto* multiply = r.as<Elementwise>(m);
    if (!multiply || multiply->op() != ElementwiseOp::multiply || r.node(m).inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const int g = r.node(m).inputs[side];
      const int x = r.node(m).inputs[1 - side];
      const auto* gate = r.as<ChannelAffine>(g);
      if (!gate || !is_hard_sigmoid(*gate)) continue;
      if (r.node(g).inputs != std::vector<int>{x} || !r.private_to_pattern(g)) continue;
      r.rewrite(m, std::make_unique<ActivationLayer>(Activation::hard_swish()), {x}, {g});
      break;
    }
  }
}

/// The activation that node i applies on its own: an ActivationLayer's, or GELU for a Unary gelu (the same function).
std::optional<Activation> activation_of(const Rewriter& r, int i) {
  if (const auto* layer = r.as<ActivationLayer>(i)) return layer->activation();
  if (const auto* unary = r.as<Unary>(i); unary && unary->op() == UnaryOp::gelu) return Activation::gelu();
  return std::nullopt;
}

// 2. An activation layer (or a Unary gelu) into the convolution or Add before it.
void fuse_activations(Rewriter& r) {
  for (int a = 0; a < r.size(); ++a) {
    const std::optional<Activation> activation = activation_of(r, a);
    if (!activation || r.node(a).inputs.size() != 1) continue;
    const int p = r.node(a).inputs[0];
    if (!r.private_to_pattern(p)) continue;
    if (const Conv2d* conv = plain_conv(r, p)) {
      r.rewrite(a, std::make_unique<FusedConv2d>(*conv, *activation, false), r.node(p).inputs, {p});
    } else if (const Add* add = r.as<Add>(p); add && add->activation().kind == ActivationKind::none) {
      r.rewrite(a, std::make_unique<Add>(*activation), r.node(p).inputs, {p});
    }
  }
}

// 3. conv(x) + residual -> FusedConv2d(x, residual).
void fuse_residual_adds(Rewriter& r) {
  for (int d = 0; d < r.size(); ++d) {
    const auto* add = r.as<Add>(d);
    if (!add || r.node(d).inputs.size() != 2) continue;
    for (int side = 1; side >= 0; --side) {  // the second operand first: the block's last convolution, usually
      const int c = r.node(d).inputs[side];
      const int residual = r.node(d).inputs[1 - side];
      const Conv2d* conv = plain_conv(r, c);
      if (!conv || residual == c || !r.private_to_pattern(c)) continue;
      std::vector<int> inputs = r.node(c).inputs;
      inputs.push_back(residual);
      r.rewrite(d, std::make_unique<FusedConv2d>(*conv, add->activation(), true), std::move(inputs), {c});
      break;
    }
  }
}

// 4. conv -> max pool.
void fuse_conv_maxpool(Rewriter& r) {
  for (int p = 0; p < r.size(); ++p) {
    const auto* pool = r.as<MaxPool2d>(p);
    if (!pool || r.node(p).inputs.size() != 1) continue;
    const int c = r.node(p).inputs[0];
    const Conv2d* conv = r.as<Conv2d>(c);
    // A reflect or edge padded convolution runs as Pad + convolution (padded_conv.h); the fused kernels pad with
    // zeros only.
    if (!conv || !r.private_to_pattern(c) || (conv->padding_mode() != PadMode::constant && conv->desc().padding > 0))
      continue;
    r.rewrite(p, std::make_unique<Conv2dMaxPool>(*conv, *pool), r.node(c).inputs, {c});
  }
}

/// A convolution as a stage of a fused block: a Conv2d with zero padding, or a FusedConv2d; `residual` says whether
/// it adds a second input (a FusedConv2d from rule 3).
struct ConvView {
  Conv2dDesc desc;
  const Variable* weights;
  const Variable* bias;
  bool residual = false;
};
std::optional<ConvView> conv_view(const Rewriter& r, int i) {
  if (const Conv2d* conv = r.as<Conv2d>(i)) {
    if (conv->padding_mode() != PadMode::constant && conv->desc().padding > 0) return std::nullopt;
    return ConvView{conv->desc(), &conv->weights(), &conv->bias()};
  }
  if (const FusedConv2d* fused = r.as<FusedConv2d>(i)) {
    return ConvView{fused->desc(), &fused->weights(), &fused->bias(), fused->residual()};
  }
  return std::nullopt;
}

// The fused blocks' kernels read square windows only (Conv2dDesc::is_square); other convolutions stay unfused.
bool pointwise(const Conv2dDesc& d) {
  return d.is_square() && d.kernel == 1 && d.stride == 1 && d.padding == 0 && d.groups == 1;
}
bool depthwise(const Conv2dDesc& d) {
  return d.is_square() && d.groups > 1 && d.groups == d.in_channels && d.groups == d.out_channels;
}

// 5. x * expand(reduce(global_average_pool(x))) -> SqueezeExcite(x).
void fuse_squeeze_excite(Rewriter& r) {
  for (int m = 0; m < r.size(); ++m) {
    const auto* multiply = r.as<Elementwise>(m);
    if (!multiply || multiply->op() != ElementwiseOp::multiply || r.node(m).inputs.size() != 2) continue;
    const int x = r.node(m).inputs[0];
    const int g = r.node(m).inputs[1];
    const std::optional<ConvView> expand = conv_view(r, g);
    if (!expand || expand->residual || !pointwise(expand->desc) || !r.private_to_pattern(g) ||
        r.node(g).inputs.size() != 1)
      continue;
    const int f = r.node(g).inputs[0];
    const std::optional<ConvView> reduce = conv_view(r, f);
    if (!reduce || reduce->residual || !pointwise(reduce->desc) || !r.private_to_pattern(f) ||
        r.node(f).inputs.size() != 1)
      continue;
    const int p = r.node(f).inputs[0];
    const auto* pool = r.as<AvgPool2d>(p);
    if (!pool || !pool->options().global || !r.private_to_pattern(p) || r.node(p).inputs != std::vector<int>{x})
      continue;
    if (reduce->desc.in_channels != expand->desc.out_channels || reduce->desc.out_channels != expand->desc.in_channels)
      continue;
    r.rewrite(m,
              std::make_unique<SqueezeExcite>(reduce->desc, *reduce->weights, *reduce->bias, expand->desc,
                                              *expand->weights, *expand->bias),
              {x}, {p, f, g});
  }
}

// 9. SqueezeExcite -> pointwise convolution (+ residual) -> SqueezeExciteConv2d (MobileNetV3's and EfficientNet's
// projections: the gates then scale the projection's input as the backend reads it).
void fuse_squeeze_excite_convs(Rewriter& r) {
  for (int c = 0; c < r.size(); ++c) {
    const std::optional<ConvView> conv = conv_view(r, c);
    if (!conv || !pointwise(conv->desc)) continue;
    const std::vector<int>& inputs = r.node(c).inputs;
    if (inputs.size() != (conv->residual ? 2u : 1u)) continue;
    const int s = inputs[0];
    const auto* excite = r.as<SqueezeExcite>(s);
    if (!excite || !r.private_to_pattern(s) || r.node(s).inputs.size() != 1) continue;
    std::vector<int> fused_inputs = r.node(s).inputs;
    if (conv->residual) fused_inputs.push_back(inputs[1]);
    r.rewrite(c,
              std::make_unique<SqueezeExciteConv2d>(*excite, conv->desc, *conv->weights, *conv->bias, conv->residual),
              std::move(fused_inputs), {s});
  }
}

InvertedResidual::Stage stage(const ConvView& view) { return {view.desc, *view.weights, *view.bias}; }

// 6. pointwise expansion -> depthwise -> pointwise projection (+ residual) -> InvertedResidual; without the
// expansion where the depthwise convolution's input is not one (MobileNetV2's and V3's first blocks: the depthwise
// output, as large as the input, then stays in a band's buffers too).
void fuse_inverted_residuals(Rewriter& r) {
  for (int p = 0; p < r.size(); ++p) {
    const std::optional<ConvView> project = conv_view(r, p);
    if (!project || !pointwise(project->desc)) continue;
    const std::vector<int> inputs = r.node(p).inputs;
    if (inputs.size() != (project->residual ? 2u : 1u)) continue;
    const int d = inputs[0];
    const std::optional<ConvView> spatial = conv_view(r, d);
    if (!spatial || spatial->residual || !depthwise(spatial->desc) || !r.private_to_pattern(d)) continue;
    if (r.node(d).inputs.size() != 1 || project->desc.in_channels != spatial->desc.out_channels) continue;
    const int e = r.node(d).inputs[0];
    const std::optional<ConvView> expand = conv_view(r, e);
    const bool expands = expand && !expand->residual && pointwise(expand->desc) && r.private_to_pattern(e) &&
                         r.node(e).inputs.size() == 1 && expand->desc.out_channels == spatial->desc.in_channels;
    std::vector<int> block_inputs = expands ? r.node(e).inputs : r.node(d).inputs;
    if (project->residual) block_inputs.push_back(inputs[1]);
    const InvertedResidual::Stage projection = stage(*project);
    std::optional<InvertedResidual::Stage> expansion;
    if (expands) expansion.emplace(stage(*expand));
    r.rewrite(p,
              std::make_unique<InvertedResidual>(expansion ? &*expansion : nullptr, stage(*spatial), &projection,
                                                 project->residual),
              std::move(block_inputs), expands ? std::vector<int>{e, d} : std::vector<int>{d});
  }
  // Then the expansion and depthwise convolution of blocks whose projection another layer keeps apart (a squeeze-
  // and-excitation reads the depthwise output): the expanded tensor is still the largest of the block.
  for (int d = 0; d < r.size(); ++d) {
    const std::optional<ConvView> spatial = conv_view(r, d);
    if (!spatial || spatial->residual || !depthwise(spatial->desc) || r.node(d).inputs.size() != 1) continue;
    const int e = r.node(d).inputs[0];
    const std::optional<ConvView> expand = conv_view(r, e);
    if (!expand || expand->residual || !pointwise(expand->desc) || !r.private_to_pattern(e)) continue;
    if (r.node(e).inputs.size() != 1 || expand->desc.out_channels != spatial->desc.in_channels) continue;
    const InvertedResidual::Stage expansion = stage(*expand);
    r.rewrite(d, std::make_unique<InvertedResidual>(&expansion, stage(*spatial), nullptr, false), r.node(e).inputs,
              {e});
  }
}

// 13. InvertedResidual without its projection -> SqueezeExciteConv2d (+ residual) -> InvertedResidual with the
// excitation and the projection (MobileNetV3's and EfficientNet's blocks): one operation from the block's input to
// its output, which a backend may compute without the depthwise output ever going to memory as a whole.
void fuse_excited_inverted_residuals(Rewriter& r) {
  for (int c = 0; c < r.size(); ++c) {
    const auto* excited = r.as<SqueezeExciteConv2d>(c);
    if (!excited) continue;
    const std::vector<int>& inputs = r.node(c).inputs;
    const int b = inputs[0];
    const auto* block = r.as<InvertedResidual>(b);
    if (!block || !block->expands() || block->projects() || block->excites() || !r.private_to_pattern(b) ||
        r.node(b).inputs.size() != 1)
      continue;
    std::vector<int> fused_inputs = r.node(b).inputs;
    if (excited->residual()) fused_inputs.push_back(inputs[1]);
    r.rewrite(c, std::make_unique<InvertedResidual>(*block, *excited), std::move(fused_inputs), {b});
  }
}

// 8. [concat ->] channel affine (with its activation) -> pointwise convolution -> PreactivatedConv2d (DenseNet's
// BN-ReLU-Conv on its concatenated features).
void fuse_preactivated_convs(Rewriter& r) {
  for (int c = 0; c < r.size(); ++c) {
    const std::optional<ConvView> conv = conv_view(r, c);
    if (!conv || conv->residual || !pointwise(conv->desc) || r.node(c).inputs.size() != 1) continue;
    const int a = r.node(c).inputs[0];
    const auto* affine = r.as<ChannelAffine>(a);
    if (!affine || !r.private_to_pattern(a) || r.node(a).inputs.size() != 1) continue;
    std::vector<int> inputs = r.node(a).inputs;
    std::vector<int> absorbed{a};
    const int j = inputs[0];
    if (r.as<Concat>(j) && r.private_to_pattern(j)) {
      inputs = r.node(j).inputs;
      absorbed.push_back(j);
    }
    r.rewrite(c, std::make_unique<PreactivatedConv2d>(*affine, conv->desc, *conv->weights, *conv->bias),
              std::move(inputs), std::move(absorbed));
  }
}

// 8b. PreactivatedConv2d (pointwise, no activation) -> average pool without padding -> the PreactivatedConv2d
// pooling its input first (DenseNet's transitions; the two commute, and the convolution runs on fewer pixels).
void fuse_pooled_preactivated_convs(Rewriter& r) {
  for (int p = 0; p < r.size(); ++p) {
    const auto* pool = r.as<AvgPool2d>(p);
    if (!pool || r.node(p).inputs.size() != 1) continue;
    const PoolOptions& o = pool->options();
    const bool unpadded = o.global || (!o.same && o.padding == 0 && o.padding_bottom_right <= 0);
    const bool shrinks = o.global || (o.stride == 0 ? o.kernel : o.stride) >= 2;
    const int c = r.node(p).inputs[0];
    const auto* conv = r.as<PreactivatedConv2d>(c);
    if (!conv || !unpadded || !shrinks || !r.private_to_pattern(c) || conv->pools_input()) continue;
    const Conv2dDesc& d = conv->desc();
    if (!pointwise(d) || d.activation.kind != ActivationKind::none) continue;
    r.rewrite(p, std::make_unique<PreactivatedConv2d>(*conv, *pool), r.node(c).inputs, {c});
  }
}

/// An average pool (after a zero Pad, or null) as one pool of stride 1 whose output is as large as the input (the
/// pad's, when there is one), or nullopt: the pools rule 12 moves. The Pad's zeros count in every window, so they
/// are the pool's padding with count_include_pad.
std::optional<PoolOptions> same_size_pool(const PoolOptions& pool, const Pad* pad) {
  if (pool.global || (pool.stride == 0 ? pool.kernel : pool.stride) != 1) return std::nullopt;
  if (pool.same) return pad ? std::nullopt : std::optional<PoolOptions>(pool);  // stride 1: as large as its input
  PoolOptions moved = pool;
  if (pad) {
    const PadDesc& z = pad->desc();
    const bool unpadded = pool.padding == 0 && pool.padding_bottom_right <= 0;
    if (!unpadded || z.mode != PadMode::constant || z.value != 0.0f || z.top != z.left || z.bottom != z.right)
      return std::nullopt;
    moved.padding = z.top;
    moved.padding_bottom_right = z.bottom;
    moved.count_include_pad = true;
  }
  const int bottom_right = moved.padding_bottom_right < 0 ? moved.padding : moved.padding_bottom_right;
  if (moved.padding + bottom_right != moved.kernel - 1) return std::nullopt;
  return moved;
}

// 12. [zero pad ->] average pool (stride 1, as large as its input) -> pointwise convolution with fewer outputs than
// inputs -> the convolution without bias and activation, then the pool, then the bias and the activation (Inception
// v3's pool branches). The pool is the same linear map of every channel plane, the convolution a linear map of every
// pixel's channels: the two commute, and the pool then averages the fewer channels. The bias must wait until after
// the pool: with count_include_pad a border window's weights do not sum to 1.
void move_pools_after_reducing_convs(Rewriter& r) {
  for (int c = 0; c < r.size(); ++c) {
    const std::optional<ConvView> conv = conv_view(r, c);
    if (!conv || conv->residual || !pointwise(conv->desc) || r.node(c).inputs.size() != 1) continue;
    const Conv2dDesc& d = conv->desc;
    if (d.out_channels >= d.in_channels) continue;  // the pool would average more planes, not fewer
    const int p = r.node(c).inputs[0];
    const auto* pool = r.as<AvgPool2d>(p);
    if (!pool || !r.private_to_pattern(p) || r.node(p).inputs.size() != 1) continue;
    const int z = r.node(p).inputs[0];
    const Pad* pad = r.private_to_pattern(z) ? r.as<Pad>(z) : nullptr;
    std::optional<PoolOptions> moved = same_size_pool(pool->options(), pad);
    if (!moved && pad) {
      pad = nullptr;  // a Pad the pool cannot take: the pool alone, if it keeps the size of the padded tensor
      moved = same_size_pool(pool->options(), nullptr);
    }
    if (!moved) continue;
    // The same weights (views), without bias: a 1x1 convolution of the pool's input.
    auto mix = std::make_unique<Conv2d>(
        Conv2dOptions{.in_channels = d.in_channels, .out_channels = d.out_channels, .kernel = 1, .bias = false});
    mix->weights() = conv->weights->view(mix->weights().shape());
    auto pooled = std::make_unique<AvgPool2d>(*moved);
    std::unique_ptr<ChannelAffine> bias;
    if (!conv->bias->empty() || d.activation.kind != ActivationKind::none) {
      std::vector<float> shift(static_cast<std::size_t>(d.out_channels), 0.0f);
      if (!conv->bias->empty()) std::copy(conv->bias->values().begin(), conv->bias->values().end(), shift.begin());
      bias = std::make_unique<ChannelAffine>(d.out_channels, d.activation);
      bias->set_parameters(std::vector<float>(shift.size(), 1.0f), shift);
    }
    // The nodes, in order, take the layers in order; the convolution's node writes the result, which its readers
    // read. With the Pad, three nodes for three layers; without it, the convolution's node runs the last two.
    const int first = pad ? z : p;
    const int source = r.node(first).inputs[0];
    r.rewrite(first, std::move(mix), {source}, {});
    if (!bias) {
      r.rewrite(c, std::move(pooled), {first}, pad ? std::vector<int>{p} : std::vector<int>{});
    } else if (pad) {
      r.rewrite(p, std::move(pooled), {z}, {});
      r.rewrite(c, std::move(bias), {p}, {});
    } else {
      r.rewrite(c, std::move(pooled), std::move(bias), {p}, {});
    }
  }
}

/// y = x * scale + shift with one scale and one shift for every value: a ChannelAffine without activation whose
/// values are all equal, or a BroadcastBinary add, subtract, multiply or divide by a one-value constant (how an
/// exported graph's `x / 1.4142`, `+ 1`, `* 0.5`, `+ 1e-5` arrive). The pair, or nullopt.
std::optional<std::pair<float, float>> scalar_affine(const Rewriter& r, int i) {
  if (const auto* affine = r.as<ChannelAffine>(i); affine && affine->activation().kind == ActivationKind::none) {
    const std::span<const float> scale = affine->scale().values();
    const std::span<const float> shift = affine->shift().values();
    if (std::all_of(scale.begin(), scale.end(), [&](float s) { return s == scale[0]; }) &&
        std::all_of(shift.begin(), shift.end(), [&](float t) { return t == shift[0]; })) {
      return std::pair{scale[0], shift[0]};
    }
    return std::nullopt;
  }
  const auto* binary = r.as<BroadcastBinary>(i);
  if (!binary || !binary->constant() || binary->constant()->count() != 1) return std::nullopt;
  const float c = binary->constant()->data()[0];
  switch (binary->op()) {
    case BinaryOp::add: return std::pair{1.0f, c};
    case BinaryOp::subtract: return binary->constant_first() ? std::pair{-1.0f, c} : std::pair{1.0f, -c};
    case BinaryOp::multiply: return std::pair{c, 0.0f};
    case BinaryOp::divide:
      if (binary->constant_first()) return std::nullopt;
      return std::pair{1.0f / c, 0.0f};
    default: return std::nullopt;
  }
}

/// Node i is a product of two tensors of one shape (Elementwise multiply, or BroadcastBinary multiply of equal dims).
bool is_product_of_equals(const Rewriter& r, int i) {
  if (const auto* e = r.as<Elementwise>(i))
    return e->op() == ElementwiseOp::multiply && r.graph_node(i).inputs.size() == 2;
  const auto* b = r.as<BroadcastBinary>(i);
  return b && b->op() == BinaryOp::multiply && !b->constant() && b->a_dims() == b->b_dims();
}

/// Node i's only input, or -2 when it has another count or i is not a node.(or i is not a node).
int only_input(const Rewriter& r, int i) {
  if (i < 0) return -2;
  const std::vector<int>& inputs = r.graph_node(i).inputs;
  return inputs.size() == 1 ? inputs[0] : -2;
}

// The scalar affine (scale, shift) of a step is this one: scale to 1e-6 (constants such as 1 / sqrt(2) are written in
// float by the exporter), shift exactly.
bool is_affine(std::optional<std::pair<float, float>> affine, float scale, float shift) {
  return affine && std::abs(affine->first - scale) <= 1e-6f * std::abs(scale) && affine->second == shift;
}

// 7a. x * (erf(x / sqrt(2)) + 1) * 0.5 -> the gelu activation (which rule 1 then fuses into a convolution before it).
void fuse_gelu(Rewriter& r) {
  constexpr float inverse_sqrt2 = 0.70710678118654752f;
  for (int m = 0; m < r.size(); ++m) {
    if (!is_affine(scalar_affine(r, m), 0.5f, 0.0f)) continue;
    const int p = only_input(r, m);
    if (!is_product_of_equals(r, p) || !r.private_to_pattern(p)) continue;
    for (int side = 0; side < 2; ++side) {
      const int q = r.node(p).inputs[side];
      const int x = r.node(p).inputs[1 - side];
      if (!is_affine(scalar_affine(r, q), 1.0f, 1.0f) || !r.private_to_pattern(q)) continue;
      const int e = only_input(r, q);
      const auto* erf = r.as<Unary>(e);
      if (!erf || erf->op() != UnaryOp::erf || !r.private_to_pattern(e)) continue;
      const int d = only_input(r, e);
      if (!is_affine(scalar_affine(r, d), inverse_sqrt2, 0.0f) || !r.private_to_pattern(d) || only_input(r, d) != x)
        continue;
      r.rewrite(m, std::make_unique<ActivationLayer>(Activation::gelu()), {x}, {p, q, e, d});
      break;
    }
  }
}

/// Node i computes tanh(beta * x) for a scalar beta: a ChannelAffine with all scales beta, shifts 0 and the tanh
/// activation (the loader fuses the Tanh into the scaling before it), or a tanh ActivationLayer after a scalar
/// scaling that only it reads. Returns x's node, or -2.
int scaled_tanh(const Rewriter& r, int i, float beta) {
  const auto near = [](float value, float wanted) { return std::abs(value - wanted) <= 1e-6f * std::abs(wanted); };
  if (const auto* affine = r.as<ChannelAffine>(i); affine && affine->activation().kind == ActivationKind::tanh) {
    const std::span<const float> scale = affine->scale().values();
    const std::span<const float> shift = affine->shift().values();
    const bool uniform = std::all_of(scale.begin(), scale.end(), [&](float s) { return near(s, beta); }) &&
                         std::all_of(shift.begin(), shift.end(), [](float t) { return t == 0.0f; });
    return uniform ? only_input(r, i) : -2;
  }
  const auto* tanh = r.as<ActivationLayer>(i);
  if (!tanh || tanh->activation().kind != ActivationKind::tanh) return -2;
  const int s = only_input(r, i);
  const std::optional<std::pair<float, float>> scaling = scalar_affine(r, s);
  if (!scaling || !near(scaling->first, beta) || scaling->second != 0.0f || !r.private_to_pattern(s)) return -2;
  return only_input(r, s);
}

/// The other input of a two-input node i when one of its inputs is `x`, else -2.
int other_input(const Rewriter& r, int i, int x) {
  if (i < 0) return -2;
  const std::vector<int>& inputs = r.graph_node(i).inputs;
  if (inputs.size() != 2) return -2;
  if (inputs[0] == x) return inputs[1];
  return inputs[1] == x ? inputs[0] : -2;
}

// 7a'. x * (tanh(sqrt(2 / pi) * (x + 0.044715 * x * (x * x))) + 1) * 0.5 -> gelu_tanh(x), as PyTorch exports
// F.gelu(x, approximate='tanh') before opset 20.
void fuse_gelu_tanh(Rewriter& r) {
  constexpr float beta = 0.79788456080286536f;  // sqrt(2 / pi)
  constexpr float kappa = 0.044715f;
  for (int m = 0; m < r.size(); ++m) {
    if (!is_affine(scalar_affine(r, m), 0.5f, 0.0f)) continue;
    const int p = only_input(r, m);
    if (!is_product_of_equals(r, p) || !r.private_to_pattern(p)) continue;
    for (int side = 0; side < 2; ++side) {
      const int o = r.node(p).inputs[side];
      const int x = r.node(p).inputs[1 - side];
      if (!is_affine(scalar_affine(r, o), 1.0f, 1.0f) || !r.private_to_pattern(o)) continue;
      const int t = only_input(r, o);
      if (!r.private_to_pattern(t)) continue;
      const int s = scaled_tanh(r, t, beta);
      const auto* sum = r.as<Add>(s);
      if (!sum || sum->activation().kind != ActivationKind::none || !r.private_to_pattern(s)) continue;
      const int k = other_input(r, s, x);
      if (!is_affine(scalar_affine(r, k), kappa, 0.0f) || !r.private_to_pattern(k)) continue;
      const int cube = only_input(r, k);
      if (!is_product_of_equals(r, cube) || !r.private_to_pattern(cube)) continue;
      const int square = other_input(r, cube, x);
      if (!is_product_of_equals(r, square) || !r.private_to_pattern(square) ||
          r.graph_node(square).inputs != std::vector<int>{x, x}) {
        continue;
      }
      std::vector<int> absorbed{p, o, t, s, k, cube, square};
      if (r.as<ActivationLayer>(t)) absorbed.push_back(only_input(r, t));  // the scaling before the tanh layer
      r.rewrite(m, std::make_unique<Unary>(UnaryOp::gelu_tanh), {x}, absorbed);
      break;
    }
  }
}

/// A BroadcastBinary `op` by a constant that varies only along `axis` of `dims` (or not at all): its values along
/// that axis (dims[axis] of them), else nullopt.
std::optional<std::vector<float>> along_axis(const Rewriter& r, int i, BinaryOp op, const TensorDims& dims, int axis) {
  const auto* binary = r.as<BroadcastBinary>(i);
  if (!binary || binary->op() != op || !binary->constant()) return std::nullopt;
  const TensorDims& c = binary->constant_first() ? binary->a_dims() : binary->b_dims();
  const TensorDims& x = binary->constant_first() ? binary->b_dims() : binary->a_dims();
  if (!(x == dims)) return std::nullopt;
  for (int k = 0; k < c.rank; ++k) {
    const int position = k + dims.rank - c.rank;
    if (c[k] != 1 && position != axis) return std::nullopt;
  }
  const std::span<const float> values = binary->constant()->values();
  const auto length = static_cast<std::size_t>(dims[axis]);
  if (values.size() == 1) return std::vector<float>(length, values[0]);
  if (values.size() != length) return std::nullopt;
  return std::vector<float>(values.begin(), values.end());
}

// 7b. (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale + shift] along one axis -> LayerNorm.
void fuse_layer_norms(Rewriter& r) {
  for (int n = 0; n < r.size(); ++n) {
    const auto* divide = r.as<BroadcastBinary>(n);
    if (!divide || divide->op() != BinaryOp::divide || divide->constant()) continue;
    const int d = r.node(n).inputs[0];
    const int deviation = r.node(n).inputs[1];
    const auto* subtract = r.as<BroadcastBinary>(d);
    if (!subtract || subtract->op() != BinaryOp::subtract || subtract->constant() || !r.private_to_pattern(d, 2)) {
      continue;
    }
    const int x = r.node(d).inputs[0];
    const int m = r.node(d).inputs[1];
    const auto* mean = r.as<ReduceAxis>(m);
    if (!mean || mean->op() != ReduceOp::mean || !mean->keeps_dims() || mean->first_axis() != mean->last_axis() ||
        only_input(r, m) != x || !r.private_to_pattern(m)) {
      continue;
    }
    const TensorDims dims = mean->input_dims();
    const int axis = mean->first_axis();
    if (!(subtract->a_dims() == dims) || !(divide->a_dims() == dims)) continue;
    const auto* root = r.as<Unary>(deviation);
    const int shifted = only_input(r, deviation);
    const std::optional<std::pair<float, float>> epsilon = scalar_affine(r, shifted);
    if (!root || root->op() != UnaryOp::sqrt || !r.private_to_pattern(deviation) || !epsilon ||
        epsilon->first != 1.0f || !(epsilon->second >= 0.0f) || !r.private_to_pattern(shifted)) {
      continue;
    }
    const int v = only_input(r, shifted);
    const auto* variance = r.as<ReduceAxis>(v);
    if (!variance || variance->op() != ReduceOp::mean || !variance->keeps_dims() || !(variance->input_dims() == dims) ||
        variance->first_axis() != axis || variance->last_axis() != axis || !r.private_to_pattern(v)) {
      continue;
    }
    const int s = only_input(r, v);
    const auto* square = r.as<Unary>(s);
    if (!square || square->op() != UnaryOp::square || only_input(r, s) != d || !r.private_to_pattern(s)) continue;
    std::vector<int> absorbed{d, m, deviation, shifted, v, s};
    int last = n;
    const auto length = static_cast<std::size_t>(dims[axis]);
    std::vector<float> scale(length, 1.0f), shift(length, 0.0f);
    // The scale and shift after it, when only the pattern reads what they read.
    const auto next = [&](int i) {
      for (int j = i + 1; j < r.size(); ++j) {
        if (!r.graph_node(j).absorbed && only_input(r, j) == i) return r.private_to_pattern(i) ? j : -1;
      }
      return -1;
    };
    if (const int g = next(last); g >= 0) {
      const auto* affine = r.as<ChannelAffine>(g);
      if (affine && affine->activation().kind == ActivationKind::none && axis == 1 && dims.rank <= 4 &&
          static_cast<std::size_t>(affine->channels()) == length) {
        std::copy(affine->scale().values().begin(), affine->scale().values().end(), scale.begin());
        std::copy(affine->shift().values().begin(), affine->shift().values().end(), shift.begin());
        absorbed.push_back(last);
        last = g;
      } else if (std::optional<std::vector<float>> gamma = along_axis(r, g, BinaryOp::multiply, dims, axis)) {
        scale = *gamma;
        absorbed.push_back(last);
        last = g;
        if (const int b = next(last); b >= 0) {
          if (std::optional<std::vector<float>> beta = along_axis(r, b, BinaryOp::add, dims, axis)) {
            shift = *beta;
            absorbed.push_back(last);
            last = b;
          }
        }
      }
    }
    auto norm = std::make_unique<LayerNorm>(dims, axis, epsilon->second);
    norm->set_parameters(scale, shift);
    r.rewrite(last, std::move(norm), {x}, absorbed);
  }
}

}  // namespace

// 10. tensor_linear(x) + a constant along its last axis -> a tensor_linear with that bias.
void fuse_tensor_linear_biases(Rewriter& r) {
  for (int a = 0; a < r.size(); ++a) {
    if (r.node(a).inputs.size() != 1) continue;
    const int t = r.node(a).inputs[0];
    const auto* product = r.as<TensorLinear>(t);
    if (!product || !r.private_to_pattern(t) || product->linear().options().activation.kind != ActivationKind::none)
      continue;
    const TensorDims& dims = product->output_dims();
    const std::optional<std::vector<float>> bias = along_axis(r, a, BinaryOp::add, dims, dims.rank - 1);
    if (!bias) continue;
    r.rewrite(a, std::make_unique<TensorLinear>(product->with_added_bias(*bias)), r.node(t).inputs, {t});
  }
}

/// A Transpose of a rank-4 tensor by `perm`, or null.
const Transpose* transpose_by(const Rewriter& r, int i, const std::vector<int>& perm) {
  const auto* transpose = r.as<Transpose>(i);
  return transpose && transpose->input_dims().rank == 4 && transpose->perm() == perm ? transpose : nullptr;
}

/// The channels-first layer that computes what channels-last node `i` computes along the last axis of an (N, H, W,
/// channels) tensor, where `channels` is that axis's length at its input (updated to its output's); null when the
/// node is not such a layer.
std::unique_ptr<Layer> channels_first_layer(const Rewriter& r, int i, const TensorDims& pixels, int& channels) {
  const TensorDims nhwc{pixels[0], pixels[1], pixels[2], channels};
  if (const auto* norm = r.as<LayerNorm>(i)) {
    if (!(norm->dims() == nhwc) || norm->axis() != 3) return nullptr;
    auto first = std::make_unique<LayerNorm>(TensorDims{pixels[0], channels, pixels[1], pixels[2]}, 1, norm->epsilon());
    first->set_parameters(norm->scale().values(), norm->shift().values());
    return first;
  }
  if (const auto* product = r.as<TensorLinear>(i)) {
    const Linear& linear = product->linear();
    if (!(product->input_dims() == nhwc)) return nullptr;
    channels = linear.options().out_features;
    auto conv = std::make_unique<Conv2d>(Conv2dOptions{.in_channels = linear.options().in_features,
                                                       .out_channels = channels,
                                                       .kernel = 1,
                                                       .bias = linear.has_bias(),
                                                       .activation = linear.options().activation});
    // Linear's [out][in] weights are the 1x1 convolution's OIHW weights: views, not copies.
    conv->weights() = linear.weights().view(conv->weights().shape());
    if (linear.has_bias()) conv->bias() = linear.bias().view(conv->bias().shape());
    return conv;
  }
  if (const auto* unary = r.as<Unary>(i)) return std::make_unique<Unary>(unary->op());
  if (const auto* activation = r.as<ActivationLayer>(i))
    return std::make_unique<ActivationLayer>(activation->activation());
  return nullptr;
}

// 11. transpose (0, 2, 3, 1) -> layers along the last axis -> transpose (0, 3, 1, 2) -> the same layers along the
// channels, without the transposes.
void fuse_channels_last_chains(Rewriter& r) {
  for (int back = 0; back < r.size(); ++back) {
    const Transpose* to_first = transpose_by(r, back, {0, 3, 1, 2});
    if (!to_first || r.node(back).inputs.size() != 1) continue;
    // The chain from the transpose back to channels-first up to the one to channels-last, each node read only by
    // the next.
    std::vector<int> chain;
    int i = r.node(back).inputs[0];
    while (i >= 0 && !transpose_by(r, i, {0, 2, 3, 1}) && r.private_to_pattern(i) && r.node(i).inputs.size() == 1) {
      chain.insert(chain.begin(), i);
      i = r.node(i).inputs[0];
    }
    const Transpose* to_last = transpose_by(r, i, {0, 2, 3, 1});
    if (chain.empty() || !to_last || !r.private_to_pattern(i)) continue;
    const TensorDims& pixels = to_last->output_dims();  // (N, H, W, C)
    int channels = pixels[3];
    std::vector<std::unique_ptr<Layer>> layers;
    for (int c : chain) {
      std::unique_ptr<Layer> layer = channels_first_layer(r, c, pixels, channels);
      if (!layer) break;
      layers.push_back(std::move(layer));
    }
    const TensorDims last{pixels[0], pixels[1], pixels[2], channels};
    if (layers.size() != chain.size() || !(to_first->input_dims() == last)) continue;
    // The first layer reads what the first transpose read; the last one takes the node of the transpose back, so
    // that its readers keep reading that node.
    const int source = r.node(i).inputs[0];
    const std::size_t k = chain.size();
    if (k == 1) {
      r.rewrite(back, std::move(layers[0]), {source}, {i, chain[0]});
      continue;
    }
    r.rewrite(chain[0], std::move(layers[0]), {source}, {i});
    for (std::size_t j = 1; j + 1 < k; ++j) r.rewrite(chain[j], std::move(layers[j]), r.node(chain[j]).inputs, {});
    r.rewrite(back, std::move(layers[k - 1]), r.node(chain[k - 1]).inputs, {chain[k - 1]});
  }
}

FusedGraph fuse_layers(std::vector<FusionNode> nodes) {
  FusedGraph graph{std::move(nodes), {}};
  // Each rewrite sees the graph as the ones before left it (counts of readers included). GELU first, so that the
  // rules after it see an activation like any other; the pools after the convolutions (rule 12) once the convolutions
  // have their activations (which then follow the pool) and the residual adds and max pools that take a convolution
  // whole have taken theirs; the activations again last, for the convolutions that the channels-last chains (rule
  // 11) became.
  for (void (*rewrite)(Rewriter&) :
       {fuse_gelu, fuse_swish, fuse_hard_swish, fuse_activations, fuse_residual_adds, fuse_conv_maxpool,
        move_pools_after_reducing_convs, fuse_squeeze_excite, fuse_inverted_residuals, fuse_gelu_tanh, fuse_layer_norms,
        fuse_preactivated_convs, fuse_pooled_preactivated_convs, fuse_squeeze_excite_convs,
        fuse_excited_inverted_residuals, fuse_tensor_linear_biases, fuse_channels_last_chains, fuse_activations}) {
    Rewriter rewriter(graph);
    rewrite(rewriter);
  }
  return graph;
}

}  // namespace corgy
