// A parsed cfg's network run on a tiny input: built at no more than 48 x 48 pixels, given random weights through
// the .weights loader, run on the naive and the OpenBLAS backend, which must agree, and its heads decoded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/error.h"
#include "corgy/io/darknet.h"
#include "corgy/io/darknet_weights.h"
#include "corgy/models/darknet_detector.h"
#include "fuzz_target.h"

namespace {

// Small enough for a run to take milliseconds, whatever the cfg asks for.
constexpr corgy::LoadLimits forward_limits{.max_tensor_bytes = std::uint64_t{4} << 20,
                                           .max_model_bytes = std::uint64_t{16} << 20};
constexpr double max_flops = 3e7;

}  // namespace

CORGY_FUZZ_TARGET(darknet_forward) {
  try {
    const corgy::DarknetCfg cfg = corgy::parse_darknet_cfg(corgy::fuzz::as_text(input), "input.cfg");
    corgy::DarknetModel net = corgy::build_darknet_model(
        cfg,
        {.width = std::clamp(cfg.width, 1, 48), .height = std::clamp(cfg.height, 1, 48), .limits = forward_limits});
    if (net.model.flops(net.input_shape()) > max_flops) return;
    const std::vector<std::byte> weights = corgy::random_darknet_weights(net, 7);
    corgy::load_darknet_weights(net, weights, "random.weights");

    corgy::Variable image(net.input_shape());
    for (std::size_t i = 0; i < image.count(); ++i)
      image.data()[i] = corgy::darknet_random_uniform(3, static_cast<std::uint32_t>(i));
    std::vector<corgy::Variable> reference;
    for (const corgy::Variable* raw : net.forward(image)) reference.push_back(raw->clone());

    net.model.set_backend(std::make_unique<corgy::BlasBackend>(1));
    const std::vector<const corgy::Variable*> raw = net.forward(image);
    for (std::size_t i = 0; i < raw.size(); ++i) corgy::fuzz::check_backends_agree(reference[i], *raw[i]);
    if (!net.heads.empty()) corgy::decode_detections(net, raw, 0, 64, 48, {.threshold = 0.2f});
  } catch (const corgy::Error&) {
  }
}
