// Builds a small CNN, gives it weights, runs it on the OpenBLAS backend and reads the result.
#include <corgy/corgy.h>

#include <cstdio>
#include <vector>

int main() {
  corgy::Sequential model;
  const int conv = model.add(corgy::Conv2d(
      {.in_channels = 1, .out_channels = 2, .kernel = 3, .padding = 1, .activation = corgy::Activation::relu()}));
  model.add(corgy::MaxPool2d({.kernel = 2}));
  const int fc = model.add(corgy::Linear({.in_features = 2 * 4 * 4, .out_features = 3}));
  model.add(corgy::Softmax());

  // Weights start at zero. Conv2d takes OIHW (out, in, kh, kw) and Linear [out][in], as PyTorch stores them.
  std::vector<float> edges = {-1, 0, 1, -2, 0, 2, -1, 0, 1};  // channel 0: Sobel filter, dark-to-bright edges
  for (int i = 0; i < 9; ++i) edges.push_back(-edges[i]);     // channel 1: bright-to-dark edges
  model.layer_as<corgy::Conv2d>(conv).set_weights(edges);
  std::vector<float> fc_weights(3 * 32);
  for (std::size_t i = 0; i < fc_weights.size(); ++i) fc_weights[i] = 0.05f * static_cast<float>(i % 5);
  model.layer_as<corgy::Linear>(fc).set_weights(fc_weights);

  model.set_backend("blas");  // "naive" is the single-threaded reference; set_backend("blas", 2) for 2 threads

  corgy::Variable image(corgy::Shape{1, 1, 8, 8});  // (N, C, H, W), page-aligned, zero-filled
  for (int y = 0; y < 8; ++y)
    for (int x = 4; x < 8; ++x) image.at(0, 0, y, x) = 1.0f;  // bright right half
  std::printf("%s", model.summary(image.shape()).c_str());

  const corgy::Variable& probabilities = model.forward(image);  // (1, 3, 1, 1)
  for (int c = 0; c < 3; ++c) std::printf("class %d: %.3f\n", c, probabilities.at(0, c, 0, 0));
}
