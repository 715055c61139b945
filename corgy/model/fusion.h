// Fusion: the model-level rewrite that lets a backend compute a convolution together with the max pool after it.
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
};

/// A convolution whose output only a max pool reads: `pool` computes both as one Conv2dMaxPool.
struct ConvMaxPoolFusion {
  int conv = -1;
  int pool = -1;
  std::unique_ptr<Layer> fused;  // the Conv2dMaxPool that replaces the pair, fed by the convolution's inputs
};

/// Finds the pairs (Conv2d c, MaxPool2d p) where p's only input is c, c's output is read by p alone and is not
/// kept, and builds their fused layers. Tiny YOLO's six conv + maxpool pairs are such pairs; a convolution that
/// also feeds a route (YOLOv3's) is not.
std::vector<ConvMaxPoolFusion> find_conv_maxpool_fusions(const std::vector<FusionNode>& nodes);

}  // namespace corgy
