// A complete corgy program: an MNIST-shaped CNN built from the C++ API, weights set from memory, a backend chosen
// on the command line, a batch of images run through it, outputs read, and errors reported.
// Usage: api_example [backend] [threads] [images.npy]
//   backend: naive, blas or auto (default auto); threads: 0 = all cores (default);
//   images.npy: float32 (N, 1, 28, 28), e.g. written by numpy.save (default: two synthetic images)
#include <corgy/corgy.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

// Stand-in for trained weights, which would come from files (e.g. corgy::load_npy("conv1.weight.npy").values()):
// a fixed pattern scaled by 1/sqrt(fan-in) so that activations keep a sensible size through the layers.
std::vector<float> pattern(std::size_t count, int fan_in) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = std::sin(static_cast<float>(i)) / std::sqrt(static_cast<float>(fan_in));
  return values;
}

corgy::Sequential build_model() {
  using namespace corgy;
  const Activation relu = Activation::relu();
  Sequential model;
  model.add(Conv2d({.in_channels = 1, .out_channels = 8, .kernel = 5, .padding = 2, .activation = relu}));
  model.add(MaxPool2d({.kernel = 2}));  // stride defaults to the kernel size
  model.add(Conv2d({.in_channels = 8, .out_channels = 16, .kernel = 5, .padding = 2, .activation = relu}));
  model.add(MaxPool2d({.kernel = 2}));
  model.add(Flatten());  // (N, 16, 7, 7) -> (N, 784, 1, 1), no copy
  model.add(Linear({.in_features = 16 * 7 * 7, .out_features = 10}));
  model.add(Softmax());

  for (int i = 0; i < model.size(); ++i) {
    if (auto* conv = dynamic_cast<Conv2d*>(&model.layer(i))) {
      const Conv2dDesc& d = conv->desc();
      conv->set_weights(pattern(conv->weights().count(), d.in_channels * d.kernel * d.kernel));
      conv->set_bias(std::vector<float>(static_cast<std::size_t>(d.out_channels), 0.01f));
    } else if (auto* fc = dynamic_cast<Linear*>(&model.layer(i))) {
      fc->set_weights(pattern(fc->weights().count(), fc->options().in_features));
    }
  }
  return model;
}

corgy::Variable load_images(const char* npy_path) {
  if (npy_path != nullptr) return corgy::load_npy(npy_path);
  corgy::Variable images(corgy::Shape{2, 1, 28, 28});  // (N, C, H, W): two 28x28 grey images, zero-filled
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x) images.at(n, 0, y, x) = static_cast<float>(n == 0 ? x : y) / 27.0f;
  return images;
}

void run(const std::string& backend, int threads, const char* npy_path) {
  corgy::Sequential model = build_model();
  model.set_backend(backend, threads);
  std::printf("backend %s, %d thread(s)\n", model.backend().name().c_str(), model.backend().threads());

  const corgy::Variable images = load_images(npy_path);
  std::printf("%s", model.summary(images.shape()).c_str());

  // The returned reference stays valid until the next forward; clone() keeps a copy beyond that.
  const corgy::Variable& probabilities = model.forward(images);  // (N, 10, 1, 1)
  for (int n = 0; n < std::min(probabilities.shape().n, 4); ++n) {
    int best = 0;
    for (int c = 1; c < probabilities.shape().c; ++c) {
      if (probabilities.at(n, c, 0, 0) > probabilities.at(n, best, 0, 0)) best = c;
    }
    std::printf("image %d: class %d, probability %.3f\n", n, best, probabilities.at(n, best, 0, 0));
  }

  // Bad input is a corgy::Error that names the layer and the shapes, never a crash or garbage.
  try {
    model.forward(corgy::Variable(corgy::Shape{1, 3, 28, 28}));  // three channels; the first conv takes one
  } catch (const corgy::Error& error) {
    std::printf("as expected: %s\n", error.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    run(argc > 1 ? argv[1] : "auto", argc > 2 ? std::stoi(argv[2]) : 0, argc > 3 ? argv[3] : nullptr);
  } catch (const corgy::Error& error) {  // e.g. an unknown backend name or a missing file
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
