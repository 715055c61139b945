// Replays every committed fuzz input through its target, in the normal test build (and under ASan/UBSan in CI):
// the seeds of tests/fuzz/corpus/<target>/ and, above all, tests/fuzz/regressions/<target>/, where each input that
// once crashed, hung or tripped a sanitizer is kept. A regression that comes back fails (or crashes) this test.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz/fuzz_target.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& [name, target] : fuzz::targets()) names.push_back(name);
  return names;
}

std::vector<fs::path> inputs_in(const fs::path& folder) {
  std::vector<fs::path> files;
  if (fs::is_directory(folder)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
      if (entry.is_regular_file() && entry.path().filename() != "README.md") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

class FuzzReplay : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs each input; a crash ends the process, so the input's name goes to stderr first.
  void replay(const fs::path& folder) {
    for (const fs::path& path : inputs_in(folder)) {
      std::fprintf(stderr, "replaying %s\n", path.c_str());
      const std::vector<std::uint8_t> bytes = read_file(path);
      EXPECT_NO_THROW(fuzz::targets().at(GetParam())(bytes)) << path;
    }
  }
};

TEST_P(FuzzReplay, Seeds) {
  const fs::path folder = fs::path(CORGY_FUZZ_DIR) / "corpus" / GetParam();
  EXPECT_FALSE(inputs_in(folder).empty()) << "no seeds in " << folder;
  replay(folder);
}

TEST_P(FuzzReplay, Regressions) { replay(fs::path(CORGY_FUZZ_DIR) / "regressions" / GetParam()); }

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(target_names()),
                         [](const ::testing::TestParamInfo<std::string>& target) { return target.param; });

// Each name of tests/fuzz/targets.cmake has registered its function (a target file that forgot the macro would not).
TEST(FuzzReplay, EveryTargetIsRegistered) { EXPECT_EQ(target_names().size(), std::size_t{CORGY_FUZZ_TARGET_COUNT}); }

}  // namespace
}  // namespace corgy::testing
