#include "corgy/io/darknet.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <fstream>

#include "corgy/error.h"
#include "corgy/io/darknet_weights.h"
#include "corgy/layers/add.h"
#include "corgy/layers/avgpool2d.h"
#include "corgy/layers/concat.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/flatten.h"
#include "corgy/layers/linear.h"
#include "corgy/layers/maxpool2d.h"
#include "corgy/layers/softmax.h"
#include "corgy/layers/upsample.h"

namespace corgy {

namespace {

// Turns cfg layers into Sequential layers one at a time, tracking each output shape (batch 1) so that a layer
// knows its input channels and a mismatch is reported at the cfg line that causes it.
class Builder {
 public:
  Builder(DarknetModel& net, const LoadLimits& limits) : net_(net), limits_(limits), weight_bytes_(limits, "") {}

  void build() {
    check_tensor_bytes(limits_, net_.cfg.source,
                       fmt::format("the network input {} (width x height x channels)", input_.str()),
                       float32_bytes({input_.n, input_.c, input_.h, input_.w}));
    const int count = static_cast<int>(net_.cfg.layers.size());
    for (int i = 0; i < count; ++i) {
      current_ = i;
      try {
        net_.layer_of_cfg.push_back(
            std::visit([&](const auto& params) { return add(params); }, net_.cfg.layers[i].params));
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", net_.cfg.location(i), e.what()));
      }
    }
  }

 private:
  // The Sequential layer holding cfg layer `cfg_index`'s output; a head's output cannot be read.
  int source(int cfg_index) const {
    if (cfg_index < 0) return Sequential::model_input;
    const int layer = net_.layer_of_cfg[cfg_index];
    if (layer == DarknetModel::head_layer) {
      throw Error(
          fmt::format("reads the output of layer {} ({}), a detection head; corgy does not compute head "
                      "outputs inside the network",
                      cfg_index, net_.cfg.layers[cfg_index].type));
    }
    return layer;
  }
  int previous() const { return source(current_ - 1); }
  Shape shape_of(int layer) const { return layer == Sequential::model_input ? input_ : shapes_[layer]; }

  int append(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
    std::vector<Shape> in;
    for (int input : inputs) in.push_back(shape_of(input));
    const Shape out = layer->output_shape(in);
    // The builder's errors get the cfg location added (build()), so the messages name no source of their own.
    check_tensor_bytes(limits_, "", fmt::format("the output {}", out.str()),
                       float32_bytes({out.n, out.c, out.h, out.w}));
    shapes_.push_back(out);
    return net_.model.add(std::move(layer), std::move(inputs));
  }

  // Called before a layer allocates its weights, with their dimensions.
  void add_weights(std::initializer_list<std::int64_t> dims) {
    weight_bytes_.add(fmt::format("the weights ({})", fmt::join(dims, ", ")), float32_bytes(dims));
  }

  int add(const DarknetConvolutional& p) {
    const int in = previous();
    const int in_channels = shape_of(in).c;
    add_weights({p.filters, in_channels / p.groups, p.size, p.size});
    return append(std::make_unique<Conv2d>(Conv2dOptions{.in_channels = shape_of(in).c,
                                                         .out_channels = p.filters,
                                                         .kernel = p.size,
                                                         .stride = p.stride,
                                                         .padding = p.padding,
                                                         .groups = p.groups,
                                                         .activation = p.activation}),
                  {in});
  }

  int add(const DarknetConnected& p) {
    const int in = previous();
    const std::size_t features = shape_of(in).image_count();
    add_weights({p.output, static_cast<std::int64_t>(features)});
    if (features > static_cast<std::size_t>(INT_MAX)) {
      throw Error(fmt::format("a [connected] layer over {} inputs is more than corgy's Linear takes", features));
    }
    return append(std::make_unique<Linear>(LinearOptions{
                      .in_features = static_cast<int>(features), .out_features = p.output, .activation = p.activation}),
                  {in});
  }

  int add(const DarknetMaxpool& p) {
    return append(std::make_unique<MaxPool2d>(MaxPool2d::darknet(p.size, p.stride, p.padding)), {previous()});
  }

  int add(const DarknetAvgpool&) { return append(std::make_unique<AvgPool2d>(AvgPool2d::global()), {previous()}); }

  // Darknet's softmax runs over all C*H*W values of an image; corgy's Softmax runs over channels.
  int add(const DarknetSoftmax&) {
    int in = previous();
    if (shape_of(in).plane_count() != 1) in = append(std::make_unique<Flatten>(), {in});
    return append(std::make_unique<Softmax>(), {in});
  }

  int add(const DarknetRoute& p) {
    if (p.layers.size() == 1) return source(p.layers[0]);
    std::vector<int> inputs;
    for (int layer : p.layers) inputs.push_back(source(layer));
    return append(std::make_unique<Concat>(), inputs);
  }

  int add(const DarknetShortcut& p) {
    return append(std::make_unique<Add>(p.activation), {previous(), source(p.from)});
  }

  int add(const DarknetUpsample& p) { return append(std::make_unique<Upsample>(p.stride), {previous()}); }

  int add(const DarknetPassThrough&) { return previous(); }

  template <class Head>
  int add(const Head& head) {
    const int in = previous();
    if (in == Sequential::model_input) throw Error("a detection head needs a layer before it");
    const Shape shape = shape_of(in);
    if (shape.c != head.channels()) {
      throw Error(
          fmt::format("expects {} channels (anchors x (5 + {} classes)) from the layer before it, which "
                      "gives {}",
                      head.channels(), head.classes, shape.str()));
    }
    net_.model.mark_output(in);
    net_.heads.push_back({in, current_, head});
    return DarknetModel::head_layer;
  }

  DarknetModel& net_;
  const LoadLimits& limits_;
  ModelBytes weight_bytes_;
  Shape input_{1, net_.channels, net_.height, net_.width};
  std::vector<Shape> shapes_;
  int current_ = 0;
};

}  // namespace

std::vector<const Variable*> DarknetModel::forward(const Variable& input) {
  model.forward(input);
  if (heads.empty()) return {&model.output(layer_of_cfg.back())};
  std::vector<const Variable*> raw;
  for (const DarknetHead& head : heads) raw.push_back(&model.output(head.layer));
  return raw;
}

DarknetModel build_darknet_model(DarknetCfg cfg, const DarknetOptions& options) {
  if (options.width < 0 || options.height < 0) {
    throw Error(fmt::format("{}: input size {} x {} must be positive (or 0 for the cfg's)", cfg.source, options.width,
                            options.height));
  }
  DarknetModel net;
  net.width = options.width > 0 ? options.width : cfg.width;
  net.height = options.height > 0 ? options.height : cfg.height;
  net.channels = cfg.channels;
  net.cfg = std::move(cfg);
  Builder(net, options.limits).build();
  if (net.model.size() == 0)
    throw Error(fmt::format("{}: the cfg has no layer that computes anything", net.cfg.source));
  // Without heads the output is the last cfg layer's, which may be an earlier Sequential layer ([dropout]).
  if (net.heads.empty()) net.model.mark_output(net.layer_of_cfg.back());
  return net;
}

std::vector<std::string> read_darknet_names(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw Error(fmt::format("{}: cannot open the class names", path));
  std::vector<std::string> names;
  for (std::string line; std::getline(file, line);) {
    line.erase(line.find_last_not_of(" \t\r") + 1);
    names.push_back(line);
  }
  // A final newline is not an empty class name.
  while (!names.empty() && names.back().empty()) names.pop_back();
  return names;
}

DarknetModel load_darknet(const std::string& cfg_path, const std::string& weights_path, const DarknetOptions& options) {
  DarknetModel net = build_darknet_model(read_darknet_cfg(cfg_path), options);
  load_darknet_weights(net, weights_path);
  return net;
}

}  // namespace corgy
