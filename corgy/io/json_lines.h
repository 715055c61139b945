// The line reader of the backends' tuning caches (blas/tuning_cache.h, vulkan/tuning_cache.h): JSON Lines whose first
// line names whose file it is. Private to the library (not installed: installed headers do not include
// nlohmann-json).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace corgy {

/// Calls `take` on each later line of `text` that parses as JSON, in order, while it returns true, when the first
/// line equals `header` exactly; lines longer than `most_line_bytes` and lines that do not parse are skipped, and a
/// first line that long, or any other, means none is taken (the file is another identity's, or not a cache file).
void for_each_json_line(const std::string& text, const nlohmann::json& header, std::size_t most_line_bytes,
                        const std::function<bool(const nlohmann::json& line)>& take);

}  // namespace corgy
