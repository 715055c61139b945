#include "corgy/backends/blas/tuning_cache.h"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "corgy/backends/cpu/cpu_features.h"
#include "corgy/io/cache_file.h"
#include "corgy/io/json_lines.h"

namespace corgy::blas {

namespace {

using nlohmann::json;

// The file's version; raised when a choice's name or a key's meaning changes.
constexpr int tuning_file_format = 1;

// Limits on what is read: a real file holds a line per operation shape and thread count of the models run on the
// machine (tens to a few thousand), each under 200 bytes. Larger files, lines or counts are not a cache corgy wrote.
constexpr std::size_t most_tuning_file_bytes = std::size_t{1} << 20;
constexpr std::size_t most_line_bytes = 1024;
constexpr std::size_t most_entries = 8192;
constexpr std::size_t most_choice_bytes = 64;
constexpr int most_agreed = 1000;  // counted no further
// A core's FMA rate in GFLOP/s: above any CPU's (a core of 2 x 512-bit FMA at 6 GHz does 384).
constexpr double most_core_gflops = 10'000.0;

bool plausible_core_gflops(double rate) { return rate > 0.0 && rate < most_core_gflops; }

json header(const CpuTuningIdentity& id) {
  return {{"corgy_blas_tuning", id.format},
          {"corgy", id.corgy_version},
          {"cpu", id.cpu},
          {"isa", id.isa},
          {"library", id.library}};
}

// One entry line, or none when anything in it is missing, of the wrong type or out of range.
std::optional<std::pair<std::string, TunedEntry>> parse_entry(const json& line) {
  if (!line.is_object()) return std::nullopt;
  const auto key = line.find("key");
  const auto choice = line.find("choice");
  const auto ms = line.find("ms");
  if (key == line.end() || !key->is_string() || choice == line.end() || !choice->is_string() || ms == line.end() ||
      !ms->is_number() || choice->get_ref<const std::string&>().size() > most_choice_bytes) {
    return std::nullopt;
  }
  // "agreed" is a count of undisturbed processes from 0 to most_agreed.
  const auto agreed = line.find("agreed");
  if (agreed == line.end() || !agreed->is_number_unsigned() || agreed->get<std::uint64_t>() > most_agreed) {
    return std::nullopt;
  }
  // "measured", processes in a row disturbed or not, counts at least the undisturbed ones; a file of a corgy that
  // did not count it gives none, read as "agreed".
  const int agreed_count = static_cast<int>(agreed->get<std::uint64_t>());
  int measured_count = agreed_count;
  if (const auto measured = line.find("measured"); measured != line.end()) {
    if (!measured->is_number_unsigned() || measured->get<std::uint64_t>() > most_agreed ||
        static_cast<int>(measured->get<std::uint64_t>()) < agreed_count) {
      return std::nullopt;
    }
    measured_count = static_cast<int>(measured->get<std::uint64_t>());
  }
  return std::pair{key->get<std::string>(),
                   TunedEntry{choice->get<std::string>(), ms->get<double>(), agreed_count, measured_count}};
}

// What a cache file's text holds for `identity`: its choices and the best core FMA rate it records (0: none).
struct CacheText {
  std::map<std::string, TunedEntry> entries;
  double core_gflops = 0.0;
};

CacheText parse_cache_text(const std::string& text, const CpuTuningIdentity& identity) {
  CacheText read;
  // The header must be exactly this identity's: any other CPU, build, version or format is not ours.
  for_each_json_line(text, header(identity), most_line_bytes, [&](const json& line) {
    if (auto entry = parse_entry(line)) {
      read.entries.insert_or_assign(std::move(entry->first), std::move(entry->second));
    } else if (const auto rate = line.is_object() ? line.find("core_fma_gflops") : line.end();
               rate != line.end() && rate->is_number() && plausible_core_gflops(rate->get<double>())) {
      read.core_gflops = std::max(read.core_gflops, rate->get<double>());
    }
    return read.entries.size() < most_entries;
  });
  return read;
}

// The GNU build id (hex) of the loaded object that holds `address`: the shared library, or the executable corgy is
// linked into. Empty where the linker wrote none.
std::string build_id_of(const void* address) {
  struct Search {
    std::uintptr_t address;
    std::string id;
  } search{reinterpret_cast<std::uintptr_t>(address), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& s = *static_cast<Search*>(data);
        bool holds = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          const std::uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
          if (segment.p_type == PT_LOAD && s.address >= begin && s.address < begin + segment.p_memsz) holds = true;
        }
        if (!holds) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_NOTE) continue;
          const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + segment.p_vaddr);
          const unsigned char* end = at + segment.p_memsz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) note;
            std::memcpy(&note, at, sizeof note);
            const unsigned char* name = at + sizeof note;
            const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
            if (desc + note.n_descsz > end) break;
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              for (unsigned j = 0; j < note.n_descsz; ++j) s.id += fmt::format("{:02x}", desc[j]);
              return 1;
            }
            at = desc + ((note.n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  return search.id;
}

}  // namespace

CpuTuningIdentity this_process_tuning_identity() {
  static const CpuTuningIdentity identity{
      .cpu = cpu_model_name(),
      .isa = isa_name(widest_cpu_isa()),
      .corgy_version = CORGY_VERSION,
      .library = build_id_of(reinterpret_cast<const void*>(&this_process_tuning_identity)),
      .format = tuning_file_format,
  };
  return identity;
}

std::filesystem::path default_blas_tuning_cache_file() {
  const std::filesystem::path folder = default_tuning_cache_folder();
  if (folder.empty()) return {};
  // FNV-1a of the model name: one file per CPU model, named without its spaces and symbols.
  std::uint32_t hash = 2166136261u;
  for (const char c : cpu_model_name()) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return folder / fmt::format("blas-tuning-{:08x}.jsonl", hash);
}

std::shared_ptr<TuningTable> TuningTable::of_file(const std::filesystem::path& file) {
  static std::mutex mutex;
  static std::map<std::filesystem::path, std::shared_ptr<TuningTable>> tables;
  const std::lock_guard lock(mutex);
  std::shared_ptr<TuningTable>& table = tables[file];
  if (!table) table = std::make_shared<TuningTable>(file, this_process_tuning_identity());
  return table;
}

TuningTable::TuningTable(std::filesystem::path file, CpuTuningIdentity identity)
    : file_(std::move(file)), identity_(std::move(identity)) {}

void TuningTable::load_once() {
  if (loaded_) return;
  loaded_ = true;
  if (file_.empty()) return;
  if (const std::optional<std::string> text = read_cache_file(file_, most_tuning_file_bytes)) {
    // Choices recorded before the first read win over the file's (merge leaves duplicates in the source).
    CacheText read = parse_cache_text(*text, identity_);
    entries_.merge(read.entries);
    best_core_gflops_ = std::max(best_core_gflops_, read.core_gflops);
  }
}

std::optional<std::size_t> TuningTable::find(const std::string& key, std::span<const std::string> candidates) {
  const std::lock_guard lock(mutex_);
  load_once();
  const auto found = entries_.find(key);
  if (found == entries_.end() || (!recorded_.contains(key) && found->second.agreed < kAgreedToTrust &&
                                  found->second.measured < kMeasuredToTrust)) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i] == found->second.choice) return i;
  }
  return std::nullopt;
}

bool TuningTable::undisturbed(double core_gflops) {
  const std::lock_guard lock(mutex_);
  load_once();                                           // the file's best rate
  if (!plausible_core_gflops(core_gflops)) return true;  // no probe on this CPU
  const bool quiet = core_gflops >= kUndisturbedShare * best_core_gflops_;
  if (core_gflops > best_core_gflops_) {
    best_core_gflops_ = core_gflops;
    unsaved_ = true;
  }
  return quiet;
}

void TuningTable::record(const std::string& key, TunedEntry entry, bool disturbed) {
  const std::lock_guard lock(mutex_);
  const auto known = entries_.find(key);
  const bool confirms = known != entries_.end() && !recorded_.contains(key) && known->second.choice == entry.choice;
  if (disturbed) {
    entry.agreed = confirms ? known->second.agreed : 0;
  } else {
    entry.agreed = confirms ? std::min(known->second.agreed, most_agreed - 1) + 1 : 1;
  }
  entry.measured = confirms ? std::min(known->second.measured, most_agreed - 1) + 1 : 1;
  entries_.insert_or_assign(key, std::move(entry));
  recorded_.insert(key);
  unsaved_ = true;
}

void TuningTable::save() {
  const std::lock_guard lock(mutex_);
  if (!unsaved_ || file_.empty()) return;
  unsaved_ = false;
  // What another process wrote since this one read the file is kept; this process's choices win.
  std::map<std::string, TunedEntry> merged = entries_;
  double core_gflops = best_core_gflops_;
  if (const std::optional<std::string> text = read_cache_file(file_, most_tuning_file_bytes)) {
    const CacheText read = parse_cache_text(*text, identity_);
    for (const auto& [key, entry] : read.entries) {
      if (merged.size() >= most_entries) break;
      merged.try_emplace(key, entry);
    }
    core_gflops = std::max(core_gflops, read.core_gflops);
  }
  const std::optional<std::string> failure =
      replace_cache_file(file_, format_blas_tuning_cache(merged, identity_, core_gflops));
  if (failure && !noted_) {
    noted_ = true;
    fmt::print(stderr,
               "corgy: the blas tuning cache was not saved ({}); the measured choices stay in this process "
               "(BlasOptions::tuning_cache names another file)\n",
               *failure);
  }
}

std::map<std::string, TunedEntry> parse_blas_tuning_cache(const std::string& text, const CpuTuningIdentity& identity) {
  return parse_cache_text(text, identity).entries;
}

double parse_blas_tuning_core_gflops(const std::string& text, const CpuTuningIdentity& identity) {
  return parse_cache_text(text, identity).core_gflops;
}

std::string format_blas_tuning_cache(const std::map<std::string, TunedEntry>& entries,
                                     const CpuTuningIdentity& identity, double core_gflops) {
  std::string text = header(identity).dump() + "\n";
  if (plausible_core_gflops(core_gflops)) {
    text += json{{"core_fma_gflops", std::round(core_gflops * 10.0) / 10.0}}.dump() + "\n";
  }
  for (const auto& [key, entry] : entries) {
    const int agreed = std::clamp(entry.agreed, 0, most_agreed);
    // Rounded to the microsecond: the time is for a person reading the file.
    text += json{{"key", key},
                 {"choice", entry.choice},
                 {"ms", std::round(entry.ms * 1000.0) / 1000.0},
                 {"agreed", agreed},
                 {"measured", std::clamp(entry.measured, agreed, most_agreed)}}
                .dump() +
            "\n";
  }
  return text;
}

}  // namespace corgy::blas
