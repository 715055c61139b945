// Activations on whole SIMD registers, written once over a SIMD type (simd_<isa>.h) like the GEMM micro-kernel: the
// epilogues of the GEMM, Winograd and depthwise kernels and the blas backend's activation passes apply them in
// registers. Include only from kernels/*_<isa>.cpp (the rules of sgemm_micro_kernel.h); ActivationKind is the only
// name used from corgy/activation.h, whose scalar apply_activation is the definition these agree with.
#pragma once

#include "corgy/activation.h"

namespace corgy::blas::kernels {
namespace {

/// e^x in every lane, as Cephes' expf: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-7 polynomial, 2^n built in
/// the exponent. Relative error about 1e-7 for x in [-87, 88]; x is clamped to that range first (e^-87 ~ 1.6e-38
/// stands for every smaller value, e^88 ~ 1.7e38 for every larger one), so no lane overflows or turns denormal.
template <class Simd>
typename Simd::Reg exp(typename Simd::Reg x) {
  using Reg = typename Simd::Reg;
  x = Simd::min(Simd::max(x, Simd::set1(-87.0f)), Simd::set1(88.0f));
  const Reg n = Simd::floor(Simd::fmadd(x, Simd::set1(1.44269504088896341f), Simd::set1(0.5f)));
  // r = x - n ln2, with ln2 in two parts so that n * ln2's high part is exact.
  Reg r = Simd::fmadd(n, Simd::set1(-0.693359375f), x);
  r = Simd::fmadd(n, Simd::set1(2.12194440e-4f), r);
  Reg p = Simd::set1(1.9875691500e-4f);
  p = Simd::fmadd(p, r, Simd::set1(1.3981999507e-3f));
  p = Simd::fmadd(p, r, Simd::set1(8.3334519073e-3f));
  p = Simd::fmadd(p, r, Simd::set1(4.1665795894e-2f));
  p = Simd::fmadd(p, r, Simd::set1(1.6666665459e-1f));
  p = Simd::fmadd(p, r, Simd::set1(5.0000001201e-1f));
  p = Simd::fmadd(p, Simd::mul(r, r), Simd::add(r, Simd::set1(1.0f)));
  return Simd::mul(p, Simd::pow2(n));
}

/// erfc(z) for z >= 0 in every lane: t exp(-z^2 + P(t)) with t = 1 / (1 + z / 2), the Chebyshev fit of Numerical
/// Recipes (2nd ed., section 6.2; fractional error below 1.2e-7 everywhere). One exponential, no cancellation for
/// large z, where erfc is tiny and 1 - erf would lose it.
template <class Simd>
typename Simd::Reg erfc_of_nonnegative(typename Simd::Reg z) {
  using Reg = typename Simd::Reg;
  const Reg t = Simd::div(Simd::set1(1.0f), Simd::fmadd(z, Simd::set1(0.5f), Simd::set1(1.0f)));
  Reg p = Simd::set1(0.17087277f);
  for (const float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                        1.00002368f, -1.26551223f}) {
    p = Simd::fmadd(p, t, Simd::set1(c));
  }
  return Simd::mul(t, exp<Simd>(Simd::sub(p, Simd::mul(z, z))));
}

/// x (1 + erf(x / sqrt 2)) / 2 in every lane, as x erfc(-x / sqrt 2) / 2: for x < 0 the factor is erfc(|x| / sqrt 2)
/// itself, so the tiny values of very negative x keep their relative precision; for x >= 0 it is 2 - erfc.
template <class Simd>
typename Simd::Reg gelu(typename Simd::Reg x) {
  using Reg = typename Simd::Reg;
  const Reg y = Simd::mul(x, Simd::set1(0.70710678118654752f));
  const Reg tail = erfc_of_nonnegative<Simd>(Simd::max(y, Simd::sub(Simd::zero(), y)));
  const Reg factor = Simd::select_less(x, Simd::zero(), tail, Simd::sub(Simd::set1(2.0f), tail));
  return Simd::mul(Simd::mul(x, Simd::set1(0.5f)), factor);
}

/// apply_activation(Activation{kind, slope}, x) in every lane. `kind` is a template argument so that the loops that
/// call this compile one body per kind (with_simd_activation picks it once per call).
template <class Simd, ActivationKind kind>
typename Simd::Reg activate(typename Simd::Reg x, typename Simd::Reg slope) {
  using Reg = typename Simd::Reg;
  const Reg zero = Simd::zero();
  const Reg one = Simd::set1(1.0f);
  if constexpr (kind == ActivationKind::relu) {
    return Simd::max(x, zero);
  } else if constexpr (kind == ActivationKind::leaky_relu) {
    return Simd::fmadd(slope, Simd::min(x, zero), Simd::max(x, zero));
  } else if constexpr (kind == ActivationKind::clipped_relu) {
    return Simd::min(Simd::max(x, zero), slope);
  } else if constexpr (kind == ActivationKind::hard_swish) {
    const Reg gate = Simd::fmadd(x, Simd::set1(1.0f / 6.0f), Simd::set1(0.5f));
    return Simd::mul(x, Simd::min(Simd::max(gate, zero), one));
  } else if constexpr (kind == ActivationKind::sigmoid) {
    return Simd::div(one, Simd::add(one, exp<Simd>(Simd::sub(zero, x))));
  } else if constexpr (kind == ActivationKind::swish) {
    return Simd::div(x, Simd::add(one, exp<Simd>(Simd::sub(zero, x))));
  } else if constexpr (kind == ActivationKind::tanh) {
    // (e^2x - 1) / (e^2x + 1): exp's clamp makes it exactly +-1 for |x| > 44; near 0 its absolute error is ~1e-7.
    const Reg e = exp<Simd>(Simd::add(x, x));
    return Simd::div(Simd::sub(e, one), Simd::add(e, one));
  } else if constexpr (kind == ActivationKind::mish) {
    // x tanh(ln(1 + e^x)) = x m / (m + 2) with m = e^x (e^x + 2): no logarithm. For x > 20 the ratio rounds to 1
    // (darknet's softplus threshold), so e^x is taken of min(x, 20) and m never overflows.
    const Reg e = exp<Simd>(Simd::min(x, Simd::set1(20.0f)));
    const Reg m = Simd::mul(e, Simd::add(e, Simd::set1(2.0f)));
    return Simd::mul(x, Simd::div(m, Simd::add(m, Simd::set1(2.0f))));
  } else if constexpr (kind == ActivationKind::gelu) {
    (void)slope;
    (void)one;
    return gelu<Simd>(x);
  } else {
    (void)slope;
    (void)one;
    return x;
  }
}

/// Calls body.template operator()<kind>() with `kind` as a compile-time constant, once per call: the element loops
/// inside body are then compiled per activation.
template <class Body>
void with_simd_activation(ActivationKind kind, Body&& body) {
  switch (kind) {
    case ActivationKind::none: return body.template operator()<ActivationKind::none>();
    case ActivationKind::relu: return body.template operator()<ActivationKind::relu>();
    case ActivationKind::leaky_relu: return body.template operator()<ActivationKind::leaky_relu>();
    case ActivationKind::sigmoid: return body.template operator()<ActivationKind::sigmoid>();
    case ActivationKind::tanh: return body.template operator()<ActivationKind::tanh>();
    case ActivationKind::mish: return body.template operator()<ActivationKind::mish>();
    case ActivationKind::swish: return body.template operator()<ActivationKind::swish>();
    case ActivationKind::clipped_relu: return body.template operator()<ActivationKind::clipped_relu>();
    case ActivationKind::hard_swish: return body.template operator()<ActivationKind::hard_swish>();
    case ActivationKind::gelu: return body.template operator()<ActivationKind::gelu>();
  }
}

}  // namespace
}  // namespace corgy::blas::kernels
