#include "corgy/model/fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "corgy/layers/activation_layer.h"
#include "corgy/layers/add.h"
#include "corgy/layers/avgpool2d.h"
#include "corgy/layers/channel_affine.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/conv2d_maxpool.h"
#include "corgy/layers/elementwise.h"
#include "corgy/layers/fused_conv2d.h"
#include "corgy/layers/inverted_residual.h"
#include "corgy/layers/maxpool2d.h"
#include "corgy/layers/squeeze_excite.h"

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
  int size() const { return static_cast<int>(graph_.nodes.size()); }

  /// Node i is a live layer of type L (null when it is not, or it is the model input).
  template <class L>
  const L* as(int i) const {
    if (i < 0 || graph_.nodes[i].absorbed) return nullptr;
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
    graph_.nodes[output].inputs = std::move(inputs);
    graph_.fused_layers.push_back(std::move(layer));
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

// 2. An activation layer into the convolution or Add before it.
void fuse_activations(Rewriter& r) {
  for (int a = 0; a < r.size(); ++a) {
    const auto* activation = r.as<ActivationLayer>(a);
    if (!activation || r.node(a).inputs.size() != 1) continue;
    const int p = r.node(a).inputs[0];
    if (!r.private_to_pattern(p)) continue;
    if (const Conv2d* conv = plain_conv(r, p)) {
      r.rewrite(a, std::make_unique<FusedConv2d>(*conv, activation->activation(), false), r.node(p).inputs, {p});
    } else if (const Add* add = r.as<Add>(p); add && add->activation().kind == ActivationKind::none) {
      r.rewrite(a, std::make_unique<Add>(activation->activation()), r.node(p).inputs, {p});
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

InvertedResidual::Stage stage(const ConvView& view) { return {view.desc, *view.weights, *view.bias}; }

// 6. pointwise expansion -> depthwise -> pointwise projection (+ residual) -> InvertedResidual.
void fuse_inverted_residuals(Rewriter& r) {
  for (int p = 0; p < r.size(); ++p) {
    const std::optional<ConvView> project = conv_view(r, p);
    if (!project || !pointwise(project->desc)) continue;
    const std::vector<int> inputs = r.node(p).inputs;
    if (inputs.size() != (project->residual ? 2u : 1u)) continue;
    const int d = inputs[0];
    const std::optional<ConvView> spatial = conv_view(r, d);
    if (!spatial || spatial->residual || !depthwise(spatial->desc) || !r.private_to_pattern(d)) continue;
    if (r.node(d).inputs.size() != 1) continue;
    const int e = r.node(d).inputs[0];
    const std::optional<ConvView> expand = conv_view(r, e);
    if (!expand || expand->residual || !pointwise(expand->desc) || !r.private_to_pattern(e)) continue;
    if (r.node(e).inputs.size() != 1) continue;
    if (expand->desc.out_channels != spatial->desc.in_channels ||
        project->desc.in_channels != spatial->desc.out_channels)
      continue;
    std::vector<int> block_inputs = r.node(e).inputs;
    if (project->residual) block_inputs.push_back(inputs[1]);
    const InvertedResidual::Stage projection = stage(*project);
    r.rewrite(p, std::make_unique<InvertedResidual>(stage(*expand), stage(*spatial), &projection, project->residual),
              std::move(block_inputs), {e, d});
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
    r.rewrite(d, std::make_unique<InvertedResidual>(stage(*expand), stage(*spatial), nullptr, false), r.node(e).inputs,
              {e});
  }
}

}  // namespace

FusedGraph fuse_layers(std::vector<FusionNode> nodes) {
  FusedGraph graph{std::move(nodes), {}};
  // Each rewrite sees the graph as the ones before left it (counts of readers included).
  for (void (*rewrite)(Rewriter&) : {fuse_swish, fuse_hard_swish, fuse_activations, fuse_residual_adds,
                                     fuse_conv_maxpool, fuse_squeeze_excite, fuse_inverted_residuals}) {
    Rewriter rewriter(graph);
    rewrite(rewriter);
  }
  return graph;
}

}  // namespace corgy
