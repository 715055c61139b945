// The blas backend's per-instruction-set kernels, each variant this CPU can run (not only the widest, which the
// layer harness covers through the backend): every variant against the scalar definitions it must agree with.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::testing {
namespace {

std::vector<CpuIsa> isas_of_this_cpu() {
  std::vector<CpuIsa> isas;
  for (const CpuIsa isa : {CpuIsa::generic, CpuIsa::avx2, CpuIsa::avx512}) {
    if (cpu_has(isa)) isas.push_back(isa);
  }
  return isas;
}

std::vector<Activation> every_activation() {
  return {Activation::none(),
          Activation::relu(),
          Activation::leaky_relu(0.1f),
          Activation::sigmoid(),
          Activation::tanh(),
          Activation::mish(),
          Activation::swish(),
          Activation::clipped_relu(6.0f),
          Activation::clipped_relu(1.0f),
          Activation::hard_swish()};
}

/// -120 .. 120 in steps of 1/64 (where the exponential activations bend and saturate), and values around the
/// thresholds of exp's clamp and mish's cut-off.
std::vector<float> activation_inputs() {
  std::vector<float> values;
  for (int i = -120 * 64; i <= 120 * 64; ++i) values.push_back(static_cast<float>(i) / 64.0f);
  for (const float x : {1e-30f, 1e-6f, 19.99f, 20.01f, 43.9f, 44.1f, 86.9f, 87.1f, 87.9f, 88.1f, 1e30f}) {
    values.push_back(x);
    values.push_back(-x);
  }
  return values;
}

TEST(CpuKernels, BiasActivationAgreesWithApplyActivation) {
  const std::vector<float> inputs = activation_inputs();
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::BiasActivationKernel kernel = blas::bias_activation_kernel(isa);
    for (const Activation activation : every_activation()) {
      for (const float bias : {0.0f, 0.75f}) {
        std::vector<float> got(inputs.size());
        kernel(inputs.data(), got.data(), inputs.size(), bias, activation);
        double worst = 0.0;
        float worst_x = 0.0f;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          const double want = apply_activation(activation, inputs[i] + bias);
          // Relative to the value, with an absolute floor for results near zero (tanh and swish cross it, where
          // e^x's relative error of ~1e-7 becomes an absolute one).
          const double error = std::abs(got[i] - want) / std::max(1.0, std::abs(want));
          if (!(error <= worst)) {
            worst = error;
            worst_x = inputs[i];
          }
        }
        EXPECT_LE(worst, 1e-6) << isa_name(isa) << " " << activation.str() << " bias " << bias
                               << ": worst at x = " << worst_x;
      }
    }
  }
}

TEST(CpuKernels, BiasActivationWritesExactlyCountValuesInPlace) {
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::BiasActivationKernel kernel = blas::bias_activation_kernel(isa);
    for (std::size_t count = 0; count <= 40; ++count) {
      std::vector<float> values(count + 1);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 20.0f;
      kernel(values.data(), values.data(), count, 1.0f, Activation::relu());
      for (std::size_t i = 0; i < count; ++i) {
        EXPECT_EQ(values[i], std::max(0.0f, static_cast<float>(i) - 19.0f)) << isa_name(isa) << " count " << count;
      }
      EXPECT_EQ(values[count], static_cast<float>(count) - 20.0f) << isa_name(isa) << ": wrote past count " << count;
    }
  }
}

}  // namespace
}  // namespace corgy::testing
