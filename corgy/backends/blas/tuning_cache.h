// The blas tuner's measured choices (conv_tuner.h), kept for the process and in a file, so that a later process on
// the same CPU and the same build of corgy plans at once, and plans as the first one did: without the file each
// process timed its layers again (0.2-1 s at a network's first forward) and decided near ties by that run's noise
// (two processes planned DenseNet-121 differently in 76 of its ~120 layer lines).
//
// One file per CPU model, JSON Lines a person can read, in the folder of the Vulkan backend's tuning cache
// (default_tuning_cache_folder). The first line says whose measurements it holds (CpuTuningIdentity); each next line
// is one operation's choice, by name:
//
//   {"corgy_blas_tuning":1,"corgy":"0.1.0","cpu":"AMD EPYC 9B45","isa":"avx512","library":"5f2c..."}
//   {"key":"64->64 k3 s1 p1 d1 g1 in (1, 64, 56, 56) t2 avx512","choice":"winograd f2x2","ms":0.412,"agreed":2}
//
// Nothing in it is trusted: a file of another identity (CPU, instruction set, corgy version or build, format), a
// line that does not parse or holds values out of range, a file too large or not a regular file are ignored, and a
// remembered choice is used only when it is one of the candidates the tuner would time for that operation now.
// Nor is one process's measurement: a choice is planned from the file only once the measurements of two processes
// in a row agreed on it ("agreed": 2). A process whose timings another tenant disturbed had kept F(2x2, 3x3) for
// DenseNet-121's 56x56 layers at batch 8, 1.4x slower there than F(4x4, 3x3), and every later process planned it.
// Two processes in a row can be disturbed alike, though (on a shared host two had agreed on the packed GEMM for
// ResNet-50's 56x56 3x3 / 2 layer at batch 8, 16.3 ms, where processes timing afresh at a quieter hour picked the
// channels-in-lanes GEMM, 13.1-13.7 ms), so the tuner also says whether its cores were disturbed while it timed
// (BlasBackend::fastest_measured: an FMA probe on every member before each run, judged against the best core rate
// the file has seen, "core_fma_gflops", and the runs' involuntary context switches). A disturbed measurement is used
// by its process but counts for no agreement ("agreed": 0): later processes time the operation again until two
// undisturbed measurements agree, or until four processes in a row, disturbed or not, measured the same choice
// ("measured": 4). Without that second way a machine that is never quiet (CI's two test processes on two cores, a
// busy server) timed every layer again in every process: 29% of darknet_parity_test's time under AddressSanitizer.
// Writes go to a temporary file renamed over the old one, merged with what the file held then (cache_file.h).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>

namespace corgy::blas {

/// Whose measurements a cache file holds; a file whose identity differs in any field is ignored (and replaced when
/// new choices are saved).
struct CpuTuningIdentity {
  std::string cpu;            // cpu_model_name()
  std::string isa;            // the widest instruction set corgy's kernels use on it
  std::string corgy_version;  // CORGY_VERSION
  std::string library;        // the GNU build id of the binary holding corgy's code: a rebuilt corgy starts afresh
  int format = 0;             // the file's and the choice names' version

  bool operator==(const CpuTuningIdentity&) const = default;
};

/// This process's identity.
CpuTuningIdentity this_process_tuning_identity();

/// default_tuning_cache_folder()/blas-tuning-<hash of the CPU's model name>.jsonl, or empty where there is no such
/// folder (neither XDG_CACHE_HOME nor HOME set).
std::filesystem::path default_blas_tuning_cache_file();

/// One remembered choice: the candidate's name, and its time for a person reading the file.
struct TunedEntry {
  std::string choice;
  double ms = 0.0;
  /// How many undisturbed processes in a row measured this choice (1: this one, or only the one that wrote the file;
  /// 0: only a disturbed one).
  int agreed = 1;
  /// How many processes in a row measured this choice, disturbed or not (>= agreed).
  int measured = 1;
};

/// The share of the best FMA rate seen on a core below which a measurement counts as disturbed.
inline constexpr double kUndisturbedShare = 0.85;

/// The undisturbed processes that must have measured the same choice before later ones plan from the file without
/// timing ...
inline constexpr int kAgreedToTrust = 2;
/// ... or the processes in a row, disturbed or not: on cores that are never quiet, this many disturbed measurements
/// of one choice are the best evidence there will be, and timing again in every process costs each its first forward.
inline constexpr int kMeasuredToTrust = 4;

/// Measured choices by key (an operation's geometry, input shape, thread count and instruction set). Thread-safe.
class TuningTable {
 public:
  /// The table kept in `file` (empty: in this process only), one per file in the process: every backend that names
  /// the file shares its choices, so a shape met again in another model is not timed again.
  static std::shared_ptr<TuningTable> of_file(const std::filesystem::path& file);

  /// A table of its own in `file` (none: in memory only) for `identity`. Reads nothing yet.
  TuningTable(std::filesystem::path file, CpuTuningIdentity identity);

  /// The index in `candidates` of the choice remembered for `key`: recorded in this process, or read from the file
  /// (at the first call) where kAgreedToTrust undisturbed processes or kMeasuredToTrust processes in a row measured
  /// it; none when there is none or it is not one of `candidates`.
  std::optional<std::size_t> find(const std::string& key, std::span<const std::string> candidates);
  /// Records this process's measurement for `key` (entry.agreed and entry.measured are set here: one more than the
  /// file's where the file holds the same choice, else 1). A `disturbed` one (undisturbed() said so) adds nothing to
  /// the file's agreed count (the file's where it holds the same choice, else 0), only to measured.
  void record(const std::string& key, TunedEntry entry, bool disturbed = false);
  /// Whether the slowest core's FMA rate during a measurement, `core_gflops` (fma_probe_gflops), is at least
  /// kUndisturbedShare of the best rate this table has seen, in this process or in its file; raises that best.
  bool undisturbed(double core_gflops);
  /// Writes the choices recorded since the last save, merged with the file's current entries. Never throws: where
  /// the file cannot be written, a note goes to stderr (once per table) and the choices stay in memory.
  void save();

  const std::filesystem::path& file() const { return file_; }

 private:
  /// Reads the file at the first call (mutex_ held).
  void load_once();

  std::mutex mutex_;
  std::filesystem::path file_;
  CpuTuningIdentity identity_;
  bool loaded_ = false;
  bool unsaved_ = false;
  bool noted_ = false;
  double best_core_gflops_ = 0.0;  // the best FMA rate of a core seen while measuring (file and process)
  std::map<std::string, TunedEntry> entries_;
  std::set<std::string> recorded_;  // the keys this process measured (its choices, trusted here)
};

// The parts the file is made of, public for the tests and the fuzz target.

/// The entries of cache file text `text` whose first line is `identity`'s header; none for any other text.
/// Malformed or out-of-range lines are skipped.
std::map<std::string, TunedEntry> parse_blas_tuning_cache(const std::string& text, const CpuTuningIdentity& identity);
/// The best core FMA rate that cache file text `text` of `identity` records (its "core_fma_gflops" line), or 0.
double parse_blas_tuning_core_gflops(const std::string& text, const CpuTuningIdentity& identity);
/// The file text of `entries` for `identity`, with `core_gflops` (when above 0) as its best core FMA rate.
std::string format_blas_tuning_cache(const std::map<std::string, TunedEntry>& entries,
                                     const CpuTuningIdentity& identity, double core_gflops = 0.0);

}  // namespace corgy::blas
