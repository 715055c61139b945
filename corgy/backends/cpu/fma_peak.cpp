#include "corgy/backends/cpu/fma_peak.h"

#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "corgy/error.h"

namespace corgy {

namespace {

using Clock = std::chrono::steady_clock;

/// Independent accumulators per thread: enough to cover the FMA latency (4-5 cycles) on two FMA pipes.
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) float fma_chains_avx2(std::int64_t iterations) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f);
  const __m256 b = _mm256_set1_ps(1e-7f);
  for (std::int64_t k = 0; k < iterations; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  return _mm256_cvtss_f32(sum);
}

__attribute__((target("avx512f"))) float fma_chains_avx512(std::int64_t iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f);
  const __m512 b = _mm512_set1_ps(1e-7f);
  for (std::int64_t k = 0; k < iterations; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  float lanes[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
  _mm512_storeu_ps(lanes, sum);
  float total = 0.0f;
  for (const float lane : lanes) total += lane;
  return total;
}

/// The chains of `isa` and the floats per register; `caller` names the function in the error for a CPU without it.
struct FmaChains {
  float (*run)(std::int64_t iterations);
  int lanes;
  /// The floating-point operations of `iterations` steps on one thread.
  double flop(std::int64_t iterations) const { return 2.0 * lanes * kChains * static_cast<double>(iterations); }
};

FmaChains fma_chains(CpuIsa isa, const char* caller) {
  if (isa == CpuIsa::generic || !cpu_has(isa))
    throw Error(fmt::format("{}: this CPU has no {}", caller, isa_name(isa)));
  return isa == CpuIsa::avx512 ? FmaChains{fma_chains_avx512, 16} : FmaChains{fma_chains_avx2, 8};
}

}  // namespace

double fma_peak_gflops(CpuIsa isa, int threads, int repeat, std::int64_t iterations) {
  const FmaChains chains = fma_chains(isa, "fma_peak_gflops");
  std::vector<float> sink(static_cast<std::size_t>(threads));
  double best_seconds = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { sink[t] = chains.run(iterations); });
    for (std::thread& worker : workers) worker.join();
    best_seconds = std::min(best_seconds, std::chrono::duration<double>(Clock::now() - start).count());
  }
  if (std::all_of(sink.begin(), sink.end(), [](float v) { return v == 0.0f; })) std::abort();  // keeps the work
  return chains.flop(iterations) * threads / best_seconds / 1e9;
}

double fma_probe_gflops(CpuIsa isa) {
  const FmaChains chains = fma_chains(isa, "fma_probe_gflops");
  // 12 chains of 40000 steps: 480k FMA instructions, ~60 us at two a cycle and 4 GHz.
  constexpr std::int64_t iterations = 40'000;
  const auto start = Clock::now();
  const float sink = chains.run(iterations);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (sink == 0.0f) std::abort();  // keeps the work
  return chains.flop(iterations) / seconds / 1e9;
}

}  // namespace corgy
