// The erf and GELU kernels for AVX-512F (see unary_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/simd_avx512.h"
#include "corgy/backends/blas/kernels/unary_kernel.h"

namespace corgy::blas {

UnaryKernelSet avx512_unary_kernels() { return kernels::unary_kernel_set<kernels::Avx512>(); }

}  // namespace corgy::blas
