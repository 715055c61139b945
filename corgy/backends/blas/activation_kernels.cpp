#include "corgy/backends/blas/activation_kernels.h"

#include <fmt/format.h>

#include "corgy/error.h"

namespace corgy::blas {

const ActivationKernelSet& activation_kernels(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} activation kernels", isa_name(isa)));
  static const ActivationKernelSet generic = generic_activation_kernels();
  static const ActivationKernelSet avx2 = avx2_activation_kernels();
  static const ActivationKernelSet avx512 = avx512_activation_kernels();
  switch (isa) {
    case CpuIsa::avx512: return avx512;
    case CpuIsa::avx2: return avx2;
    case CpuIsa::generic: break;
  }
  return generic;
}

const ActivationKernelSet& activation_kernels() {
  static const ActivationKernelSet& best = activation_kernels(widest_cpu_isa());
  return best;
}

}  // namespace corgy::blas
