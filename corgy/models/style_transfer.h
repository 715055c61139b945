// The multi-style transfer network of Dumoulin, Shlens and Kudlur, "A Learned Representation for Artistic Style"
// (ICLR 2017): one feed-forward network renders a photo in any of its styles, or in a blend of them, chosen at run
// time by a style-weight vector. Trained weights: data/style_transfer (tools/train_style_transfer.py). See
// docs/style-transfer.md.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "corgy/backend.h"
#include "corgy/model/sequential.h"
#include "corgy/variable.h"

namespace corgy {

/// The network's hyper-parameters. The weights directory's manifest.json holds them for a trained network.
struct StyleTransferOptions {
  int styles = 1;
  /// Channels after the first convolution; the downsampling convolutions and residual blocks have 2x and 4x.
  /// The paper's (and the trained network's) is 32.
  int width = 32;
  int residual_blocks = 5;
  /// The convolutions' padding: PadMode::reflect (the paper's) or PadMode::constant (zeros, as some exports).
  PadMode padding = PadMode::reflect;
  float epsilon = 1e-5f;
};

/// The network as a Sequential, with its style mix:
///
///   RGB (N, 3, H, W) in [0, 1]
///   conv 9x9 /1 -> w, CIN + ReLU;  conv 3x3 /2 -> 2w, CIN + ReLU;  conv 3x3 /2 -> 4w, CIN + ReLU
///   residual blocks: conv 3x3, CIN + ReLU, conv 3x3, CIN, + block input
///   2 x (nearest upsampling x2, conv 3x3 -> 2w then w, CIN + ReLU)
///   conv 9x9 -> 3, CIN + sigmoid                                  -> RGB (N, 3, H', W') in (0, 1)
///
/// where CIN is a ConditionalInstanceNorm and every convolution pads by kernel / 2 (reflect or zeros) without bias.
/// H' = 4 * ceil(ceil(H / 2) / 2): H itself when H divides by 4. The smallest input is 8 x 8 with reflect padding.
///
///   corgy::StyleTransferModel model = corgy::StyleTransferModel::load("data/style_transfer/weights");
///   model.network().set_backend("vulkan");
///   model.set_style({{0.7f, 0.3f, 0.0f, 0.0f}});        // 70% style 0, 30% style 1
///   const corgy::Variable& out = model.stylise(corgy::load_image("photo.png"));
class StyleTransferModel {
 public:
  /// One convolution with the norm after it, named as the weights files name them (conv1, res2.conv1, up1, out).
  struct Block {
    std::string name;
    int conv = -1;  ///< layer index of the Conv2d
    int norm = -1;  ///< layer index of its ConditionalInstanceNorm
  };

  /// The network with zero convolution weights and identity norms (gamma 1, beta 0), style 0 alone, on the naive
  /// backend. Throws corgy::Error for styles, width or residual_blocks < 1, or a padding other than reflect or
  /// constant.
  explicit StyleTransferModel(const StyleTransferOptions& options);

  /// Reads a weights directory: manifest.json and one float32 .npy per tensor (format in docs/style-transfer.md).
  /// `padding` replaces the manifest's padding mode when given. Throws corgy::Error naming the file (and tensor)
  /// for a missing or malformed manifest, a missing, unknown or repeated tensor, a file name that leaves the
  /// directory, or a shape that does not fit the network the manifest describes.
  static StyleTransferModel load(const std::string& directory, std::optional<PadMode> padding = std::nullopt);

  Sequential& network() { return network_; }
  const Sequential& network() const { return network_; }
  const StyleTransferOptions& options() const { return options_; }
  /// The styles' names from the manifest ("style 0", "style 1", ... for a built model).
  const std::vector<std::string>& style_names() const { return style_names_; }
  void set_style_names(std::vector<std::string> names);
  /// Every convolution with its norm, in the order of the weights files.
  const std::vector<Block>& blocks() const { return blocks_; }

  /// Sets the style mix of every norm: one weight per style (a blend usually sums to 1). Takes effect at the next
  /// forward on every backend and re-uploads nothing. Throws corgy::Error for another count or a non-finite value.
  void set_style(std::span<const float> weights);
  const std::vector<float>& style() const { return style_; }

  /// Runs the network on images (N, 3, H, W) in [0, 1]; returns (N, 3, H', W') as documented above.
  const Variable& stylise(const Variable& images) { return network_.forward(images); }

 private:
  StyleTransferOptions options_;
  Sequential network_;
  std::vector<Block> blocks_;
  std::vector<std::string> style_names_;
  std::vector<float> style_;
};

/// Parses a style mix given as text, "0.7,0.3,0": comma-separated finite numbers. Throws corgy::Error for anything
/// else, or when the count is not `styles`.
std::vector<float> parse_style_weights(const std::string& text, int styles);

}  // namespace corgy
