// The quick-start demo: builds a small CNN from the C++ API with random weights, runs it on every backend built
// in, and prints how closely the outputs agree and how long a forward takes on each.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "corgy/corgy.h"

namespace {

// Random weights with He-style scaling so that activations stay in a sensible range through the layers.
void randomize(corgy::Variable& tensor, float fan_in, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / fan_in));
  for (float& value : tensor.values()) value = normal(rng);
}

corgy::Sequential build_model(std::mt19937& rng) {
  using namespace corgy;
  Sequential model;
  const Activation leaky = Activation::leaky_relu(0.1f);
  const int stem =
      model.add(Conv2d({.in_channels = 3, .out_channels = 16, .kernel = 3, .padding = 1, .activation = leaky}));
  model.add(MaxPool2d({.kernel = 2}));
  const int branch =
      model.add(Conv2d({.in_channels = 16, .out_channels = 32, .kernel = 3, .padding = 1, .activation = leaky}));
  const int squeeze = model.add(Conv2d({.in_channels = 32, .out_channels = 32, .kernel = 1, .activation = leaky}));
  model.add(Add(), {branch, squeeze});
  model.add(MaxPool2d::darknet(2, 1));
  model.add(
      Conv2d({.in_channels = 32, .out_channels = 64, .kernel = 3, .stride = 2, .padding = 1, .activation = leaky}));
  model.add(AvgPool2d::global());
  model.add(Flatten());
  model.add(Linear({.in_features = 64, .out_features = 10}));
  model.add(Softmax());
  (void)stem;
  for (int i = 0; i < model.size(); ++i) {
    if (auto* conv = dynamic_cast<Conv2d*>(&model.layer(i))) {
      const Conv2dDesc& d = conv->desc();
      randomize(conv->weights(), static_cast<float>(d.in_channels / d.groups * d.kernel * d.kernel), rng);
    } else if (auto* fc = dynamic_cast<Linear*>(&model.layer(i))) {
      randomize(fc->weights(), static_cast<float>(fc->options().in_features), rng);
    }
  }
  return model;
}

double median_ms(corgy::Sequential& model, const corgy::Variable& input, int repeats) {
  std::vector<double> times;
  model.forward(input);  // warm-up: plans shapes and allocates intermediates
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model.forward(input);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return times[repeats / 2];
}

}  // namespace

int main() {
  std::mt19937 rng(42);
  corgy::Sequential model = build_model(rng);
  corgy::Variable input(corgy::Shape{4, 3, 64, 64});
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (float& value : input.values()) value = pixel(rng);

  fmt::print("corgy demo: a small CNN with random weights, input {}\n{}", input.shape().str(),
             model.summary(input.shape()));
  fmt::print("{:.1f} MFLOP per forward\n\n", model.flops(input.shape()) / 1e6);

  model.set_backend("naive");
  const corgy::Variable reference = model.forward(input).clone();
  const double naive_ms = median_ms(model, input, 3);
  fmt::print("{:<8} {:>9.2f} ms per forward (reference)\n", "naive", naive_ms);

  for (const std::string& name : corgy::available_backends()) {
    if (name == "naive") continue;
    try {
      model.set_backend(name);
    } catch (const corgy::Error& e) {
      // A backend built in may still be unusable here (e.g. Vulkan without a driver): say why and go on.
      fmt::print("{:<8} not available: {}\n", name, e.what());
      continue;
    }
    const corgy::Variable& output = model.forward(input);
    float max_difference = 0.0f;
    for (std::size_t i = 0; i < output.count(); ++i) {
      max_difference = std::max(max_difference, std::abs(output.data()[i] - reference.data()[i]));
    }
    const double ms = median_ms(model, input, 10);
    fmt::print("{:<8} {:>9.2f} ms per forward, {:5.1f}x naive, max |difference| to naive {:.2e}\n", name, ms,
               naive_ms / ms, max_difference);
  }
  fmt::print("\nclass probabilities of image 0 (naive): ");
  for (int c = 0; c < 10; ++c) fmt::print("{:.3f} ", reference.at(0, c, 0, 0));
  fmt::print("\n");
}
