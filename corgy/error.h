// corgy::Error: the one exception type the library throws for bad input (shapes, parameters, files).
#pragma once

#include <stdexcept>
#include <string>

namespace corgy {

/// Thrown for every user-facing error: invalid layer parameters, shape mismatches, bad or truncated files,
/// unavailable backends. The message names the file, layer and shapes involved.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace corgy
