// The blas backend's tuning cache file (corgy/backends/blas/tuning_cache.h): parsed for a fixed identity (the
// seeds' header), then read from disk by a TuningTable, whose choices must be the parser's and among the candidates.
#include <cstdlib>
#include <string>

#include "corgy/backends/blas/tuning_cache.h"
#include "fuzz_target.h"

CORGY_FUZZ_TARGET(tuning_cache) {
  const corgy::blas::CpuTuningIdentity identity{
      .cpu = "Fuzz CPU", .isa = "avx512", .corgy_version = "0.1.0", .library = "f00d", .format = 1};
  const std::string text(reinterpret_cast<const char*>(input.data()), input.size());
  const auto entries = corgy::blas::parse_blas_tuning_cache(text, identity);
  const double core_gflops = corgy::blas::parse_blas_tuning_core_gflops(text, identity);
  if (!(core_gflops >= 0.0 && core_gflops < 1e4)) std::abort();  // 0 where there is none, else a plausible rate
  // What the writer makes of the entries reads back the same.
  const std::string written = corgy::blas::format_blas_tuning_cache(entries, identity, core_gflops);
  if (corgy::blas::parse_blas_tuning_cache(written, identity).size() != entries.size()) std::abort();
  if ((corgy::blas::parse_blas_tuning_core_gflops(written, identity) > 0.0) != (core_gflops > 0.0)) std::abort();
  corgy::blas::TuningTable table(corgy::fuzz::write_scratch_file("tuning.jsonl", input), identity);
  const std::string candidates[] = {"packed_gemm", "winograd f2x2", "bands"};
  for (const auto& [key, entry] : entries) {
    const auto found = table.find(key, candidates);
    if (found && candidates[*found] != entry.choice) std::abort();  // the table reads what the parser reads
    // One process's measurement is not used: two undisturbed ones or kMeasuredToTrust in a row must have agreed.
    if (found && entry.agreed < corgy::blas::kAgreedToTrust && entry.measured < corgy::blas::kMeasuredToTrust)
      std::abort();
    if (entry.measured < entry.agreed) std::abort();  // every undisturbed measurement is one of the processes
  }
}
