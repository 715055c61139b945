// Darknet models: a .cfg (and .weights) turned into a corgy Sequential plus the description of its YOLO heads.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "corgy/detect/region.h"
#include "corgy/detect/yolo.h"
#include "corgy/io/darknet_cfg.h"
#include "corgy/io/load_limits.h"
#include "corgy/model/sequential.h"

namespace corgy {

struct DarknetOptions {
  /// Network input size; 0 keeps the cfg's [net] width / height (as darknet's resize_network, YOLO cfgs need
  /// multiples of 32).
  int width = 0;
  int height = 0;
  /// Checked while the model is built, before each layer allocates its weights: every weight tensor and every
  /// layer's output at the input size (batch 1) against max_tensor_bytes, all weights against max_model_bytes.
  LoadLimits limits{};
};

/// A [region] or [yolo] layer: not a layer of the Sequential, but a description for the decoders in corgy/detect,
/// with the Sequential layer whose output is its raw input.
struct DarknetHead {
  /// Index of the Sequential layer whose (kept) output feeds the head.
  int layer = 0;
  /// Index of the head in the cfg's layer numbering.
  int cfg_layer = 0;
  std::variant<RegionHead, YoloHead> params;
};

/// A darknet network as corgy runs it:
///
///   corgy::DarknetModel net = corgy::load_darknet("yolov3-tiny.cfg", "yolov3-tiny.weights");
///   net.model.set_backend("blas");
///   std::vector<const corgy::Variable*> raw = net.forward(letterboxed);  // (N, 3, net.height, net.width)
///
/// [convolutional] becomes a Conv2d (batch norm folded in at load time), [connected] a Linear, [maxpool] a MaxPool2d
/// with darknet's padding, [avgpool] a global AvgPool2d, [route] a Concat (a route of one layer and [dropout] are
/// the layer they name, no copy), [shortcut] an Add, [upsample] an Upsample, [softmax] a Softmax over C*H*W.
struct DarknetModel {
  DarknetCfg cfg;
  Sequential model;
  /// The input size images are fitted to: (N, channels, height, width).
  int width = 0;
  int height = 0;
  int channels = 0;
  /// For every cfg layer, the Sequential layer holding its output (Sequential::model_input when it passes the input
  /// on, head_layer for [region]/[yolo], which have no Sequential layer).
  std::vector<int> layer_of_cfg;
  /// The [region]/[yolo] layers in cfg order; empty for a classifier.
  std::vector<DarknetHead> heads;

  static constexpr int head_layer = -2;

  Shape input_shape(int batch = 1) const { return {batch, channels, height, width}; }
  /// Runs the model on `input` (N, channels, H, W) and returns the raw tensors that feed each head, before any
  /// activation, in cfg order (the last layer's output when there is no head). They stay valid until the next
  /// forward.
  std::vector<const Variable*> forward(const Variable& input);
};

/// Builds the Sequential of a parsed cfg, with zero weights. Throws corgy::Error naming the cfg line for a layer
/// whose input does not fit (e.g. a [route] of maps of different sizes, a [yolo] whose input has the wrong channel
/// count), that reads a [region]/[yolo] layer's output, or whose weights or output are over options.limits (a
/// width=100000 or filters=1000000 fails here, before anything that large is allocated).
DarknetModel build_darknet_model(DarknetCfg cfg, const DarknetOptions& options = {});

/// Reads a darknet .names file: one class name per line (voc.names, coco.names); trailing whitespace is dropped.
/// Throws corgy::Error when the file cannot be read.
std::vector<std::string> read_darknet_names(const std::string& path);

/// read_darknet_cfg + build_darknet_model + load_darknet_weights (corgy/io/darknet_weights.h).
DarknetModel load_darknet(const std::string& cfg_path, const std::string& weights_path,
                          const DarknetOptions& options = {});

}  // namespace corgy
