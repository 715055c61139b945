#include "corgy/layers/inverted_residual.h"

#include <fmt/format.h>

namespace corgy {

namespace {

bool is_pointwise(const Conv2dDesc& d) {
  return d.is_square() && d.kernel == 1 && d.stride == 1 && d.padding == 0 && d.groups == 1;
}

// The blocks' kernels (corgy/backends/blas/inverted_residual.cpp) read the scalar, square window only.
bool is_depthwise(const Conv2dDesc& d) {
  return d.is_square() && d.groups == d.in_channels && d.groups == d.out_channels && d.groups > 1;
}

/// Output extent of one convolution along an axis.
int extent(const Conv2dDesc& d, int size) { return d.output_size(size); }

}  // namespace

InvertedResidual::Held InvertedResidual::hold(const Stage& stage) {
  return {stage.desc, stage.weights.view(stage.weights.shape()),
          stage.bias.empty() ? Variable() : stage.bias.view(stage.bias.shape())};
}

InvertedResidual::Held InvertedResidual::share(const Held& held) {
  return {held.desc, held.weights.share(), held.bias.share()};
}

InvertedResidual::InvertedResidual(const InvertedResidual& block, const SqueezeExciteConv2d& excited_projection)
    : expand_(block.expand_ ? std::optional<Held>(share(*block.expand_)) : std::nullopt),
      depthwise_(share(block.depthwise_)),
      excite_(Excite{excited_projection.excite(), excited_projection.reduce_weights().share(),
                     excited_projection.reduce_bias().share(), excited_projection.expand_weights().share(),
                     excited_projection.expand_bias().share()}),
      project_(
          Held{excited_projection.desc(), excited_projection.weights().share(), excited_projection.bias().share()}),
      residual_(excited_projection.residual()) {
  if (!block.expand_ || block.project_ || block.excite_ ||
      excited_projection.excite().channels != depthwise_.desc.out_channels) {
    throw_parameter_error(
        "inverted_residual",
        fmt::format("a squeeze-and-excitation of {} channels joins a block with an expansion and "
                    "no projection whose depthwise convolution gives them; got {} channels, {}",
                    excited_projection.excite().channels, depthwise_.desc.out_channels, block.describe()));
  }
}

InvertedResidual::InvertedResidual(const Stage* expand, const Stage& depthwise, const Stage* project, bool residual)
    : expand_(expand ? std::optional<Held>(hold(*expand)) : std::nullopt),
      depthwise_(hold(depthwise)),
      project_(project ? std::optional<Held>(hold(*project)) : std::nullopt),
      residual_(residual && project) {
  const int expanded = depthwise.desc.in_channels;
  if ((!expand && !project) || (expand && (!is_pointwise(expand->desc) || expand->desc.out_channels != expanded)) ||
      !is_depthwise(depthwise.desc) ||
      (project && (!is_pointwise(project->desc) || project->desc.in_channels != expanded))) {
    throw_parameter_error(
        "inverted_residual",
        fmt::format("needs a 1x1 convolution C -> E (or none), a depthwise E -> E (a square window) and a 1x1 E -> O "
                    "(or none, when there is an expansion); got {}groups {} of {} -> {}{}",
                    expand ? fmt::format("{} -> {}, ", expand->desc.in_channels, expand->desc.out_channels)
                           : std::string("no expansion, "),
                    depthwise.desc.groups, depthwise.desc.in_channels, depthwise.desc.out_channels,
                    project ? fmt::format(", {} -> {}", project->desc.in_channels, project->desc.out_channels)
                            : std::string(", no projection")));
  }
}

std::string InvertedResidual::describe() const {
  const Conv2dDesc& d = depthwise_.desc;
  std::string text = expand_ ? fmt::format("inverted_residual {} -> {} ({}), ", expand_->desc.in_channels,
                                           expand_->desc.out_channels, expand_->desc.activation.str())
                             : fmt::format("inverted_residual {}, ", d.in_channels);
  text += fmt::format("depthwise {}x{}/{} pad {} ({})", d.kernel, d.kernel, d.stride, d.padding, d.activation.str());
  if (excite_) {
    const SqueezeExciteDesc& e = excite_->desc;
    text += fmt::format(", squeeze_excite {} -> {} ({}) -> {} ({})", e.channels, e.squeeze_channels,
                        e.reduce_activation.str(), e.channels, e.expand_activation.str());
  }
  if (project_) {
    const Activation a = project_->desc.activation;
    text += fmt::format(", -> {}{}{}", project_->desc.out_channels, residual_ ? " + add" : "",
                        a.kind == ActivationKind::none ? "" : ", " + a.str());
  }
  return text;
}

Shape InvertedResidual::output_shape(std::span<const Shape> inputs) const {
  const Shape& in = inputs[0];
  const int channels_in = expand_ ? expand_->desc.in_channels : depthwise_.desc.in_channels;
  if (in.c != channels_in) throw_shape_error(fmt::format("(N, {}, H, W)", channels_in), in);
  const int channels = project_ ? project_->desc.out_channels : depthwise_.desc.out_channels;
  const Shape out{in.n, channels, extent(depthwise_.desc, in.h), extent(depthwise_.desc, in.w)};
  if (out.h <= 0 || out.w <= 0) throw_shape_error("an input larger than the depthwise kernel", in);
  if (residual_ && inputs[1] != out) {
    throw_shape_error(fmt::format("a residual of the block's output shape {}", out.str()), inputs[1]);
  }
  return out;
}

void InvertedResidual::upload(Backend& backend) const {
  for (const Held* stage : {expand_ ? &*expand_ : nullptr, &depthwise_, project_ ? &*project_ : nullptr}) {
    if (!stage) continue;
    backend.upload_constant(stage->weights);
    if (!stage->bias.empty()) backend.upload_constant(stage->bias);
  }
  if (excite_) {
    for (const Variable* tensor :
         {&excite_->reduce_weights, &excite_->reduce_bias, &excite_->expand_weights, &excite_->expand_bias}) {
      if (!tensor->empty()) backend.upload_constant(*tensor);
    }
  }
}

InvertedResidualDesc InvertedResidual::desc() const {
  const auto stage = [](const Held* held) {
    if (!held) return ConvStage{};
    return ConvStage{held->desc, &held->weights, held->bias.empty() ? nullptr : &held->bias};
  };
  InvertedResidualDesc desc{stage(expand_ ? &*expand_ : nullptr), stage(&depthwise_),
                            stage(project_ ? &*project_ : nullptr)};
  if (excite_) {
    const auto or_null = [](const Variable& tensor) { return tensor.empty() ? nullptr : &tensor; };
    desc.excite = excite_->desc;
    desc.excite_weights = {&excite_->reduce_weights, or_null(excite_->reduce_bias), &excite_->expand_weights,
                           or_null(excite_->expand_bias)};
  }
  return desc;
}

void InvertedResidual::forward(Backend& backend, std::span<const Variable* const> inputs, Variable& output) const {
  backend.inverted_residual(desc(), *inputs[0], residual_ ? inputs[1] : nullptr, output);
}

double InvertedResidual::flops(std::span<const Shape> inputs) const {
  // The convolutions, as Conv2d counts them.
  const Shape& in = inputs[0];
  const double pixels = static_cast<double>(in.n) * in.h * in.w;
  const double out_pixels = static_cast<double>(in.n) * extent(depthwise_.desc, in.h) * extent(depthwise_.desc, in.w);
  const Conv2dDesc& d = depthwise_.desc;
  const double expanded = d.in_channels;
  const double excite = excite_ ? 2.0 * in.n * excite_->desc.channels * excite_->desc.squeeze_channels : 0.0;
  return 2.0 * (excite + (expand_ ? pixels * expand_->desc.in_channels * expanded : 0.0) +
                out_pixels * expanded * d.kernel * d.kernel +
                (project_ ? out_pixels * expanded * project_->desc.out_channels : 0.0));
}

}  // namespace corgy
