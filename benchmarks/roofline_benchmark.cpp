// roofline_benchmark: what this CPU can do at best, as the ceiling for corgy's CPU numbers. Measures the FMA peak
// (independent AVX2 and AVX-512 FMA chains in registers, no memory traffic) and OpenBLAS's sgemm rate, with one
// thread and with every core this process may run on (its CPU affinity, so `taskset` limits it). Prints one JSON
// object per measurement on stdout.
//
//   roofline_benchmark [--sgemm-size N] [--repeat R]
#include <cblas.h>
#include <fmt/format.h>
#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Independent accumulators per thread: enough to cover the FMA latency (4-5 cycles) on two FMA pipes.
constexpr int kChains = 12;
constexpr std::int64_t kFmaIterations = 20'000'000;

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

/// CPUs this process may run on.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return static_cast<int>(std::thread::hardware_concurrency());
  return CPU_COUNT(&set);
}

/// GFLOP/s of `threads` threads each running `chains` for kFmaIterations; the best of `repeat` tries, since a
/// peak is what is asked for and every disturbance only lowers it.
double fma_peak(float (*chains)(std::int64_t), int lanes, int threads, int repeat) {
  std::vector<float> sink(static_cast<std::size_t>(threads));
  double best_seconds = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { sink[t] = chains(kFmaIterations); });
    for (std::thread& worker : workers) worker.join();
    best_seconds = std::min(best_seconds, seconds_since(start));
  }
  if (std::all_of(sink.begin(), sink.end(), [](float v) { return v == 0.0f; })) std::abort();  // keeps the work
  const double flop = 2.0 * lanes * kChains * static_cast<double>(kFmaIterations) * threads;
  return flop / best_seconds / 1e9;
}

struct SgemmTiming {
  double median_ms = 0.0;
  double min_ms = 0.0;
};

SgemmTiming time_sgemm(int m, int n, int k, int threads, int repeat) {
  openblas_set_num_threads(threads);
  std::vector<float> a(static_cast<std::size_t>(m) * k, 0.5f);
  std::vector<float> b(static_cast<std::size_t>(k) * n, 0.25f);
  std::vector<float> c(static_cast<std::size_t>(m) * n);
  std::vector<double> ms;
  for (int r = -2; r < repeat; ++r) {  // two warm-ups
    const auto start = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    if (r >= 0) ms.push_back(seconds_since(start) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

int int_argument(int argc, char** argv, const std::string& name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::max(1, std::atoi(argv[i + 1]));
  }
  return fallback;
}

void print_fma_peaks(int threads) {
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    fmt::print("{{\"kind\": \"fma\", \"isa\": \"avx2\", \"threads\": {}, \"gflops\": {:.2f}}}\n", threads,
               fma_peak(fma_chains_avx2, 8, threads, 5));
  }
  if (__builtin_cpu_supports("avx512f")) {
    fmt::print("{{\"kind\": \"fma\", \"isa\": \"avx512\", \"threads\": {}, \"gflops\": {:.2f}}}\n", threads,
               fma_peak(fma_chains_avx512, 16, threads, 5));
  }
}

void print_sgemm(int size, int threads, int repeat) {
  const SgemmTiming timing = time_sgemm(size, size, size, threads, repeat);
  const double gflop = 2.0 * size * size * static_cast<double>(size) / 1e9;
  fmt::print(
      "{{\"kind\": \"sgemm\", \"size\": {}, \"threads\": {}, \"core\": \"{}\", \"config\": \"{}\", "
      "\"median_ms\": {:.3f}, \"min_ms\": {:.3f}, \"gflops\": {:.2f}, \"best_gflops\": {:.2f}}}\n",
      size, threads, openblas_get_corename(), openblas_get_config(), timing.median_ms, timing.min_ms,
      gflop / (timing.median_ms / 1e3), gflop / (timing.min_ms / 1e3));
}

}  // namespace

int main(int argc, char** argv) {
  const int size = int_argument(argc, argv, "--sgemm-size", 1024);
  const int repeat = int_argument(argc, argv, "--repeat", 10);
  const int cpus = usable_cpus();
  std::vector<int> thread_counts = {1};
  if (cpus > 1) thread_counts.push_back(cpus);
  __builtin_cpu_init();
  for (const int threads : thread_counts) print_fma_peaks(threads);
  for (const int threads : thread_counts) print_sgemm(size, threads, repeat);
  return 0;
}
