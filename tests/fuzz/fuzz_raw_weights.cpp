// Raw float32 .dat files into fixed small layers, in every layout: only a file of exactly the right size loads.
#include "corgy/error.h"
#include "corgy/io/raw_weights.h"
#include "fuzz_target.h"

namespace {

template <class Load>
void attempt(const Load& load) {
  try {
    load();
  } catch (const corgy::Error&) {
  }
}

}  // namespace

CORGY_FUZZ_TARGET(raw_weights) {
  static corgy::Conv2d conv({.in_channels = 2, .out_channels = 3, .kernel = 3});                  // 54 weights
  static corgy::Conv2d grouped({.in_channels = 4, .out_channels = 2, .kernel = 1, .groups = 2});  // 4 weights
  static corgy::Linear linear({.in_features = 12, .out_features = 2});                            // 24 weights
  const std::string path = corgy::fuzz::write_scratch_file("input.dat", input);
  attempt([&] { corgy::load_raw_weights(conv, path, corgy::ConvWeightLayout::oihw); });
  attempt([&] { corgy::load_raw_weights(conv, path, corgy::ConvWeightLayout::ohwi); });
  attempt([&] { corgy::load_raw_weights(grouped, path, corgy::ConvWeightLayout::ohwi); });
  attempt([&] { corgy::load_raw_weights(linear, path, corgy::LinearWeightLayout::out_by_in); });
  attempt([&] {
    corgy::load_raw_weights(linear, path, corgy::LinearWeightLayout::ohwi_conv, corgy::Shape{1, 3, 2, 2});
  });
  attempt([&] { corgy::load_raw_bias(conv, path); });
  attempt([&] { corgy::load_raw_bias(linear, path); });
}
