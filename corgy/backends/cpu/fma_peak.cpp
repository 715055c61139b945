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

}  // namespace

double fma_peak_gflops(CpuIsa isa, int threads, int repeat, std::int64_t iterations) {
  if (isa == CpuIsa::generic || !cpu_has(isa))
    throw Error(fmt::format("fma_peak_gflops: this CPU has no {}", isa_name(isa)));
  float (*chains)(std::int64_t) = isa == CpuIsa::avx512 ? fma_chains_avx512 : fma_chains_avx2;
  const int lanes = isa == CpuIsa::avx512 ? 16 : 8;
  std::vector<float> sink(static_cast<std::size_t>(threads));
  double best_seconds = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { sink[t] = chains(iterations); });
    for (std::thread& worker : workers) worker.join();
    best_seconds = std::min(best_seconds, std::chrono::duration<double>(Clock::now() - start).count());
  }
  if (std::all_of(sink.begin(), sink.end(), [](float v) { return v == 0.0f; })) std::abort();  // keeps the work
  const double flop = 2.0 * lanes * kChains * static_cast<double>(iterations) * threads;
  return flop / best_seconds / 1e9;
}

double fma_probe_gflops(CpuIsa isa) {
  if (isa == CpuIsa::generic || !cpu_has(isa))
    throw Error(fmt::format("fma_probe_gflops: this CPU has no {}", isa_name(isa)));
  // 12 chains of 40000 steps: 480k FMA instructions, ~60 us at two a cycle and 4 GHz.
  constexpr std::int64_t iterations = 40'000;
  float (*chains)(std::int64_t) = isa == CpuIsa::avx512 ? fma_chains_avx512 : fma_chains_avx2;
  const int lanes = isa == CpuIsa::avx512 ? 16 : 8;
  const auto start = Clock::now();
  const float sink = chains(iterations);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (sink == 0.0f) std::abort();  // keeps the work
  return 2.0 * lanes * kChains * static_cast<double>(iterations) / seconds / 1e9;
}

}  // namespace corgy
