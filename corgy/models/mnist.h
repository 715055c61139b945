// Corgy's MNIST network (the one of the Corgy paper and Apple's MPSCNN sample): two 5x5 convolutions with ReLU and
// max pooling, then one fully connected layer, about 0.1 M weights. Trained weights: data/mnist (see its README).
#pragma once

#include <string>

#include "corgy/io/raw_weights.h"
#include "corgy/model/sequential.h"
#include "corgy/variable.h"

namespace corgy {

/// Indices of the layers in the model build_mnist_model() returns.
struct MnistLayers {
  static constexpr int conv1 = 0;    ///< 5x5, 1 -> 32, pad 2, ReLU: (N, 32, 28, 28)
  static constexpr int pool1 = 1;    ///< max 2x2: (N, 32, 14, 14)
  static constexpr int conv2 = 2;    ///< 5x5, 32 -> 64, pad 2, ReLU: (N, 64, 14, 14)
  static constexpr int pool2 = 3;    ///< max 2x2: (N, 64, 7, 7)
  static constexpr int flatten = 4;  ///< (N, 3136, 1, 1), NCHW order
  static constexpr int fc1 = 5;      ///< 3136 -> 10: the logits (N, 10, 1, 1), kept readable with Sequential::output
  static constexpr int softmax = 6;  ///< class probabilities (N, 10, 1, 1), the model's output
};

inline constexpr int mnist_side = 28;
inline constexpr int mnist_classes = 10;

/// How the weight files of a directory are named and stored.
enum class MnistWeightFormat {
  /// Raw little-endian float32 files named as in MPSCNN's sample: weights_conv1.dat, bias_conv1.dat,
  /// weights_conv2.dat, bias_conv2.dat, weights_fc1.dat, bias_fc1.dat, in the layouts of MnistWeightOptions.
  raw,
  /// NumPy files named after PyTorch's state_dict keys, in PyTorch's orders: conv1.weight.npy (32, 1, 5, 5),
  /// conv1.bias.npy, conv2.weight.npy (64, 32, 5, 5), conv2.bias.npy, fc1.weight.npy (10, 3136), fc1.bias.npy.
  npy,
};

struct MnistWeightOptions {
  MnistWeightFormat format = MnistWeightFormat::raw;
  /// Order of weights_conv1.dat and weights_conv2.dat (raw files only).
  ConvWeightLayout conv_layout = ConvWeightLayout::ohwi;
  /// Order of weights_fc1.dat (raw files only): ohwi_conv is MPSCNN's (10, 7, 7, 64), out_by_in PyTorch's (10, 3136).
  LinearWeightLayout linear_layout = LinearWeightLayout::ohwi_conv;
};

/// The network with zero weights. Input (N, 1, 28, 28), pixel = byte / 255 (no mean/std normalisation), white
/// digits on black as in MNIST; output (N, 10, 1, 1) class probabilities. The logits stay readable after a forward
/// as model.output(MnistLayers::fc1).
Sequential build_mnist_model();

/// Loads the six weight files of `directory` into a model from build_mnist_model(). Throws corgy::Error naming the
/// file for a missing or wrongly sized file. Call Sequential::weights_changed() if the model has already run.
void load_mnist_weights(Sequential& model, const std::string& directory, const MnistWeightOptions& options = {});

/// build_mnist_model() with the weights of `directory`, on the naive backend until Sequential::set_backend.
Sequential load_mnist_model(const std::string& directory, const MnistWeightOptions& options = {});

/// Reads one digit image (PNG, PGM, JPEG, ... through load_image) as grey (1, 1, 28, 28) in [0, 1]; colour images
/// are converted to grey. Throws corgy::Error naming the file and its size when it is not 28 x 28, unless `resize`
/// is set: then it is resized (bilinearly, aspect ratio not kept) to 28 x 28.
Variable load_mnist_digit(const std::string& path, bool resize = false);

}  // namespace corgy
