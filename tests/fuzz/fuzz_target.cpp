#include "fuzz_target.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace corgy::fuzz {

std::map<std::string, Target>& targets() {
  static std::map<std::string, Target> registered;
  return registered;
}

bool register_target(const std::string& name, Target target) {
  targets()[name] = std::move(target);
  return true;
}

namespace {

// In /dev/shm where there is one: targets write an input file per execution, millions in a long run, which memory
// takes faster than a disk.
std::string make_scratch_folder() {
  std::error_code no_shm;
  const std::filesystem::path parent = std::filesystem::is_directory("/dev/shm", no_shm)
                                           ? std::filesystem::path("/dev/shm")
                                           : std::filesystem::temp_directory_path();
  std::string pattern = (parent / "corgy-fuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

void remove_scratch_folder() {
  std::error_code ignored;
  std::filesystem::remove_all(scratch_folder(), ignored);
}

}  // namespace

const std::string& scratch_folder() {
  static const std::string folder = [] {
    std::string made = make_scratch_folder();
    return made;
  }();
  static const bool cleanup_registered = std::atexit(remove_scratch_folder) == 0;
  (void)cleanup_registered;
  return folder;
}

void check_backends_agree(const Variable& reference, const Variable& actual, float largest_intermediate) {
  if (reference.shape() != actual.shape()) std::abort();
  float magnitude = 0.0f;
  for (float v : reference.values()) {
    if (std::isfinite(v)) magnitude = std::max(magnitude, std::fabs(v));
  }
  for (std::size_t i = 0; i < reference.count(); ++i) {
    const float r = reference.data()[i];
    const float a = actual.data()[i];
    if (!std::isfinite(r) || !std::isfinite(a)) continue;  // overflowed in both or either: nothing to compare
    if (std::fabs(r - a) > 1e-3f * magnitude + 1e-5f * largest_intermediate + 1e-5f) {
      std::fprintf(stderr, "naive and blas disagree at %zu of %s: %g vs %g (magnitude %g)\n", i,
                   reference.shape().str().c_str(), static_cast<double>(r), static_cast<double>(a),
                   static_cast<double>(magnitude));
      std::abort();
    }
  }
}

std::string write_scratch_file(const std::string& name, std::span<const std::uint8_t> bytes) {
  const std::string path = scratch_folder() + "/" + name;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) std::abort();  // the harness itself failed: not a finding in corgy
  return path;
}

}  // namespace corgy::fuzz
