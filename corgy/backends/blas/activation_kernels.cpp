#include "corgy/backends/blas/activation_kernels.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy::blas {

BiasActivationKernel bias_activation_kernel(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} activation kernels", isa_name(isa)));
  switch (isa) {
    case CpuIsa::avx512: return avx512_bias_activation_kernel();
    case CpuIsa::avx2: return avx2_bias_activation_kernel();
    case CpuIsa::generic: break;
  }
  return generic_bias_activation_kernel();
}

BiasActivationKernel bias_activation_kernel() {
  static const BiasActivationKernel best = bias_activation_kernel(widest_cpu_isa());
  return best;
}

}  // namespace corgy::blas
