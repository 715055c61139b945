// Darknet .cfg text -> DarknetCfg -> a Sequential with zero weights, its summary and its weights' size.
#include "corgy/error.h"
#include "corgy/io/darknet.h"
#include "corgy/io/darknet_weights.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(darknet_cfg) {
  try {
    const corgy::DarknetModel net = corgy::build_darknet_model(
        corgy::parse_darknet_cfg(corgy::fuzz::as_text(input), "input.cfg"), {.limits = corgy::fuzz::limits});
    net.model.summary(net.input_shape());
    corgy::darknet_weights_size(net);
  } catch (const corgy::Error&) {
  }
}
