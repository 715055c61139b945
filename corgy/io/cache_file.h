// Reading and replacing the backends' cache files (the blas and Vulkan tuning caches, the driver's pipeline cache)
// safely: nothing read is larger than asked, nothing written is seen half-done by another process.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace corgy {

/// The folder of the tuning caches when a backend's options name no file: $XDG_CACHE_HOME/corgy where that is an
/// absolute path (the XDG Base Directory rule), else $HOME/.cache/corgy; empty when neither is set.
std::filesystem::path default_tuning_cache_folder();

/// The file's bytes, or none when it is missing, not a regular file (a FIFO does not block) or over `most_bytes`.
std::optional<std::string> read_cache_file(const std::filesystem::path& file, std::size_t most_bytes);

/// Writes `bytes` to a new file beside `file` (its folder made first) and renames it over `file`, so that readers
/// never see half a file; the reason when that fails.
std::optional<std::string> replace_cache_file(const std::filesystem::path& file, const std::string& bytes);

}  // namespace corgy
