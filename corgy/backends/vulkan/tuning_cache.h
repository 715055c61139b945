// The Vulkan tuner's file of measured convolution plans (the "user" side of a tuning database, as MIOpen keeps one
// in the home folder): one file per device model, JSON Lines a person can read. The first line says whose
// measurements it holds (TuningIdentity); each next line is one layer's choice:
//
//   {"corgy_vulkan_tuning":1,"corgy":"0.1.0","device":"NVIDIA H100 80GB HBM3","vendor_id":4318,...}
//   {"key":"fp32 conv 64->64 k3 s1 p1 d1 g1 in 32x64x56x56 ...","algorithm":"winograd","tiles":[0,0,0,0,0],...}
//
// Nothing in it is trusted: a file of another identity (device, driver, corgy version, kernels, format), a line
// that does not parse or holds values out of range, a file too large or not a regular file are ignored, and the
// tuner uses a remembered choice only when it is one of the candidates it would time for that layer on this
// device (conv_tuner.h). Writes go to a temporary file renamed over the old one, merged with what the file held
// then, so that readers never see half a file and two processes lose at worst each other's newest entries.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "corgy/backends/vulkan/vulkan_backend.h"

namespace corgy::vulkan {

/// Whose measurements a cache file holds; a file whose identity differs in any field is ignored (and replaced
/// when new choices are saved).
struct TuningIdentity {
  std::string device;  // the device's name
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  std::uint32_t driver_version = 0;
  std::string pipeline_cache_uuid;  // hex; changes with the driver's build
  std::string corgy_version;
  std::string kernels;  // a fingerprint of the convolution kernels' SPIR-V: a changed kernel invalidates the file
  int format = 0;       // the candidates' and the file's version (conv_tuner.cpp)

  bool operator==(const TuningIdentity&) const = default;
};

/// A convolution plan as the tuner chose it: the forced parts of VulkanConvolutionOptions that describe it.
struct TunedChoice {
  VulkanConvolutionOptions plan;
  double ms = 0.0;  // measured, for a person reading the file
};

/// "vulkan-tuning-<vendor id>-<device id>.jsonl" (hexadecimal ids): one file per device model.
std::string tuning_cache_file_name(const TuningIdentity& identity);

/// Where the driver's pipeline cache is kept for `options` on a device of `vendor_id` and `device_id`: none when
/// options.use_tuning_cache is off, <tuning_cache>.pipelines when that names a file, else
/// "vulkan-pipelines-<vendor id>-<device id>.bin" in default_tuning_cache_folder() (none when that is empty).
std::filesystem::path pipeline_cache_file(const VulkanOptions& options, std::uint32_t vendor_id,
                                          std::uint32_t device_id);

class TuningCache {
 public:
  /// A cache kept in `file` (none: in memory only) for `identity`. Reads nothing yet.
  TuningCache(std::filesystem::path file, TuningIdentity identity);

  /// The choice remembered for `key`: stored in this process, or read from the file (read once, at the first call).
  std::optional<VulkanConvolutionOptions> find(const std::string& key);
  void store(const std::string& key, const TunedChoice& choice);
  /// Writes the choices stored since the last save, merged with the file's current entries, through a temporary
  /// file and a rename. Never throws: where the file cannot be written, a note goes to stderr (once per cache) and
  /// the choices stay in memory.
  void save();

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  TuningIdentity identity_;
  bool loaded_ = false;
  bool unsaved_ = false;
  bool noted_ = false;  // a failed save said so on stderr
  std::map<std::string, TunedChoice> entries_;
};

// The parts the file is made of, public for the tests.

/// The entries of cache file text `text` whose first line is `identity`'s header; none for any other text.
/// Malformed or out-of-range lines are skipped.
std::map<std::string, TunedChoice> parse_tuning_cache(const std::string& text, const TuningIdentity& identity);
/// The file text of `entries` for `identity`.
std::string format_tuning_cache(const std::map<std::string, TunedChoice>& entries, const TuningIdentity& identity);

}  // namespace corgy::vulkan
