// erf and GELU on whole SIMD registers (unary_kernels.h), written once over a SIMD type and compiled per instruction
// set by kernels/unary_<isa>.cpp (the rules of sgemm_micro_kernel.h apply). erfc and the exact GELU are in
// simd_activation.h, whose epilogues apply GELU as an activation too.
#pragma once

#include <cstddef>

#include "corgy/backends/blas/kernels/simd_activation.h"
#include "corgy/backends/blas/unary_kernels.h"

namespace corgy::blas::kernels {
namespace {

/// erf(x) in every lane: an odd Taylor polynomial below |x| = 1/2 (where 1 - erfc would lose the small value's
/// relative precision; the first term left out is below 2e-8 there), 1 - erfc(|x|) above, with x's sign.
template <class Simd>
typename Simd::Reg erf(typename Simd::Reg x) {
  using Reg = typename Simd::Reg;
  const Reg z = Simd::max(x, Simd::sub(Simd::zero(), x));
  const Reg z2 = Simd::mul(z, z);
  // (2 / sqrt(pi)) (z - z^3/3 + z^5/10 - z^7/42 + z^9/216 - z^11/1320)
  Reg taylor = Simd::set1(-1.1283791671f / 1320.0f);
  for (const float c :
       {1.1283791671f / 216.0f, -1.1283791671f / 42.0f, 1.1283791671f / 10.0f, -1.1283791671f / 3.0f, 1.1283791671f}) {
    taylor = Simd::fmadd(taylor, z2, Simd::set1(c));
  }
  taylor = Simd::mul(taylor, z);
  const Reg one_minus = Simd::sub(Simd::set1(1.0f), erfc_of_nonnegative<Simd>(z));
  const Reg magnitude = Simd::select_less(z, Simd::set1(0.5f), taylor, one_minus);
  return Simd::select_less(x, Simd::zero(), Simd::sub(Simd::zero(), magnitude), magnitude);
}

/// x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 in every lane (the tanh of simd_activation.h).
template <class Simd>
typename Simd::Reg gelu_tanh(typename Simd::Reg x) {
  using Reg = typename Simd::Reg;
  const Reg inner =
      Simd::mul(Simd::set1(0.79788456080286536f), Simd::fmadd(Simd::mul(Simd::set1(0.044715f), x), Simd::mul(x, x), x));
  const Reg t = activate<Simd, ActivationKind::tanh>(inner, Simd::zero());
  return Simd::mul(Simd::mul(x, Simd::set1(0.5f)), Simd::add(Simd::set1(1.0f), t));
}

/// target[i] = function(source[i]) over whole registers, the last partial one through a buffer so that nothing past
/// `count` is read or written.
template <class Simd, typename Simd::Reg (*function)(typename Simd::Reg)>
void unary_run(const float* source, float* target, std::size_t count) {
  constexpr std::size_t lanes = Simd::lanes;
  std::size_t i = 0;
  for (; i + lanes <= count; i += lanes) Simd::store(target + i, function(Simd::load(source + i)));
  if (i < count) {
    alignas(64) float tail[lanes] = {};
    const int left = static_cast<int>(count - i);
    for (int j = 0; j < left; ++j) tail[j] = source[i + j];
    Simd::store_first(target + i, function(Simd::load(tail)), left);
  }
}

template <class Simd>
UnaryKernelSet unary_kernel_set() {
  return {unary_run<Simd, erf<Simd>>, unary_run<Simd, gelu<Simd>>, unary_run<Simd, gelu_tanh<Simd>>};
}

}  // namespace
}  // namespace corgy::blas::kernels
