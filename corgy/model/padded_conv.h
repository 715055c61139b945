// Padded convolutions: the model-level rewrite that runs a Conv2d with reflect or edge padding as a Pad layer into
// a temporary followed by the same convolution without padding.
#pragma once

#include <memory>
#include <optional>

#include "corgy/layers/layer.h"

namespace corgy {

/// The two layers that compute a padded convolution: `pad` reads the convolution's input and writes the padded
/// input, `conv` (zero padding 0, the original's weight and bias storage) reads that and writes the output.
struct PaddedConvExpansion {
  std::unique_ptr<Layer> pad;
  std::unique_ptr<Layer> conv;
};

/// For a Conv2d whose padding mode is reflect or edge (and padding > 0), its expansion; otherwise none.
///
/// Why a rewrite and not a padding mode in every backend's convolution: each backend convolves with zero padding
/// in its own kernels (im2col, Winograd, packed GEMMs, GPU shaders), and one Pad operation, which every backend
/// already has, serves them all. The cost is one extra pass over the convolution's input; Sequential plans the
/// temporary like any intermediate (it lives from the Pad to the convolution and shares memory with others).
std::optional<PaddedConvExpansion> expand_padded_conv(const Layer& layer);

}  // namespace corgy
