#include "corgy/backends/blas/unary_kernels.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy::blas {

const UnaryKernelSet& unary_kernels(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} unary kernels", isa_name(isa)));
  static const UnaryKernelSet generic = generic_unary_kernels();
  static const UnaryKernelSet avx2 = avx2_unary_kernels();
  static const UnaryKernelSet avx512 = avx512_unary_kernels();
  switch (isa) {
    case CpuIsa::avx512: return avx512;
    case CpuIsa::avx2: return avx2;
    case CpuIsa::generic: break;
  }
  return generic;
}

const UnaryKernelSet& unary_kernels() {
  static const UnaryKernelSet& best = unary_kernels(widest_cpu_isa());
  return best;
}

}  // namespace corgy::blas
