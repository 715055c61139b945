// Checks an installed corgy from the outside: a 1x1 convolution with known weights, run on every backend, must
// equal the same convolution computed here with plain loops; bad input must surface as a catchable corgy::Error.
#include <corgy/corgy.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int kIn = 3;
constexpr int kOut = 2;
constexpr int kHeight = 5;
constexpr int kWidth = 7;

// [out][in] for a 1x1 kernel; the negative entries make ReLU clip some outputs to zero.
const std::vector<float> kWeights = {0.5f, -1.0f, 2.0f, -0.25f, 0.75f, -1.5f};
const std::vector<float> kBias = {0.125f, -0.5f};

float input_value(int c, int y, int x) {
  return static_cast<float>((c + 1) * (y - 2)) * 0.5f + 0.1f * static_cast<float>(x);
}

// y[o] = relu(bias[o] + sum_c w[o][c] * x[c]), independently of corgy.
float expected_output(int o, int y, int x) {
  float sum = kBias[o];
  for (int c = 0; c < kIn; ++c) sum += kWeights[o * kIn + c] * input_value(c, y, x);
  return sum > 0.0f ? sum : 0.0f;
}

bool check_backend(const std::string& backend) {
  corgy::Sequential model;
  const int conv = model.add(
      corgy::Conv2d({.in_channels = kIn, .out_channels = kOut, .kernel = 1, .activation = corgy::Activation::relu()}));
  model.layer_as<corgy::Conv2d>(conv).set_weights(kWeights);
  model.layer_as<corgy::Conv2d>(conv).set_bias(kBias);
  model.set_backend(backend);

  corgy::Variable input(corgy::Shape{1, kIn, kHeight, kWidth});
  for (int c = 0; c < kIn; ++c)
    for (int y = 0; y < kHeight; ++y)
      for (int x = 0; x < kWidth; ++x) input.at(0, c, y, x) = input_value(c, y, x);
  const corgy::Variable& output = model.forward(input);

  if (output.shape() != corgy::Shape{1, kOut, kHeight, kWidth}) {
    std::printf("%s: output shape %s, expected (1, %d, %d, %d)\n", backend.c_str(), output.shape().str().c_str(), kOut,
                kHeight, kWidth);
    return false;
  }
  int zeros = 0;
  for (int o = 0; o < kOut; ++o)
    for (int y = 0; y < kHeight; ++y)
      for (int x = 0; x < kWidth; ++x) {
        const float expected = expected_output(o, y, x);
        zeros += expected == 0.0f;
        if (std::abs(output.at(0, o, y, x) - expected) > 1e-5f * (1.0f + std::abs(expected))) {
          std::printf("%s: output(0, %d, %d, %d) = %g, expected %g\n", backend.c_str(), o, y, x,
                      static_cast<double>(output.at(0, o, y, x)), static_cast<double>(expected));
          return false;
        }
      }
  std::printf("%-6s 1x1 conv + ReLU matches the reference (%d outputs, %d clipped to zero)\n", backend.c_str(),
              kOut * kHeight * kWidth, zeros);
  return true;
}

bool check_error_crosses_library_boundary() {
  corgy::Sequential model;
  model.add(corgy::Conv2d({.in_channels = kIn, .out_channels = kOut, .kernel = 1}));
  try {
    model.forward(corgy::Variable(corgy::Shape{1, kIn + 1, 4, 4}));
  } catch (const corgy::Error& error) {
    std::printf("wrong input channels -> corgy::Error: %s\n", error.what());
    return true;
  }
  std::printf("a 4-channel input to a 3-channel conv did not throw corgy::Error\n");
  return false;
}

bool check_page_alignment() {
  const corgy::Variable v(corgy::Shape{1, 3, 10, 10});
  const bool aligned = reinterpret_cast<std::uintptr_t>(v.data()) % corgy::Storage::page_size() == 0;
  std::printf("Variable storage is %spage-aligned\n", aligned ? "" : "NOT ");
  return aligned;
}

}  // namespace

int main() {
  bool ok = check_page_alignment() && check_error_crosses_library_boundary();
  std::vector<std::string> backends = corgy::available_backends();
  for (const std::string& backend : backends) ok = check_backend(backend) && ok;
  std::printf(ok ? "consumer check passed\n" : "consumer check FAILED\n");
  return ok ? 0 : 1;
}
