// The erf and GELU kernels for AVX2 + FMA (see unary_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/simd_avx2.h"
#include "corgy/backends/blas/kernels/unary_kernel.h"

namespace corgy::blas {

UnaryKernelSet avx2_unary_kernels() { return kernels::unary_kernel_set<kernels::Avx2>(); }

}  // namespace corgy::blas
