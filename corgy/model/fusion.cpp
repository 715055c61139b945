#include "corgy/model/fusion.h"

#include "corgy/layers/conv2d.h"
#include "corgy/layers/conv2d_maxpool.h"
#include "corgy/layers/maxpool2d.h"

namespace corgy {

std::vector<ConvMaxPoolFusion> find_conv_maxpool_fusions(const std::vector<FusionNode>& nodes) {
  std::vector<int> readers(nodes.size(), 0);
  for (const FusionNode& node : nodes) {
    for (int input : node.inputs) {
      if (input >= 0) ++readers[input];
    }
  }
  std::vector<ConvMaxPoolFusion> fusions;
  for (std::size_t p = 0; p < nodes.size(); ++p) {
    const auto* pool = dynamic_cast<const MaxPool2d*>(nodes[p].layer);
    if (!pool || nodes[p].inputs.size() != 1) continue;
    const int c = nodes[p].inputs[0];
    if (c < 0 || readers[c] != 1 || nodes[c].keep) continue;
    const auto* conv = dynamic_cast<const Conv2d*>(nodes[c].layer);
    // A reflect or edge padded convolution runs as Pad + convolution (padded_conv.h); the fused kernels pad with
    // zeros only.
    if (!conv || (conv->padding_mode() != PadMode::constant && conv->desc().padding > 0)) continue;
    fusions.push_back({c, static_cast<int>(p), std::make_unique<Conv2dMaxPool>(*conv, *pool)});
  }
  return fusions;
}

}  // namespace corgy
