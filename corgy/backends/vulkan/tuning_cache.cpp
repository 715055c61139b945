#include "corgy/backends/vulkan/tuning_cache.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "corgy/io/cache_file.h"
#include "corgy/io/json_lines.h"

namespace corgy::vulkan {

namespace {

using nlohmann::json;

// Limits on what is read: a real file holds one line per layer shape of the models run on the device (tens to a
// few hundred), each under 300 bytes. Larger files, lines or counts are not a cache corgy wrote.
constexpr std::size_t most_tuning_file_bytes = 1 << 20;
constexpr std::size_t most_line_bytes = 2048;
constexpr std::size_t most_entries = 4096;
constexpr std::uint32_t most_tile_value = 4096;
constexpr std::uint32_t most_split_k = 256;

constexpr std::pair<VulkanConvAlgorithm, const char*> algorithm_names[] = {
    {VulkanConvAlgorithm::implicit_gemm, "implicit_gemm"},
    {VulkanConvAlgorithm::cooperative_matrix, "cooperative_matrix"},
    {VulkanConvAlgorithm::patch_cooperative_matrix, "patch_cooperative_matrix"},
    {VulkanConvAlgorithm::direct, "direct"},
    {VulkanConvAlgorithm::winograd, "winograd"},
};

const char* algorithm_name(VulkanConvAlgorithm algorithm) {
  for (const auto& [value, name] : algorithm_names) {
    if (value == algorithm) return name;
  }
  return nullptr;
}

json header(const TuningIdentity& id) {
  return {{"corgy_vulkan_tuning", id.format},
          {"corgy", id.corgy_version},
          {"device", id.device},
          {"vendor_id", id.vendor_id},
          {"device_id", id.device_id},
          {"driver_version", id.driver_version},
          {"pipeline_cache_uuid", id.pipeline_cache_uuid},
          {"kernels", id.kernels}};
}

// Five unsigned values of at most most_tile_value, or none.
std::optional<std::array<std::uint32_t, 5>> five_values(const json& value) {
  if (!value.is_array() || value.size() != 5) return std::nullopt;
  std::array<std::uint32_t, 5> result{};
  for (std::size_t i = 0; i < 5; ++i) {
    if (!value[i].is_number_unsigned() || value[i].get<std::uint64_t>() > most_tile_value) return std::nullopt;
    result[i] = static_cast<std::uint32_t>(value[i].get<std::uint64_t>());
  }
  return result;
}

// One entry line, or none when anything in it is missing, of the wrong type or out of range.
std::optional<std::pair<std::string, TunedChoice>> parse_entry(const json& line) {
  if (!line.is_object()) return std::nullopt;
  const auto key = line.find("key");
  const auto algorithm = line.find("algorithm");
  const auto tiles = line.find("tiles");
  const auto coopmat = line.find("coopmat_tiles");
  const auto split = line.find("split_k");
  const auto ms = line.find("ms");
  if (key == line.end() || !key->is_string() || algorithm == line.end() || !algorithm->is_string() ||
      tiles == line.end() || coopmat == line.end() || split == line.end() || !split->is_number_unsigned() ||
      split->get<std::uint64_t>() > most_split_k || ms == line.end() || !ms->is_number()) {
    return std::nullopt;
  }
  TunedChoice choice;
  const std::string name = algorithm->get<std::string>();
  bool known = false;
  for (const auto& [value, text] : algorithm_names) {
    if (name == text) {
      choice.plan.algorithm = value;
      known = true;
    }
  }
  const auto t = five_values(*tiles);
  const auto c = five_values(*coopmat);
  if (!known || !t || !c) return std::nullopt;
  choice.plan.tiles = {(*t)[0], (*t)[1], (*t)[2], (*t)[3], (*t)[4]};
  choice.plan.coopmat_tiles = {(*c)[0], (*c)[1], (*c)[2], (*c)[3], (*c)[4]};
  choice.plan.split_k = static_cast<std::uint32_t>(split->get<std::uint64_t>());
  // Written only when false (a residual's add after the convolution); anything but false keeps the default.
  if (const auto fuse = line.find("fuse_residual"); fuse != line.end() && fuse->is_boolean()) {
    choice.plan.fuse_residual = fuse->get<bool>();
  }
  choice.ms = ms->get<double>();
  return std::pair{key->get<std::string>(), choice};
}

}  // namespace

std::string tuning_cache_file_name(const TuningIdentity& identity) {
  return fmt::format("vulkan-tuning-{:04x}-{:04x}.jsonl", identity.vendor_id, identity.device_id);
}

std::filesystem::path pipeline_cache_file(const VulkanOptions& options, std::uint32_t vendor_id,
                                          std::uint32_t device_id) {
  if (!options.use_tuning_cache) return {};
  if (!options.tuning_cache.empty()) return options.tuning_cache + ".pipelines";
  const std::filesystem::path folder = default_tuning_cache_folder();
  if (folder.empty()) return {};
  return folder / fmt::format("vulkan-pipelines-{:04x}-{:04x}.bin", vendor_id, device_id);
}

std::map<std::string, TunedChoice> parse_tuning_cache(const std::string& text, const TuningIdentity& identity) {
  std::map<std::string, TunedChoice> entries;
  // The header must be exactly this identity's: any other device, driver, version or format is not ours.
  for_each_json_line(text, header(identity), most_line_bytes, [&](const json& line) {
    if (auto entry = parse_entry(line)) entries.insert_or_assign(std::move(entry->first), entry->second);
    return entries.size() < most_entries;
  });
  return entries;
}

std::string format_tuning_cache(const std::map<std::string, TunedChoice>& entries, const TuningIdentity& identity) {
  std::string text = header(identity).dump() + "\n";
  for (const auto& [key, choice] : entries) {
    const char* name = algorithm_name(choice.plan.algorithm);
    if (name == nullptr) continue;
    const VulkanGemmTiles& t = choice.plan.tiles;
    const VulkanCoopmatTiles& c = choice.plan.coopmat_tiles;
    json line = {{"key", key},
                 {"algorithm", name},
                 {"tiles", {t.tile_m, t.tile_n, t.tile_k, t.thread_m, t.thread_n}},
                 {"coopmat_tiles", {c.warps_m, c.warps_n, c.frags_m, c.frags_n, c.tile_k}},
                 {"split_k", choice.plan.split_k},
                 {"ms", choice.ms}};
    if (!choice.plan.fuse_residual) line["fuse_residual"] = false;
    text += line.dump() + "\n";
  }
  return text;
}

TuningCache::TuningCache(std::filesystem::path file, TuningIdentity identity)
    : file_(std::move(file)), identity_(std::move(identity)) {}

std::optional<VulkanConvolutionOptions> TuningCache::find(const std::string& key) {
  if (!loaded_) {
    loaded_ = true;
    if (!file_.empty()) {
      if (const std::optional<std::string> text = read_cache_file(file_, most_tuning_file_bytes)) {
        // Choices stored before the first read win over the file's (merge leaves duplicates in the source).
        std::map<std::string, TunedChoice> read = parse_tuning_cache(*text, identity_);
        entries_.merge(read);
      }
    }
  }
  const auto found = entries_.find(key);
  if (found == entries_.end()) return std::nullopt;
  return found->second.plan;
}

void TuningCache::store(const std::string& key, const TunedChoice& choice) {
  entries_.insert_or_assign(key, choice);
  unsaved_ = true;
}

void TuningCache::save() {
  if (!unsaved_ || file_.empty()) return;
  unsaved_ = false;
  // What another process wrote since this one read the file is kept; this process's choices win.
  std::map<std::string, TunedChoice> merged = entries_;
  if (const std::optional<std::string> text = read_cache_file(file_, most_tuning_file_bytes)) {
    for (auto& [key, choice] : parse_tuning_cache(*text, identity_)) {
      if (merged.size() >= most_entries) break;
      merged.try_emplace(key, choice);
    }
  }
  const std::optional<std::string> failure = replace_cache_file(file_, format_tuning_cache(merged, identity_));
  if (failure && !noted_) {
    noted_ = true;
    fmt::print(stderr,
               "corgy: the Vulkan tuning cache was not saved ({}); the measured plans stay in this process "
               "(VulkanOptions::tuning_cache names another file)\n",
               *failure);
  }
}

}  // namespace corgy::vulkan
