// The bias + activation and add + activation passes of activation_kernels.h, written once over a SIMD type and compiled
// per instruction set by kernels/activation_<isa>.cpp (the rules of sgemm_micro_kernel.h apply).
#pragma once

#include <cstddef>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/kernels/simd_activation.h"

namespace corgy::blas::kernels {
namespace {

template <class Simd, ActivationKind kind>
void bias_activate_run(const float* source, float* target, std::size_t count, float bias, float slope) {
  using Reg = typename Simd::Reg;
  constexpr std::size_t lanes = Simd::lanes;
  const Reg bias_reg = Simd::set1(bias);
  const Reg slope_reg = Simd::set1(slope);
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    Simd::store(target + i, activate<Simd, kind>(Simd::add(Simd::load(source + i), bias_reg), slope_reg));
  }
  if (i < count) {  // the last partial register, through a buffer so that nothing past `count` is read
    alignas(64) float tail[lanes] = {};
    const int left = static_cast<int>(count - i);
    for (int j = 0; j < left; ++j) tail[j] = source[i + j];
    Simd::store_first(target + i, activate<Simd, kind>(Simd::add(Simd::load(tail), bias_reg), slope_reg), left);
  }
}

template <class Simd, ActivationKind kind>
void add_activate_run(const float* source, const float* addend, float* target, std::size_t count, float slope) {
  using Reg = typename Simd::Reg;
  constexpr std::size_t lanes = Simd::lanes;
  const Reg slope_reg = Simd::set1(slope);
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    Simd::store(target + i, activate<Simd, kind>(Simd::add(Simd::load(source + i), Simd::load(addend + i)), slope_reg));
  }
  if (i < count) {
    alignas(64) float tail[lanes] = {};
    alignas(64) float tail_addend[lanes] = {};
    const int left = static_cast<int>(count - i);
    for (int j = 0; j < left; ++j) {
      tail[j] = source[i + j];
      tail_addend[j] = addend[i + j];
    }
    const Reg sum = Simd::add(Simd::load(tail), Simd::load(tail_addend));
    Simd::store_first(target + i, activate<Simd, kind>(sum, slope_reg), left);
  }
}

template <class Simd>
void add_activate(const float* source, const float* addend, float* target, std::size_t count, Activation activation) {
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    add_activate_run<Simd, kind>(source, addend, target, count, activation.slope);
  });
}

template <class Simd>
void bias_activate(const float* source, float* target, std::size_t count, float bias, Activation activation) {
  with_simd_activation(activation.kind, [&]<ActivationKind kind>() {
    bias_activate_run<Simd, kind>(source, target, count, bias, activation.slope);
  });
}

}  // namespace
}  // namespace corgy::blas::kernels
