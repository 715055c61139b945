// The blas backend's element-wise functions that cost more than a few instructions (erf and the two GELUs, what
// ConvNeXt-style networks apply to every activation), in SIMD registers, one variant per instruction set like the
// activation kernels (kernels/unary_<isa>.cpp, picked from cpuid). The other unary functions stay scalar loops.
#pragma once

#include <cstddef>

#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

/// target[i] = f(source[i]) for i < count; source may be target.
using UnaryKernel = void (*)(const float* source, float* target, std::size_t count);

/// The unary kernels of one instruction set. erf is within about 3e-7 of std::erf (absolute); gelu (exact, through
/// erf) and gelu_tanh within about 3e-7 of their scalar definitions in corgy/tensor_math.h, relative to max(1, |y|).
struct UnaryKernelSet {
  UnaryKernel erf = nullptr;
  UnaryKernel gelu = nullptr;
  UnaryKernel gelu_tanh = nullptr;
};
UnaryKernelSet generic_unary_kernels();
UnaryKernelSet avx2_unary_kernels();
UnaryKernelSet avx512_unary_kernels();

/// The set of the widest instruction set this CPU has (cpuid, once), or of `isa` when asked (tests).
const UnaryKernelSet& unary_kernels();
const UnaryKernelSet& unary_kernels(CpuIsa isa);

}  // namespace corgy::blas
