#include "corgy/backends/cpu/cpu_features.h"

namespace corgy {

bool cpu_has(CpuIsa isa) {
  // GCC's __builtin_cpu_supports reads cpuid (and checks XCR0 for the OS's AVX/AVX-512 state) once per process.
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::generic: return true;
    case CpuIsa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::avx512: return __builtin_cpu_supports("avx512f") && cpu_has(CpuIsa::avx2);
  }
  return false;
}

CpuIsa widest_cpu_isa() {
  for (const CpuIsa isa : {CpuIsa::avx512, CpuIsa::avx2}) {
    if (cpu_has(isa)) return isa;
  }
  return CpuIsa::generic;
}

std::string isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::generic: return "generic";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
  }
  return "?";
}

}  // namespace corgy
