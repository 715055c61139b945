// The CPU's FMA peak: independent FMA chains in registers, no memory traffic. The ceiling that profiles and
// benchmarks compare corgy's GFLOP/s against (format_profile, roofline_benchmark).
#pragma once

#include <cstdint>

#include "corgy/backends/cpu/cpu_features.h"

namespace corgy {

/// GFLOP/s of `threads` threads each running FMA chains for `iterations`; the best of `repeat` tries, since a peak
/// is what is asked for and every disturbance (another process, a frequency change) only lowers it.
/// Throws corgy::Error when the CPU lacks `isa`.
double fma_peak_gflops(CpuIsa isa, int threads, int repeat = 5, std::int64_t iterations = 20'000'000);

/// GFLOP/s of the same FMA chains for about 60 microseconds on the calling thread (no thread is started): a probe of
/// what the core delivers right now. Another process on the core, or on its hyperthread sibling, lowers it.
/// Throws corgy::Error when the CPU lacks `isa`.
double fma_probe_gflops(CpuIsa isa);

}  // namespace corgy
