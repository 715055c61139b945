// Which SIMD instruction sets this CPU has, read with cpuid once, and the size of its L1 data cache. corgy's CPU
// kernels pick their variant and their blocking from this, never from the environment.
#pragma once

#include <cstddef>
#include <string>

namespace corgy {

/// The instruction sets corgy's CPU kernels are written for, narrowest first.
enum class CpuIsa {
  generic,  ///< plain C++ (the compiler's baseline x86-64)
  avx2,     ///< AVX2 + FMA: 8 floats per register
  avx512,   ///< AVX-512F: 16 floats per register
};

/// True when this CPU supports `isa` (cpuid, and the OS saves the registers it needs).
bool cpu_has(CpuIsa isa);
/// The widest of CpuIsa this CPU supports.
CpuIsa widest_cpu_isa();
/// "generic", "avx2" or "avx512".
std::string isa_name(CpuIsa isa);
/// The CPU's model name as cpuid gives it ("AMD EPYC 9B45", spaces trimmed); "unknown CPU" where it has none.
std::string cpu_model_name();
/// One core's first-level data cache in bytes, as the CPU reports it (cpuid, through glibc's sysconf); 32 KiB where it
/// reports none.
std::size_t cpu_l1_data_cache_bytes();

}  // namespace corgy
