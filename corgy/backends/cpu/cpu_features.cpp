#include "corgy/backends/cpu/cpu_features.h"

#include <unistd.h>

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

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

std::string cpu_model_name() {
  std::string name;
#if defined(__x86_64__) || defined(__i386__)
  // Leaves 0x80000002-4 hold the brand string, 16 bytes each, where the highest extended leaf reaches them.
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000004u) {
    std::array<char, 49> brand{};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      std::array<unsigned, 4> registers{};
      __get_cpuid(0x80000002u + leaf, &registers[0], &registers[1], &registers[2], &registers[3]);
      std::memcpy(brand.data() + 16 * leaf, registers.data(), 16);
    }
    name = brand.data();
  }
#endif
  const std::size_t first = name.find_first_not_of(' ');
  if (first == std::string::npos) return "unknown CPU";
  return name.substr(first, name.find_last_not_of(' ') - first + 1);
}

std::size_t cpu_l1_data_cache_bytes() {
  static const std::size_t bytes = [] {
    const long reported = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return reported > 0 ? static_cast<std::size_t>(reported) : std::size_t{32 * 1024};
  }();
  return bytes;
}

}  // namespace corgy
