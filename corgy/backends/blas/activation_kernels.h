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
/// target[i] = apply_activation(activation, source[i] + addend[i]) for i < count (a residual add and the activation
/// after it); source may be target.
using AddActivationKernel = void (*)(const float* source, const float* addend, float* target, std::size_t count,
                                     Activation activation);

/// The activation kernels of one instruction set.
struct ActivationKernelSet {
  BiasActivationKernel bias_activate = nullptr;
  AddActivationKernel add_activate = nullptr;
};
ActivationKernelSet generic_activation_kernels();
ActivationKernelSet avx2_activation_kernels();
ActivationKernelSet avx512_activation_kernels();

/// The set of the widest instruction set this CPU has (cpuid, once), or of `isa` when asked (tests).
const ActivationKernelSet& activation_kernels();
const ActivationKernelSet& activation_kernels(CpuIsa isa);

/// activation_kernels().bias_activate(source, target, count, bias, activation).
inline void bias_activate(const float* source, float* target, std::size_t count, float bias, Activation activation) {
  activation_kernels().bias_activate(source, target, count, bias, activation);
}
/// activation_kernels().add_activate(source, addend, target, count, activation).
inline void add_activate(const float* source, const float* addend, float* target, std::size_t count,
                         Activation activation) {
  activation_kernels().add_activate(source, addend, target, count, activation);
}

}  // namespace corgy::blas
