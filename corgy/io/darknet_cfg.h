// Darknet .cfg files: parsed into typed layer descriptions, every key checked.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "corgy/activation.h"
#include "corgy/detect/region.h"
#include "corgy/detect/yolo.h"

namespace corgy {

/// [convolutional]: `pad=1` means padding = size / 2; activation defaults to logistic, as in darknet.
struct DarknetConvolutional {
  int filters = 1;
  int size = 1;
  int stride = 1;
  int padding = 0;
  int groups = 1;
  bool batch_normalize = false;
  Activation activation = Activation::sigmoid();
};

/// [connected]: a fully connected layer over the flattened (C, H, W) input.
struct DarknetConnected {
  int output = 1;
  bool batch_normalize = false;
  Activation activation = Activation::sigmoid();
};

/// [maxpool]: padding defaults to size - 1, split top/left = padding / 2, bottom/right = the rest.
struct DarknetMaxpool {
  int size = 1;
  int stride = 1;
  int padding = 0;
};

/// [avgpool]: global average pooling to (C, 1, 1).
struct DarknetAvgpool {};

/// [softmax]: over all C * H * W values of each image.
struct DarknetSoftmax {};

/// [route]: the concatenation (along channels) of the outputs of earlier layers, given as absolute indices.
struct DarknetRoute {
  std::vector<int> layers;
};

/// [shortcut]: activation(previous layer + layer `from`), `from` an absolute index.
struct DarknetShortcut {
  int from = 0;
  Activation activation{};
};

/// [upsample]: nearest-neighbour enlargement by `stride`.
struct DarknetUpsample {
  int stride = 2;
};

/// [dropout] and [cost]: nothing at inference; the layer passes its input on.
struct DarknetPassThrough {};

using DarknetLayerParams =
    std::variant<DarknetConvolutional, DarknetConnected, DarknetMaxpool, DarknetAvgpool, DarknetSoftmax, DarknetRoute,
                 DarknetShortcut, DarknetUpsample, DarknetPassThrough, RegionHead, YoloHead>;

/// One section after [net]; darknet numbers these layers from 0.
struct DarknetLayer {
  /// Section name without brackets, in its long form ("convolutional" for [conv] too).
  std::string type;
  /// Line of the section header (1-based).
  int line = 0;
  DarknetLayerParams params;
};

struct DarknetCfg {
  /// File path (or another name) used in messages.
  std::string source;
  /// [net] input size.
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<DarknetLayer> layers;
  /// One line per key that was ignored because only training uses it ("file:line: ...").
  std::vector<std::string> warnings;

  /// "file:line [type] (layer i)", the prefix of messages about layer i.
  std::string location(int layer) const;
};

/// Parses cfg text. Throws corgy::Error naming `source` and the line for an unknown section or key, a malformed
/// value, a missing [net] input size, an index that names no earlier layer, or parameters no layer can have (zero
/// filters, size or stride). Keys that only matter to training (learning_rate, jitter, ...: see
/// darknet_training_keys()) are ignored with a warning in DarknetCfg::warnings.
DarknetCfg parse_darknet_cfg(std::string_view text, const std::string& source);

/// Reads and parses a .cfg file; throws corgy::Error when it cannot be read.
DarknetCfg read_darknet_cfg(const std::string& path);

/// The keys that are accepted in any section and ignored because only training uses them.
const std::vector<std::string_view>& darknet_training_keys();

}  // namespace corgy
