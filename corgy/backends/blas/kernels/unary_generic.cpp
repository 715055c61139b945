// The erf and GELU kernels for SSE2, the x86-64 baseline (see unary_kernel.h); compiled for that instruction set only.
#include "corgy/backends/blas/kernels/simd_sse2.h"
#include "corgy/backends/blas/kernels/unary_kernel.h"

namespace corgy::blas {

UnaryKernelSet generic_unary_kernels() { return kernels::unary_kernel_set<kernels::Sse2>(); }

}  // namespace corgy::blas
