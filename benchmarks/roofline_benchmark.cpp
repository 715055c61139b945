// roofline_benchmark: what this CPU can do at best, as the ceiling for corgy's CPU numbers. Measures the FMA peak
// (independent AVX2 and AVX-512 FMA chains in registers, no memory traffic) and OpenBLAS's sgemm rate, with one
// thread and with every core this process may run on (its CPU affinity, so `taskset` limits it). Prints one JSON
// object per measurement on stdout.
//
//   roofline_benchmark [--sgemm-size N] [--repeat R]
#include <cblas.h>
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "corgy/backends/cpu/fma_peak.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// CPUs this process may run on.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return static_cast<int>(std::thread::hardware_concurrency());
  return CPU_COUNT(&set);
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
  for (const corgy::CpuIsa isa : {corgy::CpuIsa::avx2, corgy::CpuIsa::avx512}) {
    if (!corgy::cpu_has(isa)) continue;
    fmt::print("{{\"kind\": \"fma\", \"isa\": \"{}\", \"threads\": {}, \"gflops\": {:.2f}}}\n", corgy::isa_name(isa),
               threads, corgy::fma_peak_gflops(isa, threads));
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
  for (const int threads : thread_counts) print_fma_peaks(threads);
  for (const int threads : thread_counts) print_sgemm(size, threads, repeat);
  return 0;
}
