// The activation pass of the blas backend: bias and activation over a run of floats, in SIMD registers, one variant
// per instruction set like the GEMM kernels (kernels/activation_<isa>.cpp, picked from cpuid). The convolutions apply
// their activation inside their own kernels; this is for the operations that apply one as a pass of its own
// (Backend::activation, add, linear) and for the im2col + OpenBLAS baseline's epilogue.
#pragma once

#include <cstddef>

#include "corgy/activation.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

/// target[i] = apply_activation(activation, source[i] + bias) for i < count; source may be target. The exponential
/// activations (sigmoid, swish, tanh, mish) use a polynomial e^x within about 1e-7 of std::exp's.
using BiasActivationKernel = void (*)(const float* source, float* target, std::size_t count, float bias,
                                      Activation activation);

BiasActivationKernel generic_bias_activation_kernel();
BiasActivationKernel avx2_bias_activation_kernel();
BiasActivationKernel avx512_bias_activation_kernel();

/// The kernel of the widest instruction set this CPU has (cpuid, once), or of `isa` when asked (tests).
BiasActivationKernel bias_activation_kernel();
BiasActivationKernel bias_activation_kernel(CpuIsa isa);

/// bias_activation_kernel()(source, target, count, bias, activation).
inline void bias_activate(const float* source, float* target, std::size_t count, float bias, Activation activation) {
  bias_activation_kernel()(source, target, count, bias, activation);
}

}  // namespace corgy::blas
