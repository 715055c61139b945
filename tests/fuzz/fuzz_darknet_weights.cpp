// Darknet .weights bytes into a fixed small network that has every kind of weighted layer darknet stores:
// convolutions with and without batch norm (one grouped), and [connected] layers with and without it.
#include "corgy/error.h"
#include "corgy/io/darknet.h"
#include "corgy/io/darknet_weights.h"
#include "fuzz_target.h"

namespace corgy::fuzz {

/// The network the darknet_weights target loads into; tests/fuzz/make_corpus.py writes its seeds from the same text.
inline constexpr const char* darknet_weights_cfg = R"([net]
width=8
height=8
channels=3

[convolutional]
batch_normalize=1
filters=4
size=3
stride=1
pad=1
activation=leaky

[convolutional]
filters=4
size=1
groups=2
activation=linear

[shortcut]
from=-2
activation=linear

[maxpool]
size=2
stride=2

[connected]
output=6
batch_normalize=1
activation=relu

[connected]
output=3
activation=linear
)";

}  // namespace corgy::fuzz

CORGY_FUZZ_TARGET(darknet_weights) {
  static corgy::DarknetModel net =
      corgy::build_darknet_model(corgy::parse_darknet_cfg(corgy::fuzz::darknet_weights_cfg, "fixed.cfg"));
  try {
    corgy::load_darknet_weights(net, corgy::fuzz::as_bytes(input), "input.weights");
  } catch (const corgy::Error&) {
  }
}
