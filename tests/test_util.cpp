#include "test_util.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <system_error>

namespace corgy::testing {

void fill_random(Variable& tensor, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (float& value : tensor.values()) value = uniform(rng);
}

std::vector<CpuIsa> isas_of_this_cpu() {
  std::vector<CpuIsa> isas;
  for (const CpuIsa isa : {CpuIsa::generic, CpuIsa::avx2, CpuIsa::avx512}) {
    if (cpu_has(isa)) isas.push_back(isa);
  }
  return isas;
}

Variable random_variable(Shape shape, std::mt19937& rng, float scale) {
  Variable tensor(shape);
  fill_random(tensor, rng, scale);
  return tensor;
}

void randomize_parameters(Sequential& model, std::mt19937& rng) {
  for (int i = 0; i < model.size(); ++i) {
    if (auto* conv = dynamic_cast<Conv2d*>(&model.layer(i))) {
      const Conv2dDesc& d = conv->desc();
      fill_random(conv->weights(), rng,
                  1.7f / std::sqrt(static_cast<float>(d.in_channels / d.groups * d.kernel * d.kernel)));
      if (conv->has_bias()) fill_random(conv->bias(), rng, 0.5f);
    } else if (auto* deconv = dynamic_cast<ConvTranspose2d*>(&model.layer(i))) {
      // Each output sums about in_channels / groups * (kernel / stride)^2 products.
      const ConvTranspose2dDesc& d = deconv->desc();
      const float fan_in = static_cast<float>(d.in_channels / d.groups * d.kernel_h * d.kernel_w) /
                           static_cast<float>(d.stride_h * d.stride_w);
      fill_random(deconv->weights(), rng, 1.7f / std::sqrt(std::max(fan_in, 1.0f)));
      if (deconv->has_bias()) fill_random(deconv->bias(), rng, 0.5f);
    } else if (auto* fc = dynamic_cast<Linear*>(&model.layer(i))) {
      fill_random(fc->weights(), rng, 1.7f / std::sqrt(static_cast<float>(fc->options().in_features)));
      if (fc->has_bias()) fill_random(fc->bias(), rng, 0.5f);
    } else if (auto* bn = dynamic_cast<BatchNorm*>(&model.layer(i))) {
      const int channels = bn->scale().shape().w;
      Variable gamma = random_variable(Shape::vector(channels), rng, 1.0f);
      Variable beta = random_variable(Shape::vector(channels), rng, 1.0f);
      Variable mean = random_variable(Shape::vector(channels), rng, 1.0f);
      Variable variance = random_variable(Shape::vector(channels), rng, 0.5f);
      for (float& v : variance.values()) v = std::abs(v) + 0.5f;
      bn->set_parameters({gamma.values(), beta.values(), mean.values(), variance.values()});
    } else if (auto* affine = dynamic_cast<ChannelAffine*>(&model.layer(i))) {
      const Variable scale = random_variable(Shape::vector(affine->channels()), rng, 2.0f);
      const Variable shift = random_variable(Shape::vector(affine->channels()), rng, 1.0f);
      affine->set_parameters(scale.values(), shift.values());
    } else if (auto* prelu = dynamic_cast<PReLU*>(&model.layer(i))) {
      fill_random(prelu->slopes(), rng, 0.5f);
    } else if (auto* norm = dynamic_cast<InstanceNorm*>(&model.layer(i))) {
      fill_random(norm->scale(), rng, 1.5f);
      fill_random(norm->shift(), rng, 1.0f);
    } else if (auto* cin = dynamic_cast<ConditionalInstanceNorm*>(&model.layer(i))) {
      // Random per-style parameters and a random blend of the styles.
      const Variable gamma = random_variable(cin->gamma().shape(), rng, 1.5f);
      const Variable beta = random_variable(cin->beta().shape(), rng, 1.0f);
      cin->set_style_parameters(gamma.values(), beta.values());
      Variable mix = random_variable(Shape::vector(cin->styles()), rng, 1.0f);
      for (float& w : mix.values()) w = std::abs(w);
      cin->set_style_weights(mix.values());
    }
  }
  model.weights_changed();
}

double max_relative_error(const Variable& actual, const Variable& expected) {
  double magnitude = 1e-6;
  for (float v : expected.values()) magnitude = std::max(magnitude, static_cast<double>(std::abs(v)));
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.count(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(actual.data()[i]) - expected.data()[i]));
  }
  return worst / magnitude;
}

::testing::AssertionResult outputs_match(const Variable& actual, const Variable& expected, double tolerance) {
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "shape " << actual.shape().str() << " != expected "
                                         << expected.shape().str();
  }
  for (std::size_t i = 0; i < actual.count(); ++i) {
    if (!std::isfinite(actual.data()[i])) {
      return ::testing::AssertionFailure() << "element " << i << " is " << actual.data()[i];
    }
  }
  const double error = max_relative_error(actual, expected);
  if (error <= tolerance) return ::testing::AssertionSuccess();
  std::size_t worst_index = 0;
  for (std::size_t i = 0; i < actual.count(); ++i) {
    if (std::abs(actual.data()[i] - expected.data()[i]) >
        std::abs(actual.data()[worst_index] - expected.data()[worst_index])) {
      worst_index = i;
    }
  }
  return ::testing::AssertionFailure() << fmt::format(
             "max relative error {:.3g} > {:.3g}; worst at element {}: {} vs expected {} (shape {})", error, tolerance,
             worst_index, actual.data()[worst_index], expected.data()[worst_index], expected.shape().str());
}

std::vector<std::string> all_backends() { return available_backends(); }

std::string fixture_path(const std::string& relative) { return std::string(CORGY_FIXTURE_DIR) + "/" + relative; }

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

TempFolder::TempFolder() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      fmt::format("corgy-test-{}-{}-{}", test->test_suite_name(), test->name(), static_cast<long>(::getpid()));
  std::ranges::replace(name, '/', '_');  // parameterised tests' names hold slashes
  path_ = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempFolder::~TempFolder() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace corgy::testing
